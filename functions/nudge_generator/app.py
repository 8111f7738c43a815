"""NudgeGeneratorFunction: consumes NudgeQueue in batches and generates one day of nudges per
user (docs/nudges.md#scheduled-generation), reporting partial batch failures.

A batch's users are served at once (Powertools' ``AsyncBatchProcessor``, each record's work in a
thread of a pool of NUDGE_BATCH_CONCURRENCY, or of the batch's size when smaller), each with the
whole invocation's time: at a real model's speed a plan takes about a minute, so users served one
after another would leave the last of a batch without time. The pool is sized here, never by the
machine: asyncio's default executor has min(32, os.process_cpu_count() + 4) threads, 6 on the 2
vCPUs Lambda gives 512 MB, and a batch of 10 would take two plans' time. Per record: the body is
validated (a malformed one fails and, after maxReceiveCount, lands in the dead-letter queue).
Whatever stops the Commander, an unexpected
exception included, ends in the rule-based fallback (``nudges.commander``), except a run whose
time ran out or that the provider's rate limit stopped: it is *deferred* (nothing stored, the
record fails and is made visible again after a backoff or the provider's Retry-After), unless this
is the message's last delivery (NUDGE_MAX_RECEIVE_COUNT, the queue's maxReceiveCount), when the
fallback is stored instead: every user gets their nudges, and the dead-letter queue receives only
records that cannot succeed. DynamoDB failures fail the record too (a redelivery fixes them). The
work runs under Powertools idempotency keyed on userId + localDate (``nudges.generation_records``:
a fixed key prefix, so the user's deletion can compute the record ids), so a duplicate delivery
returns the first result without a second LLM call, and the schedule write is conditional, so two
concurrent runs cannot store two schedules, and none is stored for a user whose deletion began
meanwhile. Only outcomes that stored a schedule keep their record; a skip or a deferral releases it.

Environment: USERS_TABLE, SCHEDULES_TABLE, IDEMPOTENCY_TABLE, NUDGE_QUEUE_URL,
NUDGE_MAX_RECEIVE_COUNT (the queue's maxReceiveCount), NUDGE_BATCH_CONCURRENCY (10),
SCHEDULE_TTL_DAYS (30), NUDGE_MAX_SLOTS (15), NUDGE_MIN_SPACING_MINUTES (30), NUDGE_SCHEDULE_MAP
(optional JSON ``{"problem": ["HH:MM", ...]}``), NUDGE_FANOUT_MODE (sync; with ``batch`` the
model is never called here: the batch jobs made the plans), NUDGE_SERVICE_TIER (standard; ``flex``:
OpenAI's flex tier, docs/nudges.md#flex-processing), and the LLM settings (AI_AGENT_MODE, OPENAI_*).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.batch import AsyncBatchProcessor, EventType, async_process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyPersistenceLayerError
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import ConfigError, LLMSettings, load_settings
from lambda_agents.llm import Deadline
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.llm.types import ChatModel
from lambda_agents.nudges.generation import GenerationDeferred, GenerationJob, NudgeGenerationService
from lambda_agents.nudges.generation_records import (
    KEY_PREFIX,
    OutcomeNotKept,
    idempotency_config,
    kept_or_raise,
    outcome_not_kept,
)
from lambda_agents.nudges.run_report import RunReport
from lambda_agents.nudges.settings import SlotTableSettings
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.nudges import DynamoScheduleRepository
from lambda_agents.storage.queues import QueueMessages
from lambda_agents.storage.users import DynamoUserRepository
from pydantic import Field

# OpenAI's flex guide: raise the client's timeout to 15 minutes for flex calls.
FLEX_FIRST_TOKEN_TIMEOUT_S = 900.0


class GeneratorSettings(SlotTableSettings):
    users_table: str = Field(alias="USERS_TABLE", min_length=1)
    schedules_table: str = Field(alias="SCHEDULES_TABLE", min_length=1)
    idempotency_table: str = Field(alias="IDEMPOTENCY_TABLE", min_length=1)
    queue_url: str = Field(alias="NUDGE_QUEUE_URL", min_length=1)
    max_receive_count: int = Field(default=5, alias="NUDGE_MAX_RECEIVE_COUNT", ge=1, le=1000)
    batch_concurrency: int = Field(default=10, alias="NUDGE_BATCH_CONCURRENCY", ge=1, le=100)
    ttl_days: int = Field(default=30, alias="SCHEDULE_TTL_DAYS", ge=1, le=3650)
    # batch: plans come only from batch jobs (a user without one gets the rule-based fallback).
    fanout_mode: Literal["sync", "batch", "batch_then_sync"] = Field(default="sync", alias="NUDGE_FANOUT_MODE")
    # flex: the synchronous plans at OpenAI's flex tier (Batch prices, slower, 429 when short of capacity).
    # standard: no tier sent, the account's own ("standard" rather than OpenAI's "default": the
    # price table's word, and a template default no other parameter shares).
    service_tier: Literal["standard", "flex"] = Field(default="standard", alias="NUDGE_SERVICE_TIER")


def flex_patience(llm: LLMSettings) -> LLMSettings:
    """The LLM settings for calls at the flex tier: flex answers are slower and may queue before
    their first token, so the first token is waited for as long as OpenAI's flex guide advises for
    a whole call (15 minutes, not the SDK's 10); the invocation's deadline still bounds every call,
    and the stall between two chunks keeps its limit (a started answer is not queued)."""
    return llm.model_copy(update={"first_token_timeout_s": max(llm.first_token_timeout_s, FLEX_FIRST_TOKEN_TIMEOUT_S)})


class Dependencies:
    """What one container builds once: settings, the service, the queue and the idempotent run.
    An invocation's own data (its deadline) is passed to each call, never stored here."""

    def __init__(self, settings: GeneratorSettings, service: NudgeGenerationService) -> None:
        self.settings = settings
        self.service = service
        self.idempotency = idempotency_config()
        self.persistence = DynamoDBPersistenceLayer(table_name=settings.idempotency_table)
        self.messages = QueueMessages(settings.queue_url)

        @idempotent_function(  # type: ignore[untyped-decorator]
            data_keyword_argument="job",
            persistence_store=self.persistence,
            config=self.idempotency,
            key_prefix=KEY_PREFIX,
        )
        def generate_once(job: dict[str, Any], delivery: int, deadline: Deadline | None) -> dict[str, Any]:
            outcome = self.service.generate(
                GenerationJob.model_validate(job),
                deadline,
                may_defer=delivery < self.settings.max_receive_count,
                delivery=delivery,
            )
            return kept_or_raise(outcome.as_dict())

        self._generate_once: Callable[..., dict[str, Any]] = generate_once

    def generate_once(self, job: dict[str, Any], delivery: int = 1, deadline: Deadline | None = None) -> dict[str, Any]:
        """The job's outcome: the kept one of an earlier delivery, or a new run's."""
        try:
            return self._generate_once(job=job, delivery=delivery, deadline=deadline)
        except OutcomeNotKept as not_kept:
            return not_kept.outcome
        except IdempotencyPersistenceLayerError as error:
            outcome = outcome_not_kept(error)
            if outcome is None:
                raise
            # The outcome stands; only its record could not be released (its run's expiry frees it).
            logger.warning(
                "idempotency record of a skipped user could not be deleted", extra={"user_id": job["userId"]}
            )
            return outcome


def bootstrap(
    *, settings: GeneratorSettings | None = None, llm: LLMSettings | None = None, model: ChatModel | None = None
) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``); ``model`` stands in for the
    one the LLM settings would build (none in batch mode: the batch jobs make the plans)."""
    try:
        settings = settings or load_settings(GeneratorSettings)
        if model is None and settings.fanout_mode != "batch":
            llm = llm or load_settings(LLMSettings)
            model = build_chat_model(flex_patience(llm) if settings.service_tier == "flex" else llm)
        service = NudgeGenerationService(
            DynamoUserRepository(settings.users_table),
            DynamoScheduleRepository(settings.schedules_table, settings.ttl_days, owner_table=settings.users_table),
            model,
            slots=settings.slots(),
            # "standard" sends nothing: the account's own tier, as before the setting existed.
            service_tier="flex" if settings.service_tier == "flex" else None,
        )
        return Dependencies(settings, service)
    except (ConfigError, ValueError) as error:
        raise ConfigError(f"NudgeGeneratorFunction settings: {error}") from None


dependencies = CompositionRoot(bootstrap)


class _OncePerBatch:
    """Runs each job once per batch: a message delivered twice in one batch shares the first run's
    outcome (or failure) instead of racing it for the idempotency record."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], Future[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def run(self, job: GenerationJob, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        key = (job.userId, job.localDate)
        own: Future[dict[str, Any]] = Future()
        with self._lock:
            running = self._runs.get(key)
            if running is None:
                self._runs[key] = own
        if running is not None:
            return running.result()
        try:
            outcome = work()
        except BaseException as error:
            own.set_exception(error)
            raise
        own.set_result(outcome)
        return outcome


