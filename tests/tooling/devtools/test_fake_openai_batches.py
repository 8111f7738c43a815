"""Spec: the fake's Batch API follows OpenAI's documentation (the guide and the API reference, cited
in ``devtools/fake_openai/batches.py``), never kinder: the file is validated after the create call
while the job is ``validating`` (a bad file makes a ``failed`` job, not a refused call), a job goes
``validating`` -> ``in_progress`` -> ``finalizing`` -> ``completed`` with each moment stamped,
nothing is counted while validating, the result lines come in any order, a job holds one model and
at most 50,000 requests and 200 MB, metadata at most 16 pairs of 64/512 characters, only an
in-progress job can be cancelled, and the list pages newest first behind a cursor. What the
documentation does not promise is not promised here either: an upload, a create (refused: no job)
or the list may fail, and an output file may hold unreadable, duplicated or unknown lines.

Every call goes through the real openai client; the jobs' clock is moved by hand, so a state is
observed at a known moment rather than raced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from devtools.fake_openai import BatchScript, FakeOpenAIServer, Fault, ManualClock, Reply
from devtools.fake_openai.batches import MAX_INPUT_BYTES, _read_requests


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def server(clock: ManualClock) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(batch_clock=clock) as running:
        yield running


def client(server: FakeOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0, timeout=10.0)


def line(custom_id: str, model: str = "gpt-4o") -> dict[str, Any]:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 50}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def submit(server: FakeOpenAIServer, lines: list[dict[str, Any]], metadata: dict[str, str] | None = None) -> Any:
    api = client(server)
    data = "".join(json.dumps(item) + "\n" for item in lines).encode()
    uploaded = api.files.create(file=("requests.jsonl", data), purpose="batch")
    return api.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", metadata=metadata
    )


def results(server: FakeOpenAIServer, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(text) for text in client(server).files.content(file_id).text.splitlines()]


def test_a_job_validates_runs_finalizes_and_completes_with_each_moment_stamped(
    server: FakeOpenAIServer, clock: ManualClock
) -> None:
    server.batches.script_next(BatchScript(validating_s=60, running_s=600, finalizing_s=120))
    api = client(server)

    created = submit(server, [line("a"), line("b")])
    clock.advance(30)
    validating = api.batches.retrieve(created.id)
    clock.advance(60)
    running = api.batches.retrieve(created.id)
    clock.advance(600)
    finalizing = api.batches.retrieve(created.id)
    clock.advance(120)
    done = api.batches.retrieve(created.id)

    assert [b.status for b in (created, validating, running, finalizing, done)] == [
        "validating",
        "validating",
        "in_progress",
        "finalizing",
        "completed",
    ]
    # [object: request_counts] nothing counted while the file is validated
    assert (validating.request_counts.total, validating.request_counts.completed) == (0, 0)
    assert validating.in_progress_at is None and running.finalizing_at is None
    assert running.in_progress_at == created.created_at + 60
    assert finalizing.finalizing_at == created.created_at + 660
    assert done.completed_at == created.created_at + 780
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (2, 2, 0)
    assert done.failed_at is None and done.cancelled_at is None and done.expires_at == created.created_at + 86_400


def test_the_result_lines_are_not_in_the_input_order(server: FakeOpenAIServer, clock: ManualClock) -> None:
    ids = [f"u{n:02d}" for n in range(40)]
    failing = {custom_id: Fault(500) for custom_id in ids[::4]}
    server.batches.script_next(BatchScript(answers=failing))
    created = submit(server, [line(custom_id) for custom_id in ids])
    clock.advance(10)

    done = client(server).batches.retrieve(created.id)
    answered = [item["custom_id"] for item in results(server, done.output_file_id)]
    failed = [item["custom_id"] for item in results(server, done.error_file_id)]

    # [guide] "the output line order may not match the input line order": use custom_id
    assert sorted(answered) == sorted(set(ids) - set(failing)) and answered != sorted(answered)
    assert sorted(failed) == sorted(failing) and failed != sorted(failed)


@pytest.mark.parametrize(
    ("lines", "code"),
    [
        ([line("a"), line("b", model="gpt-4o-mini")], "invalid_request"),  # one model per file
        ([line("a"), line("a")], "invalid_request"),  # custom_id values unique
        ([{"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m"}}], "invalid_request"),
        ([line(f"u{n}") for n in range(50_001)], "too_many_requests"),
    ],
    ids=["two-models", "duplicate-id", "other-endpoint", "50001-requests"],
)
def test_a_file_that_breaks_a_rule_is_accepted_then_fails_while_validating(
    server: FakeOpenAIServer, clock: ManualClock, lines: list[dict[str, Any]], code: str
) -> None:
    created = submit(server, lines)
    clock.advance(10)
    failed = client(server).batches.retrieve(created.id)

    assert created.status == "validating" and created.errors is None
    assert failed.status == "failed" and failed.failed_at is not None and failed.in_progress_at is None
    assert failed.errors is not None and failed.errors.data and failed.errors.data[0].code == code
    assert (failed.request_counts.total, failed.output_file_id, failed.error_file_id) == (0, None, None)


def test_a_file_over_200_mb_fails_validation() -> None:
    requests, errors = _read_requests(b"x" * (MAX_INPUT_BYTES + 1), "/v1/chat/completions", ("max_tokens",))

    assert requests == [] and [error["code"] for error in errors] == ["file_too_large"]


@pytest.mark.parametrize(
    "metadata",
    [
        {f"k{n}": "v" for n in range(17)},
        {"k" * 65: "v"},
        {"k": "v" * 513},
    ],
    ids=["17-pairs", "65-char-key", "513-char-value"],
)
def test_metadata_over_the_documented_limits_is_refused_by_the_create_call(
    server: FakeOpenAIServer, metadata: dict[str, str]
) -> None:
    with pytest.raises(openai.BadRequestError):
        submit(server, [line("a")], metadata)

    assert server.batches.jobs == {}


def test_metadata_at_the_limits_is_kept_on_the_job(server: FakeOpenAIServer) -> None:
    metadata = {f"k{n:02d}" + "k" * 60: "v" * 512 for n in range(16)}

    created = submit(server, [line("a")], metadata)

    assert created.metadata == metadata


def test_only_an_in_progress_job_can_be_cancelled(server: FakeOpenAIServer, clock: ManualClock) -> None:
    server.batches.script_next(
        BatchScript(validating_s=60, running_s=600, finalizing_s=120, cancelling_s=300),
        BatchScript(validating_s=60, running_s=600, finalizing_s=120),
    )
    api = client(server)
    job = submit(server, [line(f"u{n}") for n in range(10)])
    finishing = submit(server, [line("a")])

    with pytest.raises(openai.BadRequestError):
        api.batches.cancel(job.id)  # validating
    clock.advance(60 + 300)  # half-way through its run
    cancelling = api.batches.cancel(job.id)
    with pytest.raises(openai.BadRequestError):
        api.batches.cancel(job.id)  # already cancelling
    clock.advance(340)  # 700 s in: this one cancelled (at 660), the other finalizing (660-780)
    cancelled = api.batches.retrieve(job.id)
    with pytest.raises(openai.BadRequestError):
        api.batches.cancel(finishing.id)  # finalizing
    clock.advance(1000)
    with pytest.raises(openai.BadRequestError):
        api.batches.cancel(finishing.id)  # completed: refused, no 409

    assert cancelling.status == "cancelling" and cancelling.cancelling_at == job.created_at + 360
    assert cancelled.status == "cancelled" and cancelled.cancelled_at == job.created_at + 660
    answered = results(server, cancelled.output_file_id)
    not_run = results(server, cancelled.error_file_id)
    assert len(answered) == 5 and {item["error"]["code"] for item in not_run} == {"batch_cancelled"}
    assert api.batches.retrieve(finishing.id).status == "completed"


def test_an_expired_job_keeps_its_answers_and_reports_the_rest_as_batch_expired(
    server: FakeOpenAIServer, clock: ManualClock
) -> None:
    server.batches.script_next(BatchScript(expires_after=3, answers={"u0": Reply(content="made")}))
    created = submit(server, [line(f"u{n}") for n in range(5)])
    clock.advance(10)

    expired = client(server).batches.retrieve(created.id)

    assert expired.status == "expired" and expired.expired_at is not None and expired.completed_at is None
    assert (expired.request_counts.completed, expired.request_counts.failed) == (3, 2)
    assert len(results(server, expired.output_file_id)) == 3
    assert [item["error"]["code"] for item in results(server, expired.error_file_id)] == ["batch_expired"] * 2


def test_the_list_pages_newest_first_behind_a_cursor(server: FakeOpenAIServer) -> None:
    made = [submit(server, [line("a")], {"n": str(n)}).id for n in range(5)]
    api = client(server)

    first = api.batches.list(limit=2)
    second = api.batches.list(limit=2, after=first.data[-1].id)
    everything = [batch.id for batch in api.batches.list(limit=2)]  # the SDK follows the cursor

    assert [batch.id for batch in first.data] == made[::-1][:2] and first.has_more is True
    assert [batch.id for batch in second.data] == made[::-1][2:4]
    assert everything == made[::-1]
    with pytest.raises(openai.BadRequestError):
        api.batches.list(limit=101)


def test_a_create_whose_answer_is_lost_still_leaves_the_job_running(server: FakeOpenAIServer) -> None:
    server.batches.script_next(BatchScript(lost_create=Fault(500)), BatchScript(lost_create="closed"))

    with pytest.raises(openai.InternalServerError):
        submit(server, [line("a")], {"claim": "first"})
    with pytest.raises(openai.APIConnectionError):
        submit(server, [line("a")], {"claim": "second"})

    listed = {batch.metadata["claim"]: batch.status for batch in client(server).batches.list()}  # type: ignore[index]
    assert listed == {"first": "validating", "second": "validating"}


def test_a_jobs_scripted_status_fault_answers_every_status_call_while_the_job_goes_on(
    server: FakeOpenAIServer, clock: ManualClock
) -> None:
    server.batches.script_next(
        BatchScript(status_fault=Fault(503), applies_to=lambda metadata: metadata.get("zone") == "Brisbane")
    )
    api = client(server)
    singapore = submit(server, [line("a")], {"zone": "Singapore"})
    brisbane = submit(server, [line("a")], {"zone": "Brisbane"})
    clock.advance(10)

    for _ in range(3):
        with pytest.raises(openai.InternalServerError):
            api.batches.retrieve(brisbane.id)

    assert api.batches.retrieve(singapore.id).status == "completed"
    assert {batch.id: batch.status for batch in api.batches.list()}[brisbane.id] == "completed"


# -- what the provider may fail, and the flaws a reader must survive ------------------------------


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault(400, message="model not offered for batches"), openai.BadRequestError),
        (Fault(429), openai.RateLimitError),
    ],
    ids=["400", "429"],
)
def test_a_refused_create_makes_no_job_and_the_next_create_is_served(
    server: FakeOpenAIServer, fault: Fault, error: type[openai.APIStatusError]
) -> None:
    server.batches.fail_next("create", fault)

    with pytest.raises(error):
        submit(server, [line("a")], {"claim": "refused"})
    served = submit(server, [line("a")], {"claim": "served"})

    assert [batch.metadata for batch in client(server).batches.list()] == [{"claim": "served"}]
    assert list(server.batches.jobs) == [served.id]


def test_a_failed_upload_stores_no_file(server: FakeOpenAIServer) -> None:
    server.batches.fail_next("upload", Fault(500), "closed")
    api = client(server)

    with pytest.raises(openai.InternalServerError):
        api.files.create(file=("requests.jsonl", b"{}\n"), purpose="batch")
    with pytest.raises(openai.APIConnectionError):
        api.files.create(file=("requests.jsonl", b"{}\n"), purpose="batch")

    assert server.batches.files == {}


def test_a_failed_list_call_answers_its_fault_once(server: FakeOpenAIServer) -> None:
    made = submit(server, [line("a")])
    server.batches.fail_next("list", Fault(503))

    with pytest.raises(openai.InternalServerError):
        client(server).batches.list()
    assert [batch.id for batch in client(server).batches.list()] == [made.id]


def test_an_output_file_may_hold_unreadable_duplicated_and_unknown_lines(
    server: FakeOpenAIServer, clock: ManualClock
) -> None:
    server.batches.script_next(BatchScript(unreadable_lines=2, duplicated=("a",), unknown_ids=("stranger",)))
    created = submit(server, [line("a"), line("b")])
    clock.advance(10)
    done = client(server).batches.retrieve(created.id)

    raw = client(server).files.content(str(done.output_file_id)).text.splitlines()
    readable = []
    for text in raw:
        try:
            readable.append(json.loads(text)["custom_id"])
        except ValueError:
            continue
    assert len(raw) == 6 and sorted(readable) == ["a", "a", "b", "stranger"]
    # The unknown line was made and billed like any answer; the duplicate is one request's line twice.
    assert [record.batch for record in server.billing] == [True, True, True]
