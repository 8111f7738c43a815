"""``python -m devtools.fake_openai``: serve the fake on 127.0.0.1 at a model's speed and limits."""

from __future__ import annotations

import argparse
import contextlib
import threading

from .caching import DEFAULT_RETENTION_S
from .script import DEFAULT_ACCOUNT, PROFILES, RateLimit
from .server import FakeOpenAIServer


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve a fake OpenAI-compatible API on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="instant", help="the model's speed")
    parser.add_argument("--time-scale", type=float, default=1.0, help="multiplies every delay (1: real seconds)")
    account = DEFAULT_ACCOUNT
    parser.add_argument("--rpm", type=int, default=0, help=f"requests per minute ({account.requests_per_minute})")
    parser.add_argument("--tpm", type=int, default=0, help=f"tokens per minute ({account.tokens_per_minute})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--prompt-cache-retention",
        type=float,
        default=DEFAULT_RETENTION_S,
        help=f"seconds a cached prompt prefix is kept after its last use ({DEFAULT_RETENTION_S:g}; OpenAI: 5-10 min)",
    )
    args = parser.parse_args()
    limit = RateLimit(args.rpm or account.requests_per_minute, args.tpm or account.tokens_per_minute)
    with FakeOpenAIServer(
        port=args.port,
        profile=PROFILES[args.profile],
        time_scale=args.time_scale,
        seed=args.seed,
        rate_limit=limit,
        prompt_cache_retention_s=args.prompt_cache_retention,
    ) as server:
        print(f"fake OpenAI server at {server.base_url}, profile {args.profile} (Ctrl-C to stop)")
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
