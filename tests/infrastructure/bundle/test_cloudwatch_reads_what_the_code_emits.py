"""Every alarm and every dashboard query of template.yaml names a metric that exists, by
CloudWatch's rules (``devtools.cloudwatch_rules``, read over the template by
``tests.support.cloudwatch_queries``): a metric row, an alarm's metric and a SEARCH schema name a
whole dimension set, ``service`` (which Powertools adds to every metric) included;
metric math names only ids it defines; AWS's namespaces have the dimensions AWS documents.

Against what the functions emit: ``tests/support/emitted_metrics.json``, the metrics of every EMF
line the handlers printed in the integration and tooling suites, each run with its function's
environment as in Lambda (``tests/support/emf_capture.py`` keeps it exact). Three panels
named ``{LambdaAgents,cause}``, ``{LambdaAgents,reason}`` and ``{LambdaAgents,model}``, which no
line carries, and a picture that matched loosely drew them full."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from typing import Any

import pytest
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from devtools.cloudwatch_rules import MetricQuery, MetricSeries, SearchQuery, read_emf
from devtools.template import load_template
from tests.support.cloudwatch_queries import aws_query_problem, math_ids, template_queries, unmatched
from tests.support.emf_capture import findings, function_services, read_catalog, template_namespace

EMITTED = read_catalog()


@pytest.fixture
def a_function_environment() -> Iterator[None]:
    """POWERTOOLS_SERVICE_NAME and the namespace as Lambda gives them to the generator."""
    saved = {name: os.environ.get(name) for name in ("POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE")}
    os.environ.update({"POWERTOOLS_SERVICE_NAME": "nudge-generator", "POWERTOOLS_METRICS_NAMESPACE": "LambdaAgents"})
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def test_every_alarm_and_every_panel_names_a_metric_the_functions_emit() -> None:
    assert unmatched(load_template(), EMITTED) == []


def test_the_queries_read_are_every_alarm_and_every_metric_panel_row() -> None:
    template = load_template()
    alarms = {name for name, body in template["Resources"].items() if body["Type"] == "AWS::CloudWatch::Alarm"}
    where = {found.where.split(" ")[0] for found in template_queries(template) if not isinstance(found, str)}
    assert alarms <= where  # no alarm skipped
    assert any(found.where.startswith("panel") for found in template_queries(template) if not isinstance(found, str))


def test_what_the_tests_saw_is_what_powertools_prints_in_lambda() -> None:
    # Every metric carries its function's service, in the template's namespace: the catalog is
    # CloudWatch's view of the functions, not of a test process.
    services = set(function_services().values())
    assert EMITTED
    assert {series.namespace for series in EMITTED} == {template_namespace()}
    assert all(series.value("service") in services for series in EMITTED)
    # the dimension sets a deployment review named, as the code emits them
    sets = {(series.name, series.dimension_names) for series in EMITTED}
    for name, dimension in (
        ("NudgeFallbacksByCause", "cause"),
        ("NudgeBatchAnswersUnusable", "reason"),
        ("ModelBreakerOpened", "model"),
    ):
        assert (name, frozenset({dimension, "service"})) in sets
        assert (name, frozenset({dimension})) not in sets


def test_a_search_schema_without_service_matches_nothing_powertools_prints(
    a_function_environment: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with single_metric(name="NudgeFallbacksByCause", unit=MetricUnit.Count, value=1) as metric:
        metric.add_dimension(name="cause", value="refusal")
    (printed,) = read_emf(capsys.readouterr().out.splitlines())

    assert printed.dimension_names == {"cause", "service"}  # Powertools added the service
    assert not SearchQuery.parse("SEARCH('{LambdaAgents,cause} MetricName=\"NudgeFallbacksByCause\"')").matches(printed)
    schema = "SEARCH('{LambdaAgents,cause,service} MetricName=\"NudgeFallbacksByCause\"', 'Sum', 300)"
    assert SearchQuery.parse(schema).matches(printed)
    assert not SearchQuery.parse(schema.replace("NudgeFallbacksByCause", "NudgeFallbacks")).matches(printed)


def test_a_metric_row_or_an_alarm_matches_its_whole_dimension_set_only() -> None:
    series = MetricSeries("LambdaAgents", "Judgments", (("method", "tag_fallback"), ("service", "status-judge")))
    assert MetricQuery("LambdaAgents", "Judgments", (("service", "status-judge"), ("method", "tag_fallback"))).matches(
        series
    )
    assert not MetricQuery("LambdaAgents", "Judgments", (("service", "status-judge"),)).matches(series)
    assert not MetricQuery("LambdaAgentsTest", "Judgments", series.dimensions).matches(series)
    assert not MetricQuery("LambdaAgents", "Judgments", (("method", "tag_fallback"), ("service", "chat"))).matches(
        series
    )


def test_a_search_term_and_a_key_value_narrow_what_the_schema_matches() -> None:
    series = MetricSeries("AWS/Lambda", "Errors", (("FunctionName", "prod-ChatFunction-1X2Y"),))
    assert SearchQuery.parse("SEARCH('{AWS/Lambda,FunctionName} MetricName=\"Errors\" prod', 'Sum', 300)").matches(
        series
    )
    assert not SearchQuery.parse("SEARCH('{AWS/Lambda,FunctionName} MetricName=\"Errors\" staging')").matches(series)
    assert not SearchQuery.parse("SEARCH('{AWS/Lambda,FunctionName} FunctionName=\"other\"')").matches(series)
    with pytest.raises(ValueError, match="without a schema"):
        SearchQuery.parse("SEARCH('MetricName=\"Errors\"', 'Sum', 300)")


def _alarm(template: dict[str, Any], **properties: Any) -> dict[str, Any]:
    changed = copy.deepcopy(template)
    changed["Resources"]["ProbeAlarm"] = {"Type": "AWS::CloudWatch::Alarm", "Properties": properties}
    return changed


@pytest.mark.parametrize(
    ("namespace", "metric", "dimensions", "why"),
    [
        ("AWS/Lambda", "Errors", [{"Name": "FunctionName", "Value": {"Ref": "ChatTable"}}], "not a function"),
        ("AWS/Lambda", "Errors", [{"Name": "function", "Value": {"Ref": "ChatFunction"}}], "exactly the dimensions"),
        ("AWS/SQS", "ApproximateAgeOfOldestMessage", [{"Name": "QueueName", "Value": {"Ref": "NudgeQueue"}}], "not a"),
        (
            "AWS/SQS",
            "OldestMessage",
            [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["NudgeQueue", "QueueName"]}}],
            "no metric",
        ),
        ("AWS/ApiGateway", "5XXError", [{"Name": "ApiName", "Value": "agents"}], "names no API"),
        ("LambdaAgents", "ChatTokens", [{"Name": "service", "Value": "chat-answers"}], "matches no metric"),
        ("LambdaAgents", "ChatTokens", [], "matches no metric"),
    ],
)
def test_an_alarm_on_a_metric_nobody_emits_is_found(
    namespace: str, metric: str, dimensions: list[dict[str, Any]], why: str
) -> None:
    probe = _alarm(load_template(), Namespace=namespace, MetricName=metric, Dimensions=dimensions)
    problems = [problem for problem in unmatched(probe, EMITTED) if problem.startswith("ProbeAlarm")]
    assert len(problems) == 1 and why in problems[0], problems


def test_the_aws_metrics_the_alarms_watch_are_named_as_aws_emits_them() -> None:
    template = load_template()
    aws = [f for f in template_queries(template) if not isinstance(f, str) and f.query.namespace.startswith("AWS/")]
    assert {f.query.namespace for f in aws} == {"AWS/Lambda", "AWS/SQS", "AWS/ApiGateway"}
    assert [f.where for f in aws if aws_query_problem(template, f.query)] == []


def test_metric_math_names_only_ids_it_defines() -> None:
    assert math_ids("IF(messages >= 10, fallbacks / messages, 0)") == {"messages", "fallbacks"}
    assert math_ids("SUM(SEARCH('{LambdaAgents,method,service} MetricName=\"Judgments\"', 'Sum', 300))") == set()
    assert math_ids("(FILL(chatTokens, 0) + judgeTokens) * 5 / 1000000") == {"chatTokens", "judgeTokens"}
    probe = _alarm(
        load_template(),
        Metrics=[
            {
                "Id": "fallbacks",
                "ReturnData": False,
                "MetricStat": {
                    "Metric": {
                        "Namespace": "LambdaAgents",
                        "MetricName": "ChatFallbacks",
                        "Dimensions": [{"Name": "service", "Value": "chat"}],
                    }
                },
            },
            {"Id": "share", "Expression": "fallbacks / messages", "ReturnData": True},
        ],
    )
    problems = [problem for problem in unmatched(probe, EMITTED) if problem.startswith("ProbeAlarm")]
    assert problems == ["ProbeAlarm share: the expression names ids no metric of the alarm has: ['messages']"]


def test_after_a_full_run_the_template_is_held_to_what_that_run_emitted_not_to_the_list() -> None:
    # The list says the generator emits NudgeFallbacksByCause by cause; the code stopped (this
    # run's handlers never printed it): the panel's SEARCH matches nothing, and the session fails.
    template = load_template()
    seen = {series for series in EMITTED if series.name != "NudgeFallbacksByCause"}

    problems, notes = findings(seen, EMITTED, complete=True, template=template)

    assert len(problems) == 2 and "NudgeFallbacksByCause" in problems[0]
    assert any(note.startswith("listed, not emitted in this run") for note in notes)
    # a partial run proves nothing about what the code no longer emits: notes only
    assert findings(seen, EMITTED, complete=False, template=template) == ([], [])
    # what this run emitted beyond the list is noted for the list, not failed
    extra = MetricSeries("LambdaAgents", "NewMetric", (("service", "chat"),))
    assert findings(EMITTED | {extra}, EMITTED, complete=True, template=template)[0] == []
