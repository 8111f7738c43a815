"""The Greeter (ask, set_language, set_country, set_timezone; sections derive from state)
and Architect (create_plan validated against the job's fields), and the hand-over
Greeter -> Architect -> Interviewer within one applicant turn (docs/interview.md#greeter,
docs/interview.md#the-plan)."""

from __future__ import annotations

import json

from lambda_agents.interview.agents.greeter import get_section
from lambda_agents.interview.rules.models import AgentName, FieldStatus, InterviewState
from lambda_agents.interview.rules.state_changes import describe
from lambda_agents.llm import ChatResponse

from .support import JOB, PASS_CHECK, PurposeScript, ask, call, harness, structured, text, tool, tools

GREETING = "こんにちは！使用言語とお住まいの国を教えてください。"
Q = "これまでのバリスタのご経験を教えてください。"
PLAN = [
    {"field_id": field.field_id, "label": field.label, "intent": field.intent, "required": field.required}
    for field in JOB.fields
]


def settles(language: str, country: str, timezone: str | None) -> ChatResponse:
    """The Greeter's answer that sets the language, the country and the time zone at once."""
    return tools(
        call("set_language", {"language": language}, "a"),
        call("set_country", {"country": country}, "b"),
        call("set_timezone", {"timezone": timezone}, "c"),
    )


def results(model: PurposeScript, purpose: str, index: int) -> list[dict[str, object]]:
    return [json.loads(m["content"]) for m in model.of(purpose)[index].messages if m.get("role") == "tool"]


def test_the_section_derives_from_the_state() -> None:
    state = InterviewState()
    assert get_section(state) == "language"
    assert get_section(state.model_copy(update={"language": "ja"})) == "country"
    assert get_section(state.model_copy(update={"language": "ja", "country": "JP"})) == "timezone"
    assert get_section(state.model_copy(update={"language": "ja", "country": "JP", "timezone": "Asia/Tokyo"})) == (
        "completed"
    )


def test_given_the_first_message_then_the_greeter_greets_with_ask_after_a_quickcheck_of_that_exact_text() -> None:
    model = PurposeScript(greeter=[ask(GREETING)], quick_check=[structured(PASS_CHECK)])
    h = harness(model)
    session = h.service.create("applicant-1", JOB)
    result = h.service.post_message("applicant-1", session.session_id, "こんにちは")
    assert (result.outcome.reply, result.outcome.agent) == (GREETING, AgentName.GREETER)
    assert result.session.state.current_agent is AgentName.GREETER
    assert "## Current section: language" in model.of("greeter")[0].messages[0]["content"]
    (check,) = model.of("quick_check")
    assert check.messages[-1]["content"].endswith(f"## Question to check\n{GREETING}")
    assert "greeting" in check.messages[-1]["content"]
    model.assert_consumed()


def test_given_a_greeter_question_about_age_and_marital_status_then_the_quickcheck_stops_it_unsent() -> None:
    probe = "ようこそ！ご年齢と、ご結婚されているか教えてください。"
    fail = {"passed": False, "violations": [{"type": "prohibited_topic", "message": "age and marital status"}]}
    model = PurposeScript(greeter=[ask(probe), ask(GREETING)], quick_check=[structured(fail), structured(PASS_CHECK)])
    h = harness(model)
    session = h.service.create("applicant-1", JOB)
    result = h.service.post_message("applicant-1", session.session_id, "こんにちは")
    assert result.outcome.reply == GREETING
    assert probe not in [m.content for m in h.repository.stored[session.session_id].messages]
    (refused,) = results(model, "greeter", 1)
    assert refused["status"] == "error" and "prohibited_topic" in refused["result"]["message"]
    model.assert_consumed()


