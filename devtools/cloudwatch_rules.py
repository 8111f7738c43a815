"""CloudWatch's rules where the product meets CloudWatch: the metrics EMF lines make, and which of
them a dashboard query or an alarm's metric matches (the dashboard's picture draws with them).

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


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
