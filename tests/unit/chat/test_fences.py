"""The fence scanner (docs/chat-and-templates.md#which-fence-is-parsed): which lines open and close a fence."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
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


def reference_fences(text: str) -> list[tuple[str, str, bool]]:
    """The CommonMark-like rule written the obvious way: every line, one after the other."""
    found: list[tuple[str, str, bool]] = []
    opened: tuple[int, str, list[str]] | None = None
    for line in text.split("\n"):
        stripped = line.strip(" \t\r")
        ticks = len(stripped) - len(stripped.lstrip("`"))
        rest = stripped[ticks:].strip(" \t\r")
        if opened is None:
            if ticks >= 3 and "`" not in rest:
                opened = (ticks, rest.split()[0].lower() if rest.split() else "", [])
        elif ticks >= opened[0] and not rest:
            found.append((opened[1], "".join(opened[2]), True))
            opened = None
        else:
            opened[2].append(line + "\n")
    if opened is not None:  # runs to the end: its lines joined, no newline added after the last
        found.append((opened[1], "\n".join(line[:-1] for line in opened[2]), False))
    return found


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["```", "````", "```json", " ```", "``` x", "`", "a```", "{}", "", "x"]), max_size=25))
def test_the_scanner_agrees_with_the_line_by_line_reference(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert [(f.label, f.body, f.closed) for f in find_fences(text)] == reference_fences(text)
