"""AI_AGENT_MODE=mock: the offline policy plays every agent deterministically and by the rules
(a QuickCheck in every ask, the Reviewer after every answer, the Auditor at the end), so the
local runner and the demo run a whole interview without a model."""

from __future__ import annotations

from lambda_agents.interview.agents.loop import AgentEnv
from lambda_agents.interview.agents.offline import RESPONDERS, find_country
from lambda_agents.interview.rules.models import SessionStatus
from lambda_agents.llm.offline_model import OfflineModel

from .support import JOB, Harness, harness

JAPANESE = [
    "こんにちは",
    "日本語でお願いします。日本に住んでいます。",
    "5年です。東京のカフェ森で働いていました。",
    "好き",
    "コーヒーが大好きで、お客様と話すのが好きだからです。",
    "読書です。週末によく本を読みます。",
]


def play(lines: list[str]) -> tuple[Harness, str, list[str]]:
    h = harness(OfflineModel(RESPONDERS))
    session = h.service.create("applicant-1", JOB)
    replies = []
    for line in lines:
        result = h.service.post_message("applicant-1", session.session_id, line)
        replies.append(result.outcome.reply)
        if not result.outcome.awaiting_user_response:
            break
    return h, session.session_id, replies


def test_the_offline_policy_plays_a_whole_japanese_interview_to_a_passed_audit() -> None:
    h, session_id, replies = play(JAPANESE)
    stored = h.repository.load(session_id)
    assert stored is not None
    state = stored.session.state
    assert state.status is SessionStatus.COMPLETED
    assert (state.language, state.country, state.timezone) == ("ja", "JP", "Asia/Tokyo")
    assert state.plan == ["experience", "motivation", "hobby"]  # required fields first
    assert replies[3].startswith("ありがとうございます。reason")  # the short answer got a follow-up
    assert state.fields["motivation"].reviews == 2
    assert state.audit is not None and state.audit.summary.startswith("応募者の回答")
    assert len(replies) == len(JAPANESE)


def test_offline_every_interviewer_question_was_checked_and_every_answer_reviewed() -> None:
    h, _, _ = play(JAPANESE)
    steps = [(s.turn_id, s.tool_name, s.input, s.output) for s in h.run_steps.steps if s.agent == "interviewer"]
    asked = [output for _, tool, _, output in steps if tool == "ask" and output["status"] == "success"]
    assert asked and all(output["result"]["quick_check_output"]["passed"] for output in asked)
    reviews = [a for _, name, a, _ in steps if name == "subtask" and a["agent"] == "reviewer"]
    assert len(reviews) == 4  # experience, motivation twice, hobby
    assert [a["agent"] for _, name, a, _ in steps if name == "subtask"][-1] == "auditor"


def test_offline_an_english_applicant_gets_english_questions() -> None:
    _, _, replies = play(["Hello", "English please. I live in the United States."])
    assert replies[0].startswith("Hello, and thank you for applying!")
    assert replies[1] == "Could you tell me about 経験?"


def test_offline_the_country_is_asked_again_when_it_is_not_named() -> None:
    _, _, replies = play(["こんにちは", "日本語でお願いします。"])
    assert replies[1] == "お住まいの国を教えていただけますか？"


def test_countries_are_found_in_free_text() -> None:
    assert find_country("東京に住んでいます。日本です") == "日本"
    assert find_country("I live in the United States") == "United States"
    assert find_country("I live in Nigeria now") == "Nigeria"
    assert find_country("somewhere") is None
    assert find_country("日本語でお願いします") is None  # a language name is not its country


def test_the_offline_model_is_used_through_the_same_ports() -> None:
    model = OfflineModel(RESPONDERS)
    h = harness(model)
    assert isinstance(h.orchestrator.env, AgentEnv) and h.orchestrator.env.model is model
