"""CloudWatch's rules where the product meets CloudWatch: which metrics a dashboard query or an
alarm names, and whether the functions emit any of them.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True, order=True)
class MetricSeries:
    """One CloudWatch metric: namespace, name and its dimensions (name -> value), sorted."""

    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...] = ()

    @property
    def dimension_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.dimensions)

    def value(self, dimension: str) -> str | None:
        return dict(self.dimensions).get(dimension)


def series_of(document: Mapping[str, Any]) -> Iterator[tuple[MetricSeries, float]]:
    """The metrics one EMF document makes, each with the sum of its values in the document."""
    for directive in document.get("_aws", {}).get("CloudWatchMetrics", []):
        namespace = str(directive.get("Namespace"))
        for dimension_set in directive.get("Dimensions") or [[]]:
            dimensions = tuple(sorted((name, str(document.get(name))) for name in dimension_set))
            for metric in directive.get("Metrics", []):
                values = document.get(metric["Name"])
                values = values if isinstance(values, list) else [values]
                total = sum(float(v) for v in values if isinstance(v, (int, float)))
                yield MetricSeries(namespace, str(metric["Name"]), dimensions), total


def emf_documents(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The EMF documents among log lines (a line may carry a prefix; other lines are skipped)."""
    for line in lines:
        if '"_aws"' not in line:
            continue
        try:
            document = json.loads(line[line.index("{") :])
        except ValueError:
            continue
        if isinstance(document, dict) and isinstance(document.get("_aws"), dict):
            yield document


def read_emf(lines: Iterable[str]) -> dict[MetricSeries, float]:
    """Every metric the EMF lines among ``lines`` make, with the sum of its values."""
    sums: dict[MetricSeries, float] = defaultdict(float)
    for document in emf_documents(lines):
        for series, value in series_of(document):
            sums[series] += value
    return dict(sums)


# -- queries ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricQuery:
    """A dashboard metric row or an alarm's metric: matches one metric exactly."""

    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...]

    def matches(self, series: MetricSeries) -> bool:
        return (series.namespace, series.name, series.dimensions) == (
            self.namespace,
            self.name,
            tuple(sorted(self.dimensions)),
        )

    def describe(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in sorted(self.dimensions))
        return f"{self.namespace} {self.name} {{{dims}}}"


@dataclass(frozen=True)
class SearchQuery:
    """``SEARCH('{Namespace,dim,...} MetricName="X" Key="v" term', ...)`` (CloudWatch search syntax)."""

    namespace: str
    schema: frozenset[str]
    metric: str | None
    equals: tuple[tuple[str, str], ...]
    terms: tuple[str, ...]
    text: str

    @classmethod
    def parse(cls, expression: str) -> SearchQuery:
        found = re.search(r"SEARCH\(\s*'((?:[^'\\]|\\.)*)'", expression)
        if found is None:
            raise ValueError(f"not a SEARCH expression: {expression}")
        text = found.group(1).replace('\\"', '"')
        schema = re.match(r"\s*\{([^}]*)\}", text)
        if schema is None:
            raise ValueError(f"a SEARCH without a schema {{Namespace,dimensions}} matches any metric: {text}")
        namespace, *dimensions = [part.strip() for part in schema.group(1).split(",")]
        rest = text[schema.end() :]
        pairs = re.findall(r'(\w+)="([^"]*)"', rest)
        terms = re.sub(r'\w+="[^"]*"', " ", rest).split()
        metric = next((value for key, value in pairs if key == "MetricName"), None)
        equals = tuple((key, value) for key, value in pairs if key != "MetricName")
        return cls(namespace.strip('"'), frozenset(dimensions), metric, equals, tuple(terms), text)

    def matches(self, series: MetricSeries) -> bool:
        if series.namespace != self.namespace or series.dimension_names != self.schema:
            return False
        if self.metric is not None and series.name != self.metric:
            return False
        if any(series.value(key) != value for key, value in self.equals):
            return False
        searched = [series.name, *(value for _, value in series.dimensions)]
        return all(any(term in text for text in searched) for term in self.terms)


def math_ids(expression: str) -> set[str]:
    """The ids a metric math expression refers to (string literals and function names left out)."""
    without_strings = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", " ", expression)
    without_functions = _MATH_FUNCTIONS.sub(" ", without_strings)
    return set(_MATH_ID.findall(without_functions))


_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def evaluate(expression: str, values: Mapping[str, float]) -> float | None:
    """Metric math of + - * / and FILL(id, number) over ids and numbers, on one value per id (a
    local run's sums); None when an id is unknown or a divisor 0."""

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](walk(node.left), walk(node.right)))
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "FILL":
            series, fill = node.args
            return values[series.id] if isinstance(series, ast.Name) and series.id in values else walk(fill)
        raise ValueError(ast.dump(node))

    try:
        return walk(ast.parse(expression, mode="eval").body)
    except (ValueError, ZeroDivisionError, SyntaxError):
        return None


# -- the template's queries --------------------------------------------------------------------------


def placeholder(value: Any) -> str:
    """A template value as one comparable string: ``!Ref X`` -> ``${X}``, ``!GetAtt X.A`` ->
    ``${X.A}``, ``!Sub s`` -> ``s``; CloudFormation resolves them alike at deployment."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return f"${{{value['Ref']}}}"
    if isinstance(value, dict) and set(value) == {"Fn::GetAtt"}:
        target = value["Fn::GetAtt"]
        return "${" + (".".join(target) if isinstance(target, list) else str(target)) + "}"
    if isinstance(value, dict) and set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
        return str(value["Fn::Sub"])
    raise ValueError(f"cannot compare the template value {value!r}")


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


def dashboard_widgets(template: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The widgets of every dashboard in the template, ``${...}`` left as written."""
    widgets = []
    for body in template["Resources"].values():
        if body["Type"] != "AWS::CloudWatch::Dashboard":
            continue
        text = placeholder(body["Properties"]["DashboardBody"])
        widgets.extend(json.loads(text)["widgets"])
    return widgets


def widget_rows(widget: Mapping[str, Any]) -> Iterator[tuple[MetricQuery | None, str | None, dict[str, Any]]]:
    """A metric widget's rows as (metric query, math expression, options): one of the two is None."""
    for row in widget["properties"].get("metrics", []):
        options = dict(row[-1]) if isinstance(row[-1], dict) else {}
        if "expression" in options:
            yield None, str(options["expression"]), options
            continue
        namespace, name, *rest = [part for part in row if not isinstance(part, dict)]
        if namespace == "." or name == "." or "." in rest or len(rest) % 2:
            raise ValueError(f"a metric row this checker does not read (write it out in full): {row}")
        yield MetricQuery(namespace, name, tuple(zip(rest[::2], rest[1::2], strict=True))), None, options


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
