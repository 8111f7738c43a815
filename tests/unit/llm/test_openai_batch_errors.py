"""Which failed create calls may still have made a batch job (``openai_batches``): a lost answer (a
timeout, a dropped connection) or a server error may; a 4xx is the provider's refusal and made none."""

from __future__ import annotations

import httpx2
import openai
import pytest
from lambda_agents.llm.openai_batches import _may_have_been_accepted

REQUEST = httpx2.Request("POST", "https://api.openai.com/v1/batches")


def status_error(status: int) -> openai.APIStatusError:
    response = httpx2.Response(status, request=REQUEST, json={"error": {"message": "m"}})
    return openai.APIStatusError("m", response=response, body=None)


@pytest.mark.parametrize(
    ("status", "may_exist"),
    [(500, True), (502, True), (503, True), (400, False), (401, False), (404, False), (409, False), (429, False)],
)
def test_an_answer_with_a_status_says_whether_the_job_may_exist(status: int, may_exist: bool) -> None:
    assert _may_have_been_accepted(status_error(status)) is may_exist


def test_an_answer_that_never_came_may_hide_a_job() -> None:
    assert _may_have_been_accepted(openai.APITimeoutError(request=REQUEST)) is True
    assert _may_have_been_accepted(openai.APIConnectionError(request=REQUEST)) is True
