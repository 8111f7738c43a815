"""What of a chat answer goes out while it is written (chat/streamed_prose.py): its prose, never
a fence's line (whichever piece its backticks come in), never whitespace at either end, and a new
attempt starts again at the beginning."""

from __future__ import annotations

import pytest
from lambda_agents.chat.streamed_prose import StreamedProse
from lambda_agents.live import DeltaFrame, LiveAnswer

from tests.support.recording_channel import RecordingChannel


def shown(*attempts: tuple[str, ...]) -> list[tuple[int, str]]:
    channel = RecordingChannel()
    ticks = iter(range(10_000))
    prose = StreamedProse(LiveAnswer(channel, "u", "s", 2, lambda: float(next(ticks))))
    for pieces in attempts:
        prose.attempt_started()
        for piece in pieces:
            prose.text(piece)
    return [(f.offset, f.text) for f in channel.of("u") if isinstance(f, DeltaFrame)]


@pytest.mark.parametrize(
    "pieces",
    [
        ("Here is the plan.\n", "```json\n{", '"a": 1}\n```'),
        ("Here is the plan.\n`", "``json\n{}"),
        ("Here is the plan.\n  ``", "`\n{}"),
        ("Here is the plan.", "\n\n", "``", "`json", "\n{}\n```\nAnd more prose."),
    ],
)
def test_a_fence_is_held_from_its_lines_start_whichever_piece_its_backticks_come_in(pieces: tuple[str, ...]) -> None:
    assert "".join(text for _, text in shown(pieces)) == "Here is the plan."


def test_backticks_inside_a_line_are_prose_and_go_out() -> None:
    assert "".join(t for _, t in shown(("Use ", "``", "`json fences", " like this."))) == (
        "Use ```json fences like this."
    )


def test_whitespace_at_either_end_is_held_until_words_follow_it() -> None:
    assert shown(("\n  ", "Hello", " ", "\n", "world", "  \n")) == [(0, "Hello"), (5, " \nworld")]


def test_a_new_attempt_starts_again_at_offset_0() -> None:
    assert shown(("Half an ans",), ("A whole", " answer")) == [(0, "Half an ans"), (0, "A whole"), (7, " answer")]
