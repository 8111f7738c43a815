"""The budget's refusal and its premises as the deployed stack and its documents state them
(docs/cost.md#a-daily-budget-per-user): the OpenAPI document and docs/api.md name
DAILY_BUDGET_EXCEEDED where a route can answer it, no user can write an attribute into their token
that the product would read, and a reservation's settling time covers the longest turn."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.spending.window import TURN_SETTLES_WITHIN_S

from devtools.openapi import merged_document
from devtools.runner_api import API_GATEWAY_TIMEOUT_S
from devtools.template import ROOT, load_template

SPENDING_ROUTES = {
    ("post", "/ai-agent/sessions/{sessionId}/messages"),
    ("post", "/interviews/{sessionId}/messages"),
    ("post", "/interviews/{sessionId}/fields/{fieldId}/correction"),
}
# Cognito's standard attributes a user may write into their own token when the app client names
# no WriteAttributes (every standard attribute is then writable).
STANDARD_ATTRIBUTES = {
    "address", "birthdate", "email", "family_name", "gender", "given_name", "locale", "middle_name", "name",
    "nickname", "phone_number", "picture", "preferred_username", "profile", "updated_at", "website", "zoneinfo",
}  # fmt: skip


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return merged_document()


@pytest.mark.parametrize(("method", "path"), sorted(SPENDING_ROUTES))
def test_every_route_that_spends_the_users_tokens_documents_the_budgets_429(
    document: dict[str, Any], method: str, path: str
) -> None:
    refusal = document["paths"][path][method]["responses"]["429"]
    assert "DAILY_BUDGET_EXCEEDED" in refusal["description"] and "Retry-After" in refusal["description"]
    assert refusal["content"]["application/json"]["schema"]["required"] == ["error"]


def test_no_other_route_claims_the_budgets_refusal(document: dict[str, Any]) -> None:
    claiming = {
        (method, path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "DAILY_BUDGET_EXCEEDED" in operation.get("responses", {}).get("429", {}).get("description", "")
    }
    assert claiming == SPENDING_ROUTES


def test_the_api_references_error_table_names_the_budgets_refusal() -> None:
    text = (ROOT / "docs/api.md").read_text(encoding="utf-8")
    table = text[text.index("| answer | when |") : text.index("Every error a caller can act on")]
    rows = [line for line in table.splitlines() if line.startswith("| 429")]
    assert any("DAILY_BUDGET_EXCEEDED" in row and "Retry-After" in row for row in rows)


def test_no_user_can_write_an_attribute_into_their_own_token_but_their_e_mail() -> None:
    client = load_template()["Resources"]["UserPoolClient"]["Properties"]
    writable = set(client.get("WriteAttributes", STANDARD_ATTRIBUTES))
    assert "zoneinfo" not in writable and writable <= {"email"}


def test_a_reservation_settles_within_the_longest_turn_the_stack_can_run() -> None:
    resources = load_template()["Resources"]
    workers = [resources[name]["Properties"]["Timeout"] for name in ("ChatAnswerFunction", "InterviewTurnFunction")]
    assert API_GATEWAY_TIMEOUT_S + max(workers) <= TURN_SETTLES_WITHIN_S
