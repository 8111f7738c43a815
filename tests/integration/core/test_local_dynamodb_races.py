"""Races that prove something: concurrent writers against the local DynamoDB the runner and the
demo use (the embedded moto server, DynamoDB requests one at a time, devtools/local_aws.py).

Each race runs twice: with the adapters as written, where exactly one writer wins and nothing of
a loser is stored, and with every write condition stripped from the same adapters on the wire
(``conditions="stripped"``), where the same test sees the race lost: two winners, a message or a
claim overwritten. The second run is what shows the first one could fail.

moto's own item read holds its answer a moment (``slow_reads``) so that concurrent writers all
check before any writes: on moto's plain threaded server five of these six races then double-win
with the conditions kept (mark-posted does not: moto updates the item it checked in place), on
the serialised one none can.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemAlreadyExistsError
from lambda_agents.chat.records import SessionContext, SessionRecord
from lambda_agents.chat.store import UserMessage
from lambda_agents.interview.catalog.jobs import Job
from lambda_agents.interview.errors import VersionConflict
from lambda_agents.interview.repository import TurnCommit
from lambda_agents.interview.rules.models import ChatMessage, InterviewSession, InterviewState, JobDefinition
from lambda_agents.nudges.records import PostRecord
from lambda_agents.storage.chat import ConcurrentUpdate, DynamoChatStore
from lambda_agents.storage.dynamodb import dynamodb_resource
from lambda_agents.storage.interviews import DynamoInterviewRepository
from lambda_agents.storage.jobs import DynamoJobRepository
from lambda_agents.storage.nudges import DynamoPendingPostsStore, MarkPostedOutcome, post_item
from lambda_agents.storage.templates import DynamoTemplateStore
from lambda_agents.templates.models import (
    CreateProcessTemplateDto,
    PatchProcessTemplateDto,
    ProcessTemplate,
    TemplateSource,
)
from lambda_agents.templates.service import ProcessTemplateService
from moto.dynamodb.models.table import Table

from devtools.local_aws import LocalAws, ensure_tables
from tests.integration.interview.conftest import FIELDS as JOB_FIELDS

pytestmark = pytest.mark.integration

WRITERS = 4
CONDITIONS = ["kept", "stripped"]


@pytest.fixture(scope="module")
def local_dynamodb() -> Iterator[LocalAws]:
    with LocalAws({"AWS_DEFAULT_REGION": "us-east-1"}, force_embedded=True) as aws:
        ensure_tables(aws.client("dynamodb"))
        yield aws
        aws.reset()  # moto's state is process-wide: leave none for the next module


@pytest.fixture
def endpoint(local_dynamodb: LocalAws, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The adapters' shared boto3 resource pointed at the local server."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", local_dynamodb.endpoints.dynamodb)
    dynamodb_resource.cache_clear()
    yield local_dynamodb.endpoints.dynamodb
    dynamodb_resource.cache_clear()


@pytest.fixture(autouse=True)
def slow_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every item read inside moto holds its answer 20 ms before the check that uses it, so
    concurrent writers all check before any of them writes (on a server that lets them)."""
    original = Table.get_item

    def slowed(self: Table, *args: Any, **kwargs: Any) -> Any:
        found = original(self, *args, **kwargs)
        time.sleep(0.02)
        return found

    monkeypatch.setattr(Table, "get_item", slowed)


def strip_conditions(client: Any) -> None:
    """Remove every write condition from ``client``'s requests (ConditionCheck items dropped)."""

    def without_condition(operation: dict[str, Any]) -> dict[str, Any]:
        kept = {key: value for key, value in operation.items() if key != "ConditionExpression"}
        used = str(kept.get("UpdateExpression", ""))
        for field in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            names = {key: value for key, value in kept.get(field, {}).items() if key in used}
            kept.pop(field, None)
            if names:
                kept[field] = names
        return kept

    def strip(params: dict[str, Any], **_: Any) -> None:
        if "TransactItems" in params:
            params["TransactItems"] = [
                {kind: without_condition(op) for kind, op in item.items()}
                for item in params["TransactItems"]
                if "ConditionCheck" not in item
            ]
        elif "ConditionExpression" in params:
            stripped = without_condition(params)
            params.clear()
            params.update(stripped)

    # Last, after boto3's resource layer has turned Condition objects into expressions.
    client.meta.events.register_last("before-parameter-build.dynamodb", strip)


