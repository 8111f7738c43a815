"""Reads template.yaml so local tools and tests use the infrastructure as declared.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .language_extensions import expand

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_PATH = ROOT / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that keeps CloudFormation short-form tags as {"Fn": value} mappings."""


def _construct_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_tag)


def read_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template as written: loops and mappings as they stand in the file."""
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = yaml.load(handle, Loader=_CfnLoader)  # a SafeLoader subclass
    return data


@lru_cache(maxsize=4)
def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template after AWS::LanguageExtensions, as the SAM transform receives it (cached and
    shared: a caller that changes it works on a copy)."""
    return expand(read_template(path))


def resources_of_type(resource_type: str, template: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    resources = (template or load_template())["Resources"]
    return {name: body for name, body in resources.items() if body["Type"] == resource_type}


def local_table_name(logical_id: str) -> str:
    """Locally a table is named after its logical ID, which is what !Ref resolves to."""
    return logical_id


def create_tables(
    client: Any, logical_ids: list[str] | None = None, template: dict[str, Any] | None = None
) -> list[str]:
    """Create the template's tables (all, or the named ones) that do not exist yet."""
    existing = set(client.list_tables().get("TableNames", []))
    created = []
    for logical_id, body in resources_of_type("AWS::DynamoDB::Table", template).items():
        if logical_ids is not None and logical_id not in logical_ids:
            continue
        name = local_table_name(logical_id)
        if name in existing:
            continue
        props = body["Properties"]
        kwargs: dict[str, Any] = {
            "TableName": name,
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if props.get("GlobalSecondaryIndexes"):
            kwargs["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        client.create_table(**kwargs)
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            client.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        created.append(name)
    return created
