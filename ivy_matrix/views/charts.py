"""The trend as pictures: ``charts/pass-rate.svg`` and ``charts/parity.svg``, and beside each a
small table of the latest values.

Pure: no I/O. Hand-written SVG (no plotting library), the same bytes for the same trend:
numbers are written with fixed decimals, series in the trend's backend order. Each picture
has a ``<title>`` and a ``<desc>`` that says its latest values in words, a white background
(it reads in GitHub's dark theme too), and each backend keeps its colour and dash pattern in
both pictures (Okabe-Ito colours, told apart without colour by the dashes).

- ``pass-rate.svg``: per backend, the share of its rows that passed (``passed`` + ``flaky``
  of the rows that ran: skipped and missing rows count in neither) over the last
  :data:`CHART_RUNS` points of the trend;
- ``parity.svg``: above, the share of rows green on every backend (of the rows that ran on
  all of them); below, per backend, the share of those rows failing on that backend only.

:func:`trend_section` is the markdown that shows both with their tables, for the index page
(relative paths) and the index issue (links pinned to the commit that holds the pictures).
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ivy_matrix.escaping import escape_name
from ivy_matrix.model import BackendPoint, Trend, TrendPoint

CHART_RUNS = 60
PASS_RATE_FILE = "charts/pass-rate.svg"  # noqa: S105  -- a file name ("pass"), not a password
PARITY_FILE = "charts/parity.svg"
NONE_RAN = "\u2013"  # an en dash: no value
# Okabe-Ito, without its yellow (too pale on white); then dashes tell series apart.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000")
DASHES = ("", "7 3", "2 3", "9 3 2 3")
_FONT = "-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
_WIDTH = 800
_LEFT, _RIGHT = 52, 560  # the plot's x range; the legend is right of it
_NAME_SHOWN = 22  # characters of a backend name in the legend
_WHOLE_PERCENT = 0.1  # a scale up to this share labels tenths of a percent


def _text(value: str) -> str:
    """``value`` as SVG text: hidden and reordering characters replaced, markup escaped."""
    shown = "".join(
        "\ufffd" if unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"} and c != "\t" else c
        for c in value
    )
    return html.escape(shown, quote=True)


def _short(name: str) -> str:
    return name if len(name) <= _NAME_SHOWN else name[: _NAME_SHOWN - 1] + "…"


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def pass_rate(point: BackendPoint) -> float | None:
    """The share of a backend's rows that passed in a run (None when none ran)."""
    return (point.passed + point.flaky) / point.ran if point.ran else None


def backends_of(trend: Trend) -> list[str]:
    """Every backend of the trend, in first-seen order (their colours follow it)."""
    names: dict[str, None] = {}
    for point in trend.points:
        names.update(dict.fromkeys(name for name, _ in point.backends))
    return list(names)


def _when(point: TrendPoint) -> str:
    return point.time[:10] if point.time else f"run {point.run}"


@dataclass(frozen=True, slots=True)
class _Panel:
    """One plot area: its top and bottom (y), and the values it spans (1.0 = 100%)."""

    top: float
    bottom: float
    ceiling: float
    floor: float = 0.0

    def y(self, value: float) -> float:
        share = (value - self.floor) / (self.ceiling - self.floor)
        return self.bottom - (self.bottom - self.top) * min(max(share, 0.0), 1.0)


# Where a pass-rate axis may start, so that rates of 97% and 99% do not draw one line.
_FLOORS = (0.99, 0.98, 0.95, 0.9, 0.8, 0.5)


def _floor(values: Sequence[float | None]) -> float:
    """The highest axis start below every value (with a little room), else 0."""
    lowest = min((v for v in values if v is not None), default=0.0)
    return next((f for f in _FLOORS if lowest - f >= (1 - f) / 10), 0.0)


def _x(index: int, count: int) -> float:
    if count == 1:
        return (_LEFT + _RIGHT) / 2
    return _LEFT + (_RIGHT - _LEFT) * index / (count - 1)


def _series(
    values: Sequence[float | None], panel: _Panel, colour: str, dash: str, width: float
) -> list[str]:
    """A line through the values (broken where a value is missing), with a dot at each."""
    count = len(values)
    path: list[str] = []
    dots: list[str] = []
    pen_up = True
    for index, value in enumerate(values):
        if value is None:
            pen_up = True
            continue
        x, y = _x(index, count), panel.y(value)
        path.append(f"{'M' if pen_up else 'L'}{x:.1f} {y:.1f}")
        pen_up = False
        if count <= CHART_RUNS or index == count - 1:
            dots.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"/>')
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    line = (
        f'<path d="{" ".join(path)}" fill="none" stroke="{colour}" stroke-width="{width}"'
        f'{dash_attr} stroke-linejoin="round"/>'
    )
    return [line, *dots] if path else []


