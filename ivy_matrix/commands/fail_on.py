"""The exit code ``--fail-on`` asks for, at the end of ``update`` and ``compare``.

I/O: only the error line that says why the step fails. ``failures`` exits 1 on any failed or
errored test, ``errors`` only on errors, ``new`` only when a pull request brings a new failure
(its verdicts, pr/verdicts.py: ``new``, or ``new-test`` for a failing test the baseline does
not have; never for results that are not a pull request's), ``nothing``
never. Errors of the run itself end the command with their own codes (errors.ExitCode) first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ivy_matrix.config.options import FailOn
from ivy_matrix.errors import ExitCode
from ivy_matrix.model import Totals
from ivy_matrix.runner.log import Log

if TYPE_CHECKING:
    from ivy_matrix.pr.verdicts import Comparison


def exit_code(
    fail_on: FailOn, totals: Totals, log: Log, comparison: Comparison | None = None
) -> ExitCode:
    """The exit code ``fail-on`` asks for; ``comparison``: a pull request's verdicts."""
    if fail_on is FailOn.NEW:
        if comparison is None:
            return ExitCode.OK
        # Imported here: only a pull request's run has verdicts (and has imported them); every
        # other run would pay for importing them at start-up.
        from ivy_matrix.pr.verdicts import Verdict, new_failures  # noqa: PLC0415

        counts = comparison.counts()
        new = new_failures(counts)
        if new:
            tests = counts[Verdict.NEW_TEST]
            of = f", {tests} of them in new tests" if tests else ""
            log.error(f"the pull request brings {new} new failure(s){of} (fail-on: new)")
            return ExitCode.FAILING
        return ExitCode.OK
    if fail_on is FailOn.FAILURES and totals.failed + totals.errors:
        log.error(
            f"{totals.failed} test(s) failed and {totals.errors} had errors (fail-on: failures)"
        )
        return ExitCode.FAILING
    if fail_on is FailOn.ERRORS and totals.errors:
        log.error(f"{totals.errors} test(s) had errors (fail-on: errors)")
        return ExitCode.FAILING
    return ExitCode.OK
