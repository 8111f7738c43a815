"""The Batch API adapter (``llm.openai_batches``) with the real openai client against the fake
server's Files and Batches endpoints: the provider refuses a whole job for one wrong line or an
exhausted enqueued-token quota, and every answer or failure of a finished job comes back."""

from __future__ import annotations

import time
import tracemalloc
from typing import Literal

import pytest
from lambda_agents.llm import ChatRequest, openai_batches
from lambda_agents.llm.batches import BatchItem, BatchJobStatus, SubmitUnconfirmed
from lambda_agents.llm.errors import ProviderAuthError
from lambda_agents.llm.openai_batches import OpenAIBatchModel

from devtools.fake_openai import BatchScript, FakeOpenAIServer, Fault, ManualClock, Reply

pytestmark = pytest.mark.integration


def items(*ids: str, max_tokens: int = 100) -> list[BatchItem]:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=max_tokens)
    return [BatchItem(custom_id, request) for custom_id in ids]


def test_a_finished_job_returns_each_answer_and_each_failure() -> None:
    clock = ManualClock()  # the job's time moves by hand: it is validating until the test moves it on
    with FakeOpenAIServer(batch_clock=clock) as server:
        server.batches.script_next(BatchScript(running_s=100, answers={"a": Reply(content="fine"), "b": Fault(500)}))
        model = OpenAIBatchModel("k", "gpt-4o", server.base_url)

        submitted = model.submit(items("a", "b"), {"cohort": "Asia/Tokyo 2026-11-27"})
        assert submitted.state == "validating" and submitted.total == 0 and not submitted.finished
        clock.advance(101.0)  # past validating (0.1 s), running (100 s) and finalizing (0.1 s)
        done = model.status(submitted.batch_id)
        answers = {answer.custom_id: answer for answer in model.answers(submitted.batch_id)}

    assert done.state == "completed" and (done.completed, done.failed) == (1, 1)
    assert answers["a"].response is not None and answers["a"].response.content == "fine"
    assert answers["b"].response is None and answers["b"].error is not None and "500" in answers["b"].error
    [line] = [request for request in server.requests if "batch_custom_id" in request]
    assert line == {"batch_custom_id": "a"}  # billed: the answered request only


def after_validation(server: FakeOpenAIServer, model: OpenAIBatchModel, batch_id: str) -> BatchJobStatus:
    """The job once the provider has validated its file (asynchronously, after the create call)."""
    time.sleep(0.1 * server.time_scale + 0.05)
    return model.status(batch_id)


def test_the_enqueued_token_quota_refuses_the_whole_job() -> None:
    with FakeOpenAIServer(enqueued_token_quota=500) as server:
        model = OpenAIBatchModel("k", "gpt-4o", server.base_url)
        accepted = model.submit(items("a", "b", "c", max_tokens=200), {})
        refused = after_validation(server, model, accepted.batch_id)

    assert accepted.state == "validating"
    assert refused.state == "failed" and refused.finished
    assert refused.errors[0].startswith("token_limit_exceeded: Enqueued token limit reached: limit 500")
    assert refused.error_codes == ("token_limit_exceeded",) and refused.over_quota  # another model may take it


def test_a_line_the_provider_cannot_take_refuses_the_whole_job() -> None:
    with FakeOpenAIServer(token_fields=("max_tokens",)) as server:
        model = OpenAIBatchModel("k", "o1", server.base_url)  # sends max_completion_tokens, which it refuses
        accepted = model.submit(items("a"), {})
        refused = after_validation(server, model, accepted.batch_id)

    assert refused.state == "failed" and "(line 1)" in refused.errors[0]
    assert not refused.over_quota  # the file itself is wrong: no other model takes it either


def test_a_key_the_provider_refuses_is_an_auth_failure() -> None:
    with FakeOpenAIServer(api_keys=frozenset({"right"})) as server:
        model = OpenAIBatchModel("wrong", "gpt-4o", server.base_url)
        with pytest.raises(ProviderAuthError):
            model.submit(items("a"), {})


def test_duplicate_ids_are_refused_before_anything_is_sent() -> None:
    model = OpenAIBatchModel("k", "gpt-4o", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="unique"):
        model.submit(items("a", "a"), {})


