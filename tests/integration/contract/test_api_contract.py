"""Bad input: schemathesis drives every route of the bundle's OpenAPI document (merged
from the functions' Powertools resolvers) through the local runner's HTTP server on 127.0.0.1.

For every generated request, valid and invalid alike: no 5xx, and every answer is one the document
declares (status code, content type and body schema); invalid data is never accepted. The runner
supplies a user and an admin identity through its local-only headers, so the handlers' own
validation is what gets exercised.

Excluded: ``positive_data_acceptance``. Some rules cannot be written in JSON Schema (a judge whose
rules are all interactive-only in a non-interactive run, a step depending on a later step, a
session that is not the caller's), so a schema-valid request may rightly get a 400 / 404 that
names the problem; every other check runs. The document's security schemes (a Cognito token or a
SigV4 signature in ``Authorization``) are API Gateway's to check before a function runs, and the runner
stands for it with its local headers, so the schema given to schemathesis leaves them out (test_access.py
checks the 401 of every route without identity).

Also excluded: ``unsupported_method``. API Gateway answers a method a resource does not declare
with its 403 MISSING_AUTHENTICATION_TOKEN (the template's gateway response), which schemathesis
accepts from an operation that declares security; with the security taken out of the document
above it would ask the runner for a 405 that API Gateway never gives
(tests/tooling/runner/test_gateway_responses.py checks the 403).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance
from schemathesis.specs.openapi.checks import unsupported_method

from devtools.openapi import merged_document
from tests.support.served_runner import served_offline, stage_url

pytestmark = pytest.mark.integration

IDENTITY = {"X-Local-User": "contract-user", "X-Local-Admin": "contract-admin"}
# CONTRACT_EXAMPLES raises the count for a deeper local run; CI keeps the default, derandomized so
# a run is reproducible (a failure prints the request to replay with curl).
EXAMPLES_PER_OPERATION = int(os.environ.get("CONTRACT_EXAMPLES", "30"))


def _document() -> dict[str, Any]:
    document = merged_document()  # imports every handler in its own environment, then restores os.environ
    document["components"].pop("securitySchemes", None)
    for operations in document["paths"].values():
        for operation in operations.values():
            operation.pop("security", None)
    return document


schema = schemathesis.openapi.from_dict(_document())


@pytest.fixture(scope="module")
def api_base_url() -> Iterator[str]:
    with served_offline() as root:
        yield stage_url(root)  # the routes as a deployed client calls them


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=os.environ.get("CONTRACT_RANDOM") is None,
    suppress_health_check=list(HealthCheck),
)
def test_every_generated_request_gets_a_declared_non_5xx_answer(case: Any, api_base_url: str) -> None:
    case.call_and_validate(
        base_url=api_base_url, headers=IDENTITY, excluded_checks=[positive_data_acceptance, unsupported_method]
    )
