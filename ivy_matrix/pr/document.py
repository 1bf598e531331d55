"""The ``compare --json`` document: a pull request's verdicts as JSON (docs/commands.md).

Pure: no I/O (commands/compare.py writes it). The baseline kind, the counts overall and per
backend (``COUNT_ORDER``), every listed cell with its links, failing-since, failure line,
signature, blame and, for a failing cell, its group's kind (grouping.py), and the failing cells'
signatures ranked.
"""

from __future__ import annotations

from collections.abc import Mapping

from ivy_matrix.explain.grouping import signatures_json
from ivy_matrix.pr.verdicts import COUNT_ORDER, Comparison, Verdict


def _counts_json(counts: Mapping[Verdict, int]) -> dict[str, int]:
    return {verdict.value: counts[verdict] for verdict in COUNT_ORDER}


def compare_document(comparison: Comparison) -> dict[str, object]:
    """The ``compare --json`` document (docs/commands.md): with each failing cell its row's
    group's kind (grouping.py), and the failing cells' signatures, ranked."""
    kinds = {
        (g.dashboard, g.row, result.backend): dict(g.kinds)[result.signature].value
        for g in comparison.groups
        for result in g.failing
    }
    return {
        "baseline": comparison.baseline.value,
        "counts": _counts_json(comparison.counts()),
        "backends": {b: _counts_json(c) for b, c in comparison.backend_counts().items()},
        "cells": [
            {
                "dashboard": cell.dashboard,
                "row": cell.row,
                "backend": cell.backend,
                "verdict": cell.verdict.value,
                "link": cell.link,
                "baseline_link": cell.baseline_link,
                "failing_since": None
                if cell.failing_since is None
                else cell.failing_since.to_json(),
                "message": cell.message,
                "signature": cell.signature,
                "blame": None if cell.blame is None else cell.blame.to_json(),
                "kind": kinds.get(cell.key),
            }
            for cell in comparison.cells
        ],
        "signatures": signatures_json(comparison.groups),
    }
