"""Greeter (docs/interview.md#greeter): greets the applicant and settles language, country and time
zone.

Tools: ask, set_language, set_country, set_timezone. The section derives from the state
(``get_section``); the Greeter is done when all three are set, and its loop then ends without
another model call, so the Architect and the Interviewer take over within the same turn.

Decisions: every message the Greeter sends passes a QuickCheck first, like every question in the
interview (docs/interview.md#invariants: a QuickCheck before every ``ask``; the agent loop refuses
any reply without one). Its ``ask`` runs the QuickCheck in code on the exact message, as the
Interviewer's does, bound to the greeting step's intent (language, country of residence, time
zone); a failed check comes back as the tool's error with the violations, and nothing is sent.
Once the three settings are made, an ``ask`` is refused so the interview moves on. The time zone
needs the country first (it is inferred from it); an unknown country is stored as the applicant gave
it, and its time zone falls back to Asia/Tokyo.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ...timezones import is_timezone
from ..locales.languages import InvalidLanguage, normalise_language
from ..locales.residence import infer_timezone, resolve_country
from ..rules.handoff import conversation_excerpt
from ..rules.models import AgentName, InterviewState
from ..rules.state_changes import SetCountry, SetLanguage, SetTimezone
from .loop import AgentEnv, BaseAgent, ToolOutcome
from .prompts import language_rule, state_block
from .reviewers import QuickCheckResult
from .sub_sessions import quick_checked
from .tool_calls import FunctionCallResult, ResultBody
from .tool_inputs import (
    ASK,
    SET_COUNTRY,
    SET_LANGUAGE,
    SET_TIMEZONE,
    AskInput,
    SetCountryInput,
    SetLanguageInput,
    SetTimezoneInput,
)
from .turn_context import TurnContext

Section = Literal["language", "country", "timezone", "completed"]
GREETING_BINDING = "greeting"  # what a Greeter message is bound to, as a field binds the Interviewer's
GREETING_STEP = "\n".join(
    [
        "- step: greeting (before the interview's fields)",
        "- intent: greet the applicant and settle the language they want to use, the country they live in",
        "  (their residence, for the time zone; never their nationality or birthplace) and their time zone",
    ]
)


def get_section(state: InterviewState) -> Section:
    if not state.language:
        return "language"
    if not state.country:
        return "country"
    if not state.timezone:
        return "timezone"
    return "completed"


class GreeterResultBody(ResultBody):
    """What an ``ask``'s QuickCheck said goes to the RunStep, not to the model."""

    quick_check_output: QuickCheckResult | None = None


class GreeterFunctionCallResult(FunctionCallResult):
    """The Greeter's tools return a message (and an ``ask`` its QuickCheck): what they set is in the state."""

    result: GreeterResultBody


class GreeterAgent(BaseAgent):
    name = AgentName.GREETER
    tools = (ASK, SET_LANGUAGE, SET_COUNTRY, SET_TIMEZONE)
    result_type = GreeterFunctionCallResult

    def is_done(self, state: InterviewState) -> bool:
        return get_section(state) == "completed"

    def get_remaining_tasks(self, ctx: TurnContext) -> list[str]:
        state = ctx.state
        tasks: list[str] = []
        if not state.language:
            tasks.append(
                "Set the user language using set_language (ask the applicant with ask if they have not said it)"
            )
        if not state.country:
            tasks.append("Set the user country using set_country (ask the applicant with ask if they have not said it)")
        if not state.timezone:
            tasks.append("Set the timezone using set_timezone")
        return tasks

    def system_prompt(self, ctx: TurnContext) -> str:
        state = ctx.state
        return "\n".join(
            [
                f"You are the Greeter of a job application interview (job {ctx.job.job_id}).",
                "Greet the applicant warmly, then settle three things, one at a time:",
                "1. the language they want to use -> set_language (an ISO 639-1 code)",
                "2. the country they live in -> set_country",
                "3. their time zone -> set_timezone (null infers it from the country)",
                "Use ask to send a message and wait for the reply. Do not ask about anything else: the interview",
                "itself starts after you. " + language_rule(state.language),
                "",
                f"## Current section: {get_section(state)}",
                state_block(
                    {
                        "agent": self.name.value,
                        "section": get_section(state),
                        "language": state.language,
                        "country": state.country,
                        "timezone": state.timezone,
                        "first_turn": not any(message["role"] == "assistant" for message in ctx.history),
                    }
                ),
            ]
        )

    def execute_tool(self, name: str, arguments: BaseModel, ctx: TurnContext, env: AgentEnv) -> ToolOutcome:
        if isinstance(arguments, AskInput):
            if self.is_done(ctx.state):
                return ToolOutcome(self.error("Language, country and time zone are set: the interview moves on now."))
            return self._ask(arguments.message, ctx, env)
        if isinstance(arguments, SetLanguageInput):
            try:
                language = normalise_language(arguments.language)
            except InvalidLanguage as error:
                return ToolOutcome(self.error(str(error)))
            ctx.apply(SetLanguage(language))
            env.log.info("language set", agent=self.name.value, sessionId=ctx.session_id, tool=name, language=language)
            return ToolOutcome(self.success(f"Language set to {language}."))
        if isinstance(arguments, SetCountryInput):
            country = resolve_country(arguments.country)
            ctx.apply(SetCountry(country.code or country.name))
            if country.code is None:
                return ToolOutcome(
                    self.success(f"Country stored as given ({country.name!r}); it is not a known country.")
                )
            return ToolOutcome(self.success(f"Country set to {country.code} ({country.name})."))
        if isinstance(arguments, SetTimezoneInput):
            return ToolOutcome(self._set_timezone(arguments, ctx, env))
        return ToolOutcome(self.error(f"{name} is not a Greeter tool"))

    def _ask(self, message: str, ctx: TurnContext, env: AgentEnv) -> ToolOutcome:
        """The message goes out only after a QuickCheck of its exact text passed."""
        handoff = "\n".join(
            ["## Conversation so far", conversation_excerpt(ctx.transcript), "", "## Current step", GREETING_STEP]
        )
        check = quick_checked(
            ctx,
            env,
            agent=self.name.value,
            handoff=handoff,
            message=message,
            binding=GREETING_BINDING,
            retry_hint="ask only about the language, the country of residence or the time zone, politely.",
        )
        if check.refusal is not None:
            return ToolOutcome(self.error(check.refusal, quick_check_output=check.output))
        return ToolOutcome(
            self.success("Message sent; waiting for the applicant's reply.", quick_check_output=check.output),
            reply=message,
        )

    def _set_timezone(self, arguments: SetTimezoneInput, ctx: TurnContext, env: AgentEnv) -> FunctionCallResult:
        if not ctx.state.country:
            return self.error("Set the country first with set_country: the time zone is inferred from it.")
        stated = arguments.timezone or None
        choice = infer_timezone(ctx.state.country, stated)
        ctx.apply(SetTimezone(choice.timezone, choice.source))
        env.log.info(
            "timezone set", agent=self.name.value, sessionId=ctx.session_id, tool="set_timezone", source=choice.source
        )
        note = ""
        if stated is not None and not is_timezone(stated):
            note = f" ({stated!r} is not an IANA time zone, so it was inferred instead)"
        if choice.source == "stated":
            return self.success(f"Time zone set to {choice.timezone}, as the applicant stated.")
        if choice.source == "country":
            return self.success(f"Time zone set to {choice.timezone}, inferred from the country{note}.")
        return self.success(
            f"Time zone set to {choice.timezone}: it could not be inferred from the country{note}, "
            "so the default applies."
        )