def _record_handler(
    deps: Dependencies, report: RunReport, deadline: Deadline | None
) -> Callable[[SQSRecord], dict[str, Any]]:
    once = _OncePerBatch()

    def handle(record: SQSRecord) -> dict[str, Any]:
        job = GenerationJob.model_validate_json(record.body)
        delivery = int(record.attributes.approximate_receive_count or 1)
        try:
            outcome = once.run(job, lambda: deps.generate_once(job.model_dump(), delivery, deadline))
        except GenerationDeferred as deferred:
            # Nothing stored: the record fails and comes back after the deferral, not the queue's
            # whole visibility timeout; the batch goes on.
            report.defer(deferred.reason)
            deps.messages.return_after(record.receipt_handle, deferred.retry_in_s)
            logger.info(
                "nudge generation deferred",
                extra={"user_id": job.userId, "reason": deferred.reason, "retry_in_s": round(deferred.retry_in_s)},
            )
            raise
        except Exception as error:
            # Reported as this record's failure (redelivered, then dead-lettered); the batch goes on.
            logger.exception(
                "nudge generation failed", extra={"user_id": job.userId, "error_type": type(error).__name__}
            )
            raise
        report.add(outcome)
        return outcome

    return handle


def _concurrently(
    handle: Callable[[SQSRecord], dict[str, Any]], pool: ThreadPoolExecutor
) -> Callable[[SQSRecord], Awaitable[dict[str, Any]]]:
    """``handle`` as Powertools' async record handler: each record in a thread of ``pool``, as many
    at once as it has threads (a model call spends its time waiting for tokens, not on the CPU)."""

    async def handle_concurrently(record: SQSRecord) -> dict[str, Any]:
        return await asyncio.get_running_loop().run_in_executor(pool, handle, record)

    return handle_concurrently