def race(writers: list[Callable[[], Any]]) -> list[Any]:
    """Run the writers at once; each one's result, or the exception it raised."""
    start = threading.Barrier(len(writers))
    results: list[Any] = [None] * len(writers)

    def run(index: int) -> None:
        start.wait()
        try:
            results[index] = writers[index]()
        except Exception as error:  # the race's loser: kept to be counted
            results[index] = error

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(writers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def client_for(endpoint: str, conditions: str) -> Any:
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    if conditions == "stripped":
        strip_conditions(client)
    return client


def winners(results: list[Any]) -> int:
    return sum(1 for result in results if not isinstance(result, Exception))


def adapters_with(conditions: str) -> None:
    """The product's adapters share one boto3 resource: strip its conditions when asked."""
    if conditions == "stripped":
        strip_conditions(dynamodb_resource().meta.client)


@pytest.mark.parametrize("conditions", CONDITIONS)
def test_concurrent_conditional_creates_of_one_item_on_the_local_server_have_one_winner(
    endpoint: str, conditions: str
) -> None:
    clients = [client_for(endpoint, conditions) for _ in range(WRITERS)]
    key = f"race-{conditions}"

    def create(client: Any, writer: int) -> Callable[[], Any]:
        item = {"pk": {"S": key}, "sk": {"S": "ITEM"}, "writer": {"N": str(writer)}}
        put = {"TableName": "ChatTable", "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}
        return lambda: client.transact_write_items(TransactItems=[{"Put": put}])

    results = race([create(client, writer) for writer, client in enumerate(clients)])

    assert winners(results) == (1 if conditions == "kept" else WRITERS), results


@pytest.mark.parametrize("conditions", CONDITIONS)
def test_two_turns_of_one_interview_version_store_one_turn_and_refuse_the_other_whole(
    endpoint: str, conditions: str
) -> None:
    repository = DynamoInterviewRepository("InterviewsTable")
    job_id = f"job-race-{conditions}"
    DynamoJobRepository("InterviewsTable").create(  # an interview starts only from an open job
        Job(
            job_id=job_id,
            version=1,
            title="race",
            fields=JOB_FIELDS,
            status="open",
            created_at="2026-01-01T00:00:00+00:00",
            updated_at="2026-01-01T00:00:00+00:00",
            created_by="race-admin",
        )
    )
    job = JobDefinition.model_validate({"job_id": job_id, "fields": JOB_FIELDS})
    session = InterviewSession(
        session_id=("a" if conditions == "kept" else "b") * 32,
        user_id="race-user",
        job=job,
        state=InterviewState.initial(job),
        version=0,
        message_count=0,
        created_at="2026-01-01T00:00:00+00:00",
        updated_at="2026-01-01T00:00:00+00:00",
    )
    repository.create(session)
    adapters_with(conditions)
    all_loaded = threading.Barrier(WRITERS)

    def turn(writer: int) -> Callable[[], Any]:
        def run() -> str:
            loaded = repository.load(session.session_id)
            assert loaded is not None
            all_loaded.wait()  # every turn starts from the same version, as concurrent requests do
            current = loaded.session
            message = ChatMessage(seq=current.message_count, role="user", content=f"turn {writer}", created_at="t")
            updated = current.model_copy(update={"version": current.version + 1, "message_count": 1})
            repository.commit_turn(TurnCommit(updated, current.version, [message]))
            return message.content

        return run

    results = race([turn(writer) for writer in range(WRITERS)])
    stored = repository.load(session.session_id)
    assert stored is not None
    acknowledged = [result for result in results if isinstance(result, str)]
    kept = [message.content for message in stored.messages]

    if conditions == "kept":
        assert len(acknowledged) == 1 and kept == acknowledged and stored.session.version == 1
        assert all(isinstance(result, VersionConflict) for result in results if not isinstance(result, str))
    else:  # every turn was told it was stored; all but one were overwritten
        assert len(acknowledged) == WRITERS and len(kept) == 1


@pytest.mark.parametrize("conditions", CONDITIONS)
def test_concurrent_idempotency_claims_of_one_key_leave_exactly_one_running(endpoint: str, conditions: str) -> None:
    config = IdempotencyConfig(event_key_jmespath="[userId, idempotencyKey]")

    def claim() -> Callable[[], Any]:
        layer = DynamoDBPersistenceLayer(
            table_name="ChatIdempotencyTable", boto3_client=client_for(endpoint, conditions)
        )
        layer.configure(config, function_name=f"race-{conditions}")
        return lambda: layer.save_inprogress({"userId": "race-user", "idempotencyKey": "k-1"}, 60_000)

    results = race([claim() for _ in range(WRITERS)])

    if conditions == "kept":
        assert winners(results) == 1
        assert all(isinstance(r, IdempotencyItemAlreadyExistsError) for r in results if isinstance(r, Exception))
    else:  # every request would run the model and answer
        assert winners(results) == WRITERS


@pytest.mark.parametrize("conditions", CONDITIONS)
def test_concurrent_mark_posted_calls_publish_a_post_once(endpoint: str, conditions: str) -> None:
    post = PostRecord(
        post_id=f"tiktok-race{conditions}",
        platform="tiktok",
        user_id="race-user",
        local_date="2026-02-02",
        slot="morning",
        fields={"caption": "c", "enabled": True},
    )
    dynamodb_resource().Table("SchedulesTable").put_item(Item=post_item(post, "2026-02-01T00:00:00+00:00", 30))
    store = DynamoPendingPostsStore("SchedulesTable")
    adapters_with(conditions)

    def publish(caller: str) -> Callable[[], MarkPostedOutcome]:
        return lambda: store.mark_posted("tiktok", post.post_id, caller, "2026-02-02T08:00:00+00:00")

    results = race([publish(f"job-{writer}") for writer in range(WRITERS)])
    published = [result for result in results if result is MarkPostedOutcome.POSTED]

    if conditions == "kept":
        assert len(published) == 1
        assert sorted(r.value for r in results if r is not MarkPostedOutcome.POSTED) == ["already_posted"] * (
            WRITERS - 1
        )
    else:  # every posting job was told to publish: the post goes out several times
        assert len(published) == WRITERS


@pytest.mark.parametrize("conditions", CONDITIONS)
def test_concurrent_creates_of_one_template_write_it_once(endpoint: str, conditions: str) -> None:
    template = ProcessTemplate(
        template_id=f"race-{conditions}",
        user_id="race-user",
        name="申請",
        created_at="2026-01-01T00:00:00+00:00",
        source=TemplateSource(kind="chat", session_id="s-race", draft_seq=2),
    )
    store = DynamoTemplateStore("ProcessTemplatesTable")
    adapters_with(conditions)

    results = race([lambda: store.create(template) for _ in range(WRITERS)])

    created = [result for result in results if result is True]
    assert len(created) == (1 if conditions == "kept" else WRITERS), results


@pytest.mark.parametrize("conditions", CONDITIONS)
def test_concurrent_chat_messages_on_a_stale_session_are_each_stored_or_refused_never_overwritten(
    endpoint: str, conditions: str
) -> None:
    store = DynamoChatStore("ChatTable")
    session = SessionRecord(f"race-{conditions}", "race-user", SessionContext(), "t")
    store.create_session(session, 0)
    adapters_with(conditions)

    def send(text: str) -> Callable[[], tuple[int, str]]:
        return lambda: (store.append_user_message(session, UserMessage(text, "t", 0)), text)

    results = race([send(f"message {writer}") for writer in range(WRITERS)])
    acknowledged = [result for result in results if isinstance(result, tuple)]
    stored = {message.seq: message.content for message in store.recent_messages(session.session_id, 50)}
    lost = [(seq, text) for seq, text in acknowledged if stored.get(seq) != text]

    if conditions == "kept":
        assert acknowledged and lost == []
        assert all(isinstance(result, ConcurrentUpdate) for result in results if not isinstance(result, tuple))
    else:  # every message was acknowledged; those that shared a seq overwrote each other
        assert len(acknowledged) == WRITERS and lost


def test_a_dozen_concurrent_template_changes_without_if_match_all_land_as_successive_versions(endpoint: str) -> None:
    service = ProcessTemplateService(DynamoTemplateStore("ProcessTemplatesTable"))
    step = {"seq": 1, "name": "a", "basis": "goal", "offsetDays": -1, "requiredArtifacts": None, "dependsOn": []}
    dto = CreateProcessTemplateDto.model_validate({"name": "月次決算", "stepTemplates": [step]})
    template_id = service.create("race-user", dto).template.template_id

    def rename(writer: int) -> Callable[[], Any]:
        return lambda: service.patch(
            "race-user", template_id, PatchProcessTemplateDto.model_validate({"name": f"writer {writer}"})
        )

    results = race([rename(writer) for writer in range(12)])

    assert winners(results) == 12, [r for r in results if isinstance(r, Exception)]
    assert sorted(result.version for result in results) == list(range(2, 14))
    final = service.get("race-user", template_id)
    assert final.version == 13 and final.name == next(r.name for r in results if r.version == 13)
