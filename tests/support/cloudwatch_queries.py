"""Which of the template's alarm metrics and dashboard queries match nothing: of the product's
namespaces against the metrics the functions emit, of AWS's against the dimension sets AWS
documents for them (docs/local.md, "CloudWatch's rules"). Matching one query is
``devtools.cloudwatch_rules``, which the dashboard's picture draws with too; reading every query of
the template and judging AWS's is what only the tests do, so it lives with them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from devtools.cloudwatch_rules import (
    MetricQuery,
    MetricSeries,
    SearchQuery,
    dashboard_widgets,
    placeholder,
    widget_rows,
)

# Dimension sets AWS documents for the metrics of its own namespaces (each service's "CloudWatch
# metrics" page); a query on any other set of them matches nothing.
AWS_DIMENSION_SETS: dict[str, set[frozenset[str]]] = {
    "AWS/Lambda": {
        frozenset(),
        frozenset({"FunctionName"}),
        frozenset({"FunctionName", "Resource"}),
        frozenset({"FunctionName", "Resource", "ExecutedVersion"}),
    },
    "AWS/SQS": {frozenset({"QueueName"})},
    "AWS/ApiGateway": {
        frozenset({"ApiName"}),
        frozenset({"ApiName", "Stage"}),
        frozenset({"ApiName", "Method", "Resource", "Stage"}),
        frozenset({"ApiId", "Stage"}),  # a WebSocket API's
        frozenset({"ApiId", "Stage", "Route"}),
    },
    "AWS/DynamoDB": {
        frozenset({"TableName"}),
        frozenset({"TableName", "Operation"}),
        frozenset({"TableName", "GlobalSecondaryIndexName"}),
    },
}
AWS_METRICS: dict[str, set[str]] = {
    "AWS/Lambda": {"Errors", "Throttles", "Invocations", "Duration", "ConcurrentExecutions", "AsyncEventAge"},
    "AWS/SQS": {
        "ApproximateAgeOfOldestMessage",
        "ApproximateNumberOfMessagesVisible",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
        "NumberOfMessagesSent",
        "NumberOfMessagesReceived",
        "NumberOfMessagesDeleted",
    },
    "AWS/ApiGateway": {
        *("4XXError", "5XXError", "Count", "Latency", "IntegrationLatency"),
        *("ConnectCount", "MessageCount", "IntegrationError", "ClientError", "ExecutionError"),  # WebSocket
    },
    "AWS/DynamoDB": {
        "ThrottledRequests",
        "ReadThrottleEvents",
        "WriteThrottleEvents",
        "SystemErrors",
        "UserErrors",
        "ConsumedReadCapacityUnits",
        "ConsumedWriteCapacityUnits",
        "SuccessfulRequestLatency",
    },
}
# The resource type a dimension of an AWS namespace names, and the reference that names it.
_FUNCTION_TYPES = ("AWS::Serverless::Function", "AWS::Lambda::Function")
_MATH_FUNCTIONS = re.compile(r"\b[A-Z][A-Z_0-9]*\s*\(")
_MATH_ID = re.compile(r"\b[a-z][A-Za-z0-9_]*\b")


def math_ids(expression: str) -> set[str]:
    """The ids a metric math expression refers to (string literals and function names left out)."""
    without_strings = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", " ", expression)
    without_functions = _MATH_FUNCTIONS.sub(" ", without_strings)
    return set(_MATH_ID.findall(without_functions))


@dataclass(frozen=True)
class Query:
    """One query of the template: where it is (``where``) and what it asks."""

    where: str
    query: MetricQuery | SearchQuery


def _alarm_queries(name: str, properties: Mapping[str, Any]) -> Iterator[Query | str]:
    """An alarm's metrics (single or metric math); a problem is yielded as a string."""
    if "MetricName" in properties:
        dimensions = tuple((d["Name"], placeholder(d["Value"])) for d in properties.get("Dimensions", []))
        yield Query(name, MetricQuery(properties["Namespace"], properties["MetricName"], dimensions))
        return
    ids = {entry["Id"] for entry in properties.get("Metrics", [])}
    for entry in properties.get("Metrics", []):
        if "MetricStat" in entry:
            metric = entry["MetricStat"]["Metric"]
            dimensions = tuple((d["Name"], placeholder(d["Value"])) for d in metric.get("Dimensions", []))
            query = MetricQuery(metric["Namespace"], metric["MetricName"], dimensions)
            yield Query(f"{name} {entry['Id']}", query)
        elif "Expression" in entry:
            expression = str(entry["Expression"])
            if "SEARCH(" in expression:
                yield Query(f"{name} {entry['Id']}", SearchQuery.parse(expression))
            unknown = math_ids(expression) - ids
            if unknown:
                yield f"{name} {entry['Id']}: the expression names ids no metric of the alarm has: {sorted(unknown)}"


