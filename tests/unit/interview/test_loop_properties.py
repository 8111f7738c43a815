"""Property: whatever a model answers (any tool, any arguments, text, refusals; sub-agents with any
verdict, valid or not), a turn never crashes and the invariants (docs/interview.md#invariants) hold in what is stored:
every question the applicant received, from any agent, passed a QuickCheck of its exact text in
its turn, a field is done only
after a Reviewer pass, and the interview completes only with every required field done and a
passed audit."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lambda_agents.interview.agents.offline import architect, greeter, interviewer
from lambda_agents.interview.rules.models import FieldStatus, SessionStatus
from lambda_agents.llm import ChatRequest, ChatResponse, ToolCall, Usage

from tests.support.branches import Branches

from .support import JOB, harness, interviewing

FIELD_IDS = ["experience", "motivation", "hobby", "salary"]
TEXT = st.sampled_from(["", " ", "経験を教えてください。", "How long?", "x" * 50, "ご家族は？"])
FACTS = st.one_of(
    st.none(),
    st.lists(
        st.fixed_dictionaries({"name": st.sampled_from(["years", "workplace", "reason", "x"]), "value": TEXT}),
        max_size=3,
    ),
)
ARGUMENTS: dict[str, Any] = {
    "ask": st.fixed_dictionaries({"message": TEXT}),
    "set_language": st.fixed_dictionaries({"language": st.sampled_from(["ja", "en", "Japanese", "??", ""])}),
    "set_country": st.fixed_dictionaries({"country": st.sampled_from(["JP", "日本", "Atlantis", "", "US"])}),
    "set_timezone": st.fixed_dictionaries(
        {"timezone": st.sampled_from([None, "Asia/Tokyo", "America", "Mars/Base", ""])}
    ),
    "create_plan": st.fixed_dictionaries(
        {
            "fields": st.lists(
                st.fixed_dictionaries(
                    {
                        "field_id": st.sampled_from(FIELD_IDS),
                        "label": st.just("l"),
                        "intent": st.just("i"),
                        "required": st.booleans(),
                    }
                ),
                max_size=4,
            )
        }
    ),
    "subtask": st.fixed_dictionaries(
        {
            "agent": st.sampled_from(["reviewer", "quick_check", "auditor", "boss"]),
            "facts": FACTS,
        }
    ),
    "hire": st.just({}),
}
TOOLS_OF = {
    "interview.greeter": ["ask", "set_language", "set_country", "set_timezone", "create_plan", "hire"],
    "interview.architect": ["create_plan", "create_plan", "ask"],
    "interview.interviewer": ["subtask", "subtask", "ask", "ask", "set_language", "hire"],
}
VERDICTS = {
    "interview.quick_check": st.fixed_dictionaries(
        {
            "passed": st.booleans(),
            "violations": st.one_of(
                st.none(), st.just([{"type": "prohibited_topic", "message": "m"}]), st.just([{"type": "bad"}])
            ),
        }
    ),
    "interview.reviewer": st.fixed_dictionaries(
        {
            "passed": st.booleans(),
            "feedback": st.one_of(st.none(), st.just("more please")),
            "missing_facts": st.one_of(st.none(), st.just(["years"])),
        }
    ),
    "interview.auditor": st.fixed_dictionaries(
        {
            "passed": st.booleans(),
            "violations": st.one_of(
                st.none(), st.just([{"type": "t", "message": "m", "severity": st.sampled_from(["error", "warning"])}])
            ),
            "summary": st.sampled_from(["", "ok"]),
        }
    ),
}


# The offline policy plays each agent by the rules. Drawn tool calls almost never follow ask -> Reviewer ->
# Auditor, so without it no Interviewer question would reach the applicant and no interview would end.
WELL_BEHAVED = {"interview.greeter": greeter, "interview.architect": architect, "interview.interviewer": interviewer}


class DrawnModel:
    """Answers every request with what Hypothesis draws; bounded by the turn's iteration budget.
    Half of an agent's answers are the well-behaved one; sub-agents' verdicts are always drawn.
    Notes every question a QuickCheck passed (``passed``), for the invariant below."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.passed: list[str] = []

    @property
    def model_name(self) -> str:
        return "drawn"

    def complete(self, request: ChatRequest) -> ChatResponse:
        usage = Usage(10, 5)
        if request.purpose in VERDICTS:
            verdict = self.data.draw(VERDICTS[request.purpose])
            if isinstance(verdict.get("violations"), list):
                verdict["violations"] = [
                    {k: self.data.draw(v) if isinstance(v, st.SearchStrategy) else v for k, v in item.items()}
                    for item in verdict["violations"]
                ]
            if request.purpose == "interview.quick_check" and verdict["passed"] and not verdict["violations"]:
                marker = "## Question to check"
                checked = next(str(m["content"]) for m in request.messages if marker in str(m["content"]))
                self.passed.append(" ".join(checked.rsplit("## Question to check\n", 1)[-1].split()))
            return ChatResponse(json.dumps(verdict, ensure_ascii=False), "stop", usage=usage)
        if self.data.draw(st.booleans()):
            return WELL_BEHAVED[request.purpose](request)
        kind = self.data.draw(st.sampled_from(["tools", "tools", "tools", "text", "refusal", "broken"]))
        if kind == "text":
            return ChatResponse("some text", "stop", usage=usage)
        if kind == "refusal":
            return ChatResponse(None, "stop", refusal="no", usage=usage)
        names = self.data.draw(st.lists(st.sampled_from(TOOLS_OF[request.purpose]), min_size=1, max_size=3))
        calls = []
        for index, name in enumerate(names):
            arguments = json.dumps(self.data.draw(ARGUMENTS[name]), ensure_ascii=False)
            if kind == "broken":
                arguments = arguments[: len(arguments) // 2]
            calls.append(ToolCall(f"call_{index}", name, arguments))
        return ChatResponse(None, "tool_calls", tool_calls=tuple(calls), usage=usage)


def _verdict(step: Any, key: str) -> object:
    result = (step.output or {}).get("result") or {}
    return (result.get(key) or {}).get("passed")


START = st.sampled_from(["new", "interviewing", "answered", "last field answered"])


def test_property_any_model_behaviour_keeps_the_invariants_and_never_crashes_a_turn() -> None:
    reached = Branches()

    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data(), START)
    def example(data: st.DataObject, start: str) -> None:
        model = DrawnModel(data)
        h = harness(model, max_iterations=5)
        if start == "new":
            session_id = h.service.create("applicant-1", JOB).session_id
        else:
            done = ("experience", "motivation") if start == "last field answered" else ()
            session_id = interviewing(h, asked=start != "interviewing", done=done)
        initial = h.repository.load(session_id)
        assert initial is not None
        done_before = {f for f, p in initial.session.state.fields.items() if p.status is FieldStatus.DONE}
        for line in ("こんにちは", "日本語で。日本在住です。", "5年、カフェ森です。", "コーヒーが好きです。"):
            stored = h.repository.load(session_id)
            assert stored is not None
            if stored.session.state.finished:
                break
            model.passed.clear()
            result = h.service.post_message("applicant-1", session_id, line)
            assert result.outcome.iterations <= 5
            if result.outcome.reply_kind == "question":
                reached.add(f"{result.outcome.agent} question")
                # Whichever agent asked (Greeter or Interviewer), its exact text passed a QuickCheck in this turn.
                assert " ".join(result.outcome.reply.split()) in model.passed, (
                    result.outcome.agent,
                    result.outcome.reply,
                )

        stored = h.repository.load(session_id)
        assert stored is not None
        state = stored.session.state
        steps = h.run_steps.steps
        sent = {m.content for m in stored.messages if m.role == "assistant"}
        for step in steps:
            output = step.output or {}
            if step.agent == "interviewer" and step.tool_name == "ask" and output.get("status") == "success":
                reached.add("interviewer ask")
                # The ask's own QuickCheck, on its exact text, passed before it counted as asked.
                assert _verdict(step, "quick_check_output") is True, "a question was asked without a QuickCheck"
                assert step.input["message"] in sent
        passes = [s for s in steps if s.tool_name == "subtask" and _verdict(s, "reviewer_output") is True]
        done = [
            f for f, progress in state.fields.items() if progress.status is FieldStatus.DONE and f not in done_before
        ]
        if done:
            reached.add("field done")
        assert len(passes) >= len(done)  # every field done in these turns had its own Reviewer pass
        if state.status is SessionStatus.COMPLETED:
            reached.add("completed")
            assert state.audit is not None and state.audit.passed
            assert all(state.fields[f.field_id].status is FieldStatus.DONE for f in JOB.fields if f.required)

    example()
    reached.assert_all("greeter question", "interviewer question", "interviewer ask", "field done", "completed")
