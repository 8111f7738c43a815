"""judgeStatus (spec 004 "fallback chain"): three independent stages, each its own LLM call.

1. structured_output: judgment.json through the chosen provider strategy; accepted only when
   ``step`` names a candidate.
2. phase3_tag: a call without a schema; the LAST ``[MOVEMENT:N]`` tag wins.
3. ai_judge: evaluation.json, then a ``[JUDGE:N]`` tag as its own fallback.
A stage that fails for any reason (provider errors, a rejected schema, a truncated or invalid
answer, an out-of-range number) is logged as ``error`` and the next one runs; code, never the
model, decides auto-selection and which rules are candidates.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..llm import (
    ChatModel,
    ChatRequest,
    Deadline,
    FixedTokenPolicy,
    RetryPolicy,
    Strategy,
    StructuredOutputError,
    Usage,
    complete_with_retries,
    generate_structured,
)
from ..llm.errors import ProviderError
from ..llm.policy import DEFAULT_RETRY_ON, TRANSIENT_KINDS
from ..observability import elapsed_ms, logger
from . import instructions
from .candidates import Candidate, detect_by_rule_tag, last_numbered_tag, select_candidates
from .models import EvaluationAnswer, JudgeRequest, Judgment, Method, StageLog, StepAnswer

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


class JudgmentFailed(RuntimeError):
    """Every stage failed: no rule could be matched for the movement."""

    def __init__(self, movement: str, stages: list[StageLog]) -> None:
        summary = "; ".join(f"{s.stage}: {s.error}" for s in stages if s.status == "error")
        super().__init__(f"movement '{movement}': no stage matched a rule ({summary})")
        self.movement = movement
        self.stages = stages


class NoRuleTagFound(JudgmentFailed):
    """Phase 3 was off and the Phase 1 output carries no candidate rule's tag: the input cannot
    be judged, and no model was asked (a client-side outcome, unlike a failing model)."""


class StageFailed(Exception):
    pass


@dataclass
class _Run:
    request: JudgeRequest
    candidates: list[Candidate]
    stages: list[StageLog] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


@dataclass
class JudgeService:
    model: ChatModel
    deadline_factory: Callable[[], Deadline | None] = lambda: None
    sleep: Callable[[float], None] = time.sleep

    def judge(self, request: JudgeRequest) -> Judgment:
        candidates = select_candidates(request.rules, request.interactive)
        run = _Run(request, candidates)
        if len(candidates) == 1:
            return self._result(run, candidates[0], Method.AUTO_SELECT, "only one candidate rule")
        if not request.phase3:
            return self._phase1(run)
        stages: list[tuple[str, Method, Callable[[_Run], tuple[Candidate, str]]]] = [
            ("structured_output", Method.STRUCTURED_OUTPUT, self._structured),
            ("phase3_tag", Method.TAG_FALLBACK, self._tag),
            ("ai_judge", Method.AI_JUDGE, self._ai_judge),
        ]
        for index, (name, method, stage) in enumerate(stages):
            started = time.perf_counter()
            try:
                candidate, reason = stage(run)
            except (StageFailed, StructuredOutputError, ProviderError) as error:
                self._log(
                    run,
                    StageLog(
                        stage=name, method=method, status="error", duration_ms=elapsed_ms(started), error=_short(error)
                    ),
                )
                continue
            self._log(run, StageLog(stage=name, method=method, status="done", duration_ms=elapsed_ms(started)))
            for skipped_name, skipped_method, _ in stages[index + 1 :]:
                self._log(run, StageLog(stage=skipped_name, method=skipped_method, status="skipped", duration_ms=0))
            return self._result(run, candidate, method, reason)
        raise JudgmentFailed(request.movement, run.stages)

    def _phase1(self, run: _Run) -> Judgment:
        started = time.perf_counter()
        found = detect_by_rule_tag(run.request.output, run.request.movement, run.candidates)
        if found is None:
            self._log(
                run,
                StageLog(
                    stage="phase1_tag",
                    method=Method.TAG_FALLBACK,
                    status="error",
                    duration_ms=elapsed_ms(started),
                    error="no rule tag in the output",
                ),
            )
            raise NoRuleTagFound(run.request.movement, run.stages)
        self._log(
            run,
            StageLog(stage="phase1_tag", method=Method.TAG_FALLBACK, status="done", duration_ms=elapsed_ms(started)),
        )
        return self._result(run, found, Method.TAG_FALLBACK, "tag found in the Phase 1 output")

    def _structured(self, run: _Run) -> tuple[Candidate, str]:
        count = len(run.candidates)

        def in_range(answer: StepAnswer) -> None:
            if not 1 <= answer.step <= count:
                raise ValueError(f"step must be an integer from 1 to {count}, got {answer.step}")

        request = run.request
        try:
            result = generate_structured(
                self.model,
                StepAnswer,
                instructions.structured_messages(
                    request.movement, request.output, run.candidates, request.instruction_mode
                ),
                strategy=request.strategy,
                token_policy=STRUCTURED_TOKENS,
                retry_policy=STAGE_RETRIES,
                deadline=self.deadline_factory(),
                validator=in_range,
                purpose="judge.structured",
                temperature=0.0,
                schema_instruction=instructions.opencode_instruction,
                sleep=self.sleep,
            )
        except StructuredOutputError as error:
            run.usage = run.usage + error.usage
            raise
        run.usage = run.usage + result.usage
        return run.candidates[result.value.step - 1], result.value.reason

    def _tag(self, run: _Run) -> tuple[Candidate, str]:
        request = run.request
        text = self._free_text(
            run, instructions.tag_messages(request.movement, request.output, run.candidates), "judge.tag"
        )
        number = last_numbered_tag(text, request.movement, len(run.candidates))
        if number is None:
            raise StageFailed(f"no valid [{request.movement.upper()}:N] tag in the answer")
        return run.candidates[number - 1], f"tag [{request.movement.upper()}:{number}]"

    def _ai_judge(self, run: _Run) -> tuple[Candidate, str]:
        count = len(run.candidates)

        def in_range(answer: EvaluationAnswer) -> None:
            if not 1 <= answer.matched_index <= count:
                raise ValueError(f"matched_index must be from 1 to {count}, got {answer.matched_index}")

        output = run.request.output
        try:
            result = generate_structured(
                self.model,
                EvaluationAnswer,
                instructions.judge_messages(output, run.candidates, as_tag=False),
                strategy=Strategy.JSON_SCHEMA,
                token_policy=STRUCTURED_TOKENS,
                retry_policy=STAGE_RETRIES,
                deadline=self.deadline_factory(),
                validator=in_range,
                purpose="judge.evaluate",
                temperature=0.0,
                sleep=self.sleep,
            )
            run.usage = run.usage + result.usage
            return run.candidates[result.value.matched_index - 1], result.value.reason
        except StructuredOutputError as error:
            run.usage = run.usage + error.usage
            logger.info("ai_judge structured evaluation failed; trying the [JUDGE:N] tag", extra={"kind": error.kind})
        text = self._free_text(run, instructions.judge_messages(output, run.candidates, as_tag=True), "judge.tag")
        number = last_numbered_tag(text, "JUDGE", count)
        if number is None:
            raise StageFailed("no valid [JUDGE:N] tag in the judge's answer")
        return run.candidates[number - 1], f"judge tag [JUDGE:{number}]"

    def _free_text(self, run: _Run, messages: list[dict[str, object]], purpose: str) -> str:
        """A tag stage's call: transient failures retried once, never past the deadline; the
        usage of every attempt counts even when the stage then fails."""
        request = ChatRequest(messages=messages, max_tokens=TAG_TOKENS, temperature=0.0, purpose=purpose)
        try:
            call = complete_with_retries(
                self.model, request, retry_policy=TAG_RETRIES, deadline=self.deadline_factory(), sleep=self.sleep
            )
        except StructuredOutputError as error:
            run.usage = run.usage + error.usage
            raise
        run.usage = run.usage + call.usage
        response = call.response
        if response.finish_reason == "length":
            # The last tag wins, and a cut answer may have lost it: a quoted earlier tag would win.
            raise StageFailed("answer truncated (finish_reason=length): its final tag may be missing")
        if response.finish_reason != "stop" or not response.content:
            raise StageFailed(f"no text answer (finish_reason={response.finish_reason})")
        return response.content

    def _result(self, run: _Run, candidate: Candidate, method: Method, reason: str) -> Judgment:
        return Judgment(
            movement=run.request.movement,
            rule_index=candidate.original_index,
            method=method,
            reason=reason,
            stages=run.stages,
            total_tokens=run.usage.total_tokens,
        )

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


def _short(error: BaseException, limit: int = 300) -> str:
    return f"{type(error).__name__}: {error}"[:limit]