def record_threads(settings: GeneratorSettings, records: int) -> int:
    """Threads for a batch: one per record, at most NUDGE_BATCH_CONCURRENCY (never the machine's count)."""
    return max(1, min(settings.batch_concurrency, records))


def _emit(report: RunReport) -> None:
    metrics.add_metric(name="NudgeUsersProcessed", unit=MetricUnit.Count, value=report.users_processed)
    metrics.add_metric(name="NudgesGenerated", unit=MetricUnit.Count, value=report.nudges_generated)
    metrics.add_metric(name="NudgeCommanderAttempts", unit=MetricUnit.Count, value=report.attempts)
    metrics.add_metric(name="NudgeTokens", unit=MetricUnit.Count, value=report.tokens)
    metrics.add_metric(name="CachedInputTokens", unit=MetricUnit.Count, value=report.cached_tokens)
    # What the plans' calls cost at the price table's prices (the dashboard's cost widget).
    metrics.add_metric(name="ModelCostUsd", unit=MetricUnit.NoUnit, value=report.cost_usd)
    metrics.add_metric(name="NudgeRecordsFailed", unit=MetricUnit.Count, value=report.failed_records)
    metrics.add_metric(name="NudgeFallbacks", unit=MetricUnit.Count, value=sum(report.fallbacks_by_cause.values()))
    metrics.add_metric(name="NudgeUsersDeferred", unit=MetricUnit.Count, value=sum(report.deferred.values()))
    for dimension, counts, name in (
        ("cause", report.fallbacks_by_cause, "NudgeFallbacksByCause"),
        ("finishReason", report.finish_reasons, "NudgeFinishReasons"),
    ):
        for label, value in counts.items():
            with single_metric(name=name, unit=MetricUnit.Count, value=value) as metric:
                metric.add_dimension(name=dimension, value=label)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    deps = dependencies()
    deps.idempotency.register_lambda_context(context)
    report = RunReport()
    processor = AsyncBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    record_handler = _record_handler(deps, report, Deadline.from_lambda_context(context))
    threads = record_threads(deps.settings, len(event.get("Records") or ()))
    with ThreadPoolExecutor(threads, thread_name_prefix="nudge-record") as pool:
        handler = _concurrently(record_handler, pool)
        response = async_process_partial_response(
            event=event, record_handler=handler, processor=processor, context=context
        )
    report.failed_records = len(response.get("batchItemFailures", []))
    _emit(report)
    logger.info(
        "nudge batch done",
        extra={
            "records": len(event.get("Records", [])),
            "failed": report.failed_records,
            "statuses": dict(report.statuses),
            "fallbacks": dict(report.fallbacks_by_cause),
            "deferred": dict(report.deferred),
        },
    )
    return dict(response)
