"""The template's OperationsDashboard drawn from a local run's metrics, for docs/deploy.md#what-an-operator-sees.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from . import cloudwatch_rules
from .cloudwatch_rules import MetricSeries, SearchQuery, evaluate, read_emf, widget_rows
from .template import ROOT, load_template

__all__ = ["Bar", "dashboard_widgets", "draw", "evaluate", "read_metrics", "widget_bars"]

OUT = ROOT / "docs" / "dashboard.svg"


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None  # None: no source in a local run
    share: bool = False


def read_metrics(lines: Iterable[str]) -> dict[MetricSeries, float]:
    """Sums of every EMF metric in ``lines`` (other lines are skipped)."""
    return read_emf(lines)


def dashboard_widgets() -> list[dict[str, Any]]:
    return cloudwatch_rules.dashboard_widgets(load_template())


def _search(expression: str, sums: Mapping[MetricSeries, float]) -> dict[str, float]:
    """A SEARCH expression as its series: the values of its schema's dimensions (service left
    out, every panel's metrics carry it) -> the sum of the metrics it matches."""
    query = SearchQuery.parse(expression)
    found: dict[str, float] = defaultdict(float)
    for series, value in sums.items():
        if query.matches(series):
            named = dict(series.dimensions)
            found[" ".join(named[d] for d in sorted(query.schema) if d != "service")] += value
    return dict(found)


def widget_bars(widget: dict[str, Any], sums: Mapping[MetricSeries, float]) -> list[Bar]:
    if widget["type"] == "log":
        return [Bar("CloudWatch Logs Insights over the API's access log", None)]
    bars: list[Bar] = []
    values: dict[str, float] = {}
    for metric, expression, options in widget_rows(widget):
        visible = options.get("visible", True)
        if expression is not None:
            label = str(options.get("label") or options.get("id") or "")
            if "SEARCH(" in expression:
                series = _search(expression, sums)
                local = not SearchQuery.parse(expression).namespace.startswith("AWS/")
                if expression.startswith("SUM("):
                    values[options.get("id", "")] = sum(series.values())
                    if visible:
                        bars.append(Bar(label, sum(series.values()) if local else None))
                elif visible and not local:  # a search of AWS's own metrics
                    bars.append(Bar(label, None))
                elif visible:
                    bars += [Bar(f"{label}: {name}", value) for name, value in sorted(series.items())]
                    if not series:  # CloudWatch draws nothing for it either
                        bars.append(Bar(f"{label}: no metric matches", 0.0))
                continue
            result = evaluate(expression, values)
            if visible:
                bars.append(Bar(label, result, share="1 - " in expression))
            continue
        assert metric is not None
        label = options.get("label", metric.name)
        if metric.namespace.startswith("AWS/"):
            if visible:
                bars.append(Bar(f"{label} ({metric.namespace})", None))
            continue
        value = sum(v for series, v in sums.items() if metric.matches(series))
        if "id" in options:
            values[options["id"]] = value
        if visible:
            bars.append(Bar(label, value))
    return bars


def draw(widgets: list[dict[str, Any]], sums: Mapping[MetricSeries, float], source: str) -> str:
    width, panel_h, columns = 1200, 250, 2
    rows = (len(widgets) + columns - 1) // columns
    height = 60 + rows * (panel_h + 20)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#f7f7f7"/>',
        f'<text x="20" y="30" font-size="18" font-weight="bold">OperationsDashboard, from {escape_text(source)}</text>',
    ]
    panel_w = (width - 60) // columns
    for index, widget in enumerate(widgets):
        x = 20 + (index % columns) * (panel_w + 20)
        y = 50 + (index // columns) * (panel_h + 20)
        parts.append(f'<rect x="{x}" y="{y}" width="{panel_w}" height="{panel_h}" fill="white" stroke="#ccc"/>')
        title = widget["properties"].get("title", "")
        parts.append(f'<text x="{x + 10}" y="{y + 22}" font-size="14" font-weight="bold">{escape_text(title)}</text>')
        bars = widget_bars(widget, sums)
        counts = [bar.value for bar in bars if bar.value is not None and not bar.share]
        top = max(counts, default=0.0) or 1.0
        row_h = min(24.0, (panel_h - 40) / max(1, len(bars)))
        for position, bar in enumerate(bars):
            by = y + 36 + position * row_h
            parts.append(f'<text x="{x + 10}" y="{by + row_h * 0.7:.1f}">{escape_text(bar.label[:58])}</text>')
            if bar.value is None:
                note = "no source in a local run"
                parts.append(f'<text x="{x + 360}" y="{by + row_h * 0.7:.1f}" fill="#999">{note}</text>')
                continue
            share = bar.value if bar.share else bar.value / top
            length = max(0.0, min(1.0, share)) * (panel_w - 460)
            colour = "#2e7d32" if bar.share else "#1565c0"
            parts.append(
                f'<rect x="{x + 360}" y="{by + 3:.1f}" width="{length:.1f}" height="{row_h - 6:.1f}" fill="{colour}"/>'
            )
            text = f"{bar.value:.0%}" if bar.share else _number(bar.value)
            parts.append(f'<text x="{x + 366 + length:.1f}" y="{by + row_h * 0.7:.1f}">{text}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def escape_text(text: str) -> str:
    return escape(text, quote=False)


def _number(value: float) -> str:
    return f"{value:,.2f}" if 0 < abs(value) < 10 and value != int(value) else f"{value:,.0f}"


def demo_log() -> list[str]:
    """The EMF lines of one ``make demo`` run (its functions' logs, with --verbose on stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "devtools.demo", "--verbose"], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return done.stderr.splitlines() + done.stdout.splitlines()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, help="a log with EMF lines (default: run the demo)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    lines = args.log.read_text(encoding="utf-8").splitlines() if args.log else demo_log()
    sums = read_metrics(lines)
    source = f"{args.log.name}" if args.log else "one `make demo` run's metrics (EMF lines)"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(draw(dashboard_widgets(), sums, source), encoding="utf-8")
    print(f"wrote {args.out} from {sum(1 for _ in sums)} metric series")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