def _axes(panel: _Panel, steps: int, label: Callable[[float], str]) -> list[str]:
    """Horizontal grid lines with their labels on the left."""
    parts = []
    for step in range(steps + 1):
        value = panel.floor + (panel.ceiling - panel.floor) * step / steps
        y = panel.y(value)
        parts.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_RIGHT}" y2="{y:.1f}" stroke="#d0d7de" '
            f'stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#57606a">{label(value)}</text>'
        )
    return parts


def _x_labels(points: Sequence[TrendPoint], y: float) -> list[str]:
    first, last = points[0], points[-1]
    parts = [
        f'<text x="{_LEFT}" y="{y:.1f}" font-size="11" fill="#57606a">{_text(_when(first))}</text>'
    ]
    if len(points) > 1:
        parts.append(
            f'<text x="{_RIGHT}" y="{y:.1f}" text-anchor="end" font-size="11" '
            f'fill="#57606a">{_text(_when(last))}</text>'
        )
    return parts


def _legend(entries: Sequence[tuple[str, str, str, str]], top: float) -> list[str]:
    """One line per series right of the plot: (name, value, colour, dash)."""
    parts = []
    for index, (name, value, colour, dash) in enumerate(entries):
        y = top + 18 * index
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<line x1="{_RIGHT + 16}" y1="{y:.1f}" x2="{_RIGHT + 40}" y2="{y:.1f}" '
            f'stroke="{colour}" stroke-width="2.5"{dash_attr}/>'
        )
        parts.append(
            f'<text x="{_RIGHT + 46}" y="{y + 4:.1f}" font-size="12" fill="#24292f">'
            f"{_text(_short(name))} <tspan font-weight="
            f'"bold">{_text(value)}</tspan></text>'
        )
    return parts


def _document(height: int, title: str, desc: str, body: Sequence[str]) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" role="img" aria-labelledby="title desc" '
        f'font-family="{_FONT}">\n'
        f'<title id="title">{_text(title)}</title>\n'
        f'<desc id="desc">{_text(desc)}</desc>\n'
        f'<rect width="{_WIDTH}" height="{height}" rx="6" fill="#ffffff"/>\n'
        f'<text x="16" y="26" font-size="16" font-weight="bold" fill="#24292f">'
        f"{_text(title)}</text>\n"
    )
    return head + "\n".join(body) + "\n</svg>\n"


