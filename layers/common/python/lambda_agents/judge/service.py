"""The judge's fallback chain (docs/judge.md#the-three-stages): three independent stages, each its
own LLM call.

1. structured_output: judgment.json through the chosen provider strategy; accepted only when
   ``step`` names a candidate.
2. phase3_tag: a call without a schema; the LAST ``[MOVEMENT:N]`` tag wins.
3. ai_judge: evaluation.json, then a ``[JUDGE:N]`` tag as its own fallback.
A stage that fails for any reason (provider errors, a rejected schema, a truncated or invalid
answer, a number that names no candidate, even a bug) is logged as ``error`` with a fixed kind
(``models.StageError``, never provider text) and the next one runs; code, never the model,
decides auto-selection and which rules are candidates. Every number is the caller's
(``candidates``). The answer has one numbering, ``ruleIndex``: a reason the product writes names no
rule number, and the model is asked to name the rule by its condition.

Without Phase 3 (``phase3: false``, docs/judge.md#without-phase-3): the rule is read from the Phase 1
output by its tag (``phase1_tag``, no call); without a candidate's tag there, the AI judge
decides among the candidate conditions (``ai_judge``, takt's ``ai_judge_fallback``).

When every stage failed because the provider was unavailable (429, 5xx, timeouts, the
deadline), the failure is ``JudgeModelUnavailable``: the caller should retry later, not treat
the output as unjudgeable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from ..llm import (
    CallOptions,
    ChatModel,
    ChatRequest,
    Deadline,
    FixedTokenPolicy,
    RetryPolicy,
    Strategy,
    StructuredOptions,
    StructuredOutputError,
    StructuredResult,
    Usage,
    complete_with_retries,
    generate_structured,
)
from ..llm.accounting import ModelAccount, ModelAccountView, accounted
from ..llm.engine import default_schema_instruction
from ..llm.errors import ProviderError, ProviderFailed, RateLimited
from ..llm.policy import DEFAULT_RETRY_ON, TRANSIENT_KINDS
from ..llm.types import Attempt
from ..observability import elapsed_ms, logger
from . import instructions
from .candidates import Candidate, by_number, detect_by_rule_tag, last_numbered_tag, numbers_of, select_candidates
from .models import (
    OUTAGE_ERRORS,
    STAGE_ERRORS,
    EvaluationAnswer,
    JudgeRequest,
    Judgment,
    Method,
    StageError,
    StageLog,
    StepAnswer,
)

# A content_filter stop fails the stage and falls through (the next stage is its retry), unlike
# the engine's default, which retries it in place.
STAGE_RETRIES = RetryPolicy(
    max_attempts=2, backoff_base_s=0.5, max_backoff_s=2.0, retry_on=DEFAULT_RETRY_ON - {"content_filter"}
)
TAG_RETRIES = RetryPolicy(
    max_attempts=2, backoff_base_s=0.5, max_backoff_s=2.0, retry_on=TRANSIENT_KINDS, immediate=frozenset()
)
STRUCTURED_TOKENS = FixedTokenPolicy(400)
TAG_TOKENS = 200
AnswerT = TypeVar("AnswerT", bound=BaseModel)


class JudgmentFailed(RuntimeError):
    """Every stage failed: no rule could be matched for the movement. The message names the
    movement and each stage's error kind, nothing the provider or the model wrote."""

    def __init__(
        self, movement: str, stages: list[StageLog], usage: Usage | None = None, account: ModelAccount | None = None
    ) -> None:
        summary = "; ".join(f"{s.stage}: {s.error}" for s in stages if s.status == "error")
        super().__init__(f"movement '{movement}': no stage matched a rule ({summary})")
        self.movement = movement
        self.stages = stages
        self.usage = usage or Usage()  # every stage's attempts: billed though nothing matched
        self.account = account  # their record (None: no stage called the model)


class JudgeModelUnavailable(JudgmentFailed):
    """Every stage failed because the provider was unavailable: retry after ``retry_after_s``."""

    def __init__(
        self,
        movement: str,
        stages: list[StageLog],
        retry_after_s: float | None,
        usage: Usage | None = None,
        account: ModelAccount | None = None,
    ) -> None:
        super().__init__(movement, stages, usage, account)
        self.retry_after_s = retry_after_s


class StageFailed(Exception):
    def __init__(self, kind: StageError) -> None:
        super().__init__(kind)
        self.kind: StageError = kind


@dataclass
class _Run:
    request: JudgeRequest
    candidates: list[Candidate]
    stages: list[StageLog] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    retry_after_s: float | None = None
    deadline: Deadline | None = None  # this request's: every stage's calls end by it
    account: ModelAccount | None = None  # every stage's calls (llm.accounting), None before the first


