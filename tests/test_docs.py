"""The README and docs/ stay true: size, links, the Quick start, the picture, the recipes, the
command synopses."""

from __future__ import annotations

import json
import os
import re
import shlex
import textwrap
from pathlib import Path

import pytest
import yaml

from ivy_matrix.cli import main
from ivy_matrix.config.options import parse_targets
from tests.markdown_doc import anchors, code_blocks, links, section

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
README_LIMIT = 15_000
ACTION = "ivy-matrix/ivy-matrix@"
COMMANDS = ("update", "collect", "render", "adopt", "prune", "publish", "compare", "expectations")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def action_inputs() -> set[str]:
    return set(yaml.safe_load(read(ROOT / "action.yml"))["inputs"])


def test_the_readme_stays_under_15000_bytes():
    """README.md is a front door: under 15,000 bytes, with the rest in docs/."""
    assert len(README.read_bytes()) < README_LIMIT


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file_and_heading_that_exist(path):
    """Each relative link in the README and docs/ names a file that exists, and its #anchor,
    if any, a heading of that file."""
    broken = [target for target in links(read(path)) if not resolves(path, target)]
    assert broken == []


def resolves(page: Path, target: str) -> bool:
    """Whether a link of ``page`` reaches something: a URL, or a file (and heading) here."""
    if re.match(r"[a-z]+:", target):
        return True  # https:, mailto: ... are not checked
    file, _, anchor = target.partition("#")
    linked = (page.parent / file).resolve() if file else page
    if not linked.exists():
        return False
    return not anchor or linked.suffix != ".md" or anchor in anchors(read(linked))


def test_every_docs_page_is_linked_from_the_readme():
    """Each page in docs/ can be reached from the README's links."""
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(read(README))}
    assert [p.name for p in PAGES if p.resolve() not in linked] == []


def test_the_quick_start_is_exactly_the_demo_and_the_test_script():
    """The Quick start's commands are ./scripts/demo and ./scripts/test, both runnable."""
    (block,) = [b for b in code_blocks(section(read(README), "Quick start")) if b.lang == "bash"]
    commands = [line.split("#")[0].strip() for line in block.body.splitlines()]
    assert commands == ["./scripts/demo", "./scripts/test"]
    for command in commands:
        assert os.access(ROOT / command, os.X_OK), command


def demo_arguments(out: Path) -> list[str]:
    """The arguments scripts/demo passes to ivy-matrix, writing into ``out`` instead."""
    script = read(ROOT / "scripts" / "demo").replace("\\\n", " ")
    (line,) = [line for line in script.splitlines() if line.startswith("exec ")]
    words = shlex.split(line)[2:]
    assert words[0] == "update"
    assert words[-1] == "$@"
    words = words[:-1]
    words[words.index("--output-dir") + 1] = str(out / "dashboards")
    words[words.index("--summary-json") + 1] = str(out / "summary.json")
    return [*words, "--store", str(out / "state")]


def test_the_readmes_picture_is_what_the_demo_renders(tmp_path, monkeypatch):
    """Every line of the README's dashboard is a line of the page scripts/demo writes."""
    monkeypatch.chdir(ROOT)
    assert main(demo_arguments(tmp_path), env={}) == 0
    rendered = read(tmp_path / "dashboards" / "nn" / "layers.md").splitlines()
    intro = read(README).split("## Quick start")[0]
    picture = [line for line in intro.splitlines() if line.startswith("|")]
    assert len(picture) >= 3
    assert [line for line in picture if line not in rendered] == []


@pytest.mark.timeout(60)
def test_a_second_demo_says_what_it_wrote(tmp_path, monkeypatch, capsys):
    """scripts/demo again: no dashboard file changes, and the last line says the summary JSON
    was written again (it said "0 file(s) written" while rewriting summary.json)."""
    monkeypatch.chdir(ROOT)
    assert main(demo_arguments(tmp_path), env={}) == 0
    pages = {p: p.read_bytes() for p in (tmp_path / "dashboards").rglob("*") if p.is_file()}
    summary = tmp_path / "summary.json"
    first = summary.read_text(encoding="utf-8")
    capsys.readouterr()

    assert main(demo_arguments(tmp_path), env={}) == 0

    last = capsys.readouterr().err.splitlines()[-1]
    assert f"0 cell(s) changed; 0 file(s) written, plus the summary JSON {summary};" in last
    assert {p: p.read_bytes() for p in pages} == pages
    assert summary.read_text(encoding="utf-8") != first  # it says: 0 changed cells


def test_parity_agrees_with_the_index_kinds_on_the_demo(tmp_path, monkeypatch):
    """scripts/demo's index (issue 24): each backend's "-only" count is its "fails only on" row."""
    monkeypatch.chdir(ROOT)
    assert main(demo_arguments(tmp_path), env={}) == 0
    index = (tmp_path / "dashboards" / "README.md").read_text(encoding="utf-8")
    (line,) = [x for x in index.splitlines() if x.startswith("Failing tests across backends")]
    only = {name: count for count, name in re.findall(r"(\d+) (\w+)-only", line)}
    assert only == {"numpy": "3", "jax": "1", "tensorflow": "1", "torch": "1"}
    for backend, count in only.items():
        assert f"| fails only on {backend} | {count} |" in index