def test_given_language_and_country_then_the_greeter_hands_over_and_the_interview_starts_in_the_same_turn() -> None:
    model = PurposeScript(
        greeter=[settles("Japanese", "日本", None)],
        architect=[tool("create_plan", {"fields": list(reversed(PLAN))})],
        interviewer=[ask(Q)],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    session = h.service.create("applicant-1", JOB)

    result = h.service.post_message("applicant-1", session.session_id, "日本語で。日本に住んでいます。")

    state = result.session.state
    assert (state.language, state.country, state.timezone) == ("ja", "JP", "Asia/Tokyo")
    assert state.plan == ["hobby", "motivation", "experience"]
    assert (state.current_agent, state.current_field_id) == (AgentName.INTERVIEWER, "hobby")
    assert state.fields["hobby"].status is FieldStatus.INTERVIEWING
    assert result.outcome.reply == Q and result.outcome.iterations == 3
    assert [describe(c)["type"] for c in result.outcome.changes] == [
        "ADD_USER_MESSAGE",
        "SET_LANGUAGE",
        "SET_COUNTRY",
        "SET_TIMEZONE",
        "SET_CURRENT_AGENT",
        "SET_PLAN",
        "SET_CURRENT_AGENT",
        "SET_CURRENT_FIELD",
        "SET_FIELD_STATUS",
        "SET_ASKED_FIELD",
        "ADD_ASSISTANT_MESSAGE",
    ]
    assert len(model.of("greeter")) == 1  # done after its tools: no further greeter call
    assert "You still need to" not in json.dumps([r.messages for r in model.requests])
    messages = h.repository.load(session.session_id)
    assert messages is not None and messages.messages[-1].data["plan"] == ["hobby", "motivation", "experience"]


def test_set_timezone_needs_the_country_first_and_infers_asia_tokyo_for_an_unknown_one() -> None:
    model = PurposeScript(
        greeter=[
            tool("set_timezone", {"timezone": None}),
            tools(call("set_language", {"language": "en"}, "a"), call("set_country", {"country": "Atlantis"}, "b")),
            tool("set_timezone", {"timezone": None}),
        ],
        architect=[tool("create_plan", {"fields": PLAN})],
        interviewer=[text("…")] * 6,
    )
    h = harness(model)
    session = h.service.create("applicant-1", JOB)
    result = h.service.post_message("applicant-1", session.session_id, "Hi, I live in Atlantis.")

    assert results(model, "greeter", 1)[0]["status"] == "error"
    assert "Set the country first" in str(results(model, "greeter", 1)[0]["result"])
    assert "not a known country" in str(results(model, "greeter", 2)[-1]["result"])
    timezone_step = h.run_steps.steps[-2]  # the last greeter step (create_plan follows)
    assert timezone_step.tool_name == "set_timezone" and timezone_step.output is not None
    assert "could not be inferred from the country" in timezone_step.output["result"]["message"]
    assert (result.session.state.country, result.session.state.timezone) == ("Atlantis", "Asia/Tokyo")
    # greeter 3 + architect 1 + interviewer 6 calls: the 10-iteration budget is the turn's, shared
    assert (result.outcome.iterations, result.outcome.reply_kind) == (10, "retry")


def test_a_stated_time_zone_is_kept_and_an_invalid_language_goes_back_to_the_model() -> None:
    model = PurposeScript(
        greeter=[
            settles("Klingon language", "US", "America/Los_Angeles"),
            ask("Which language would you like to use?"),
        ],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    session = h.service.create("applicant-1", JOB)
    result = h.service.post_message("applicant-1", session.session_id, "Hi from California")
    first = results(model, "greeter", 1)
    assert [r["status"] for r in first] == ["error", "success", "success"]
    assert "ISO 639-1" in str(first[0]["result"])
    assert (result.session.state.language, result.session.state.timezone) == (None, "America/Los_Angeles")
    assert result.outcome.reply == "Which language would you like to use?"


def test_given_text_only_then_the_greeters_remaining_tasks_are_injected() -> None:
    model = PurposeScript(greeter=[text("Welcome!"), ask(GREETING)], quick_check=[structured(PASS_CHECK)])
    h = harness(model)
    session = h.service.create("applicant-1", JOB)
    h.service.post_message("applicant-1", session.session_id, "hello")
    injected = model.of("greeter")[1].messages[-1]["content"]
    assert injected.splitlines() == [
        "You still need to:",
        "- Set the user language using set_language (ask the applicant with ask if they have not said it)",
        "- Set the user country using set_country (ask the applicant with ask if they have not said it)",
        "- Set the timezone using set_timezone",
    ]


def test_given_a_plan_with_unknown_or_missing_fields_then_it_is_rejected_back_to_the_architect() -> None:
    bad = [PLAN[0], {**PLAN[1], "field_id": "salary"}]
    model = PurposeScript(
        greeter=[settles("ja", "JP", None)],
        architect=[
            tool("create_plan", {"fields": bad}),
            tool("create_plan", {"fields": [{**p, "required": False} for p in PLAN]}),
        ],
        interviewer=[ask(Q)],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    session = h.service.create("applicant-1", JOB)
    result = h.service.post_message("applicant-1", session.session_id, "日本語で。日本在住です。")

    rejected = results(model, "architect", 1)[0]
    assert rejected["status"] == "error"
    assert "unknown field ids: salary" in str(rejected["result"]) and "missing field ids: motivation, hobby" in str(
        rejected["result"]
    )
    assert model.of("architect")[0].parameters.tool_choice == "create_plan"
    assert result.session.state.plan == ["experience", "motivation", "hobby"]
    # only the order is the model's: the job still says experience and motivation are required
    assert [f.required for f in result.session.job.fields] == [True, True, False]


def test_a_stated_zone_that_is_a_tzdata_directory_is_not_a_crash_the_country_decides() -> None:
    model = PurposeScript(
        greeter=[settles("en", "Canada", "America")],
        architect=[tool("create_plan", {"fields": PLAN})],
        interviewer=[text("…")] * 8,
    )
    h = harness(model)
    session = h.service.create("applicant-1", JOB)
    result = h.service.post_message("applicant-1", session.session_id, "Hi from Canada")
    assert result.session.state.timezone == "America/Toronto"
    step = next(s for s in h.run_steps.steps if s.tool_name == "set_timezone")
    assert step.output is not None and "'America' is not an IANA time zone" in step.output["result"]["message"]
