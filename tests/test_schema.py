"""Decision requests: System One round trips, the release's record, and validation messages."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings

from clef_ui.schema import (
    ABSENT,
    CHOICE_OPTIONS,
    MAX_IMAGES,
    MAX_QUESTION_ID_LENGTH,
    MAX_QUESTIONS,
    SCORE_LEVELS,
    DecisionRequest,
    MediaRef,
    Option,
    Question,
    SchemaError,
    SchemaIssue,
    render_state_text,
    validate,
)
from tests.strategies import systemone_requests

PNG = "data:image/png;base64,iVBORw0KGgo="

EXAMPLE: dict[str, Any] = {
    "model": "clef-flash",
    "state": {"invoice": {"vendor": "Acme", "total": 1250.0, "status": "overdue"}},
    "questions": {
        "status": {
            "type": "choice",
            "instructions": "What is the invoice status?",
            "criteria": {
                "paid": "Invoice is paid.",
                "overdue": "Invoice is past due.",
                "draft": None,
            },
        },
        "large": {"type": "noul", "instructions": "Is the total above 1000 USD?"},
        "risk": {
            "type": "score",
            "instructions": "How risky is this invoice?",
            "criteria": ["no risk", "some risk", "high risk"],
        },
    },
}


def example() -> dict[str, Any]:
    return copy.deepcopy(EXAMPLE)


def record_from_systemone(d: dict[str, Any]) -> dict[str, Any]:
    """What a System One server hands the release, built straight from the request dict."""
    return {
        "state": d["state"],
        "questions": {
            qid: {
                "type": q["type"],
                "instructions": q.get("instructions"),
                "criteria": q.get("criteria"),
            }
            for qid, q in d["questions"].items()
        },
    }


def refuse(d: object) -> list[SchemaIssue]:
    with pytest.raises(SchemaError) as caught:
        DecisionRequest.from_systemone(d)
    return caught.value.issues


def one_issue(d: object) -> SchemaIssue:
    issues = refuse(d)
    assert len(issues) == 1, [i.msg for i in issues]
    return issues[0]


# ------------------------------------------------------------------ round trips and the record


@settings(max_examples=60, deadline=None)
@given(systemone_requests())
def test_round_trip_keeps_everything_and_the_record_matches_a_server(d: dict[str, Any]) -> None:
    # One property for both: generating requests is the slow part of this file.
    request = DecisionRequest.from_systemone(d)
    back = request.to_systemone()
    assert back == d
    assert list(back) == list(d)
    assert list(back["questions"]) == list(d["questions"])
    for qid, question in d["questions"].items():
        assert list(back["questions"][qid]) == list(question)
        if isinstance(question.get("criteria"), dict):
            assert list(back["questions"][qid]["criteria"]) == list(question["criteria"])
    assert json.dumps(back, ensure_ascii=False) == json.dumps(d, ensure_ascii=False)
    record, expected = request.to_record(), record_from_systemone(d)
    assert record == expected
    assert json.dumps(record, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)


def test_documented_example_round_trips_and_builds_its_record() -> None:
    request = DecisionRequest.from_systemone(example())
    assert [q.id for q in request.questions] == ["status", "large", "risk"]
    assert [o.id for o in request.questions[0].options] == ["paid", "overdue", "draft"]
    assert request.to_systemone() == EXAMPLE
    record = request.to_record()
    assert record["questions"]["large"] == {
        "type": "noul",
        "instructions": "Is the total above 1000 USD?",
        "criteria": None,
    }
    assert record == record_from_systemone(EXAMPLE)


@pytest.mark.parametrize(
    "criteria",
    [
        ABSENT,
        None,
        {},
        {"true": "Above 1000 USD."},
        {"false": None},
        {"false": "no", "true": "yes"},
    ],
    ids=["absent", "null", "empty", "true-only", "false-only-null", "both-reversed"],
)
def test_noul_criteria_come_back_exactly_as_given(criteria: object) -> None:
    d = example()
    if criteria is not ABSENT:
        d["questions"]["large"]["criteria"] = criteria
    back = DecisionRequest.from_systemone(d).to_systemone()
    assert back == d
    assert ("criteria" in back["questions"]["large"]) == (criteria is not ABSENT)
    record = DecisionRequest.from_systemone(d).to_record()
    assert record["questions"]["large"]["criteria"] == (None if criteria is ABSENT else criteria)


def test_missing_instructions_stay_missing_but_the_record_says_none() -> None:
    d = example()
    del d["questions"]["risk"]["instructions"]
    request = DecisionRequest.from_systemone(d)
    assert "instructions" not in request.to_systemone()["questions"]["risk"]
    assert request.to_record()["questions"]["risk"]["instructions"] is None


def test_unknown_top_level_fields_are_ignored() -> None:
    d = example() | {"temperature": 0.2, "x_trace": {"id": 1}, "stream": True}
    back = DecisionRequest.from_systemone(d).to_systemone()
    assert back == EXAMPLE


def test_model_defaults_to_clef_flash_and_any_name_is_kept() -> None:
    d = example()
    del d["model"]
    assert DecisionRequest.from_systemone(d).to_systemone()["model"] == "clef-flash"
    d["model"] = "jev-latest"
    assert DecisionRequest.from_systemone(d).model == "jev-latest"


def test_media_lists_round_trip_and_are_left_out_when_empty() -> None:
    d = example() | {"images": [PNG], "x_videos": ["clips/demo.mp4", "data:video/mp4;base64,AA=="]}
    request = DecisionRequest.from_systemone(d)
    assert request.images == [MediaRef("image", PNG)]
    assert [v.kind for v in request.videos] == ["video", "video"]
    assert request.to_systemone() == d
    assert "images" not in request.to_record()  # the engine adds decoded media itself
    assert set(DecisionRequest.from_systemone(example()).to_systemone()) == {
        "model",
        "state",
        "questions",
    }


def test_state_text_is_the_release_rendering() -> None:
    assert render_state_text("  as is\n") == "  as is\n"
    assert render_state_text({"b": 1, "a": ["é", 2.5]}) == '{"a":["é",2.5],"b":1}'
    assert render_state_text([{"z": None, "y": True}]) == '[{"y":true,"z":null}]'


# ------------------------------------------------------------------ one test per rule


def with_questions(questions: dict[str, Any]) -> dict[str, Any]:
    return {"model": "clef-flash", "state": "s", "questions": questions}


def choice(n: int) -> dict[str, Any]:
    return {"type": "choice", "instructions": "?", "criteria": {f"o{i}": None for i in range(n)}}


def score(n: int) -> dict[str, Any]:
    return {"type": "score", "instructions": "?", "criteria": [f"level {i}" for i in range(n)]}


def n_questions(n: int) -> dict[str, Any]:
    return with_questions({f"q{i}": choice(2) for i in range(n)})


RULES: list[tuple[str, dict[str, Any], tuple[Any, ...], list[str]]] = [
    ("no questions", with_questions({}), ("questions",), ["1 to 64 questions", "it has 0"]),
    ("65 questions", n_questions(65), ("questions",), ["it has 65", "remove 1 question"]),
    ("empty id", with_questions({"": choice(2)}), ("questions", ""), ["question 1", "needs an id"]),
    (
        "id of 101 characters",
        with_questions({"q" * 101: choice(2)}),
        ("questions", "q" * 101),
        ["101 characters", "100", "shorten"],
    ),
    (
        "unknown type",
        with_questions({"kind": {"type": "multi", "criteria": {"a": 1, "b": 2}}}),
        ("questions", "kind", "type"),
        ['question "kind"', '"multi"', '"choice"', '"noul"', '"score"'],
    ),
    (
        "missing type",
        with_questions({"kind": {"instructions": "?"}}),
        ("questions", "kind", "type"),
        ['question "kind"', "no type", '"choice"', '"noul"', '"score"'],
    ),
    (
        "question not an object",
        with_questions({"kind": "choice"}),
        ("questions", "kind"),
        ['question "kind"', "object"],
    ),
    (
        "choice with 1 option",
        with_questions({"status": choice(1)}),
        ("questions", "status", "criteria"),
        ['question "status"', "2 to 255 options", "it has 1", "add another option"],
    ),
    (
        "choice with 256 options",
        with_questions({"status": choice(256)}),
        ("questions", "status", "criteria"),
        ['question "status"', "it has 256", "remove 1 option"],
    ),
    (
        "choice criteria as a list",
        with_questions({"status": {"type": "choice", "criteria": ["paid", "overdue"]}}),
        ("questions", "status", "criteria"),
        ['question "status"', "option ids"],
    ),
    (
        "choice option with empty id",
        with_questions({"status": {"type": "choice", "criteria": {"paid": 1, "": 2}}}),
        ("questions", "status", "criteria", ""),
        ['question "status"', "option 2", "needs an id"],
    ),
    (
        "score with 1 level",
        with_questions({"risk": score(1)}),
        ("questions", "risk", "criteria"),
        ['question "risk"', "2 to 10 levels", "it has 1", "add another level"],
    ),
    (
        "score with 11 levels",
        with_questions({"risk": score(11)}),
        ("questions", "risk", "criteria"),
        ['question "risk"', "it has 11", "remove 1 level"],
    ),
    (
        "score criteria as a dict",
        with_questions({"risk": {"type": "score", "criteria": {"0": "low", "1": "high"}}}),
        ("questions", "risk", "criteria"),
        ['question "risk"', "give a list", "lowest level first"],
    ),
    (
        "noul criteria with a bad key",
        with_questions({"large": {"type": "noul", "criteria": {"true": "yes", "maybe": "?"}}}),
        ("questions", "large", "criteria", "maybe"),
        ['question "large"', '"maybe"', '"true"', '"false"'],
    ),
    (
        "noul criteria as a list",
        with_questions({"large": {"type": "noul", "criteria": ["yes", "no"]}}),
        ("questions", "large", "criteria"),
        ['question "large"', '"true"', '"false"'],
    ),
    ("state a number", {"state": 3, "questions": {"q": choice(2)}}, ("state",), ["state", "int"]),
    ("state missing", {"questions": {"q": choice(2)}}, ("state",), ['"state"']),
    ("questions missing", {"state": "s"}, ("questions",), ['"questions"']),
    ("model not a string", n_questions(1) | {"model": 7}, ("model",), ["model", "string"]),
    (
        "NaN in the state",
        {"state": {"invoice": {"total": math.nan}}, "questions": {"q": choice(2)}},
        ("state", "invoice", "total"),
        ['state["invoice"]["total"]', "finite", "nan"],
    ),
    (
        "Infinity in an option description",
        with_questions({"status": {"type": "choice", "criteria": {"paid": [math.inf], "x": 1}}}),
        ("questions", "status", "criteria", "paid", 0),
        ['question "status"', 'option "paid"', "finite"],
    ),
    (
        "a set in the instructions",
        with_questions({"status": choice(2) | {"instructions": {"tags": {"a"}}}}),
        ("questions", "status", "instructions", "tags"),
        ['question "status" instructions["tags"]', "set", "not JSON"],
    ),
    (
        "five images",
        n_questions(1) | {"images": [PNG] * 5},
        ("images",),
        ["at most 4 images", "it has 5", "remove 1"],
    ),
    (
        "remote image URL",
        n_questions(1) | {"images": ["https://example.com/cat.png"]},
        ("images", 0),
        ["image 1", "remote", "data: URL"],
    ),
    (
        "GIF image",
        n_questions(1) | {"images": ["data:image/gif;base64,R0lGOD"]},
        ("images", 0),
        ["image 1", "image/gif", "PNG, JPEG or WebP"],
    ),
    (
        "image as a server file path",
        n_questions(1) | {"images": ["/etc/passwd"]},
        ("images", 0),
        ["image 1", "data: URL"],
    ),
    (
        "remote video URL",
        n_questions(1) | {"x_videos": ["http://example.com/a.mp4"]},
        ("x_videos", 0),
        ["video 1", "remote"],
    ),
]


@pytest.mark.parametrize(("d", "loc", "words"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_each_rule_names_the_culprit_and_the_fix(
    d: dict[str, Any], loc: tuple[Any, ...], words: list[str]
) -> None:
    issue = one_issue(d)
    assert issue.loc == loc
    for word in words:
        assert word in issue.msg
    assert issue.to_dict() == {"loc": list(loc), "msg": issue.msg, "type": issue.type}
    json.dumps(issue.to_dict())  # it becomes an HTTP 422 body


@pytest.mark.parametrize(
    ("d", "valid"),
    [
        (n_questions(MAX_QUESTIONS), True),
        (n_questions(MAX_QUESTIONS + 1), False),
        (with_questions({"é" * MAX_QUESTION_ID_LENGTH: choice(2)}), True),
        (with_questions({"é" * (MAX_QUESTION_ID_LENGTH + 1): choice(2)}), False),
        (with_questions({"q": choice(CHOICE_OPTIONS[0])}), True),
        (with_questions({"q": choice(CHOICE_OPTIONS[1])}), True),
        (with_questions({"q": score(SCORE_LEVELS[0])}), True),
        (with_questions({"q": score(SCORE_LEVELS[1])}), True),
        (n_questions(1) | {"images": [PNG] * MAX_IMAGES}, True),
    ],
    ids=["64q", "65q", "id100", "id101", "2opts", "255opts", "2levels", "10levels", "4images"],
)
def test_limits_are_inclusive(d: dict[str, Any], valid: bool) -> None:
    if valid:
        assert DecisionRequest.from_systemone(d).to_systemone() == d
    else:
        refuse(d)


@pytest.mark.parametrize("d", [None, [], "state", 3, [EXAMPLE]])
def test_a_request_must_be_an_object(d: object) -> None:
    issue = one_issue(d)
    assert issue.loc == ()
    assert "object" in issue.msg


def test_every_problem_is_reported_at_once_in_question_order() -> None:
    d = with_questions(
        {"first": choice(1), "second": {"type": "score", "criteria": {}}, "third": choice(0)}
    )
    d["state"] = {"x": math.nan}
    with pytest.raises(ValueError) as caught:  # SchemaError is a ValueError
        DecisionRequest.from_systemone(d)
    error = caught.value
    assert isinstance(error, SchemaError)
    assert [issue.loc for issue in error.issues] == [
        ("state", "x"),
        ("questions", "first", "criteria"),
        ("questions", "second", "criteria"),
        ("questions", "third", "criteria"),
    ]
    assert str(error).splitlines() == [issue.msg for issue in error.issues]


def test_videos_may_be_local_paths_but_images_on_the_wire_may_not() -> None:
    ok = n_questions(1) | {"x_videos": ["clips/a.mp4"]}
    assert DecisionRequest.from_systemone(ok).videos == [MediaRef("video", "clips/a.mp4")]
    # A form draft may point at an uploaded file; only the wire insists on data: URLs.
    draft = DecisionRequest(
        state="s", questions=[Question("q", options=[Option("a"), Option("b")])]
    )
    draft.images = [MediaRef("image", "/tmp/upload.png")]
    assert validate(draft) == []


def test_state_that_cannot_become_json_is_refused_without_crashing() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    deep: list[Any] = []
    for _ in range(500):
        deep = [deep]
    for state in (looped, deep, {"text": "\ud800"}, {1: "int key"}):
        issues = refuse({"state": state, "questions": {"q": choice(2)}})
        assert issues
        assert all(issue.loc[0] == "state" for issue in issues)


# ------------------------------------------------------------------ drafts from the form editor


def test_duplicates_in_a_draft_are_reported_by_name() -> None:
    draft = DecisionRequest(
        state="s",
        questions=[
            Question("status", options=[Option("paid"), Option("overdue"), Option("paid")]),
            Question("status", type="score", levels=["low", "high"]),
            Question("large", type="noul", noul_criteria=[Option("true"), Option("true", "yes")]),
        ],
    )
    issues = validate(draft)
    assert [(i.type, i.loc) for i in issues] == [
        ("duplicate", ("questions", "status", "criteria", "paid")),
        ("duplicate", ("questions", "status")),
        ("duplicate", ("questions", "large", "criteria", "true")),
    ]
    assert '"paid"' in issues[0].msg and 'question "status"' in issues[0].msg
    assert "questions 1 and 2" in issues[1].msg
    assert '"true"' in issues[2].msg
    with pytest.raises(SchemaError):
        draft.to_record()  # nothing invalid reaches the model


def test_an_empty_draft_says_what_to_add() -> None:
    draft = DecisionRequest()
    assert [i.msg for i in draft.issues()] == [
        "a request needs 1 to 64 questions, it has 0 — add one question"
    ]
    question = Question("status")
    draft.questions.append(question)
    assert "add 2 more options" in draft.issues()[0].msg
    question.options = [Option("paid"), Option("")]
    assert [i.loc for i in draft.issues()] == [("questions", "status", "criteria", "")]


def test_switching_a_question_type_keeps_the_other_drafts() -> None:
    question = Question(
        "risk",
        instructions="How risky?",
        options=[Option("low"), Option("high")],
        levels=["none", "some", "high"],
    )
    request = DecisionRequest(state={"a": 1}, questions=[question])
    assert request.to_record()["questions"]["risk"]["criteria"] == {"low": None, "high": None}
    question.type = "score"
    assert request.to_record()["questions"]["risk"]["criteria"] == ["none", "some", "high"]
    question.type = "noul"
    assert request.to_systemone()["questions"]["risk"] == {
        "type": "noul",
        "instructions": "How risky?",
    }
    question.type = "choice"
    assert [o.id for o in question.options] == ["low", "high"]


def test_a_draft_built_in_code_matches_its_systemone_twin() -> None:
    draft = DecisionRequest(
        state={"invoice": {"vendor": "Acme", "total": 1250.0, "status": "overdue"}},
        questions=[
            Question(
                "status",
                instructions="What is the invoice status?",
                options=[
                    Option("paid", "Invoice is paid."),
                    Option("overdue", "Invoice is past due."),
                    Option("draft"),
                ],
            ),
            Question("large", type="noul", instructions="Is the total above 1000 USD?"),
            Question(
                "risk",
                type="score",
                instructions="How risky is this invoice?",
                levels=["no risk", "some risk", "high risk"],
            ),
        ],
    )
    assert draft.check() is draft
    assert draft.to_systemone() == EXAMPLE
    assert draft == DecisionRequest.from_systemone(example())


def test_from_systemone_does_not_change_its_input() -> None:
    d = example() | {"images": [PNG]}
    before = copy.deepcopy(d)
    DecisionRequest.from_systemone(d).to_record()
    assert d == before