def _widget_queries(widget: Mapping[str, Any]) -> Iterator[Query | str]:
    title = widget["properties"].get("title", "?")
    if widget["type"] != "metric":
        return
    rows = list(widget_rows(widget))
    ids = {options["id"] for _, _, options in rows if "id" in options}
    for metric, expression, options in rows:
        where = f"panel '{title}' {options.get('id') or options.get('label') or ''}".rstrip()
        if metric is not None:
            yield Query(where, metric)
            continue
        assert expression is not None
        if "SEARCH(" in expression:
            yield Query(where, SearchQuery.parse(expression))
            continue
        unknown = math_ids(expression) - ids
        if unknown:
            yield f"{where}: the expression names ids the panel does not define: {sorted(unknown)}"


def template_queries(template: Mapping[str, Any]) -> list[Query | str]:
    """Every alarm's and every dashboard panel's query (and each problem found reading them)."""
    found: list[Query | str] = []
    for name, body in sorted(template["Resources"].items()):
        if body["Type"] == "AWS::CloudWatch::Alarm":
            found.extend(_alarm_queries(name, body["Properties"]))
    for widget in dashboard_widgets(template):
        found.extend(_widget_queries(widget))
    return found


def _aws_dimension_problem(template: Mapping[str, Any], dimension: str, value: str) -> str | None:
    """Why ``dimension=value`` of an AWS namespace names no resource of the stack, else None."""
    resources = template["Resources"]

    def kind(logical_id: str) -> str | None:
        found = resources.get(logical_id, {}).get("Type")
        return str(found) if found is not None else None

    reference = re.fullmatch(r"\$\{([A-Za-z0-9]+)(?:\.([A-Za-z]+))?\}", value)
    if dimension == "FunctionName":
        if reference is None or reference.group(2) or kind(reference.group(1)) not in _FUNCTION_TYPES:
            return f"FunctionName={value} is not a function's !Ref"
    elif dimension == "QueueName":
        if reference is None or reference.group(2) != "QueueName" or kind(reference.group(1)) != "AWS::SQS::Queue":
            return f"QueueName={value} is not a queue's QueueName"
    elif dimension == "TableName":
        if reference is None or reference.group(2) or kind(reference.group(1)) != "AWS::DynamoDB::Table":
            return f"TableName={value} is not a table's !Ref"
    elif dimension == "ApiId":
        if reference is None or reference.group(2) or kind(reference.group(1)) != "AWS::ApiGatewayV2::Api":
            return f"ApiId={value} is not a WebSocket API's !Ref"
    elif dimension in ("ApiName", "Stage"):
        apis = [b["Properties"] for b in resources.values() if b["Type"] == "AWS::Serverless::Api"]
        names = {placeholder(api.get("Name")) if api.get("Name") else "" for api in apis}
        stages = {str(api.get("StageName")) for api in apis}
        stages |= {
            str(b["Properties"].get("StageName")) for b in resources.values() if b["Type"] == "AWS::ApiGatewayV2::Stage"
        }
        if value not in (names if dimension == "ApiName" else stages):
            return f"{dimension}={value} names no API (or stage) of the template"
    return None


def aws_query_problem(template: Mapping[str, Any], query: MetricQuery | SearchQuery) -> str | None:
    """Why a query of an AWS namespace matches nothing AWS emits for this stack, else None."""
    known = AWS_DIMENSION_SETS.get(query.namespace)
    if known is None:
        return f"namespace {query.namespace} is not one this checker knows AWS's dimensions of"
    name = query.name if isinstance(query, MetricQuery) else query.metric
    if name is not None and name not in AWS_METRICS[query.namespace]:
        return f"{query.namespace} has no metric {name}"
    names = frozenset(k for k, _ in query.dimensions) if isinstance(query, MetricQuery) else query.schema
    if names not in known:
        return f"{query.namespace} emits no metric with exactly the dimensions {sorted(names)}"
    pairs = query.dimensions if isinstance(query, MetricQuery) else query.equals
    for dimension, value in pairs:
        problem = _aws_dimension_problem(template, dimension, value)
        if problem:
            return problem
    return None


def unmatched(template: Mapping[str, Any], emitted: Collection[MetricSeries]) -> list[str]:
    """Every alarm metric and dashboard query of ``template`` that matches no metric: of its own
    namespace against ``emitted``, of AWS's against the dimensions AWS documents. Empty: all match."""
    problems = []
    for found in template_queries(template):
        if isinstance(found, str):
            problems.append(found)
            continue
        query = found.query
        if query.namespace.startswith("AWS/"):
            problem = aws_query_problem(template, query)
            if problem:
                problems.append(f"{found.where}: {problem}")
            continue
        if not any(query.matches(series) for series in emitted):
            text = query.describe() if isinstance(query, MetricQuery) else f"SEARCH('{query.text}')"
            problems.append(f"{found.where}: {text} matches no metric the functions emit")
    return problems
