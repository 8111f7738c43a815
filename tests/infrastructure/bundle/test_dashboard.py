"""The operator's dashboard (template OperationsDashboard) shows metrics the product emits, and its
picture in the README is drawn from those metrics' EMF lines (``devtools.dashboard_picture``) by
CloudWatch's matching rules, so what CloudWatch would leave empty is drawn empty."""

from __future__ import annotations

import json
import re

import pytest

from devtools.dashboard_picture import Bar, dashboard_widgets, demo_log, evaluate, read_metrics, widget_bars
from devtools.template import ROOT
from tests.support.emf_capture import catalog_key, function_services, read_catalog

EMITTED = {
    match
    for path in [*ROOT.glob("functions/*/app.py"), *ROOT.glob("layers/common/python/lambda_agents/**/*.py")]
    for match in re.findall(
        r'"([A-Z][A-Za-z]{3,})"', path.read_text(encoding="utf-8")
    )  # quoted CamelCase: metric names
}


def emf(service: str, dimensions: dict[str, str] | None = None, **metrics: float) -> str:
    """An EMF line as Powertools prints it: ``service`` is one of its dimensions, always."""
    names = [*sorted(dimensions or {}), "service"]
    directive = {"Namespace": "LambdaAgents", "Dimensions": [names], "Metrics": [{"Name": n} for n in metrics]}
    document = {"_aws": {"Timestamp": 0, "CloudWatchMetrics": [directive]}, "service": service, **(dimensions or {})}
    return json.dumps({**document, **metrics})


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
    assert evaluate("(FILL(a, 0) + FILL(b, 0)) * 5", {"a": 2}) == 10


def _widget(title: str) -> dict[str, object]:
    (widget,) = [w for w in dashboard_widgets() if w["properties"]["title"].startswith(title)]
    return widget


def test_a_search_is_drawn_from_the_metrics_whose_whole_dimension_set_it_names() -> None:
    lines = [
        emf("nudge-generator", {"cause": "refusal"}, NudgeFallbacksByCause=2),
        emf("nudge-batches", {"reason": "length"}, NudgeBatchAnswersUnusable=1),
        emf("chat", {"model": "gpt-4o"}, ModelBreakerOpened=1),
    ]
    bars = {bar.label: bar.value for bar in widget_bars(_widget("Fallbacks"), read_metrics(lines))}

    assert bars["nudges: refusal"] == 2
    assert bars["batch answers: length"] == 1
    assert bars["breaker opened: gpt-4o"] == 1


def test_a_query_cloudwatch_leaves_empty_is_drawn_empty() -> None:
    # The panel as it was before: schemas without the service every line carries.
    widget = json.loads(
        json.dumps(_widget("Fallbacks")).replace("{LambdaAgents,cause,service}", "{LambdaAgents,cause}")
    )
    lines = [emf("nudge-generator", {"cause": "refusal"}, NudgeFallbacksByCause=2), emf("chat", ChatFallbacks=3)]

    bars = {bar.label: bar.value for bar in widget_bars(widget, read_metrics(lines))}

    assert bars["nudges: no metric matches"] == 0
    assert "nudges: refusal" not in bars
    assert bars["chat fallbacks"] == 3
    # a metric row names its whole dimension set too: a line of another service is not chat's
    other = {bar.label: bar.value for bar in widget_bars(widget, read_metrics([emf("chat-answers", ChatFallbacks=3)]))}
    assert other["chat fallbacks"] == 0


def test_the_cost_counts_every_source_of_tokens_at_the_price_tables_prices() -> None:
    # Each function reports what its calls cost (ModelCostUsd, llm.accounting: input, cached input and
    # output at their own prices, the Batch API at half): the panel sums every service's.
    lines = [
        emf("chat", ChatTokens=1_000_000, CachedInputTokens=400_000, ModelCostUsd=4.5),
        emf("interview", InterviewTokens=1_000_000, CachedInputTokens=0, ModelCostUsd=5.0),
        emf("nudge-generator", NudgeTokens=1_000_000, CachedInputTokens=0, ModelCostUsd=5.0),
        emf("status-judge", JudgeTokens=1_000_000, CachedInputTokens=400_000, ModelCostUsd=4.5),
        emf("nudge-batches", NudgeBatchTokens=2_000_000, ModelCostUsd=5.0),
        # CloudWatch matches whole dimension sets: a cost under another set is not this panel's.
        emf("chat", {"model": "gpt-4o"}, ModelCostUsd=100.0),
    ]
    bars = {bar.label: bar.value for bar in widget_bars(_widget("Tokens"), read_metrics(lines))}

    cost = next(value for label, value in bars.items() if label.startswith("USD at the price table"))
    assert cost == pytest.approx(4.5 + 5.0 + 5.0 + 4.5 + 5.0)
    assert bars["cached input tokens (part of the synchronous ones)"] == 800_000


def test_every_service_that_reports_tokens_reports_their_cost() -> None:
    token_metrics = {"ChatTokens", "InterviewTokens", "NudgeTokens", "JudgeTokens", "NudgeBatchTokens"}
    catalog = json.loads((ROOT / "tests/support/emitted_metrics.json").read_text(encoding="utf-8"))
    spending = {entry["dimensions"]["service"] for entry in catalog if entry["metric"] in token_metrics}
    costed = {entry["dimensions"]["service"] for entry in catalog if entry["metric"] == "ModelCostUsd"}
    assert spending and spending <= costed


@pytest.fixture(scope="module")
def demo_metrics() -> set[object]:
    """The metrics of one `make demo` run's functions: what docs/dashboard.svg is drawn from."""
    services = set(function_services().values())
    emitted = read_metrics(demo_log())
    return {
        catalog_key(series)
        for series in emitted
        if series.namespace == "LambdaAgents" and series.value("service") in services
    }


def test_the_demo_the_picture_is_drawn_from_emits_only_metrics_the_tests_saw(demo_metrics: set[object]) -> None:
    # The picture cannot show a metric the template's queries were not checked against.
    assert demo_metrics
    assert demo_metrics - read_catalog() == set()
