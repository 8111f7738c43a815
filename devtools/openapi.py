"""The bundle's OpenAPI document, merged from every API function's Powertools resolver.

``python -m devtools.openapi > openapi.json`` prints it; the contract tests run schemathesis
against the local runner's API with it. A handler module publishes its resolver as ``app``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

from lambda_agents.api.resolver import openapi_document

from .template import resources_of_type

TITLE = "Lambda Agents API"


def api_functions() -> dict[str, str]:
    """Logical ID -> handler module, for functions with an Api event."""
    found = {}
    for logical_id, body in resources_of_type("AWS::Serverless::Function").items():
        events = body["Properties"].get("Events", {})
        if any(event.get("Type") == "Api" for event in events.values()):
            found[logical_id] = str(body["Properties"]["CodeUri"]).strip("/").replace("/", ".") + ".app"
    return found


def merged_document(environment: dict[str, str] | None = None) -> dict[str, Any]:
    os.environ.update(environment or {})
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": "1"},
        "paths": {},
        "components": {"schemas": {}},
    }
    for module_name in api_functions().values():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue  # a declared function whose handler is not written yet
        part = openapi_document(module.app, TITLE)
        document["paths"].update(part.get("paths", {}))
        document["components"]["schemas"].update(part.get("components", {}).get("schemas", {}))
    return document


def main() -> None:
    json.dump(merged_document(), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
