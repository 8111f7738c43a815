"""Deltas at most about ten a second, the first words at once, everything before ``done``, and a new
attempt from offset 0 (docs/api.md#websocket). A hand-moved clock."""

from __future__ import annotations

from lambda_agents.live import DeltaCoalescer, DeltaFrame, DoneFrame, LiveAnswer, ProgressFrame

from tests.support.recording_channel import RecordingChannel


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def coalescer(clock: Clock) -> tuple[DeltaCoalescer, list[DeltaFrame]]:
    sent: list[DeltaFrame] = []
    return DeltaCoalescer(sent.append, "s1", 2, clock), sent


def replayed(frames: list[DeltaFrame]) -> str:
    answer = ""
    for frame in frames:
        answer = answer[: frame.offset] + frame.text
    return answer


def test_the_first_words_go_at_once_and_later_ones_wait_for_a_tenth_of_a_second() -> None:
    clock = Clock()
    words, sent = coalescer(clock)
    words.add("工程")
    assert [frame.text for frame in sent] == ["工程"]
    for piece in ("を", "整理", "しました"):
        clock.now += 0.02
        words.add(piece)
    assert len(sent) == 1  # 60 ms: held
    clock.now += 0.05
    words.add("。")
    assert [(frame.offset, frame.text) for frame in sent] == [(0, "工程"), (2, "を整理しました。")]


def test_pieces_of_a_minute_at_sixty_a_second_make_at_most_ten_frames_a_second() -> None:
    clock = Clock()
    words, sent = coalescer(clock)
    pieces = [f"w{i} " for i in range(3600)]
    for piece in pieces:
        words.add(piece)
        clock.now += 1 / 60
    words.flush()
    assert len(sent) <= 60 * 10 + 1 and replayed(sent) == "".join(pieces)


def test_a_new_attempt_starts_again_at_offset_0_and_the_failed_attempts_held_words_are_dropped() -> None:
    clock = Clock()
    words, sent = coalescer(clock)
    words.add("失敗した")
    words.add("答え")  # held
    words.restart()
    words.add("新しい答え")
    assert [(frame.offset, frame.text) for frame in sent] == [(0, "失敗した"), (0, "新しい答え")]
    assert replayed(sent) == "新しい答え"


def test_an_answers_done_goes_after_every_word_it_held_and_progress_flushes_them_too() -> None:
    clock, channel = Clock(), RecordingChannel()
    answer = LiveAnswer(channel, "u1", "s1", "turn-1", clock)
    answer.write("質問")
    answer.write("です")  # held
    answer.progress("quick_check", "review", "started")
    answer.write("か")  # held
    answer.done({"reply": "質問ですか"})
    frames = channel.of("u1")
    assert [type(frame) for frame in frames] == [DeltaFrame, DeltaFrame, ProgressFrame, DeltaFrame, DoneFrame]
    assert replayed([f for f in frames if isinstance(f, DeltaFrame)]) == "質問ですか"


def test_settling_on_the_stored_text_sends_the_rest_from_where_the_words_stopped() -> None:
    clock = Clock()
    words, sent = coalescer(clock)
    words.add("工程を")
    words.add("整理")  # held
    words.settle("工程を整理しました。\n\n```json\n{}\n```")
    assert [(f.offset, f.text) for f in sent] == [(0, "工程を"), (3, "整理"), (5, "しました。\n\n```json\n{}\n```")]
    assert replayed(sent) == "工程を整理しました。\n\n```json\n{}\n```"


def test_settling_on_a_text_that_differs_from_the_words_sends_one_delta_from_the_first_difference() -> None:
    clock = Clock()
    words, sent = coalescer(clock)
    words.add("a  \n\n\nb")
    words.settle("a\n\nb and c")
    assert [(f.offset, f.text) for f in sent][-1] == (1, "\n\nb and c") and replayed(sent) == "a\n\nb and c"


def test_settling_on_the_words_already_shown_sends_nothing() -> None:
    clock = Clock()
    words, sent = coalescer(clock)
    words.add("done")
    words.settle("done")
    assert [f.text for f in sent] == ["done"]


def test_settling_after_a_restart_replaces_the_failed_attempts_words_shown() -> None:
    clock = Clock()
    words, sent = coalescer(clock)
    words.add("失敗した答え")
    words.restart()  # the new attempt wrote nothing before its answer was stored
    words.settle("答え")
    assert replayed(sent) == "答え" and sent[-1].offset == 0
