"""The interview's service with its ports, for InterviewFunction (the applicant's routes) and
InterviewTurnFunction (the turns answered after their request)."""

from __future__ import annotations

import time
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from ..config import LLMSettings, load_settings
from ..interview.agents.loop import AgentEnv
from ..interview.agents.offline import RESPONDERS
from ..interview.agents.orchestrator import Orchestrator
from ..interview.agents.reviewers import SubAgents, SubAgentSettings
from ..interview.catalog.jobs import JobService
from ..interview.catalog.notice import Retention
from ..interview.interview_log import PowertoolsInterviewLog
from ..interview.rules.application_events import ApplicationEventDelivery
from ..interview.service import InterviewService, TurnHandover
from ..interview.views import turn_answer
from ..llm.factory import build_chat_model
from ..llm.speeds import CONTAINER_SPEEDS, speed_prior
from ..llm.types import ChatModel
from ..storage.application_events import EventBridgePublisher
from ..storage.application_outbox import DynamoApplicationOutbox
from ..storage.interviews import DynamoInterviewRepository, DynamoRunStepRecorder
from ..storage.jobs import DynamoJobRepository
from ..storage.queues import QueueSender
from .live import live_channel
from .spending import daily_budget


class InterviewSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    interviews_table: str = Field(alias="INTERVIEWS_TABLE", min_length=1)
    idempotency_table: str = Field(alias="IDEMPOTENCY_TABLE", min_length=1)
    event_bus: str = Field(default="default", alias="APPLICATION_EVENT_BUS", min_length=1, max_length=1600)
    ttl_days: int = Field(default=90, alias="INTERVIEW_TTL_DAYS", ge=1, le=3650)
    run_step_ttl_days: int = Field(default=7, alias="RUN_STEP_TTL_DAYS", ge=1, le=90)
    max_iterations: int = Field(default=10, alias="INTERVIEW_MAX_ITERATIONS", ge=1, le=50)
    max_turns: int = Field(default=100, alias="INTERVIEW_MAX_TURNS", ge=1, le=500)
    # InterviewTurnFunction's queue: turns that do not fit in their request; unset: all run in it.
    turns_queue_url: str | None = Field(default=None, alias="INTERVIEW_TURNS_QUEUE_URL")


def interview_service(
    settings: InterviewSettings,
    llm: LLMSettings | None = None,
    *,
    model: ChatModel | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[InterviewService, ChatModel]:
    """The service, and the model its agents call (the handler's tests and metrics read it);
    ``model`` stands in for the one the LLM settings would build, ``sleep`` for the agents' waits
    between attempts (backoffs, Retry-After)."""
    model = model or build_chat_model(llm or load_settings(LLMSettings), responders=RESPONDERS)
    log = PowertoolsInterviewLog()
    env = AgentEnv(
        model=model,
        run_steps=DynamoRunStepRecorder(settings.interviews_table, settings.run_step_ttl_days),
        log=log,
        subagents=SubAgents(model, SubAgentSettings(), sleep=sleep),
        sleep=sleep,
    )
    handover = None
    if settings.turns_queue_url:
        handover = TurnHandover(
            QueueSender(settings.turns_queue_url),
            pace=lambda: CONTAINER_SPEEDS.estimate(model.model_name, speed_prior(model)),
        )
    service = InterviewService(
        DynamoInterviewRepository(
            settings.interviews_table, settings.ttl_days, idempotency_table=settings.idempotency_table
        ),
        Orchestrator(env, max_iterations=settings.max_iterations),
        max_turns=settings.max_turns,
        jobs=JobService(DynamoJobRepository(settings.interviews_table)),
        retention=Retention(settings.ttl_days, settings.run_step_ttl_days),
        events=ApplicationEventDelivery(
            EventBridgePublisher(settings.event_bus), DynamoApplicationOutbox(settings.interviews_table), log
        ),
        handover=handover,
        render_answer=turn_answer,
        budget=daily_budget(),
        live=live_channel(),
    )
    return service, model
