"""End to end: adopt takes a dashboard table into the store, cell by cell, and renders it back."""

from __future__ import annotations

import pytest
from tabulate import tabulate

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode
from ivy_matrix.model import Outcome
from ivy_matrix.results.junit import cap_name
from ivy_matrix.views.readback import MAX_ADOPT_BYTES
from tests.commands.results import error_lines, ivy_cell, write_junit
from tests.conftest import SHARED, shared_dir


def cells_of(line: str) -> list[str]:
    """The stripped cells of one pipe-table line (no escaped pipes in these tables)."""
    return [cell.strip() for cell in line.strip().removeprefix("|").removesuffix("|").split("|")]


def status_of(cell: str) -> str:
    """The badge label of a cell (``""`` when the cell is empty)."""
    if not cell:
        return ""
    return cell.split("badge/-", 1)[1].split("-", 1)[0]


def seed_names() -> list[str]:
    """The seed tables' file names, or one placeholder that skips when the folder is absent."""
    return sorted(p.name for p in (SHARED / "ivy-seeds").glob("0*.txt")) or ["(missing)"]


def seed_text(name: str) -> str:
    """The text of one seed table (skips, or fails in CI, when ../shared is absent)."""
    return (shared_dir("ivy-seeds") / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", seed_names())
def test_adopted_seed_renders_back_to_the_same_bytes(workdir, name):
    """adopt then render --output-dir writes the seed table byte for byte."""
    seed = seed_text(name)
    (workdir / "seed.md").write_text(seed, encoding="utf-8")

    assert main(["adopt", "--dashboard", "core/gradients", "seed.md"], {}) == 0
    assert main(["render", "--output-dir", "out"], {}) == 0

    assert (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8") == seed


@pytest.mark.parametrize("name", seed_names())
def test_one_new_result_changes_exactly_one_cell_of_an_adopted_seed(workdir, name):
    """After adopting, one result for one existing row and backend changes only that cell."""
    seed = seed_text(name)
    (workdir / "seed.md").write_text(seed, encoding="utf-8")
    assert main(["adopt", "--dashboard", "core/gradients", "seed.md"], {}) == 0
    seed_rows = [cells_of(line) for line in seed.splitlines()]
    header = seed_rows[0]
    row_index, column = 2, 1  # the second test row, the first backend
    row_name, backend = seed_rows[row_index][0], header[column]
    old_status = status_of(seed_rows[row_index][column])
    new_status = "passed" if old_status == "failure" else "failed"
    write_junit(workdir / "r.xml", [(row_name, new_status)])
    argv = ["update", "--junit", "r.xml", "--backend", backend, "--dashboard", "core/gradients"]
    env = {
        "GITHUB_RUN_ID": "9000000001",
        "GITHUB_REPOSITORY": "unifyai/ivy",
        "IVY_MATRIX_JOB_ID": "42",
        "IVY_MATRIX_OUTPUT_DIR": "out",
    }

    assert main(argv, env) == 0

    new = (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    new_rows = [cells_of(line) for line in new.splitlines()]
    new_cell = ivy_cell(
        "https://github.com/unifyai/ivy/actions/runs/9000000001/job/42",
        Outcome.SUCCESS if new_status == "passed" else Outcome.FAILURE,
    )
    assert len(new_rows) == len(seed_rows)
    differing = [
        (i, j)
        for i, (old_row, new_row) in enumerate(zip(seed_rows, new_rows, strict=True))
        for j, (old_cell, new_cell_text) in enumerate(zip(old_row, new_row, strict=True))
        if old_cell != new_cell_text and i != 1  # line 1 is the separator: padding only
    ]
    assert differing == [(row_index, column)]
    assert new_rows[row_index][column] == new_cell
    expected_body = [list(row) for row in seed_rows[2:]]
    expected_body[row_index - 2][column] = new_cell
    assert new == tabulate(expected_body, headers=header, tablefmt="pipe", stralign="left")


@pytest.mark.parametrize("name", seed_names())
def test_table_rebuilt_cell_by_cell_matches_the_seed(workdir, name):
    """One update per seed cell, in the seed's order, gives the seed's rows, columns and statuses."""
    seed_rows = [cells_of(line) for line in seed_text(name).splitlines()]
    header, body = seed_rows[0], seed_rows[2:]
    run = job = 4_000_000_000
    for row in body:
        for backend, cell in zip(header[1:], row[1:], strict=True):
            if not cell:
                continue
            run, job = run + 1, job + 7
            status = {"success": "passed", "failure": "failed"}[status_of(cell)]
            write_junit(workdir / "r.xml", [(row[0], status)])
            argv = ["update", "--junit", "r.xml", "--backend", backend]
            argv += ["--dashboard", "core/gradients", "--run-id", str(run), "--job-id", str(job)]
            assert main([*argv, "--repository", "unifyai/ivy"], {}) == 0

    assert main(["render", "--output-dir", "out"], {}) == 0

    rebuilt = (workdir / "out" / "core" / "gradients.md").read_text(encoding="utf-8")
    rebuilt_rows = [cells_of(line) for line in rebuilt.splitlines()]
    assert rebuilt_rows[0] == header
    assert [row[0] for row in rebuilt_rows[2:]] == [row[0] for row in body]
    assert [[status_of(c) for c in row[1:]] for row in rebuilt_rows[2:]] == [
        [status_of(c) for c in row[1:]] for row in body
    ]


def test_adopt_refuses_to_replace_a_stored_dashboard_without_force(workdir, capsys):
    """Adopting over existing state exits 3 (an input) and says to pass --force; --force replaces it."""
    table = tabulate(
        [["test_a", ivy_cell("https://github.com/o/r/actions/runs/3/job/4", Outcome.SUCCESS)]],
        headers=["", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    (workdir / "t.md").write_text(table, encoding="utf-8")
    assert main(["adopt", "--dashboard", "core/x", "t.md"], {}) == 0
    capsys.readouterr()

    assert main(["adopt", "--dashboard", "core/x", "t.md"], {}) == ExitCode.INPUT
    assert "pass --force" in capsys.readouterr().err
    assert main(["adopt", "--dashboard", "core/x", "t.md", "--force"], {}) == 0


def test_adopting_a_table_that_is_not_utf8_exits_3(workdir, capsys):
    """A table file in another encoding is a user error that names the file."""
    (workdir / "t.md").write_bytes("| | caf\u00e9 |\n|:--|:--|\n".encode("latin-1"))

    code = main(["adopt", "--dashboard", "core/x", "t.md"], {})

    assert code == ExitCode.INPUT
    assert "t.md" in capsys.readouterr().err.splitlines()[-1]


def test_adopt_reports_every_unreadable_cell_and_stores_nothing(workdir, capsys):
    """Each hostile cell is one error line naming its row and column; nothing is adopted."""
    good = ivy_cell("https://github.com/o/r/actions/runs/3/job/4", Outcome.SUCCESS)
    rows = [
        ["test_a", ivy_cell("javascript:alert(1)", Outcome.SUCCESS), good],
        ["test_b", good, good + "<script>alert(1)</script>"],
        ["test_c", good, good],
    ]
    table = tabulate(rows, headers=["", "torch", "jax"], tablefmt="pipe", stralign="left")
    (workdir / "t.md").write_text(table, encoding="utf-8")

    code = main(["adopt", "--dashboard", "core/x", "t.md"], {"GITHUB_ACTIONS": "true"})

    errors = error_lines(capsys.readouterr().err)
    assert code == ExitCode.INPUT
    assert "cannot adopt core/x: 2 problem(s)" in errors[0]
    assert [line.split(": cannot read the cell")[0] for line in errors[1:]] == [
        "::error::row 'test_a', column 'torch'",
        "::error::row 'test_b', column 'jax'",
    ]
    assert not (workdir / ".ivy-matrix").exists()


def test_adopting_a_file_over_the_size_limit_exits_3(workdir, capsys):
    """A table file larger than adopt reads is refused by name before it is read whole."""
    with (workdir / "big.md").open("wb") as handle:
        handle.truncate(MAX_ADOPT_BYTES + 1)

    assert main(["adopt", "--dashboard", "core/x", "big.md"], {}) == ExitCode.INPUT
    assert "big.md: it is larger than" in capsys.readouterr().err


def adopt_one_failure(workdir, link_run: int, link_job: int = 7) -> None:
    """Adopt core/x: one row test_a whose torch cell fails, linking run ``link_run``."""
    url = f"https://github.com/o/r/actions/runs/{link_run}/job/{link_job}"
    table = tabulate(
        [["test_a", ivy_cell(url, Outcome.FAILURE)]],
        headers=["", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    (workdir / "t.md").write_text(table, encoding="utf-8")
    assert main(["adopt", "--dashboard", "core/x", "t.md"], {}) == 0


@pytest.mark.parametrize("link_run", [10**26, 2**63, 9_999_999_999, 1], ids=str)
def test_a_later_real_result_replaces_an_adopted_cell_whatever_run_its_link_names(
    workdir, link_run
):
    """An adopted cell is older than any real result: the next result for it wins, even when
    the adopted link names a run far newer than the real one (or no GitHub run at all)."""
    adopt_one_failure(workdir, link_run)
    write_junit(workdir / "r.xml", [("test_a", "passed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--dashboard", "core/x"]
    env = {"GITHUB_RUN_ID": "9000000001", "GITHUB_REPOSITORY": "o/r", "IVY_MATRIX_JOB_ID": "42"}

    assert main([*argv, "--output-dir", "out"], env) == 0

    table = (workdir / "out" / "core" / "x.md").read_text(encoding="utf-8")
    expected = ivy_cell("https://github.com/o/r/actions/runs/9000000001/job/42", Outcome.SUCCESS)
    assert cells_of(table.splitlines()[2]) == ["test_a", expected]


@pytest.mark.parametrize(
    ("link", "named"),
    [
        ("runs/100000000000000000000000000/job/7", "run 100000000000000000000000000"),
        ("runs/5/job/99999999999999999999", "job 99999999999999999999"),
        ("runs/5/attempts/9007199254740992/job/7", "attempt 9007199254740992"),
    ],
)
def test_an_absurd_id_in_an_adopted_link_is_a_named_warning(workdir, capsys, link, named):
    """A link naming an id no GitHub run, attempt or job can have is adopted with a warning
    that names the row, the column and the id."""
    url = f"https://github.com/o/r/actions/{link}"
    table = tabulate(
        [["test_a", ivy_cell(url, Outcome.FAILURE)], ["test_b", ""]],
        headers=["", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    (workdir / "t.md").write_text(table, encoding="utf-8")

    assert main(["adopt", "--dashboard", "core/x", "t.md"], {"GITHUB_ACTIONS": "true"}) == 0

    warnings = [line for line in capsys.readouterr().err.splitlines() if "::warning" in line]
    expected = (
        f"::warning::adopting t.md as core/x: row 'test_a', column 'torch': the link names "
        f"{named}, larger than any GitHub id; the cell is kept, and the next result for it "
        f"replaces it"
    )
    assert warnings == [expected]


def test_an_adopted_long_name_is_the_row_results_for_that_test_update(workdir):
    """A row name longer than the reader's cap is adopted capped as results name it, so a
    result for that test changes the adopted row instead of adding a second one."""
    name = "test_" + "x" * 1_500
    url = "https://github.com/o/r/actions/runs/3/job/4"
    table = tabulate(
        [[name, ivy_cell(url, Outcome.FAILURE)]],
        headers=["", "torch"],
        tablefmt="pipe",
        stralign="left",
    )
    (workdir / "t.md").write_text(table, encoding="utf-8")
    assert main(["adopt", "--dashboard", "core/x", "t.md"], {}) == 0
    write_junit(workdir / "r.xml", [(name, "passed")])
    argv = ["update", "--junit", "r.xml", "--backend", "torch", "--dashboard", "core/x"]

    assert main([*argv, "--run-id", "9", "--output-dir", "out"], {}) == 0

    rows = (workdir / "out" / "core" / "x.md").read_text(encoding="utf-8").splitlines()[2:]
    assert [(cells_of(row)[0], status_of(cells_of(row)[1])) for row in rows] == [
        (cap_name(name), "success")
    ]
