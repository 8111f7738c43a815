"""What the model answers in the real-speed runs: answers of the sizes real ones have, so that
their time at a profile's pace is a real answer's time.

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
from typing import Any

from lambda_agents.chat.offline import chat_answer as offline_chat_answer
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.llm.types import ChatRequest, estimate_tokens
from lambda_agents.nudges.schema import create_agent_output_model

from devtools.fake_openai import Reply
from devtools.fake_openai.interview_replies import GREETING, asked, settings_and_plan

CHAT_TOKENS = 1000
PLAN_TOKENS = 3000
PLAN_SLOTS = 15
PROSE = (
    "中途採用の段取りを、求人票の作成から入社手続きまで五つの工程に分けて整理しました。"
    "それぞれの工程で用意する書類と、前の工程から何日後に始めるかを決めておくと、"
    "面接官の予定や内定通知の時期を逆算しやすくなります。"
)


def chat_answer(tokens: int = CHAT_TOKENS) -> str:
    """Prose padded to ``tokens`` (as the server counts them), then the offline model's valid fence."""
    request = ChatRequest(
        messages=[{"role": "system", "content": ""}, {"role": "user", "content": "中途採用の段取りを作りたいです"}],
        max_tokens=CHAT_TOKENS,
    )
    offline = offline_chat_answer(request)
    fence = "\n" + offline[offline.index("```json") :]
    prose = ""
    while estimate_tokens(prose + fence) < tokens:
        prose += PROSE
    return prose + fence


def chat_reply() -> Reply:
    return Reply(content=chat_answer())


def plan_reply(slot_count: int = PLAN_SLOTS) -> Reply:
    """A schema-valid plan (the offline model honours the slot indexes) that costs a real plan's tokens."""
    answer = json.dumps(sample(model_schema(create_agent_output_model(slot_count)), "en"))
    return Reply(content=answer, needs_tokens=max(PLAN_TOKENS, estimate_tokens(answer)))


QUESTION = "これまでのバリスタのご経験について、年数と勤務先を教えてください。"
PLAN = [
    {"field_id": "experience", "label": "バリスタ経験", "intent": "経験", "required": True},
    {"field_id": "motivation", "label": "志望動機", "intent": "動機", "required": True},
]


def interview_first_turn() -> list[Reply]:
    return asked(GREETING)


def interview_second_turn() -> list[Reply]:
    """Six calls: the greeting's three settings, the plan, the question and its QuickCheck."""
    return [*settings_and_plan(PLAN), *asked(QUESTION)]


JOB: dict[str, Any] = {
    "jobId": "job-bench-barista",
    "title": "カフェのバリスタ",
    "fields": [
        {
            "field_id": f["field_id"],
            "label": f["label"],
            "intent": f["intent"],
            "required": True,
            "required_facts": ["経験年数"] if f["field_id"] == "experience" else ["理由"],
            "done_criteria": "Known",
        }
        for f in PLAN
    ],
}
