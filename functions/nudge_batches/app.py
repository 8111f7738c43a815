"""NudgeBatchFunction: the fan-out's Batch API path (``nudges.plan_batches``), every 15 minutes
when the stack's NudgeFanoutMode is ``batch`` or ``batch_then_sync``: submits each zone's
next-day cohort as batch jobs at its local submit hour, stores the answers of finished jobs
through the generator's own code, and cancels jobs still running an hour before their cohort's
generation hour. The event's ``time`` is validated as the scheduler's is. A job goes to the first
model of the chain (OPENAI_MODEL, then OPENAI_FALLBACK_MODELS with a batch endpoint) that takes it.

A provider or storage call that fails for one job, part or cohort (or a job whose create answer
was lost) does not fail the run: it is counted in ``NudgeBatchJobErrors`` (alarmed by
NudgeBatchJobErrorsAlarm when it keeps happening) and logged, the job is tried again next run, and
the run's metrics are written as on any other run.

Environment: USERS_TABLE, SCHEDULES_TABLE, NUDGE_GENERATION_HOUR (5), NUDGE_BATCH_SUBMIT_HOUR
(20), NUDGE_CATCH_UP_HOURS (1), NUDGE_BATCH_MAX_REQUESTS (50,000: a job's limit), SCHEDULE_TTL_DAYS,
NUDGE_MAX_SLOTS, NUDGE_MIN_SPACING_MINUTES, NUDGE_SCHEDULE_MAP and the LLM settings (OPENAI_*).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import ConfigError, LLMSettings, load_settings
from lambda_agents.llm.batch_chain import BatchChain
from lambda_agents.llm.batches import BatchModel
from lambda_agents.llm.factory import build_batch_model
from lambda_agents.nudges.generation import NudgeGenerationService
from lambda_agents.nudges.plan_batches import PlanBatches
from lambda_agents.nudges.schedule_event import scheduled_time
from lambda_agents.nudges.settings import SlotTableSettings
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.dynamodb import StorageError
from lambda_agents.storage.nudges import DynamoCohortBatches, DynamoScheduleRepository
from lambda_agents.storage.users import DynamoUserRepository
from pydantic import Field


class BatchSettings(SlotTableSettings):
    users_table: str = Field(alias="USERS_TABLE", min_length=1)
    schedules_table: str = Field(alias="SCHEDULES_TABLE", min_length=1)
    generation_hour: int = Field(default=5, alias="NUDGE_GENERATION_HOUR", ge=0, le=23)
    submit_hour: int = Field(default=20, alias="NUDGE_BATCH_SUBMIT_HOUR", ge=0, le=23)
    catch_up_hours: int = Field(default=1, alias="NUDGE_CATCH_UP_HOURS", ge=1, le=24)
    max_requests: int = Field(default=50_000, alias="NUDGE_BATCH_MAX_REQUESTS", ge=1, le=50_000)
    ttl_days: int = Field(default=30, alias="SCHEDULE_TTL_DAYS", ge=1, le=3650)


def bootstrap(*, settings: BatchSettings | None = None, model: BatchModel | BatchChain | None = None) -> PlanBatches:
    """The function's composition root (``lambda_agents.composition``): its one use case."""
    try:
        settings = settings or load_settings(BatchSettings)
        model = model or build_batch_model(load_settings(LLMSettings))
    except (ConfigError, ValueError) as error:
        raise ConfigError(f"NudgeBatchFunction settings: {error}") from None
    slots = settings.slots()
    users = DynamoUserRepository(settings.users_table)
    schedules = DynamoScheduleRepository(settings.schedules_table, settings.ttl_days, owner_table=settings.users_table)
    return PlanBatches(
        generation=NudgeGenerationService(users, schedules, None, slots=slots),
        model=model,
        users=users,
        store=DynamoCohortBatches(settings.schedules_table),
        generation_hour=settings.generation_hour,
        submit_hour=settings.submit_hour,
        catch_up_hours=settings.catch_up_hours,
        max_requests=settings.max_requests,
        storage_errors=(StorageError,),
    )


dependencies = CompositionRoot(bootstrap)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    now = scheduled_time(event, datetime.now(UTC))
    run = dependencies().run(now, time_left_s=lambda: context.get_remaining_time_in_millis() / 1000.0)
    submitted = sum(batch.requests for batch in run.submitted)
    metrics.add_metric(name="NudgeBatchRequestsSubmitted", unit=MetricUnit.Count, value=submitted)
    metrics.add_metric(name="NudgeBatchJobsRefused", unit=MetricUnit.Count, value=len(run.refused))
    metrics.add_metric(name="NudgeBatchJobsCancelled", unit=MetricUnit.Count, value=len(run.cancelled))
    metrics.add_metric(name="NudgeBatchPlansStored", unit=MetricUnit.Count, value=run.collected["generated"])
    metrics.add_metric(name="NudgeBatchJobErrors", unit=MetricUnit.Count, value=len(run.job_errors))
    metrics.add_metric(name="NudgeBatchTokens", unit=MetricUnit.Count, value=run.tokens)
    # The collected answers' cost at the price table's Batch prices (the dashboard's cost widget).
    metrics.add_metric(name="ModelCostUsd", unit=MetricUnit.NoUnit, value=run.cost_usd)
    for reason, count in run.unusable.items():
        with single_metric(name="NudgeBatchAnswersUnusable", unit=MetricUnit.Count, value=count) as metric:
            metric.add_dimension(name="reason", value=reason)
    for cohort, why in run.refused:
        logger.warning(
            "a batch job was refused; its cohort is left to the synchronous path", extra={"cohort": cohort, "why": why}
        )
    summary = {
        "at": now.isoformat(),
        "submitted": [
            {
                "timezone": b.zone,
                "localDate": b.local_date,
                "part": b.part,
                "batchId": b.batch_id,
                "requests": b.requests,
                "model": b.model,
            }
            for b in run.submitted
        ],
        "passedOn": [{"part": part, "model": model, "why": why} for part, model, why in run.passed_on],
        "skippedUsers": dict(run.skipped_users),
        "collected": dict(run.collected),
        "unusable": dict(run.unusable),
        "cancelled": run.cancelled,
        "refused": [{"cohort": cohort, "why": why} for cohort, why in run.refused],
        "stillRunning": run.still_running,
        "jobErrors": [{"job": job, "why": why} for job, why in run.job_errors],
        "recovered": [
            {"timezone": b.zone, "localDate": b.local_date, "part": b.part, "batchId": b.batch_id}
            for b in run.recovered
        ],
        "unconfirmed": run.unconfirmed,
    }
    logger.info("nudge batch jobs", extra=summary)
    return summary
