"""Which of the template's functions call a model: the only ones whose role may read the OpenAI
key and whose handler may load the openai package at cold start. The bundle's tests hold the
template's policies and the handlers' imports to this one list."""

from __future__ import annotations

FUNCTIONS_THAT_CALL_A_MODEL = frozenset(
    {
        "NudgeGeneratorFunction",
        "NudgeBatchFunction",
        "ChatFunction",
        "ChatAnswerFunction",
        "StatusJudgeFunction",
        "InterviewFunction",
        "InterviewTurnFunction",
    }
)
