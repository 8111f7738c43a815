"""NudgeGeneratorFunction: consumes NudgeQueue in batches and generates one day of nudges per
user (spec 000 generateNudges), reporting partial batch failures.

Per record: the body is validated (a malformed one fails and, after maxReceiveCount, lands in
the dead-letter queue). Whatever stops the Commander, an unexpected exception included, ends in
the rule-based fallback (``nudges.commander``), so only what a redelivery can fix fails a record:
DynamoDB reads before the model call, and a schedule write DynamoDB keeps refusing after the
in-place retries (the one case where a redelivery pays the model again). The work runs under
Powertools idempotency keyed on userId + localDate (``nudges.generation_records``: a fixed key
prefix, so the user's deletion can compute the record ids),
so a duplicate delivery returns the first result without a second LLM call, and the schedule
write is conditional, so two concurrent runs cannot store two schedules, and none is stored for a
user whose deletion began meanwhile. Only outcomes that stored a schedule keep their record; a skip
releases it (deciding it again is one read). A record that starts
with too little of the invocation's time left is failed and redelivered, instead of being
rushed into the fallback.

Environment: USERS_TABLE, SCHEDULES_TABLE, IDEMPOTENCY_TABLE, SCHEDULE_TTL_DAYS (30),
NUDGE_MAX_SLOTS (15), NUDGE_MIN_SPACING_MINUTES (30), NUDGE_SCHEDULE_MAP (optional JSON
``{"problem": ["HH:MM", ...]}``), and the LLM settings (AI_AGENT_MODE, OPENAI_*).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyPersistenceLayerError
from lambda_agents.config import ConfigError, LLMSettings, load_settings
from lambda_agents.llm import Deadline
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.nudges.generation import GenerationJob, NudgeGenerationService, SlotSettings
from lambda_agents.nudges.generation_records import (
    KEY_PREFIX,
    OutcomeNotKept,
    idempotency_config,
    kept_or_raise,
    outcome_not_kept,
)
from lambda_agents.nudges.run_report import RunReport
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP, schedule_map_setting
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.nudges import DynamoScheduleRepository
from lambda_agents.storage.users import DynamoUserRepository
from pydantic import BaseModel, ConfigDict, Field, field_validator

MIN_SECONDS_PER_USER = 20.0


class GeneratorSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    users_table: str = Field(alias="USERS_TABLE", min_length=1)
    schedules_table: str = Field(alias="SCHEDULES_TABLE", min_length=1)
    idempotency_table: str = Field(alias="IDEMPOTENCY_TABLE", min_length=1)
    ttl_days: int = Field(default=30, alias="SCHEDULE_TTL_DAYS", ge=1, le=3650)
    max_slots: int = Field(default=15, alias="NUDGE_MAX_SLOTS", ge=1, le=48)
    min_spacing_minutes: int = Field(default=30, alias="NUDGE_MIN_SPACING_MINUTES", ge=0, le=720)
    schedule_map: dict[str, list[str]] | None = Field(default=None, alias="NUDGE_SCHEDULE_MAP")

    @field_validator("schedule_map", mode="before")
    @classmethod
    def _parse_map(cls, value: Any) -> Any:
        return schedule_map_setting(value)


class Ports:
    """What one container builds once: settings, the service and the idempotent record handler."""

    def __init__(self) -> None:
        self.settings = load_settings(GeneratorSettings)
        llm = load_settings(LLMSettings)
        slots = SlotSettings(
            schedule_map=self.settings.schedule_map or dict(DEFAULT_SCHEDULE_MAP),
            min_spacing_minutes=self.settings.min_spacing_minutes,
            max_slots=self.settings.max_slots,
        )
        self.service = NudgeGenerationService(
            DynamoUserRepository(self.settings.users_table),
            DynamoScheduleRepository(
                self.settings.schedules_table, self.settings.ttl_days, owner_table=self.settings.users_table
            ),
            build_chat_model(llm),
            slots=slots,
        )
        self.idempotency = idempotency_config()
        self.persistence = DynamoDBPersistenceLayer(table_name=self.settings.idempotency_table)
        self.deadline: Deadline | None = None

        @idempotent_function(  # type: ignore[untyped-decorator]
            data_keyword_argument="job",
            persistence_store=self.persistence,
            config=self.idempotency,
            key_prefix=KEY_PREFIX,
        )
        def generate_once(job: dict[str, Any]) -> dict[str, Any]:
            outcome = self.service.generate(GenerationJob.model_validate(job), self.deadline)
            return kept_or_raise(outcome.as_dict())

        self._generate_once: Callable[..., dict[str, Any]] = generate_once

    def generate_once(self, job: dict[str, Any]) -> dict[str, Any]:
        """The job's outcome: the kept one of an earlier delivery, or a new run's."""
        try:
            return self._generate_once(job=job)
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


@cache
def _ports() -> Ports:
    try:
        return Ports()
    except (ConfigError, ValueError) as error:
        raise ConfigError(f"NudgeGeneratorFunction settings: {error}") from None


def _record_handler(ports: Ports, report: RunReport) -> Callable[[SQSRecord], dict[str, Any]]:
    def handle(record: SQSRecord) -> dict[str, Any]:
        job = GenerationJob.model_validate_json(record.body)
        if ports.deadline is not None and ports.deadline.remaining_s() < MIN_SECONDS_PER_USER:
            raise TimeoutError(f"too little time left for user {job.userId}; the record will be redelivered")
        try:
            outcome = ports.generate_once(job=job.model_dump())
        except Exception as error:
            # Reported as this record's failure (redelivered, then dead-lettered); the batch goes on.
            logger.exception(
                "nudge generation failed", extra={"user_id": job.userId, "error_type": type(error).__name__}
            )
            raise
        report.add(outcome)
        return outcome

    return handle


def _emit(report: RunReport) -> None:
    metrics.add_metric(name="NudgeUsersProcessed", unit=MetricUnit.Count, value=report.users_processed)
    metrics.add_metric(name="NudgesGenerated", unit=MetricUnit.Count, value=report.nudges_generated)
    metrics.add_metric(name="NudgeCommanderAttempts", unit=MetricUnit.Count, value=report.attempts)
    metrics.add_metric(name="NudgeRecordsFailed", unit=MetricUnit.Count, value=report.failed_records)
    metrics.add_metric(name="NudgeFallbacks", unit=MetricUnit.Count, value=sum(report.fallbacks_by_cause.values()))
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
    ports = _ports()
    ports.idempotency.register_lambda_context(context)
    ports.deadline = Deadline.from_lambda_context(context)
    report = RunReport()
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    response = process_partial_response(
        event=event, record_handler=_record_handler(ports, report), processor=processor, context=context
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
        },
    )
    return dict(response)
