"""What the page's form holds: question drafts with stable ids, their edits, and the state box."""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from clef_ui.results import describe
from clef_ui.schema import (
    ABSENT,
    CHOICE_OPTIONS,
    MAX_QUESTIONS,
    SCORE_LEVELS,
    Absent,
    DecisionRequest,
    JsonValue,
    MediaRef,
    Option,
    Question,
    QuestionType,
    SchemaIssue,
)


class FormError(ValueError):
    """An edit or input that cannot be taken; the message names the field and the fix."""


@dataclass
class Row:
    """A choice option (id + description) or a score level (description only)."""

    uid: str
    id: str = ""
    description: JsonValue = None


@dataclass
class Draft:
    """One question as the form edits it. Each type keeps its own rows, so switching type
    and back loses nothing; `uid` never changes and keys the question's components."""

    uid: str
    id: str
    type: QuestionType = "choice"
    instructions: JsonValue | Absent = ABSENT
    options: list[Row] = field(default_factory=list)
    levels: list[Row] = field(default_factory=list)
    # As in the request: ABSENT, None, or the sides given (one-sided allowed).
    noul_criteria: dict[str, JsonValue] | Absent | None = ABSENT

    def to_question(self) -> Question:
        noul: list[Option] | Absent | None = self.noul_criteria  # type: ignore[assignment]
        if isinstance(self.noul_criteria, dict):
            noul = [Option(side, text) for side, text in self.noul_criteria.items()]
        return Question(
            id=self.id,
            type=self.type,
            instructions=self.instructions,
            options=[Option(row.id, row.description) for row in self.options],
            levels=[row.description for row in self.levels],
            noul_criteria=noul,
        )

    def noul_text(self, side: str) -> str:
        given = self.noul_criteria if isinstance(self.noul_criteria, dict) else {}
        return describe(given[side]) if side in given else ""


def _uid() -> str:
    return uuid.uuid4().hex[:10]