@dataclass
class JudgeService:
    model: ChatModel
    sleep: Callable[[float], None] = time.sleep

    def judge(self, request: JudgeRequest, deadline: Deadline | None = None) -> Judgment:
        candidates = select_candidates(request.rules, request.interactive)
        run = _Run(request, candidates, deadline=deadline)
        if len(candidates) == 1:
            return self._result(run, candidates[0], Method.AUTO_SELECT, "only one candidate rule")
        stages: list[tuple[str, Method, Callable[[_Run], tuple[Candidate, str]]]]
        if request.phase3:
            stages = [
                ("structured_output", Method.STRUCTURED_OUTPUT, self._structured),
                ("phase3_tag", Method.TAG_FALLBACK, self._tag),
                ("ai_judge", Method.AI_JUDGE, self._ai_judge),
            ]
        else:
            stages = [
                ("phase1_tag", Method.TAG_FALLBACK, self._phase1),
                ("ai_judge", Method.AI_JUDGE, self._ai_judge),
            ]
        for index, (name, method, stage) in enumerate(stages):
            started = time.perf_counter()
            try:
                candidate, reason = stage(run)
            except Exception as error:
                kind = self._failure_kind(run, name, error)
                self._log(
                    run,
                    StageLog(stage=name, method=method, status="error", duration_ms=elapsed_ms(started), error=kind),
                )
                continue
            self._log(run, StageLog(stage=name, method=method, status="done", duration_ms=elapsed_ms(started)))
            for skipped_name, skipped_method, _ in stages[index + 1 :]:
                self._log(run, StageLog(stage=skipped_name, method=skipped_method, status="skipped", duration_ms=0))
            return self._result(run, candidate, method, reason)
        called = [stage for stage in run.stages if stage.stage != "phase1_tag"]
        if called and all(stage.error in OUTAGE_ERRORS for stage in called):
            raise JudgeModelUnavailable(request.movement, run.stages, run.retry_after_s, run.usage, run.account)
        raise JudgmentFailed(request.movement, run.stages, run.usage, run.account)

    @staticmethod
    def _failure_kind(run: _Run, stage: str, error: Exception) -> StageError:
        """The fixed word for why a stage failed; a bug is logged with its stack trace."""
        if isinstance(error, StageFailed):
            return error.kind
        if isinstance(error, ProviderFailed) and isinstance(error.cause, RateLimited):
            run.retry_after_s = max(run.retry_after_s or 0.0, error.cause.retry_after_s or 0.0) or None
        if isinstance(error, RateLimited):
            run.retry_after_s = max(run.retry_after_s or 0.0, error.retry_after_s or 0.0) or None
        kind = getattr(error, "kind", None)
        if isinstance(error, (StructuredOutputError, ProviderError)) and kind in STAGE_ERRORS:
            return kind  # type: ignore[no-any-return]
        if isinstance(error, (StructuredOutputError, ProviderError)):
            return "provider_error"
        logger.exception("judge stage failed unexpectedly", extra={"stage": stage, "error_type": type(error).__name__})
        return "unexpected_error"

    def _phase1(self, run: _Run) -> tuple[Candidate, str]:
        request = run.request
        found = detect_by_rule_tag(request.output, request.movement, request.rules, run.candidates)
        if found is None:
            raise StageFailed("no_tag")
        return found, "the rule's tag is the last one in the Phase 1 output"

    def _structured(self, run: _Run) -> tuple[Candidate, str]:
        def in_range(answer: StepAnswer) -> None:
            if by_number(run.candidates, answer.step) is None:
                numbers = numbers_of(run.candidates)
                raise ValueError(f"step must be one of the rule numbers {numbers}, got {answer.step}")

        request = run.request
        messages = instructions.structured_messages(
            request.movement, request.output, run.candidates, request.instruction_mode
        )
        result = self._structured_call(
            run,
            StepAnswer,
            messages,
            request.strategy,
            in_range,
            "judge.structured",
            schema_instruction=instructions.opencode_instruction,
        )
        return _chosen(run, result.value.step), result.value.reason

    def _tag(self, run: _Run) -> tuple[Candidate, str]:
        request = run.request
        text = self._free_text(
            run, instructions.tag_messages(request.movement, request.output, run.candidates), "judge.tag"
        )
        number = last_numbered_tag(text, request.movement)
        if number is None:
            raise StageFailed("no_tag")
        return _chosen(run, number), "the answer's last movement tag names this rule"

    def _ai_judge(self, run: _Run) -> tuple[Candidate, str]:
        def in_range(answer: EvaluationAnswer) -> None:
            if by_number(run.candidates, answer.matched_index) is None:
                raise ValueError(
                    f"matched_index must be one of the condition numbers {numbers_of(run.candidates)}, "
                    f"got {answer.matched_index}"
                )

        output = run.request.output
        messages = instructions.judge_messages(output, run.candidates, as_tag=False)
        try:
            result = self._structured_call(
                run, EvaluationAnswer, messages, Strategy.JSON_SCHEMA, in_range, "judge.evaluate"
            )
            return _chosen(run, result.value.matched_index), result.value.reason
        except StructuredOutputError as error:
            logger.info("ai_judge structured evaluation failed; trying the [JUDGE:N] tag", extra={"kind": error.kind})
        text = self._free_text(run, instructions.judge_messages(output, run.candidates, as_tag=True), "judge.tag")
        number = last_numbered_tag(text, "JUDGE")
        if number is None:
            raise StageFailed("no_tag")
        return _chosen(run, number), "the impartial judge's last JUDGE tag names this rule"

    def _structured_call(
        self,
        run: _Run,
        answer_type: type[AnswerT],
        messages: list[dict[str, object]],
        strategy: Strategy,
        validator: Callable[[AnswerT], None],
        purpose: str,
        schema_instruction: Callable[[dict[str, Any]], str] = default_schema_instruction,
    ) -> StructuredResult[AnswerT]:
        """A structured stage's call: deterministic, retried within the stage's own small budget,
        never past the deadline; the usage of every attempt counts even when the stage then fails."""
        return self._counted(
            run,
            purpose,
            lambda: generate_structured(
                self.model,
                answer_type,
                messages,
                StructuredOptions(
                    strategy=strategy,
                    token_policy=STRUCTURED_TOKENS,
                    retry_policy=STAGE_RETRIES,
                    purpose=purpose,
                    temperature=0.0,
                    schema_instruction=schema_instruction,
                    sleep=self.sleep,
                ),
                deadline=run.deadline,
                validator=validator,
            ),
        )

    def _free_text(self, run: _Run, messages: list[dict[str, object]], purpose: str) -> str:
        """A tag stage's call: transient failures retried once, never past the deadline; the
        usage of every attempt counts even when the stage then fails."""
        request = ChatRequest(messages=messages, max_tokens=TAG_TOKENS, temperature=0.0, purpose=purpose)
        call = self._counted(
            run,
            purpose,
            lambda: complete_with_retries(
                self.model, request, CallOptions(TAG_RETRIES, sleep=self.sleep), deadline=run.deadline
            ),
        )
        response = call.response
        if response.finish_reason == "length":
            # The last tag wins, and a cut answer may have lost it: a quoted earlier tag would win.
            raise StageFailed("length")
        if response.finish_reason == "content_filter":
            raise StageFailed("content_filter")
        if response.refusal:
            raise StageFailed("refusal")
        if response.finish_reason != "stop" or not response.content:
            raise StageFailed("no_answer")
        return response.content

    def _result(self, run: _Run, candidate: Candidate, method: Method, reason: str) -> Judgment:
        return Judgment(
            movement=run.request.movement,
            rule_index=candidate.original_index,
            method=method,
            reason=reason,
            stages=run.stages,
            total_tokens=run.usage.total_tokens,
            account=None if run.account is None else ModelAccountView.model_validate(run.account.as_dict()),
        ).with_cached_prompt_tokens(run.usage.cached_prompt_tokens)

    def _counted(self, run: _Run, purpose: str, call: Callable[[], CountedT]) -> CountedT:
        """``call()``, its usage and its record (``llm.accounting``, one log line) added to the
        run's; a call that gave up carries the usage of its attempts on its
        ``StructuredOutputError``, which counts as well."""
        try:
            result = call()
        except StructuredOutputError as error:
            run.usage = run.usage + error.usage
            self._account(run, purpose, error.attempts, error.kind)
            raise
        run.usage = run.usage + result.usage
        self._account(run, purpose, result.attempts, "answered")
        return result

    def _account(self, run: _Run, purpose: str, attempts: list[Attempt], outcome: str) -> None:
        account = accounted(
            attempts,
            model=self.model.model_name,
            prompt_version=instructions.judge_prompt_version(),
            purpose=purpose,
            user_id=None,  # the judge serves a workflow (IAM-signed), not a user
            outcome=outcome,
        )
        run.account = account if run.account is None else run.account + account

    @staticmethod
    def _log(run: _Run, stage: StageLog) -> None:
        run.stages.append(stage)
        logger.info(
            "judge stage",
            extra={
                "movement": run.request.movement,
                "stage": stage.stage,
                "method": stage.method.value,
                "status": stage.status,
                "duration_ms": stage.duration_ms,
            },
        )


def _chosen(run: _Run, number: int) -> Candidate:
    """The candidate the caller numbered ``number``; a number naming no candidate fails the stage."""
    candidate = by_number(run.candidates, number)
    if candidate is None:
        raise StageFailed("not_a_candidate")
    return candidate


class _Counted(Protocol):
    @property
    def usage(self) -> Usage: ...

    @property
    def attempts(self) -> list[Attempt]: ...


CountedT = TypeVar("CountedT", bound=_Counted)
