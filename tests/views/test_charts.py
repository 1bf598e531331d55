"""Tests for charts.py: the trend's two pictures, their words, and the tables beside them."""

from __future__ import annotations

import xml.etree.ElementTree as ET  # our own pictures: no untrusted XML

from ivy_matrix.model import BackendPoint, Parity, Trend, TrendPoint
from ivy_matrix.views.charts import (
    PARITY_FILE,
    PASS_RATE_FILE,
    parity_svg,
    pass_rate,
    pass_rate_svg,
    trend_section,
)

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "evil\u202egnp.exe")


def point(run: int, failed: dict[str, int], names=("torch", "jax", "numpy")) -> TrendPoint:
    """A run of 200 rows per backend, ``failed[name]`` of them failing there."""
    backends = tuple(
        (
            name,
            BackendPoint(
                passed=196 - failed.get(name, 0),
                failed=failed.get(name, 0),
                flaky=2,
                skipped=2,
                missing=run % 3,
            ),
        )
        for name in names
    )
    only = tuple((name, max(0, failed.get(name, 0) - 1)) for name in names)
    green = 190 - sum(n for _, n in only)
    return TrendPoint(
        run=4519900000 + run,
        sha=f"{run:040x}",
        time=f"2026-11-{run:02d}T10:00:00Z",
        backends=backends,
        parity=Parity(rows=190, green=green, fails_only=only),
    )


TREND = Trend(
    points=tuple(
        point(run, {"torch": 3 + run % 4, "jax": 12 - run // 3, "numpy": 1 + run % 2})
        for run in range(1, 25)
    )
)


def test_the_pass_rate_picture_is_golden(golden):
    """The same trend draws the same bytes; the golden is the picture the index shows."""
    golden("pass-rate.svg", pass_rate_svg(TREND))


def test_the_parity_picture_is_golden(golden):
    """The parity picture of the same trend, byte for byte."""
    golden("parity.svg", parity_svg(TREND))


def test_each_picture_says_its_latest_values_in_its_title_and_description():
    """<title> and <desc> name the picture and the latest run's values, from the trend."""
    latest = TREND.points[-1]
    rates = {name: pass_rate(b) for name, b in latest.backends}
    pictures = {"rate": pass_rate_svg(TREND), "parity": parity_svg(TREND)}
    roots = {key: ET.fromstring(text) for key, text in pictures.items()}
    assert roots["rate"].findtext(f"{SVG}title") == "Pass rate per backend"
    desc = roots["rate"].findtext(f"{SVG}desc")
    assert desc is not None
    for name, rate in rates.items():
        assert rate is not None
        assert f"{name} {rate * 100:.1f}%" in desc
    parity = roots["parity"].findtext(f"{SVG}desc")
    assert parity is not None
    assert f"({latest.parity.green} of {latest.parity.rows} rows)" in parity
    assert "fails only on jax: 3 rows" in parity


def test_a_line_has_a_point_per_run_and_gaps_where_a_backend_did_not_run():
    """A backend missing from some runs draws a broken line, one dot per run it ran in."""
    runs = [point(1, {}), point(2, {}, names=("torch",)), point(3, {})]
    root = ET.fromstring(pass_rate_svg(Trend(points=tuple(runs))))
    paths = [p.get("d") for p in root.iter(f"{SVG}path")]
    assert len(paths) == 3
    jax = paths[1]
    assert jax is not None
    assert jax.count("M") == 2  # run 1, then a gap, then run 3
    assert jax.count("L") == 0


def test_hostile_backend_names_are_text_in_the_pictures_and_the_tables():
    """Markup in a name is escaped, bidi characters replaced; the SVG stays well-formed."""
    trend = Trend(points=(point(1, {HOSTILE[0]: 2}, names=HOSTILE),))
    for picture in (pass_rate_svg(trend), parity_svg(trend)):
        root = ET.fromstring(picture)  # well-formed: nothing escaped the text
        texts = "".join(root.itertext())
        assert "<script>" in texts  # shown as text, so the parser sees characters
        assert "\u202e" not in texts
        assert "<img" not in picture
        assert "<script" not in picture
    section = trend_section(trend, lambda path: path)
    assert "<script>" not in section
    assert "<img" not in section
    assert "\u202e" not in section


def test_the_section_shows_both_pictures_with_their_latest_values(golden):
    """The markdown links the pictures where ``image`` says and tabulates the latest run."""
    section = trend_section(TREND, lambda path: f"https://example.test/raw/abc/{path}")
    assert f"(https://example.test/raw/abc/{PASS_RATE_FILE})" in section
    assert f"(https://example.test/raw/abc/{PARITY_FILE})" in section
    golden("trend_section", section)
    assert trend_section(Trend(), lambda path: path) == ""