def _unique(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    n = 2
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def text_value(text: str) -> JsonValue:
    """What a typed description becomes: empty means none (null), anything else the text."""
    return text if text.strip() else None


def new_draft(kind: QuestionType, drafts: list[Draft]) -> Draft:
    """A fresh question of the kind asked for, with a unique id and starter rows to edit."""
    draft = Draft(uid=_uid(), id=_unique(f"{kind}_question", {d.id for d in drafts}), type=kind)
    draft.options = [Row(_uid(), "option_a"), Row(_uid(), "option_b")]
    draft.levels = [Row(_uid(), description="low"), Row(_uid(), description="high")]
    return draft


def find(drafts: list[Draft], uid: str) -> Draft:
    for draft in drafts:
        if draft.uid == uid:
            return draft
    raise FormError("That question was removed meanwhile; the form now shows the current list.")


def add_question(drafts: list[Draft], kind: QuestionType) -> list[Draft]:
    if len(drafts) >= MAX_QUESTIONS:
        raise FormError(
            f"A request holds at most {MAX_QUESTIONS} questions; remove one before adding another."
        )
    return [*drafts, new_draft(kind, drafts)]


def remove_question(drafts: list[Draft], uid: str) -> list[Draft]:
    return [d for d in drafts if d.uid != uid]


def duplicate_question(drafts: list[Draft], uid: str) -> list[Draft]:
    if len(drafts) >= MAX_QUESTIONS:
        raise FormError(f"A request holds at most {MAX_QUESTIONS} questions; remove one first.")
    source = find(drafts, uid)
    twin = copy.deepcopy(source)
    twin.uid = _uid()
    twin.id = _unique(f"{source.id}_copy", {d.id for d in drafts})
    for row in (*twin.options, *twin.levels):
        row.uid = _uid()
    index = drafts.index(source)
    return [*drafts[: index + 1], twin, *drafts[index + 1 :]]


def _moved(items: list, index: int, delta: int) -> list:
    target = index + delta
    if not 0 <= target < len(items):
        return items
    items = list(items)
    items[index], items[target] = items[target], items[index]
    return items


def move_question(drafts: list[Draft], uid: str, delta: int) -> list[Draft]:
    return _moved(drafts, drafts.index(find(drafts, uid)), delta)


def add_row(draft: Draft, kind: str) -> None:
    """Append an option (choice) or a level (score), within the limits."""
    if kind == "option":
        if len(draft.options) >= CHOICE_OPTIONS[1]:
            raise FormError(f'Question "{draft.id}" already has {CHOICE_OPTIONS[1]} options.')
        taken = {row.id for row in draft.options}
        draft.options.append(Row(_uid(), _unique(f"option_{len(draft.options) + 1}", taken)))
    else:
        if len(draft.levels) >= SCORE_LEVELS[1]:
            raise FormError(f'Question "{draft.id}" already has {SCORE_LEVELS[1]} levels.')
        draft.levels.append(Row(_uid()))


def remove_row(draft: Draft, kind: str, row_uid: str) -> None:
    rows = draft.options if kind == "option" else draft.levels
    rows[:] = [row for row in rows if row.uid != row_uid]


def move_row(draft: Draft, kind: str, row_uid: str, delta: int) -> None:
    rows = draft.options if kind == "option" else draft.levels
    index = next((i for i, row in enumerate(rows) if row.uid == row_uid), None)
    if index is not None:
        rows[:] = _moved(rows, index, delta)


def find_row(draft: Draft, kind: str, row_uid: str) -> Row | None:
    rows = draft.options if kind == "option" else draft.levels
    return next((row for row in rows if row.uid == row_uid), None)


def set_noul_side(draft: Draft, side: str, text: str) -> None:
    """Typing a side's description adds it; clearing it falls back to the release's default."""
    given = dict(draft.noul_criteria) if isinstance(draft.noul_criteria, dict) else {}
    if text.strip():
        given[side] = text
    else:
        given.pop(side, None)
    draft.noul_criteria = given or ABSENT


def drafts_from_request(request: DecisionRequest) -> list[Draft]:
    """Form drafts for an imported or example request, losing nothing of it."""
    drafts = []
    for question in request.questions:
        draft = new_draft(question.type, [])
        draft.id, draft.instructions = question.id, question.instructions
        if question.type == "choice":
            draft.options = [Row(_uid(), o.id, o.description) for o in question.options]
        if question.type == "score":
            draft.levels = [Row(_uid(), description=level) for level in question.levels]
        if isinstance(question.noul_criteria, list):
            draft.noul_criteria = {o.id: o.description for o in question.noul_criteria}
        else:
            draft.noul_criteria = question.noul_criteria
        drafts.append(draft)
    return drafts


def parse_state(text: str) -> str | dict[str, Any] | list[Any]:
    """JSON when it looks like JSON (starts with { or [), else the text as a string state."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return text
    try:
        # The whole text, surrounding blank space included, so line and column match the editor.
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormError(
            f"State: this looks like JSON but does not parse (line {exc.lineno}, "
            f"column {exc.colno}: {exc.msg}). Fix the JSON, or write plain text that does not "
            "start with { or [."
        ) from None


def build_request(
    drafts: list[Draft], state_text: str, image: str | None = None, video: str | None = None
) -> DecisionRequest:
    """The request the form describes (not yet validated: the engine validates)."""
    return DecisionRequest(
        state=parse_state(state_text),
        questions=[draft.to_question() for draft in drafts],
        images=[MediaRef("image", image)] if image else [],
        videos=[MediaRef("video", video)] if video else [],
    )


def issues_by_question(
    drafts: list[Draft], issues: list[SchemaIssue]
) -> tuple[dict[str, list[str]], list[str]]:
    """Issues placed under the question they concern (by uid); the rest for the whole form."""
    placed: dict[str, list[str]] = {draft.uid: [] for draft in drafts}
    general = []
    for issue in issues:
        at = issue.loc[1] if len(issue.loc) > 1 and issue.loc[0] == "questions" else None
        owners = [d for i, d in enumerate(drafts) if at in (d.id, i)]
        if not owners:
            general.append(issue.msg)
        for owner in owners:
            placed[owner.uid].append(issue.msg)
    return placed, general


def row_count_text(draft: Draft) -> str:
    """Live count against the type's limits, e.g. '3 options (2–255)'."""
    if draft.type == "choice":
        low, high = CHOICE_OPTIONS
        return f"{len(draft.options)} options ({low}–{high})"
    if draft.type == "score":
        low, high = SCORE_LEVELS
        return f"{len(draft.levels)} levels ({low}–{high}), lowest first"
    return "true / false"
