"""The request-body checks and the bounded error envelope, on their own."""

from __future__ import annotations

import json

import pytest
from lambda_agents.api.error_body import MAX_ERROR_BYTES, MAX_MESSAGE_CHARS, error_body
from lambda_agents.api.request_body import BodyRefused, media_type, parse_json_object


@pytest.mark.parametrize(
    ("header", "essence"),
    [
        ("application/json", "application/json"),
        ("APPLICATION/JSON", "application/json"),
        ("application/json; charset=utf-8", "application/json"),
        ("application/json ; charset=UTF-8", "application/json"),
        ("application/jsonx", "application/jsonx"),
        ("application/json,text/plain", None),
        ("application/", None),
        ("json", None),
        ("", None),
    ],
)
def test_the_media_type_is_the_lower_cased_type_and_subtype_of_a_well_formed_header(
    header: str, essence: str | None
) -> None:
    assert media_type(header) == essence


def test_a_body_nested_exactly_to_the_limit_is_accepted_and_one_level_more_is_not() -> None:
    assert parse_json_object('{"a": ' + "[" * 31 + "]" * 31 + "}")
    with pytest.raises(BodyRefused, match="nested deeper than 32 levels"):
        parse_json_object('{"a": ' + "[" * 32 + "]" * 32 + "}")


def test_a_lone_surrogate_is_refused_naming_where_it_is_and_a_surrogate_pair_is_text() -> None:
    assert parse_json_object('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}
    with pytest.raises(BodyRefused, match=r"invalid body\.a\[1\]\.b: holds a lone UTF-16 surrogate"):
        parse_json_object('{"a": [1, {"b": "\\ud800"}]}')


def test_an_error_envelope_is_bounded_however_wide_and_deep_its_details() -> None:
    wide: object = "x" * 5000
    for _ in range(6):
        wide = [wide] * 50
    body = error_body("E", "m" * 10_000, {"problems": wide})
    error = json.loads(body)["error"]
    assert len(body.encode()) <= MAX_ERROR_BYTES and len(error["message"]) <= MAX_MESSAGE_CHARS
    assert error["truncated"] is True


def test_an_error_envelopes_work_is_bounded_by_its_limit_not_by_the_details() -> None:
    class Leaf:
        written = 0

        def __str__(self) -> str:
            Leaf.written += 1
            return "y" * 300

    wide: object = Leaf()
    for _ in range(4):
        wide = [wide] * 50  # 20 ** 4 = 160,000 leaves kept after the per-list cut

    body = error_body("E", "m", {"problems": wide})

    assert json.loads(body)["error"] == {"code": "E", "message": "m", "truncated": True}
    # Each leaf kept adds its ~90 characters (cut at 100): past MAX_ERROR_BYTES of them the rest is not walked.
    assert Leaf.written < 500


def test_a_small_error_envelope_is_unchanged() -> None:
    assert json.loads(error_body("E", "bad", [{"field": "a"}])) == {
        "error": {"code": "E", "message": "bad", "details": [{"field": "a"}]}
    }