@pytest.mark.timeout(60)
def test_the_readmes_local_recipe_gives_one_run_with_every_backend(tmp_path, monkeypatch):
    """The README's "Run it on your own results", run as it stands on the four example
    backends' results, twice: each run is one trend point with every backend's pass rate and
    the parity of the rows that ran on all of them (issue 24: one update per backend made each
    backend a run of its own, pass rate "-" and "of 0 rows")."""
    (block,) = [
        b for b in code_blocks(section(read(README), "Run it on your own results")) if b.lang
    ]
    lines = [line for line in block.body.splitlines() if line.strip()]
    assert lines[0].startswith("IVY=")
    assert lines[1].startswith("cd ")
    project = tmp_path / "project"
    for backend in ("jax", "numpy", "tensorflow", "torch"):
        folder = project / "results" / backend
        folder.mkdir(parents=True)
        (folder / "junit.xml").write_bytes(
            (ROOT / "examples" / "results" / backend / "test-results.xml").read_bytes()
        )
    monkeypatch.chdir(project)
    commands = [shlex.split(line) for line in lines[2:]]
    assert all(words[0] == "$IVY" for words in commands)

    for _ in range(2):
        for words in commands:
            assert main(words[1:], env={}) == 0

    trend = json.loads((project / ".ivy-matrix" / "trend.json").read_text(encoding="utf-8"))
    assert [point["run"] for point in trend["points"]] == [1, 2]
    for point in trend["points"]:
        assert sorted(point["backends"]) == ["jax", "numpy", "tensorflow", "torch"]
        assert all(b["missing"] == 0 and b["passed"] > 0 for b in point["backends"].values())
        assert point["parity"]["rows"] == 23
    index = read(project / "dashboards" / "README.md")
    assert "| of 23 rows that ran on every backend |" in index
    assert "| \N{EN DASH} |" not in section(index, "Trend").split("![Parity")[0]


def yaml_blocks() -> list[tuple[str, object]]:
    """Each YAML block of the README and docs/, parsed (indented fragments dedented)."""
    return [
        (path.name, yaml.safe_load(textwrap.dedent(block.body)))
        for path in [README, *PAGES]
        for block in code_blocks(read(path))
        if block.lang == "yaml"
    ]


def steps_with_inputs(node: object) -> list[dict[str, object]]:
    """Every mapping with a ``with:`` that is an ivy-matrix step or a bare ``with:`` fragment."""
    found = []
    if isinstance(node, dict):
        uses = str(node.get("uses", ""))
        if "with" in node and (not uses or uses.startswith(ACTION)):
            found.append(node)
        for value in node.values():
            found += steps_with_inputs(value)
    elif isinstance(node, list):
        for value in node:
            found += steps_with_inputs(value)
    return found


def test_workflow_recipes_give_only_inputs_the_action_has():
    """Every ivy-matrix step in the README and docs/ uses real inputs and valid values."""
    inputs, seen = action_inputs(), 0
    for name, doc in yaml_blocks():
        for step in steps_with_inputs(doc):
            given = step["with"]
            assert isinstance(given, dict), name
            assert set(given) - inputs == set(), name
            assert given.get("command", "update") in {"update", "collect", "fan-in", "publish"}, (
                name
            )
            parse_targets(tuple(str(given.get("targets", "summary")).split(",")))
            seen += 1
    assert seen >= 7  # the README's recipes were all found


def test_every_uses_in_the_docs_is_pinned_to_a_full_sha():
    """Each `uses:` in the README and docs/ (ivy-matrix's own too) is a 40-hex SHA with a # v
    comment."""
    for path in [README, *PAGES]:
        for line in read(path).splitlines():
            match = re.search(r"^\s*(?:- )?uses:\s*(\S+)", line)
            if not match:
                continue
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", match.group(1)), line
            assert re.search(r"# v\d", line), line


def usage_flags(command: str, capsys: pytest.CaptureFixture[str]) -> set[str]:
    """The flags ``ivy-matrix COMMAND --help`` shows in its usage lines."""
    with pytest.raises(SystemExit):
        main([command, "--help"], env={})
    usage = capsys.readouterr().out.split("\n\n")[0]
    return set(re.findall(r"--[a-z][a-z-]*", usage)) - {"--help"}


def test_the_commands_page_lists_every_command(capsys):
    """docs/commands.md opens with exactly the commands ``ivy-matrix --help`` lists."""
    with pytest.raises(SystemExit):
        main(["--help"], env={})
    listed = re.findall(r"^ {4}([a-z]+)(?: |$)", capsys.readouterr().out, re.MULTILINE)
    opening = code_blocks(read(ROOT / "docs" / "commands.md"))[0].body
    documented = re.findall(r"^ivy-matrix ([a-z]+) ", opening, re.MULTILINE)
    assert sorted(documented) == sorted(listed)
    assert sorted(COMMANDS) == sorted(listed)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_synopsis_lists_exactly_its_options(command, capsys):
    """docs/commands.md shows each command with the options its command line takes."""
    (synopsis, *_) = code_blocks(section(read(ROOT / "docs" / "commands.md"), command))
    assert synopsis.body.startswith(f"ivy-matrix {command} ")
    assert set(re.findall(r"--[a-z][a-z-]*", synopsis.body)) == usage_flags(command, capsys)
