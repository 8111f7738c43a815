"""The fence scanner under spec 001 B's extraction: which lines open and close a fence."""

from __future__ import annotations

from lambda_agents.chat.fences import find_fences, remove_fences


def test_given_labelled_and_unlabelled_fences_then_each_is_found_with_its_label_and_body() -> None:
    text = "a\n```json\n{}\n```\nb\n```\nplain\n```\n```Python extra words\nx\n```\n"
    fences = find_fences(text)
    assert [(f.label, f.body, f.closed) for f in fences] == [
        ("json", "{}\n", True),
        ("", "plain\n", True),
        ("python", "x\n", True),
    ]
    assert text[fences[0].start : fences[0].end] == "```json\n{}\n```\n"


def test_given_a_longer_opener_then_a_shorter_backtick_run_inside_does_not_close_it() -> None:
    text = "````json\n```\n{}\n````"
    (fence,) = find_fences(text)
    assert fence.body == "```\n{}\n" and fence.closed


def test_given_inline_backticks_then_no_fence_is_opened() -> None:
    assert find_fences("use ```json fences\nand ```json {}``` inline") == []


def test_given_an_opener_without_a_closer_then_the_fence_runs_to_the_end_unclosed() -> None:
    (fence,) = find_fences('text\n```json\n{"a": ')
    assert fence.body == '{"a": ' and not fence.closed and fence.json_like


def test_given_a_closing_line_with_text_after_the_backticks_then_it_does_not_close() -> None:
    (fence,) = find_fences("```\n{}\n``` not a closer\n```")
    assert fence.body == "{}\n``` not a closer\n"


def test_json_like_fences_are_json_labelled_unclosed_or_unlabelled_objects_and_arrays() -> None:
    fences = find_fences("```\n[1]\n```\n```\nplain\n```\n```yaml\na: 1\n```\n")
    assert [fence.json_like for fence in fences] == [True, False, False]


def test_removing_fences_keeps_the_prose_and_collapses_blank_runs() -> None:
    text = "first\n\n```json\n{}\n```\n\n\nsecond\n"
    assert remove_fences(text, find_fences(text)) == "first\n\nsecond"


def test_given_a_line_of_ten_thousand_backticks_then_it_opens_a_fence_only_as_long_a_run_closes() -> None:
    text = "`" * 10_000 + "\n```json\n{}\n```"
    (fence,) = find_fences(text)
    assert (fence.label, fence.body, fence.closed) == ("", "```json\n{}\n```", False)
    (closed,) = find_fences(text + "\n" + "`" * 10_000)
    assert closed.closed
