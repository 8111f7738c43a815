"""The agent loop (docs/interview.md#the-agent-loop): it runs until ask, every tool result (errors included)
goes back to the model, at most 10 iterations per applicant turn then a graceful reply, and
remaining tasks are injected when the model answers without a tool call. A RunStep is recorded
before and after every tool execution (docs/engine.md#run-steps)."""

from __future__ import annotations

import json

import pytest
from lambda_agents.interview.agents.loop import AGENT_MAX_TOKENS, AGENT_TOKEN_CEILING
from lambda_agents.interview.locales.languages import system_text
from lambda_agents.llm import ProviderFailed
from lambda_agents.llm.errors import ProviderUnavailable

from .support import (
    FAIL_CHECK,
    PASS_CHECK,
    PurposeScript,
    ask,
    call,
    checked_ask,
    harness,
    interviewing,
    structured,
    text,
    tool,
    tools,
)

Q = "これまでのバリスタのご経験を教えてください。"


def tool_messages(request: object) -> list[dict[str, object]]:
    return [json.loads(m["content"]) for m in request.messages if m.get("role") == "tool"]  # type: ignore[attr-defined]


def test_given_a_checked_question_when_asked_then_the_loop_ends_awaiting_the_applicant() -> None:
    model = PurposeScript(**checked_ask(Q))
    h = harness(model)
    session_id = interviewing(h)

    result = h.service.post_message("applicant-1", session_id, "よろしくお願いします")

    assert (result.outcome.reply, result.outcome.reply_kind, result.outcome.awaiting_user_response) == (
        Q,
        "question",
        True,
    )
    assert result.outcome.iterations == 1  # the question written once: its QuickCheck ran inside ask
    assert model.of("quick_check")[0].messages[-1]["content"].endswith(f"## Question to check\n{Q}")
    model.assert_consumed()


def test_every_tool_execution_is_recorded_before_and_after_it_runs() -> None:
    model = PurposeScript(**checked_ask(Q))
    h = harness(model)
    h.service.post_message("applicant-1", interviewing(h), "よろしくお願いします")

    assert h.run_steps.events == [("started", 1), ("finished", 1)]
    (question,) = h.run_steps.steps
    assert question.input == {"message": Q} and question.output == {
        "status": "success",
        "result": {
            "message": "Question sent; waiting for the applicant's answer.",
            "quick_check_output": PASS_CHECK,  # the check the ask ran, for the audit
            "reviewer_output": None,
            "auditor_output": None,
        },
    }
    assert question.duration_ms is not None


def test_given_text_without_a_tool_call_then_the_remaining_tasks_are_injected_and_the_model_asked_again() -> None:
    model = PurposeScript(
        interviewer=[text("ご経験について教えてください！"), ask(Q)],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h), "よろしくお願いします")

    injected = model.of("interviewer")[1].messages[-1]
    assert injected["role"] == "system"
    assert injected["content"].startswith("You still need to:\n- Ask your next question about field experience")
    assert model.of("interviewer")[1].messages[-2] == {"role": "assistant", "content": "ご経験について教えてください！"}
    assert result.outcome.reply == Q  # the model's free text never reached the applicant


def test_given_a_model_that_never_calls_a_tool_then_after_10_iterations_the_turn_ends_gracefully() -> None:
    model = PurposeScript(interviewer=[text(f"thinking {n}") for n in range(10)])
    h = harness(model)
    session_id = interviewing(h)

    result = h.service.post_message("applicant-1", session_id, "よろしくお願いします")

    assert len(model.of("interviewer")) == 10
    assert (result.outcome.reply, result.outcome.reply_kind) == (system_text("loop_limit", "ja"), "retry")
    assert result.outcome.awaiting_user_response is True
    stored = h.repository.load(session_id)
    assert stored is not None and [m.content for m in stored.messages] == ["よろしくお願いします", result.outcome.reply]
    assert ("warn", "iteration limit reached") in [(level, message) for level, message, _ in h.log.records]
    model.assert_consumed()


def test_the_iteration_budget_is_configurable_and_counts_every_model_call_of_the_turn() -> None:
    model = PurposeScript(interviewer=[ask(Q), ask("別の質問"), ask(Q)], quick_check=[structured(FAIL_CHECK)] * 3)
    h = harness(model, max_iterations=3)
    result = h.service.post_message("applicant-1", interviewing(h), "こんにちは")
    assert result.outcome.reply_kind == "retry" and result.outcome.iterations == 3
    model.assert_consumed()


def test_given_malformed_arguments_or_an_unknown_tool_then_the_error_goes_back_to_the_model() -> None:
    model = PurposeScript(
        interviewer=[
            tool("subtask", '{"agent": "reviewer", "facts": '),
            tool("hire_now", {}),
            ask(Q),
        ],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    h.service.post_message("applicant-1", interviewing(h), "こんにちは")

    requests = model.of("interviewer")
    assert tool_messages(requests[1])[-1]["status"] == "error"
    assert str(tool_messages(requests[1])[-1]["result"]).startswith("{'message': 'Invalid JSON for subtask")
    assert "Unknown tool 'hire_now'; the tools are: subtask, ask" in str(tool_messages(requests[2])[-1])
    assert h.run_steps.steps[0].input == '{"agent": "reviewer", "facts": '  # the raw string, recorded


def test_given_an_accepted_ask_then_later_calls_of_the_same_answer_are_not_run() -> None:
    model = PurposeScript(
        interviewer=[
            tools(call("ask", {"message": Q}, "c2"), call("subtask", {"agent": "auditor", "facts": None}, "c3"))
        ],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    h.service.post_message("applicant-1", interviewing(h), "こんにちは")
    assert [step.tool_name for step in h.run_steps.steps] == ["ask"]


@pytest.mark.parametrize(
    "declined",
    [text("", refusal="I can't help with that."), text("", finish="content_filter")],
    ids=["refusal", "filter"],
)
def test_given_a_refusal_or_a_content_filter_stop_then_the_applicant_gets_a_graceful_reply(declined: object) -> None:
    model = PurposeScript(interviewer=[declined])  # type: ignore[list-item]
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h), "こんにちは")
    assert (result.outcome.reply, result.outcome.reply_kind) == (system_text("declined", "ja"), "declined")


