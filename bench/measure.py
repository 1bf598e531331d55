"""One benchmark workload, run in its own process by ``bench/run.py``.

``python bench/measure.py KIND FILE...`` reads the files with one reader, classifies every case
where the reader can, and prints one JSON line: the wall time of the work (imports excluded),
the bytes read, the case counts, and this process's own peak RSS. ``run.py`` also takes the
child's rusage from ``os.wait4``, so the figure does not depend on this script being honest.

Kinds:

- ``floor``: ``xml.parsers.expat`` with no handlers, fed 1 MiB chunks: the cost of reading the XML.
- ``expat-handlers``: the same, with no-op start/end element handlers: the cost of calling
  Python once per element, which any pure-Python streaming reader pays (informational).
- ``junitparser``: the reference, ``JUnitXml.fromfile`` and ``case.result`` per case.
- ``scan``: ``ivy_matrix.results.junit.scan_junit``, which classifies every case and counts them per
  file, with an ``on_case`` that receives each case and does nothing more.

I/O: reads the files given; writes one line to stdout.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

CHUNK = 1 << 20


def run_floor(paths: list[str]) -> dict[str, object]:
    from xml.parsers import expat

    for path in paths:
        parser = expat.ParserCreate()
        with Path(path).open("rb") as f:
            while chunk := f.read(CHUNK):
                parser.Parse(chunk, False)  # noqa: FBT003  -- pyexpat takes isfinal positionally
            parser.Parse(b"", True)  # noqa: FBT003  -- as above
    return {}


def run_expat_handlers(paths: list[str]) -> dict[str, object]:
    from xml.parsers import expat

    starts = 0

    def start(_name: str, _attrs: dict[str, str]) -> None:
        nonlocal starts
        starts += 1

    def end(_name: str) -> None:
        pass

    for path in paths:
        parser = expat.ParserCreate()
        parser.buffer_text = True
        parser.StartElementHandler = start
        parser.EndElementHandler = end
        with Path(path).open("rb") as f:
            while chunk := f.read(CHUNK):
                parser.Parse(chunk, False)  # noqa: FBT003  -- pyexpat takes isfinal positionally
            parser.Parse(b"", True)  # noqa: FBT003  -- as above
    return {"elements": starts}


def run_junitparser(paths: list[str]) -> dict[str, object]:
    from junitparser import Error, Failure, JUnitXml, Skipped, TestSuite

    counts: Counter[str] = Counter()
    for path in paths:
        xml: Any = JUnitXml.fromfile(path)  # a TestSuite when the root is <testsuite>
        suites = [xml] if isinstance(xml, TestSuite) else xml
        for suite in suites:
            for case in suite:
                result = case.result
                if not result:
                    counts["passed"] += 1
                elif any(isinstance(r, Error) for r in result):
                    counts["error"] += 1
                elif any(isinstance(r, Failure) for r in result):
                    counts["failed"] += 1
                elif any(isinstance(r, Skipped) for r in result):
                    counts["skipped"] += 1
                else:
                    counts["passed"] += 1
        del xml, suites
    return {"counts": dict(counts), "cases": sum(counts.values())}


def run_scan(paths: list[str]) -> dict[str, object]:
    from ivy_matrix.model import CaseResult
    from ivy_matrix.results.junit import scan_junit

    # scan_junit classifies every case itself and returns the per-file counts; on_case receives
    # each classified case, as the collector does, and here does nothing more.
    def on_case(case: CaseResult) -> None:
        pass

    counts: Counter[str] = Counter()
    flaky = 0
    problems = []
    for path in paths:
        with Path(path).open("rb") as f:
            file_counts, problem = scan_junit(f, source=path, on_case=on_case)
        if problem is not None:
            problems.append(problem.message)
        counts["passed"] += file_counts.passed
        counts["skipped"] += file_counts.skipped
        counts["failed"] += file_counts.failed
        counts["error"] += file_counts.errors
        flaky += file_counts.flaky
    return {
        "counts": dict(counts),
        "cases": sum(counts.values()),
        "flaky": flaky,
        "problems": problems,
    }


KINDS = {
    "floor": run_floor,
    "expat-handlers": run_expat_handlers,
    "junitparser": run_junitparser,
    "scan": run_scan,
}


def main(argv: list[str]) -> int:
    kind, paths = argv[0], argv[1:]
    if kind == "profile":
        return profile(paths)
    work = KINDS[kind]
    # Import outside the timed region, so the figure is the reading alone.
    if kind == "junitparser":
        import junitparser  # noqa: F401
    elif kind == "scan":
        import ivy_matrix.results.junit  # noqa: F401
    start = time.perf_counter()
    extra = work(paths)
    wall = time.perf_counter() - start
    result = {
        "kind": kind,
        "wall_s": wall,
        "bytes": sum(Path(p).stat().st_size for p in paths),
        "self_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        **extra,
    }
    print(json.dumps(result))
    return 0


def profile(paths: list[str]) -> int:
    """Profile ``scan`` with cProfile and print the top functions (``run.py --profile``)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    run_scan(paths)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
