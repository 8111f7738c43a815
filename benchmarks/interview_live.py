"""interview_bench's section 5: an interview's answer turn on the applicant's screen, through the
real openai client against the fake provider at a scripted 60 tokens/s.

The turn: the applicant answers the first question; the Interviewer hands the facts to the
Reviewer, then asks the next question. Measured twice in the same run:

- written twice: the call sequence the Interviewer used to make (the question written in a
  ``subtask(quick_check, question)`` call, then again in ``ask``). Today's product refuses that
  subtask, so the sequence is replayed as the model would send it: the refused call is billed and
  timed as the old one was (with today's prompt, a few lines shorter than the old one's, so the
  old side is if anything undercounted), and the frames are what the old code sent (``done``
  alone, after the commit: the first words arrive with it);
- written once (the product): ``ask`` runs QuickCheck on its message; ``progress`` frames as each
  hidden step starts, the question as a ``delta`` once checked.

Calls and tokens come from the fake's billing ledger; times from the applicant's answer (the
service called) to the first ``progress`` frame, to the first words and to ``done``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.interview.agents.loop import AgentEnv
from lambda_agents.interview.agents.orchestrator import Orchestrator
from lambda_agents.interview.agents.reviewers import SubAgents
from lambda_agents.interview.interview_log import RecordingLog
from lambda_agents.interview.rules.run_steps import InMemoryRunSteps
from lambda_agents.interview.service import InterviewService
from lambda_agents.interview.views import turn_answer
from lambda_agents.live import DeltaFrame, DoneFrame, Frame, ProgressFrame
from lambda_agents.llm.factory import build_chat_model

from benchmarks.interview_job import JOB, MemoryRepository
from devtools.fake_openai import INSTANT, FakeOpenAIServer, Reply, SpeedProfile
from devtools.fake_openai.interview_replies import GREETING, asked, reviewed, settings_and_plan, tool

SCRIPTED_60 = SpeedProfile("scripted-60", (0.5, 0.5), (60.0, 60.0, 60.0))
ROUNDS_NOTE = (
    "the Reviewer, then the next question (the fake at 60 tokens/s, first token 0.5 s; real openai client; "
    "median of {rounds})"
)
USER = "bench-live"
FIRST = "これまでのバリスタのご経験について、年数と勤務先を教えていただけますか？"
NEXT = "ありがとうございます。この仕事を志望された理由を、具体的なきっかけも含めて教えていただけますか？"
ANSWER = "東京のカフェ森で5年間バリスタをしていました。毎朝の仕込みから閉店作業まで担当していました。"


@dataclass(frozen=True)
class TurnFigures:
    label: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    first_progress_s: float | None
    first_words_s: float
    done_s: float


class TimedChannel:
    """A LiveChannel that notes when each frame was sent (``time.perf_counter``)."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, Frame]] = []

    def send(self, user_id: str, frame: Frame) -> None:
        self.sent.append((time.perf_counter(), frame))

    def flush(self) -> None:
        return None


def _service(server: FakeOpenAIServer, repository: Any, channel: TimedChannel) -> InterviewService:
    environment = {
        "AI_AGENT_MODE": "openai",
        "OPENAI_MODEL": "gpt-4o",
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_TOKENS_PER_SECOND": "60",
        "OPENAI_FIRST_TOKEN_SECONDS": "0.5",
    }
    model = build_chat_model(load_settings(LLMSettings, environment))
    env = AgentEnv(model, InMemoryRunSteps(), RecordingLog(), SubAgents(model), sleep=lambda _: None)
    return InterviewService(repository, Orchestrator(env), render_answer=turn_answer, live=channel)


def _asked_first_question(instant: FakeOpenAIServer, repository: Any) -> str:
    """A session whose first question is open (its two turns answered at once by ``instant``)."""
    service = _service(instant, repository, TimedChannel())
    session = service.create(USER, JOB)
    service.consent(USER, session.session_id, service.notice(session).notice_id)
    plan = [{"field_id": f.field_id, "label": f.label, "intent": f.intent, "required": f.required} for f in JOB.fields]
    instant.enqueue(*asked(GREETING))
    service.post_message(USER, session.session_id, "こんにちは、応募したいです。")
    instant.enqueue(*settings_and_plan(plan), *asked(FIRST))
    service.post_message(USER, session.session_id, "日本語でお願いします。東京に住んでいます。")
    return session.session_id


def _answer_script(twice: bool) -> list[Reply]:
    facts = [{"name": "経験年数", "value": "5年"}, {"name": "勤務先", "value": "東京のカフェ森"}]
    # The old sequence: the question written in a quick_check subtask first (billed and timed as
    # it was; today's schema refuses it), then again in ask.
    written_before = [tool("subtask", agent="quick_check", question=NEXT, facts=None)] if twice else []
    return [*reviewed(facts), *written_before, *asked(NEXT)]


def settled_ledger(server: FakeOpenAIServer) -> list[Any]:
    """The server's billing once every request it took is billed: it records a streamed answer
    after its last chunk, which the client may have read (and returned on) a moment before."""
    ends = time.monotonic() + 10.0
    while len(server.ledger()) < len(server.requests) and time.monotonic() < ends:
        time.sleep(0.01)
    return server.ledger()


def _one_round(twice: bool) -> tuple[int, int, int, float | None, float, float]:
    repository = MemoryRepository()
    channel = TimedChannel()
    with FakeOpenAIServer(profile=INSTANT) as instant, FakeOpenAIServer(profile=SCRIPTED_60) as paced:
        session_id = _asked_first_question(instant, repository)
        service = _service(paced, repository, channel)
        paced.enqueue(*_answer_script(twice))
        started = time.perf_counter()
        service.post_message(USER, session_id, ANSWER)
        ledger = settled_ledger(paced)
    done = next(at for at, frame in channel.sent if isinstance(frame, DoneFrame)) - started
    progress = [at - started for at, frame in channel.sent if isinstance(frame, ProgressFrame)]
    words = [at - started for at, frame in channel.sent if isinstance(frame, DeltaFrame)]
    if twice:  # the old code sent done alone: no progress, the words with it
        progress, words = [], [done]
    prompt = sum(record.prompt_tokens for record in ledger)
    completion = sum(record.completion_tokens for record in ledger)
    return len(ledger), prompt, completion, (progress[0] if progress else None), words[0], done


def measure_answer_turn(*, twice: bool, rounds: int) -> TurnFigures:
    runs = [_one_round(twice) for _ in range(rounds)]
    calls, prompt, completion = runs[0][:3]  # the same script each round: the same ledger
    progress = [run[3] for run in runs if run[3] is not None]
    return TurnFigures(
        label="written twice (the old call sequence)" if twice else "written once (ask runs QuickCheck)",
        calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        first_progress_s=statistics.median(progress) if progress else None,
        first_words_s=statistics.median(run[4] for run in runs),
        done_s=statistics.median(run[5] for run in runs),
    )
