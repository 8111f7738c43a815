"""The interview's service with its ports, for InterviewFunction (the applicant's routes) and
InterviewTurnFunction (the turns answered after their request)."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ..answered_later import Handover
from ..config import LLMSettings, load_settings
from ..interview.agents.offline import RESPONDERS
from ..interview.catalog.jobs import JobService
from ..interview.catalog.notice import Retention
from ..interview.interview_log import PowertoolsInterviewLog
from ..interview.pending_turns import CONTAINER_TURN_TIMES, TurnMessage
from ..interview.rules.application_events import ApplicationEventDelivery
from ..interview.service import InterviewService
from ..interview.views import turn_answer
from ..llm.budgets import CONTAINER_BUDGETS
from ..llm.factory import build_chat_model
from ..llm.shared_learning import SharedBudgets, SharedLearning, SharedPace
from ..llm.speeds import CONTAINER_SPEEDS, speed_prior
from ..llm.types import ChatModel
from ..spending import UserLimits
from ..storage.application_events import EventBridgePublisher
from ..storage.application_outbox import DynamoApplicationOutbox
from ..storage.interviews import DynamoInterviewRepository
from ..storage.jobs import DynamoJobRepository
from ..storage.learning import DynamoLearningRecord
from ..storage.queues import QueueSender
from ..storage.run_steps import DynamoRunStepRecorder
from ..storage.turn_calls import DynamoTurnCallRecords
from .live import live_channel
from .spending import daily_budget

if TYPE_CHECKING:
    from ..interview.agents.orchestrator import Orchestrator, OrchestratorInput, TurnOutcome


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


class TurnWorkerSettings(InterviewSettings):
    """InterviewTurnFunction's: no retry records of its own, and how often a turn is delivered."""

    idempotency_table: str = Field(default="", alias="IDEMPOTENCY_TABLE")
    max_receive_count: int = Field(default=5, alias="INTERVIEW_TURNS_MAX_RECEIVE_COUNT", ge=1, le=1000)


class AgentsOnFirstTurn:
    """The Orchestrator, built (and its agents imported) when the first turn runs: the routes that
    run none (listing, creating, consent, reading, withdrawing) do without them."""

    def __init__(self, build: Callable[[], Orchestrator]) -> None:
        self._build = build

    @cached_property
    def built(self) -> Orchestrator:
        return self._build()

    def process_message(self, given: OrchestratorInput) -> TurnOutcome:
        return self.built.process_message(given)


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

    def orchestrator() -> Orchestrator:
        from ..interview.agents.loop import AgentEnv
        from ..interview.agents.orchestrator import Orchestrator
        from ..interview.agents.reviewers import SubAgents, SubAgentSettings

        env = AgentEnv(
            model=model,
            run_steps=DynamoRunStepRecorder(settings.interviews_table, settings.run_step_ttl_days),
            log=log,
            subagents=SubAgents(model, SubAgentSettings(), sleep=sleep),
            sleep=sleep,
        )
        return Orchestrator(env, max_iterations=settings.max_iterations)

    handover: Handover[TurnMessage] | None = None
    learned = shared_learning(settings.interviews_table, model.model_name)
    if settings.turns_queue_url:
        pace = lambda: CONTAINER_SPEEDS.estimate(model.model_name, speed_prior(model))  # noqa: E731
        handover = Handover(QueueSender(settings.turns_queue_url), pace, CONTAINER_TURN_TIMES, learned)
    service = InterviewService(
        DynamoInterviewRepository(
            settings.interviews_table, settings.ttl_days, idempotency_table=settings.idempotency_table
        ),
        AgentsOnFirstTurn(orchestrator),
        max_turns=settings.max_turns,
        jobs=JobService(DynamoJobRepository(settings.interviews_table)),
        retention=Retention(settings.ttl_days, settings.run_step_ttl_days),
        events=ApplicationEventDelivery(
            EventBridgePublisher(settings.event_bus), DynamoApplicationOutbox(settings.interviews_table), log
        ),
        handover=handover,
        render_answer=turn_answer,
        limits=UserLimits(daily_budget()),
        live=live_channel(),
        paid_calls=DynamoTurnCallRecords(settings.interviews_table),
        learned=learned,
    )
    return service, model


def shared_learning(table_name: str, model_name: str) -> SharedLearning:
    """What the worker learns of the model (its pace, what each purpose's answers need), shared with
    the request through one item of the interviews' table (``llm.shared_learning``)."""
    parts = (SharedPace(CONTAINER_SPEEDS), SharedBudgets(CONTAINER_BUDGETS))
    return SharedLearning(DynamoLearningRecord(table_name), model_name, parts)
