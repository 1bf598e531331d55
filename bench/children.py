"""Measured child processes and the generated result sets, shared by ``run.py`` and ``local.py``.

Every measurement runs in a fresh child process, started with ``subprocess.Popen`` and reaped
with ``os.wait4``, so each one gets its own peak RSS (``ru_maxrss`` of that child only) and no
figure leaks into the next.

I/O: starts processes; writes generated data under the work folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import generate

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PYTHON = sys.executable
# The report is JSON data of mixed shapes; bench code is not product code.
Json = dict[str, Any]
MB = 1_000_000  # file sizes and throughput are in decimal MB; RSS in MiB ("MB" in the table)


@dataclass
class Run:
    """One child process: its wall time (the work alone when it reports it), RSS and output."""

    wall_s: float
    proc_wall_s: float
    maxrss_mb: float
    report: Json = field(default_factory=dict)
    cpu_s: float = 0.0


class ChildFailedError(Exception):
    """A measured child exited non-zero."""


def run_child(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    parse_json: bool = True,
    cwd: Path = ROOT,
) -> Run:
    """Run ``cmd`` in a fresh process; take its peak RSS from ``os.wait4`` (that child only)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        proc_wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped by wait4
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        tail = "\n".join((stdout + stderr).strip().splitlines()[-15:])
        raise ChildFailedError(f"exit {proc.returncode}: {' '.join(cmd[:4])} ...\n{tail}")
    report: Json = {}
    if parse_json:
        report = json.loads(stdout.strip().splitlines()[-1])
    wall = float(report.get("wall_s", proc_wall))
    return Run(
        wall_s=wall,
        proc_wall_s=proc_wall,
        maxrss_mb=usage.ru_maxrss / 1024,
        report=report,
        cpu_s=usage.ru_utime + usage.ru_stime,
    )


def compiled(code: Path) -> None:
    """``code``'s bytecode written beforehand: a checkout without it (``git archive``, or
    with ``PYTHONDONTWRITEBYTECODE`` set) would compile every module in every measured process,
    about 0.7 G instructions that the other code does not pay."""
    subprocess.run(
        [PYTHON, "-m", "compileall", "-q", str(code / "ivy_matrix")],
        check=True,
        capture_output=True,
    )


def cli_env() -> dict[str, str]:
    """The environment for ``ivy-matrix``: ours, without any GitHub or ivy-matrix settings."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "IVY_MATRIX_", "RUNNER_"))
    }


def ensure_set(
    work: Path,
    cases: int,
    seed: int,
    *,
    backends: tuple[str, ...] = generate.BACKENDS,
    outcome_seed: int | None = None,
) -> tuple[Path, Json]:
    """Generate (or reuse) a result set; the manifest is written last, so it marks a whole set.

    ``cases`` counts every backend's cases of the whole set: with ``backends=("torch",)`` the
    set holds torch's quarter of it (one leg of a 4-backend run).
    """
    tag = (
        f"set-{cases}-s{seed}"
        + (f"-o{outcome_seed}" if outcome_seed is not None else "")
        + ("" if backends == generate.BACKENDS else "-" + "-".join(backends))
    )
    out = work / "data" / tag
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        return out, json.loads(manifest_path.read_text())
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    manifest = generate.generate_set(
        out,
        cases=cases,
        seed=seed,
        modules=generate.default_modules(cases),
        files_per_backend=4,
        backends=backends,
        outcome_seed=outcome_seed,
    )
    print(
        f"  generated {tag}: {manifest['bytes'] / MB:.1f} MB, "
        f"{manifest['bytes_per_case']} bytes/case in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return out, manifest


def xml_files(data: Path, backends: tuple[str, ...] = generate.BACKENDS) -> list[str]:
    return [str(p) for b in backends for p in sorted((data / b).glob("*.xml"))]