def _style(index: int) -> tuple[str, str]:
    return COLOURS[index % len(COLOURS)], DASHES[(index // len(COLOURS)) % len(DASHES)]


def _latest(point: TrendPoint, name: str) -> BackendPoint | None:
    return dict(point.backends).get(name)


def pass_rate_svg(trend: Trend, *, runs: int = CHART_RUNS) -> str:
    """The pass-rate picture of the last ``runs`` points (see the module docstring)."""
    points = trend.points[-runs:]
    names = backends_of(trend)  # the same colours as the parity picture
    rates = {
        name: [None if (b := _latest(p, name)) is None else pass_rate(b) for p in points]
        for name in names
    }
    floor = _floor([v for values in rates.values() for v in values])
    panel = _Panel(top=64, bottom=244, ceiling=1.0, floor=floor)
    decimals = 1 if floor >= _FLOORS[3] else 0  # "97.5%", but "75%"
    axis = f" (the axis starts at {floor * 100:.0f}%)" if floor else ""
    body = [
        (
            f'<text x="16" y="46" font-size="12" fill="#57606a">Share of rows passing, last '
            f"{len(points)} run(s){axis}; a pass after reruns passes, skipped rows count in "
            f"neither</text>"
        ),
        *_axes(panel, 4, lambda v: f"{v * 100:.{decimals}f}%"),
    ]
    said, legend = [], []
    for index, name in enumerate(names):
        colour, dash = _style(index)
        body += _series(rates[name], panel, colour, dash, 2)
        last = _latest(points[-1], name)
        rate = None if last is None else pass_rate(last)
        shown = NONE_RAN if rate is None or last is None else _pct(rate)
        legend.append((name, shown, colour, dash))
        if rate is not None and last is not None:
            said.append(f"{name} {shown} ({last.passed + last.flaky} of {last.ran})")
    body += _x_labels(points, 262)
    body += _legend(legend, 72)
    latest = points[-1]
    desc = (
        f"Pass rate per backend over {len(points)} run(s) to run {latest.run} "
        f"({_when(latest)}): " + ("; ".join(said) or "no backend ran") + "."
    )
    return _document(max(278, 88 + 18 * len(names)), "Pass rate per backend", desc, body)


def parity_svg(trend: Trend, *, runs: int = CHART_RUNS) -> str:
    """The parity picture of the last ``runs`` points (see the module docstring)."""
    points = trend.points[-runs:]
    names = backends_of(trend)  # the same colours as the pass-rate picture
    values = [p.parity.green / p.parity.rows if p.parity.rows else None for p in points]
    floor = _floor(values)
    green = _Panel(top=60, bottom=170, ceiling=1.0, floor=floor)
    green_decimals = 1 if floor >= _FLOORS[3] else 0
    shares = {
        name: [
            dict(p.parity.fails_only).get(name, 0) / p.parity.rows if p.parity.rows else None
            for p in points
        ]
        for name in names
    }
    highest = max((v for values in shares.values() for v in values if v), default=0.0)
    ceiling = next((c for c in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5) if highest <= c), 1.0)
    only = _Panel(top=214, bottom=314, ceiling=ceiling)
    decimals = 1 if ceiling < _WHOLE_PERCENT else 0  # "0.5%", but "20%"
    body = [
        (
            '<text x="16" y="46" font-size="12" fill="#57606a">Of the rows that ran on every '
            "backend of their dashboard: green on all of them"
            + (f" (the axis starts at {floor * 100:.0f}%)" if floor else "")
            + "</text>"
        ),
        *_axes(green, 2, lambda v: f"{v * 100:.{green_decimals}f}%"),
        (
            '<text x="16" y="200" font-size="12" fill="#57606a">... and failing on one backend '
            "only</text>"
        ),
        *_axes(only, 2, lambda v: f"{v * 100:.{decimals}f}%"),
    ]
    body += _series(values, green, "#24292f", "", 3)
    latest = points[-1]
    parity = latest.parity
    green_share = NONE_RAN if not parity.rows else _pct(parity.green / parity.rows)
    entries = [("green on all", green_share, "#24292f", "")]
    said = [f"green on every backend {green_share} ({parity.green} of {parity.rows} rows)"]
    for index, name in enumerate(names):
        colour, dash = _style(index)
        body += _series(shares[name], only, colour, dash, 2)
        count = dict(parity.fails_only).get(name, 0)
        share = NONE_RAN if not parity.rows else _pct(count / parity.rows)
        entries.append((f"only {name}", share, colour, dash))
        said.append(f"fails only on {name}: {count} rows")
    body += _x_labels(points, 332)
    body += _legend(entries, 68)
    desc = (
        f"Parity across backends over {len(points)} run(s) to run {latest.run} "
        f"({_when(latest)}): " + "; ".join(said) + "."
    )
    height = max(346, 90 + 18 * len(entries))
    return _document(height, "Parity across backends", desc, body)


# ----------------------------------------------------------------------------- markdown


def _pass_rate_table(point: TrendPoint) -> str:
    lines = [
        "| backend | pass rate | passed | failed | flaky | skipped | missing |",
        "|:--|--:|--:|--:|--:|--:|--:|",
    ]
    for name, b in point.backends:
        rate = pass_rate(b)
        shown = NONE_RAN if rate is None else _pct(rate)
        lines.append(
            f"| {escape_name(name)} | {shown} | {b.passed} | {b.failed} | {b.flaky} | "
            f"{b.skipped} | {b.missing} |"
        )
    return "\n".join(lines)


def _parity_table(point: TrendPoint) -> str:
    parity = point.parity

    def share(count: int) -> str:
        return NONE_RAN if not parity.rows else _pct(count / parity.rows)

    lines = [
        f"| of {parity.rows} rows that ran on every backend | rows | share |",
        "|:--|--:|--:|",
        f"| green on every backend | {parity.green} | {share(parity.green)} |",
    ]
    only = dict(parity.fails_only)
    for name, _ in point.backends:
        count = only.get(name, 0)
        lines.append(f"| fails only on {escape_name(name)} | {count} | {share(count)} |")
    return "\n".join(lines)


def trend_section(trend: Trend, image: Callable[[str], str]) -> str:
    """The markdown of the two pictures (``image(path)`` is where each is read) with the
    latest run's values beside them; "" for a trend with no point yet."""
    if not trend.points:
        return ""
    latest = trend.points[-1]
    return (
        f"## Trend\n\nLatest run: {latest.run} ({escape_name(_when(latest))}"
        + (f", commit {escape_name(latest.sha[:7])}" if latest.sha else "")
        + ")\n\n"
        f"![Pass rate per backend]({image(PASS_RATE_FILE)})\n\n{_pass_rate_table(latest)}\n\n"
        f"![Parity across backends]({image(PARITY_FILE)})\n\n{_parity_table(latest)}\n"
    )
