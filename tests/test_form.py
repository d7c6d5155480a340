"""The form's drafts: edits, limits, the state box, and lossless import of requests."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from clef_ui import form
from clef_ui.schema import ABSENT, MAX_QUESTIONS, DecisionRequest
from tests.strategies import systemone_requests


def _three() -> list[form.Draft]:
    drafts: list[form.Draft] = []
    for kind in ("choice", "noul", "score"):
        drafts = form.add_question(drafts, kind)
    return drafts


def test_new_questions_get_unique_ids_and_a_valid_start() -> None:
    drafts = form.add_question(form.add_question([], "choice"), "choice")
    assert [d.id for d in drafts] == ["choice_question", "choice_question_2"]
    request = form.build_request(drafts, "state")
    assert request.issues() == []  # a fresh question can run as it is


def test_remove_duplicate_and_move_keep_everything_else() -> None:
    drafts = _three()
    first, second, third = drafts
    drafts = form.duplicate_question(drafts, first.uid)
    twin = drafts[1]
    assert twin.id == "choice_question_copy" and twin.uid != first.uid
    assert [o.id for o in twin.options] == [o.id for o in first.options]
    assert {o.uid for o in twin.options}.isdisjoint({o.uid for o in first.options})
    twin.options[0].id = "changed"
    assert first.options[0].id == "option_a"  # a real copy, not a shared list

    drafts = form.move_question(drafts, third.uid, -1)
    assert [d.uid for d in drafts] == [first.uid, twin.uid, third.uid, second.uid]
    assert form.move_question(drafts, first.uid, -1) == drafts  # already at the top
    drafts = form.remove_question(drafts, twin.uid)
    assert [d.uid for d in drafts] == [first.uid, third.uid, second.uid]


def test_limits_are_refused_with_the_fix() -> None:
    drafts: list[form.Draft] = []
    for _ in range(MAX_QUESTIONS):
        drafts = form.add_question(drafts, "noul")
    with pytest.raises(form.FormError, match="at most 64 questions; remove one"):
        form.add_question(drafts, "noul")
    with pytest.raises(form.FormError, match="remove one first"):
        form.duplicate_question(drafts, drafts[0].uid)

    choice = form.new_draft("choice", [])
    for _ in range(253):
        form.add_row(choice, "option")
    assert len({row.id for row in choice.options}) == 255
    with pytest.raises(form.FormError, match="already has 255 options"):
        form.add_row(choice, "option")
    score = form.new_draft("score", [])
    for _ in range(8):
        form.add_row(score, "level")
    with pytest.raises(form.FormError, match="already has 10 levels"):
        form.add_row(score, "level")


def test_rows_move_and_remove_by_their_own_id() -> None:
    score = form.new_draft("score", [])
    form.add_row(score, "level")
    low, high, new = score.levels
    new.description = "top"
    form.move_row(score, "level", new.uid, -1)
    assert [r.uid for r in score.levels] == [low.uid, new.uid, high.uid]
    form.remove_row(score, "level", low.uid)
    assert score.to_question().levels == ["top", "high"]


def test_switching_type_and_back_loses_nothing() -> None:
    draft = form.new_draft("choice", [])
    draft.options[0].description = "kept"
    draft.type = "score"
    assert draft.to_question().criteria == ["low", "high"]
    draft.type = "choice"
    assert draft.to_question().criteria == {"option_a": "kept", "option_b": None}


def test_noul_sides_typed_and_cleared() -> None:
    draft = form.new_draft("noul", [])
    assert draft.to_question().criteria is ABSENT
    form.set_noul_side(draft, "false", "Nothing is wrong.")
    assert draft.to_question().criteria == {"false": "Nothing is wrong."}
    assert draft.noul_text("false") == "Nothing is wrong." and draft.noul_text("true") == ""
    form.set_noul_side(draft, "false", "  ")
    assert draft.to_question().criteria is ABSENT


@settings(max_examples=60, deadline=None)
@given(data=systemone_requests(media=False))
def test_imported_request_comes_back_unchanged(data: dict) -> None:
    request = DecisionRequest.from_systemone(data)
    drafts = form.drafts_from_request(request)
    again = DecisionRequest(
        model=request.model,
        state=request.state,
        questions=[d.to_question() for d in drafts],
    )
    assert again.to_systemone() == data


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("The parcel is at the door.", "The parcel is at the door."),
        ('  {"total": 12.5}', {"total": 12.5}),
        ("[1, 2]", [1, 2]),
        ("", ""),
        ("Total: {12}", "Total: {12}"),  # braces inside plain text are text
    ],
)
def test_state_is_json_when_it_looks_like_json(text: str, state: object) -> None:
    assert form.parse_state(text) == state


def test_broken_json_state_names_line_and_column() -> None:
    with pytest.raises(form.FormError, match=r"line 3, column 15"):
        form.parse_state('\n{"invoice": 1,\n  "total": 12,,\n}')
    with pytest.raises(form.FormError, match="plain text that does not start with"):
        form.parse_state("[1, 2")
    with pytest.raises(form.FormError, match=r"line 1, column 11"):
        form.parse_state('  {"a": 1,}')


def test_issues_are_placed_under_their_question() -> None:
    drafts = _three()
    drafts[1].id = drafts[0].id
    drafts[2].levels = drafts[2].levels[:1]
    request = form.build_request(drafts, "")
    placed, general = form.issues_by_question(drafts, request.issues())
    assert placed[drafts[0].uid] and placed[drafts[1].uid]  # the duplicate id, on both
    assert any("2 to 10 levels" in m for m in placed[drafts[2].uid])
    assert general == []
    assert form.row_count_text(drafts[2]) == "1 levels (2–10), lowest first"