@pytest.mark.parametrize("lost", [Fault(500), Fault(503), "closed"], ids=["500", "503", "connection-closed"])
def test_a_create_whose_answer_is_lost_is_unconfirmed_and_the_job_is_listed_with_its_tag(
    lost: Fault | Literal["closed"],
) -> None:
    with FakeOpenAIServer() as server:
        server.batches.script_next(BatchScript(lost_create=lost))
        model = OpenAIBatchModel("k", "gpt-4o", server.base_url)
        with pytest.raises(SubmitUnconfirmed):
            model.submit(items("a"), {"cohort": "Asia/Tokyo 2026-11-27", "claim": "c1", "part": "0"})
        listed = model.jobs_since(int(time.time()) - 3600)

    [job] = listed
    assert job.metadata == {"cohort": "Asia/Tokyo 2026-11-27", "claim": "c1", "part": "0"}
    assert job.batch_id in server.batches.jobs and job.created_at > 0


def test_metadata_over_the_providers_limits_is_refused_before_anything_is_sent() -> None:
    model = OpenAIBatchModel("k", "gpt-4o", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="metadata"):
        model.submit(items("a"), {f"k{n}": "v" for n in range(17)})
    with pytest.raises(ValueError, match="metadata"):
        model.submit(items("a"), {"claim": "v" * 513})


def test_the_list_is_read_page_by_page_down_to_the_first_page_older_than_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_batches, "LIST_PAGE", 2)
    with FakeOpenAIServer() as server:
        model = OpenAIBatchModel("k", "gpt-4o", server.base_url)
        made = [model.submit(items("a"), {"n": str(n)}).batch_id for n in range(5)]
        for old in made[:2]:
            server.batches.jobs[old].created_at -= 7200
        listed = model.jobs_since(int(time.time()) - 3600)

    assert [job.batch_id for job in listed] == made[:1:-1]  # the three recent ones, newest first


def test_a_finished_jobs_answers_are_read_as_they_arrive_not_held_whole() -> None:
    """2,000 answers of ~10 KB (a 20 MB output file): reading them all holds a few lines at a time."""
    plan = "x" * 10_000
    ids = [f"u{n}" for n in range(2_000)]
    with FakeOpenAIServer(time_scale=0.001) as server:
        server.batches.script_next(BatchScript(answers={custom_id: Reply(content=plan) for custom_id in ids}))
        model = OpenAIBatchModel("k", "gpt-4o", server.base_url)
        job = model.submit(items(*ids, max_tokens=4_000), {})
        time.sleep(0.05)
        assert model.status(job.batch_id).state == "completed"  # its files are written
        output = server.batches.file(str(server.batches.jobs[job.batch_id].output_file_id))
        assert output is not None and len(output.data) > 20_000_000
        tracemalloc.start()
        seen = sum(1 for answer in model.answers(job.batch_id) if answer.response is not None)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

    assert seen == len(ids)
    assert peak < len(output.data) // 10  # the whole file was read at once before: more than its size


def test_a_reader_that_stops_early_closes_the_download() -> None:
    with FakeOpenAIServer(time_scale=0.001) as server:
        model = OpenAIBatchModel("k", "gpt-4o", server.base_url)
        job = model.submit(items(*(f"u{n}" for n in range(50))), {})
        time.sleep(0.05)
        answers = model.answers(job.batch_id)
        first = next(answers)
        answers.close()  # type: ignore[attr-defined]
        again = list(model.answers(job.batch_id))  # the connection went back to the pool in good order

    assert first.response is not None and len(again) == 50


def test_a_line_that_is_no_result_is_an_answer_without_a_request_and_without_its_text() -> None:
    with FakeOpenAIServer(time_scale=0.001) as server:
        server.batches.script_next(BatchScript(unreadable_lines=1))
        model = OpenAIBatchModel("k", "gpt-4o", server.base_url)
        job = model.submit(items("a"), {})
        while not model.status(job.batch_id).finished:
            time.sleep(0.01)
        answers = list(model.answers(job.batch_id))

    [unreadable] = [answer for answer in answers if not answer.custom_id]
    assert unreadable.response is None and str(unreadable.error).startswith("unreadable_line: not a result line")
    assert "batch_req" not in str(unreadable.error)  # the line's text (it may hold a plan) is not repeated
