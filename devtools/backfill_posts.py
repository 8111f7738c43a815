"""Give legacy schedules their pending post records: ``backfill_legacy_posts`` run to the end.

    .venv/bin/python -m devtools.backfill_posts --table <SchedulesTable name> [--resume TOKEN]

It runs against whatever DynamoDB boto3 reaches (the deployed table with your AWS credentials and
region, or ``AWS_ENDPOINT_URL_DYNAMODB``), one bounded run after another, and prints a line per
run with the token that resumes after it: an interrupted backfill goes on with ``--resume``, and
running it again is harmless (what exists is left alone).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from lambda_agents.paging import InvalidCursor
from lambda_agents.storage.posts_backfill import BackfillReport, backfill_legacy_posts


def run(
    table: str,
    resume: str | None,
    pages_per_run: int,
    out: Callable[[str], None] = print,
    backfill: Callable[..., BackfillReport] = backfill_legacy_posts,
) -> BackfillReport:
    """Every run until the table is done; the totals."""
    token = resume
    schedules = posts = read = 0
    while True:
        report = backfill(table, resume_token=token, max_pages=pages_per_run)
        schedules, posts, read = schedules + report.schedules, posts + report.posts_written, read + report.items_read
        out(
            f"schedules {report.schedules}, posts written {report.posts_written}, items read {report.items_read}; "
            + (f"resume with --resume {report.next_token}" if report.next_token else "done")
        )
        if report.next_token is None:
            return BackfillReport(schedules, posts, read, None)
        token = report.next_token


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.backfill_posts", description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="the SchedulesTable's name")
    parser.add_argument("--resume", help="the token a previous run printed")
    parser.add_argument("--pages-per-run", type=int, default=10, help="scan pages (100 items each) per run")
    args = parser.parse_args(argv)
    try:
        total = run(args.table, args.resume, args.pages_per_run)
    except InvalidCursor as error:
        print(f"error: {error.reason}", file=sys.stderr)
        return 2
    print(f"total: schedules {total.schedules}, posts written {total.posts_written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
