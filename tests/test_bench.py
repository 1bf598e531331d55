"""Smoke test of the benchmark harness: it runs every measurement and reports it (never its speed)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MEASUREMENTS = (
    "floor",
    "expat-handlers",
    "junitparser",
    "scan",
    "e2e",
    "e2e-rerun",
    "e2e-1m",
    "leg-update",
    "flat-memory",
)


def run_bench_printing(
    script: str, *args: str, out: Path, timeout: float = 120
) -> tuple[dict[str, Any], str]:
    """Run ``bench/<script>`` with ``args`` and ``--json out`` from the repository's root;
    it must exit 0 (its output is the failure's message). Its JSON report, and what it printed."""
    proc = subprocess.run(
        [sys.executable, f"bench/{script}", *args, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return report, proc.stdout


def run_bench(script: str, *args: str, out: Path, timeout: float = 120) -> dict[str, Any]:
    """:func:`run_bench_printing`'s report."""
    return run_bench_printing(script, *args, out=out, timeout=timeout)[0]


def test_bench_smoke_reports_every_measurement(tmp_path: Path) -> None:
    """`bench/run.py --smoke` exits 0 and writes a JSON report holding every measurement."""
    out = tmp_path / "bench.json"
    report = run_bench("run.py", "--smoke", "--work", str(tmp_path / "work"), out=out)
    results = report["results"]
    # Every measurement can run here (the CLI, scan_junit, and --smoke's sizes): "skipped"
    # or "error" is a harness that stopped measuring something.
    statuses = {name: results[name]["status"] for name in results if name != "local"}
    assert statuses == dict.fromkeys(MEASUREMENTS, "ok"), results
    # Issue 19's figures: every update's ratio to its floor, per round, with the targets.
    # And the two lower bounds: reading alone, and the least an update writing durations does.
    assert sorted(results["local"]["ratios"]) == [
        "e2e / floor",
        "e2e-rerun / floor",
        "least / floor",
        "leg-update / floor",
        "leg-update / floor-leg",
        "reading / floor",
    ]
    assert "least / floor" not in results["local"]["net_cpu_ratios"]
    least = sorted((tmp_path / "work").rglob("least/*.json"))
    assert [path.name for path in least] == [
        "jax.json",
        "numpy.json",
        "tensorflow.json",
        "torch.json",
    ]
    assert all(json.loads(path.read_text()) for path in least)
    for name in ("floor", "junitparser", "scan"):
        assert results[name]["cases"] == 2_000
    assert report["checks"] == [], report["checks"]
    assert {t["status"].split()[0] for t in report["targets"]} <= {"met", "MISSED", "n/a"}


def test_github_scale_quick_reports_a_leg_against_the_stand_in(tmp_path: Path) -> None:
    """`bench/github_scale.py --quick --transport rest` seeds the stand-in, runs one leg of each
    set-up under GitHub's limits and reports its figures, the run's spend beside those limits
    included."""
    out = tmp_path / "github.json"
    argv = ["--quick", "--transport", "rest", "--work", str(tmp_path / "work")]
    report, printed = run_bench_printing("github_scale.py", *argv, out=out)
    assert report["seed"]["cells_linked"] == report["seed"]["cells_expected"] > 0
    assert sorted(report["configs"]) == ["1 fan-in", "1 legs"]
    config = report["configs"]["1 legs"]
    assert config["status"] == "ok", config
    assert config["lost_cells"]["lost"] == 0
    assert config["lost_cells"]["found"] == config["lost_cells"]["expected"] > 0
    (leg,) = config["per_leg"]
    assert leg["exit"] == 0
    assert leg["tries"] == 1
    assert leg["requests"] > 0
    assert leg["sent_kb"] > 0
    assert leg["received_kb"] > 0
    assert config["content_creating"]["total"] == leg["writes"] > 0
    github = config["github"]
    assert (github["requests"], github["content_requests"]) == (leg["requests"], leg["writes"])
    assert (github["refused"], github["over"]) == (0, [])
    assert github["runs_per_hour"] == min(1000 // leg["requests"], 500 // leg["writes"])
    fan_in = report["configs"]["1 fan-in"]
    assert fan_in["requests_per_leg"]["max"] == 0  # the legs only upload their files
    assert fan_in["fan_in_job"]["requests"] == fan_in["github"]["requests"] > 0
    assert fan_in["lost_cells"]["lost"] == 0
    assert "| set-up | legs |" in printed


def test_github_scale_quick_over_git_counts_git_requests_and_a_rerun_writes_nothing(
    tmp_path: Path,
) -> None:
    """`bench/github_scale.py --quick --rerun` (the branch over git, the default) reports a lone
    leg's git requests and its one push, no REST request, every cell landed, the pages a
    render of the state, and no write when the leg runs again."""
    out = tmp_path / "github.json"
    argv = ["--quick", "--setups", "legs", "--rerun", "--work", str(tmp_path / "work")]
    config = run_bench("github_scale.py", *argv, out=out)["configs"]["1 legs"]
    (leg,) = config["per_leg"]
    assert (leg["exit"], leg["requests"], leg["pushes"], leg["tries"]) == (0, 0, 1, 1)
    assert leg["git_requests"] > 0
    assert config["lost_cells"]["lost"] == 0
    assert config["pages_are_a_render_of_the_state"] is True
    assert config["rerun"] == {"failed": 0, "rest_requests": 0, "rest_writes": 0, "git_pushes": 0}


def test_pr_comment_scale_quick_reports_one_comment_with_compares_counts(tmp_path: Path) -> None:
    """`bench/pr_comment_scale.py --quick` runs a pull request's legs at once against the
    stand-in and reports one comment whose counts are compare's, and each leg's requests."""
    out = tmp_path / "pr.json"
    argv = ["--quick", "--work", str(tmp_path / "work")]
    result = run_bench("pr_comment_scale.py", *argv, out=out)["result"]
    assert (result["legs"], result["legs_failed"], result["comments_of_ours"]) == (4, 0, 1)
    assert result["counts_equal_compare"] is True
    assert result["failing_cells"] > 0
    assert result["rest_requests_per_leg"]["max"] >= result["rest_requests_per_leg"]["median"] > 0


def test_site_bench_smoke_reports_sizes_and_paint_times(tmp_path: Path) -> None:
    """`bench/site.py --smoke` builds a tiny store, renders its site and reports every figure."""
    from tests.site.browser import chromium_path

    chromium_path()  # skips without chromium (fails under CI)
    out = tmp_path / "site.json"
    report = run_bench("site.py", "--smoke", "--work", str(tmp_path), out=out, timeout=300)
    assert report["shape"]["rows"] == 60
    assert report["size"]["data_bytes"] > 0
    assert report["render"]["second_render"].endswith("0 file(s) changed")
    assert set(report["paint"]) >= {
        "attention",
        "attention_failing",
        "summary",
        "groups",
        "slowest",
        "grid",
    }
    assert report["paint"]["grid"]["rows_in_document"] == 31
    assert report["paint"]["grid"]["data_files"] == ["d/grp0/mod000.js", "index.js"]
    assert report["paint"]["summary"]["data_files"] == ["index.js"]
    assert report["largest_view_data_bytes"] > 0


def test_durations_bench_smoke_measures_both_codes(tmp_path: Path) -> None:
    """`bench/durations.py --smoke --compare` (this checkout against itself) reports the state
    bytes and the CPU of both updates, with their ratios."""
    out = tmp_path / "durations.json"
    argv = ["--smoke", "--compare", str(ROOT), "--work", str(tmp_path / "work")]
    report = run_bench("durations.py", *argv, out=out)
    assert sorted(report["cpu_s"]) == ["fresh", "fresh@ref", "steady", "steady@ref"]
    assert sorted(report["ratios"]) == [
        "CPU, fresh update",
        "CPU, steady update",
        "state bytes after 1 run(s)",
        "state bytes after 2 run(s)",
    ]
    assert report["ratios"]["state bytes after 2 run(s)"] == 1.0


def test_branch_size_bench_reports_the_clone_of_a_branch_that_starts_afresh(
    tmp_path: Path,
) -> None:
    """`bench/branch_size.py` on a tiny shape: 5 runs with a fresh root every 2 revisions
    report each checkpoint's clone size and commits (at most 2), the site included."""
    out = tmp_path / "size.json"
    shape = ["--runs", "5", "--checkpoints", "2", "--dashboards", "2", "--tests", "3"]
    report = run_bench("branch_size.py", *shape, "--fresh-root-every", "2", out=out, timeout=300)
    assert (report["cells"], report["fresh_root_every"]) == (24, 2)
    assert [row["runs"] for row in report["rows"]] == [2, 5]
    assert all(row["clone_bytes"] > 0 and row["commits"] <= 2 for row in report["rows"])
    assert all(row["files"] > 10 for row in report["rows"])  # pages and the site


def test_fan_in_bench_reports_the_fan_in_beside_reading_the_junit(tmp_path: Path) -> None:
    """`bench/fan_in.py` on a tiny shape (400 cells, 8 legs, one round): the fan-in, the
    reference and the fan-in onto a seeded branch each push one branch of the same files, and
    the report holds their figures and the ratios (never judged: speed is not tested)."""
    with socket.socket() as probe:  # a free port for the git server the leg files name
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "fan_in.json"
    shape = ["--cells", "400", "--dashboards", "2", "--legs", "8", "--rounds", "1"]
    argv = [*shape, "--seeded", "--port", str(port), "--work", str(tmp_path)]
    report = run_bench("fan_in.py", *argv, out=out, timeout=300)
    assert (report["settings"]["cells"], report["settings"]["legs"]) == (400, 8)
    medians = report["medians"]
    assert set(medians) == {"fan-in this", "junit this", "fan-in-seeded this"}
    files = {figures["files_on_branch"] for figures in medians.values()}
    assert len(files) == 1
    assert files.pop() > 2
    assert all(f["pushed_kb"] > 0 and f["rest_requests"] == 0 for f in medians.values())
    assert all(f["cpu_s"] >= f["python_cpu_s"] > 0 for f in medians.values())
    assert set(report["fan_in_over_junit"]["this"]) == {"cpu", "rss"}
