"""The nudge fan-out's settings, derived from the provider's rate limit and the model's pace.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema, strict_schema
from lambda_agents.nudges.commander import Grounding, build_messages
from lambda_agents.nudges.generation import summarise_day
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP, build_slot_table

from devtools.fake_openai import prompt_tokens_of
from devtools.template import load_template


@dataclass(frozen=True)
class Deployed:
    """What the template deploys for the fan-out (read, so that plans cannot drift from it)."""

    batch_size: int
    share: float
    min_concurrency: int
    max_concurrency: int
    invocation_s: float
    memory_mb: int
    max_receives: int
    generation_hour: int

    @classmethod
    def from_template(cls) -> Deployed:
        template = load_template()
        resources, parameters = template["Resources"], template["Parameters"]
        generator = resources["NudgeGeneratorFunction"]["Properties"]
        queue = generator["Events"]["Queue"]["Properties"]
        concurrency = parameters["NudgeGeneratorConcurrency"]
        scheduler = resources["NudgeSchedulerFunction"]["Properties"]["Environment"]["Variables"]
        memory = generator.get("MemorySize", template["Globals"]["Function"]["MemorySize"])
        return cls(
            batch_size=int(queue["BatchSize"]),
            share=float(parameters["NudgeRateLimitShare"]["Default"]),
            min_concurrency=int(concurrency["MinValue"]),
            max_concurrency=int(concurrency["MaxValue"]),
            invocation_s=float(generator["Timeout"]),
            memory_mb=int(memory),
            max_receives=int(resources["NudgeQueue"]["Properties"]["RedrivePolicy"]["maxReceiveCount"]),
            generation_hour=int(scheduler["NUDGE_GENERATION_HOUR"]),
        )


DEPLOYED = Deployed.from_template()
BATCH_SIZE, SHARE = DEPLOYED.batch_size, DEPLOYED.share
MIN_CONCURRENCY, MAX_CONCURRENCY = DEPLOYED.min_concurrency, DEPLOYED.max_concurrency


def plan_prompt_tokens(slots: int = 15, recent_days: int = 3) -> int:
    """A plan's input as the provider counts it (``fake_openai.prompt_tokens_of``): the
    Commander's messages for a user with ``slots`` slots and ``recent_days`` of history, and the
    strict schema sent with them."""
    output = create_agent_output_model(slots)
    past = summarise_day({"localDate": "2026-11-25", "agentRawOutput": sample(model_schema(output), "en")})
    problems = ("staying_up_late", "procrastination", "anxiety")
    grounding = Grounding(
        user_id="user-0001",
        problems=problems,
        language="en",
        app_version="1.0.0",
        local_date="2026-11-26",
        timezone="Asia/Tokyo",
        slot_table=tuple(build_slot_table(problems, DEFAULT_SCHEDULE_MAP, max_slots=slots)),
        recent_days=tuple(past for _ in range(recent_days)),
    )
    schema = {"name": "plan", "strict": True, "schema": strict_schema(output)}
    return prompt_tokens_of(
        {"messages": build_messages(grounding), "response_format": {"type": "json_schema", "json_schema": schema}}
    )


@dataclass(frozen=True)
class FanoutPlan:
    cost_tokens: int
    plans_per_minute: float
    bound_by: str
    plan_seconds: float
    batch_seconds: float
    in_flight: float
    concurrency: int
    cohort_minutes: float | None

    def lines(self, cohort: int | None, window_minutes: float | None) -> list[str]:
        out = [
            f"a plan counts {self.cost_tokens:,} tokens on arrival (prompt + max_tokens)",
            f"the share allows {self.plans_per_minute:,.0f} plans a minute (bound by {self.bound_by})",
            f"one plan takes ~{self.plan_seconds:.0f} s at the model's pace: ~{self.in_flight:,.0f} in flight at once",
            f"a container's batch lasts as long as its slowest plan, ~{self.batch_seconds:.0f} s",
            f"NudgeGeneratorConcurrency={self.concurrency} containers of {BATCH_SIZE} users at once",
        ]
        if cohort is not None and self.cohort_minutes is not None:
            verdict = ""
            if window_minutes is not None:
                fits = self.cohort_minutes <= window_minutes
                verdict = (
                    f": fits the {window_minutes:.0f}-minute window"
                    if fits
                    else (
                        f": does NOT fit the {window_minutes:.0f}-minute window; generate earlier "
                        "(NUDGE_GENERATION_HOUR) or ask the provider for a higher limit"
                    )
                )
            out.append(f"a cohort of {cohort:,} users takes ~{self.cohort_minutes:.0f} minutes{verdict}")
        return out


def plan_fanout(
    *,
    tokens_per_minute: int,
    requests_per_minute: int,
    share: float = SHARE,
    prompt_tokens: int | None = None,
    max_tokens: int = 4095,
    answer_tokens: int = 3000,
    tokens_per_second: float = 60.0,
    slowest_tokens_per_second: float = 35.0,
    first_token_seconds: float = 1.2,
    batch_size: int = BATCH_SIZE,
    cohort: int | None = None,
) -> FanoutPlan:
    """The settings that let the fan-out use its share of the account's limits, no more."""
    if tokens_per_minute <= 0 and requests_per_minute <= 0:
        raise ValueError("give the account's tokens or requests per minute (its limits page)")
    if not 0 < share <= 1:
        raise ValueError("share must be in (0, 1]")
    cost = (plan_prompt_tokens() if prompt_tokens is None else prompt_tokens) + max_tokens
    by_tokens = share * tokens_per_minute / cost if tokens_per_minute > 0 else math.inf
    by_requests = share * requests_per_minute if requests_per_minute > 0 else math.inf
    plans = min(by_tokens, by_requests)
    seconds = first_token_seconds + answer_tokens / tokens_per_second
    in_flight = plans * seconds / 60.0
    # A container takes its next batch when the slowest plan of this one is done, so it serves
    # batch_size plans per slowest plan, not per average one: sized on the average, the
    # containers, not the share, would bound the fan-out (devtools.fanout_sim: 72% of the share).
    batch_seconds = first_token_seconds + answer_tokens / min(tokens_per_second, slowest_tokens_per_second)
    needed = plans * batch_seconds / 60.0 / batch_size
    concurrency = min(MAX_CONCURRENCY, max(MIN_CONCURRENCY, math.ceil(needed)))
    return FanoutPlan(
        cost_tokens=cost,
        plans_per_minute=plans,
        bound_by="tokens per minute" if by_tokens <= by_requests else "requests per minute",
        plan_seconds=seconds,
        batch_seconds=batch_seconds,
        in_flight=in_flight,
        concurrency=concurrency,
        cohort_minutes=None if cohort is None else cohort / plans,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens-per-minute", type=int, default=0, help="the account's TPM for the model")
    parser.add_argument("--requests-per-minute", type=int, default=0, help="the account's RPM for the model")
    parser.add_argument("--share", type=float, default=SHARE, help="the fan-out's part of them (NudgeRateLimitShare)")
    parser.add_argument(
        "--prompt-tokens", type=int, default=None, help="a plan's prompt (default: measured, with 3 recent days)"
    )
    parser.add_argument(
        "--max-tokens", type=int, default=4095, help="a plan's max_tokens (the Commander's ramp: 4,095 for 15 slots)"
    )
    parser.add_argument("--answer-tokens", type=int, default=3000, help="what a plan usually writes")
    parser.add_argument("--tokens-per-second", type=float, default=60.0, help="the model's pace (gpt-4o: 35-80)")
    parser.add_argument("--first-token-seconds", type=float, default=1.2)
    parser.add_argument("--cohort", type=int, default=None, help="users of the largest time zone's cohort")
    parser.add_argument("--window-minutes", type=float, default=150.0, help="generation hour to first slot (150)")
    args = parser.parse_args(argv)
    try:
        plan = plan_fanout(
            tokens_per_minute=args.tokens_per_minute,
            requests_per_minute=args.requests_per_minute,
            share=args.share,
            prompt_tokens=args.prompt_tokens,
            max_tokens=args.max_tokens,
            answer_tokens=args.answer_tokens,
            tokens_per_second=args.tokens_per_second,
            first_token_seconds=args.first_token_seconds,
            cohort=args.cohort,
        )
    except ValueError as error:
        parser.error(str(error))
    for line in plan.lines(args.cohort, args.window_minutes if args.cohort is not None else None):
        print(line)
    print(
        "sam deploy --parameter-overrides "
        f"ProviderTokensPerMinute={args.tokens_per_minute} ProviderRequestsPerMinute={args.requests_per_minute} "
        f"NudgeRateLimitShare={args.share:g} NudgeGeneratorConcurrency={plan.concurrency}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
