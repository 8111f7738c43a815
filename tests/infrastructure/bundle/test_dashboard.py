"""The operator's dashboard (template OperationsDashboard) shows metrics the product emits, and its
picture in the README is drawn from those metrics' EMF lines (``devtools.dashboard_picture``)."""

from __future__ import annotations

import json
import re

from devtools.dashboard_picture import Bar, dashboard_widgets, evaluate, read_metrics, widget_bars
from devtools.template import ROOT

EMITTED = {
    match
    for path in [*ROOT.glob("functions/*/app.py"), *ROOT.glob("layers/common/python/lambda_agents/**/*.py")]
    for match in re.findall(
        r'"([A-Z][A-Za-z]{3,})"', path.read_text(encoding="utf-8")
    )  # quoted CamelCase: metric names
}


def emf(service: str, **metrics: float) -> str:
    directive = {"Namespace": "LambdaAgents", "Dimensions": [["service"]], "Metrics": [{"Name": n} for n in metrics]}
    return json.dumps({"_aws": {"Timestamp": 0, "CloudWatchMetrics": [directive]}, "service": service, **metrics})


def test_every_product_metric_the_dashboard_shows_is_one_the_functions_emit() -> None:
    shown = set()
    for widget in dashboard_widgets():
        for row in widget["properties"].get("metrics", []):
            if row[0] == "LambdaAgents":
                shown.add(row[1])
            elif isinstance(row[0], dict):
                shown.update(re.findall(r'MetricName=\\?"(\w+)', row[0]["expression"]))
    assert shown and shown - {"Throttles", "Errors"} <= EMITTED


def test_the_dashboard_covers_what_an_operator_asks_first() -> None:
    titles = " / ".join(widget["properties"]["title"] for widget in dashboard_widgets())
    for topic in ("made by a model", "by cause", "Tokens and estimated cost", "p50 / p95", "Throttles", "fan-out"):
        assert topic in titles


def test_a_local_runs_emf_lines_are_summed_per_metric_and_the_share_is_computed_from_them() -> None:
    lines = [emf("chat", ChatMessages=1, ChatFallbacks=0)] * 3 + [emf("chat", ChatMessages=1, ChatFallbacks=1)]
    sums = read_metrics(["a plain log line", *lines])
    [share_widget] = [w for w in dashboard_widgets() if w["properties"]["title"].startswith("Share")]

    bars = {bar.label: bar for bar in widget_bars(share_widget, sums)}

    assert bars["chat"] == Bar("chat", 0.75, share=True)
    assert bars["nudges"].value is None  # no nudge metrics in these lines: no share to show


def test_metric_math_is_evaluated_on_the_sums_only() -> None:
    assert evaluate("1 - a / b", {"a": 1, "b": 4}) == 0.75
    assert evaluate("1 - a / b", {"a": 1, "b": 0}) is None
    assert evaluate("__import__('os')", {}) is None