def test_given_a_truncated_answer_then_the_same_call_is_retried_larger_and_the_prompt_does_not_grow() -> None:
    model = PurposeScript(
        interviewer=[text("ご経験について", finish="length"), ask(Q)],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h), "こんにちは")
    first, retry = model.of("interviewer")
    assert first.messages == retry.messages  # no note, no cut answer: the prompt stays as it was
    assert first.max_tokens == AGENT_MAX_TOKENS < retry.max_tokens <= AGENT_TOKEN_CEILING
    assert result.outcome.reply == Q
    assert result.outcome.iterations == 1  # the retry belongs to the call it repeats


def test_given_a_truncated_tool_call_then_the_retry_asks_for_what_its_arguments_still_need() -> None:
    facts = [{"name": f"fact{i}", "value": f"バリスタとして{i}年、カフェ・モリで働きました。"} for i in range(10)]
    arguments = json.dumps({"agent": "reviewer", "facts": facts}, ensure_ascii=False)
    cut = arguments[: len(arguments) * AGENT_MAX_TOKENS // 2050]
    model = PurposeScript(
        interviewer=[tools(call("subtask", cut), finish="length", completion=AGENT_MAX_TOKENS), ask(Q)],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    h.service.post_message("applicant-1", interviewing(h), "こんにちは")
    retry = model.of("interviewer")[1]
    # Cut in its fifth fact of at most ten (maxItems, no minItems): taken as half written.
    assert 2000 <= retry.max_tokens < AGENT_TOKEN_CEILING
    assert [step.tool_name for step in h.run_steps.steps] == ["ask"]  # the cut call never ran


def test_given_an_answer_still_truncated_at_the_ceiling_then_the_turn_ends_gracefully_without_running_it() -> None:
    cut = '{"message": "これまでのバリスタのご経験について、' + "詳しく" * 40
    model = PurposeScript(
        interviewer=[
            tools(call("ask", cut), finish="length", completion=AGENT_MAX_TOKENS),
            tools(call("ask", cut + "詳しく" * 40), finish="length", completion=AGENT_TOKEN_CEILING),
        ]
    )
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h), "こんにちは")
    assert (result.outcome.reply, result.outcome.reply_kind) == (system_text("loop_limit", "ja"), "retry")
    assert [r.max_tokens for r in model.of("interviewer")] == [AGENT_MAX_TOKENS, AGENT_TOKEN_CEILING]
    assert h.run_steps.steps == []
    model.assert_consumed()


def test_given_the_provider_keeps_failing_then_the_turn_fails_and_nothing_is_written() -> None:
    model = PurposeScript(interviewer=[ProviderUnavailable("500")] * 3)
    h = harness(model)
    session_id = interviewing(h)
    before = h.repository.load(session_id)
    with pytest.raises(ProviderFailed):
        h.service.post_message("applicant-1", session_id, "こんにちは")
    assert h.repository.load(session_id) == before
    assert h.repository.commits == 0


def test_tool_calls_and_results_of_a_turn_never_enter_the_next_turns_history() -> None:
    model = PurposeScript(**checked_ask(Q))
    h = harness(model)
    session_id = interviewing(h)
    h.service.post_message("applicant-1", session_id, "こんにちは")
    model.add(interviewer=[text("…")] * 10)
    h.service.post_message("applicant-1", session_id, "5年です")
    history = model.of("interviewer")[1].messages[1:]
    assert history == [
        {"role": "user", "content": "こんにちは"},
        {"role": "assistant", "content": Q},
        {"role": "user", "content": "5年です"},
    ]


def test_given_any_agent_whose_ask_skips_the_quickcheck_then_the_loop_refuses_to_send_it() -> None:
    # The invariant lives in the loop, not in each agent: a new agent that forgets the check is caught.
    from lambda_agents.interview.agents.greeter import GreeterAgent
    from lambda_agents.interview.agents.loop import UNCHECKED_QUESTION, ToolOutcome
    from lambda_agents.interview.agents.orchestrator import Orchestrator
    from lambda_agents.interview.rules.models import AgentName

    from .support import JOB

    class CarelessGreeter(GreeterAgent):
        def execute_tool(self, name, arguments, ctx, env):  # type: ignore[no-untyped-def]
            if name == "ask":
                return ToolOutcome(self.success("sent"), reply=arguments.message)
            return super().execute_tool(name, arguments, ctx, env)

    model = PurposeScript(greeter=[ask("ご年齢は？"), text("...")] + [text("...")] * 8)
    h = harness(model)
    h.orchestrator.agents = {**h.orchestrator.agents, AgentName.GREETER: CarelessGreeter()}
    assert isinstance(h.orchestrator, Orchestrator)
    session = h.service.create("applicant-1", JOB)
    result = h.service.post_message("applicant-1", session.session_id, "こんにちは")
    assert result.outcome.reply != "ご年齢は？" and result.outcome.reply_kind == "retry"
    refused = [json.loads(m["content"]) for m in model.of("greeter")[1].messages if m.get("role") == "tool"]
    assert refused[0]["status"] == "error" and refused[0]["result"]["message"] == UNCHECKED_QUESTION
