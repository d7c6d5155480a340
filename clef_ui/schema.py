"""Decision requests as typed data: System One in and out, validation, and the release's record."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clef_ui.issues import (
    ABSENT,
    CHOICE_OPTIONS,
    DEFAULT_MODEL,
    IMAGE_MIME_TYPES,
    MAX_IMAGES,
    MAX_JSON_DEPTH,
    MAX_QUESTION_ID_LENGTH,
    MAX_QUESTIONS,
    MEDIA_FIELDS,
    NOUL_SIDES,
    QUESTION_TYPES,
    SCORE_LEVELS,
    URL_SCHEME,
    Absent,
    JsonValue,
    Loc,
    MediaKind,
    QuestionType,
    SchemaError,
    SchemaIssue,
    question_where,
)
from clef_ui.validation import validate

# Re-exported: the rest of the app takes the request's vocabulary from this module.
__all__ = [
    "ABSENT",
    "CHOICE_OPTIONS",
    "DEFAULT_MODEL",
    "IMAGE_MIME_TYPES",
    "MAX_IMAGES",
    "MAX_JSON_DEPTH",
    "MAX_QUESTIONS",
    "MAX_QUESTION_ID_LENGTH",
    "MEDIA_FIELDS",
    "NOUL_SIDES",
    "QUESTION_TYPES",
    "SCORE_LEVELS",
    "Absent",
    "DecisionRequest",
    "JsonValue",
    "Loc",
    "MediaKind",
    "MediaRef",
    "Option",
    "Question",
    "QuestionType",
    "SchemaError",
    "SchemaIssue",
    "render_state_text",
    "validate",
]


@dataclass
class Option:
    """A choice option (or a noul side, with id "true" or "false") and its description."""

    id: str
    description: JsonValue = None


@dataclass
class Question:
    """One question. Each type keeps its own draft field, so switching type in the editor
    loses nothing; only the field that matches `type` reaches the wire or the model."""

    id: str
    type: QuestionType = "choice"
    instructions: JsonValue | Absent = ABSENT
    options: list[Option] = field(default_factory=list)  # choice, in the user's order
    levels: list[JsonValue] = field(default_factory=list)  # score, lowest level first
    # noul: ABSENT (no key), None (explicit null) or the sides as given, one-sided allowed.
    noul_criteria: list[Option] | Absent | None = ABSENT

    @property
    def criteria(self) -> JsonValue | Absent:
        """The System One `criteria` value of this question (ABSENT when it has none)."""
        if self.type == "choice":
            return {option.id: option.description for option in self.options}
        if self.type == "score":
            return list(self.levels)
        if self.type == "noul" and isinstance(self.noul_criteria, list):
            return {side.id: side.description for side in self.noul_criteria}
        if self.type == "noul":
            return self.noul_criteria
        return ABSENT

    def to_systemone(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.instructions is not ABSENT:
            out["instructions"] = self.instructions
        if (criteria := self.criteria) is not ABSENT:
            out["criteria"] = criteria
        return out


@dataclass
class MediaRef:
    """An image or a video, as a data: URL or a local file path."""

    kind: MediaKind
    source: str


@dataclass
class DecisionRequest:
    """A whole decision request: the state, the ordered questions and any media."""

    model: str = DEFAULT_MODEL
    state: str | dict[str, Any] | list[Any] = ""
    questions: list[Question] = field(default_factory=list)
    images: list[MediaRef] = field(default_factory=list)
    videos: list[MediaRef] = field(default_factory=list)

    @classmethod
    def from_systemone(cls, data: object) -> DecisionRequest:
        """Parse a System One request dict; raises SchemaError listing every problem."""
        request, parse_issues = _parse_systemone(data)
        # A structural problem (say, criteria that is not an object) would otherwise also
        # show up as "has 0 options": report only the cause.
        covered = [p.loc for p in parse_issues]
        later = [i for i in validate(request) if not any(i.loc[: len(c)] == c for c in covered)]
        if issues := sorted(parse_issues + later, key=_issue_order(request)):
            raise SchemaError(issues)
        return request

    def to_systemone(self) -> dict[str, Any]:
        """The System One dict, the inverse of from_systemone for requests that carry "model"
        (it is always emitted) and no empty media lists (those are left out). Does not
        validate, so a draft can be exported as it is; duplicate ids collapse to the last."""
        out: dict[str, Any] = {
            "model": self.model,
            "state": self.state,
            "questions": {q.id: q.to_systemone() for q in self.questions},
        }
        if self.images:
            out["images"] = [ref.source for ref in self.images]
        if self.videos:
            out["x_videos"] = [ref.source for ref in self.videos]
        return out

    def to_record(self) -> dict[str, Any]:
        """The release's record without media, exactly as a System One server builds it.
        Validates first: this is the path to the model."""
        self.check()
        questions = {
            q.id: {
                "type": q.type,
                "instructions": _or_none(q.instructions),
                "criteria": _or_none(q.criteria),
            }
            for q in self.questions
        }
        return {"state": self.state, "questions": questions}

    def issues(self) -> list[SchemaIssue]:
        return validate(self)

    def check(self) -> DecisionRequest:
        """Return self if valid, else raise SchemaError."""
        if issues := validate(self):
            raise SchemaError(issues)
        return self


def render_state_text(state: object) -> str:
    """The state as the release renders it: strings as they are, anything else compact JSON."""
    if isinstance(state, str):
        return state
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _issue_order(request: DecisionRequest) -> Callable[[SchemaIssue], tuple[int, int]]:
    """Sort key putting issues in the order of the request's fields and questions."""
    fields = {"model": 0, "state": 1, "questions": 2, "images": 3, "x_videos": 4}
    positions = {q.id: i for i, q in reversed(list(enumerate(request.questions)))}

    def key(issue: SchemaIssue) -> tuple[int, int]:
        head = issue.loc[0] if issue.loc else ""
        at = issue.loc[1] if head == "questions" and len(issue.loc) > 1 else -1
        return fields.get(str(head), -1), positions.get(at, at if isinstance(at, int) else -1)

    return key


def _or_none(value: JsonValue | Absent) -> JsonValue:
    return None if value is ABSENT else value


def _parse_question(qid: object, raw: object, index: int) -> tuple[Question, list[SchemaIssue]]:
    qloc, label = question_where(qid, index)
    cloc = (*qloc, "criteria")
    if not isinstance(raw, dict):
        msg = f'{label} must be an object with "type", "instructions" and "criteria"'
        return Question(id=qid, type=None), [SchemaIssue(qloc, msg, "type")]  # type: ignore[arg-type]
    q = Question(id=qid, type=raw.get("type"), instructions=raw.get("instructions", ABSENT))  # type: ignore[arg-type]
    criteria, issues = raw.get("criteria", ABSENT), []
    missing = "missing" if criteria is ABSENT else "type"
    if q.type == "choice" and isinstance(criteria, dict):
        q.options = [Option(oid, description) for oid, description in criteria.items()]
    elif q.type == "choice":
        msg = f'{label}: choice criteria must map option ids to descriptions, e.g. {{"yes": null}}'
        issues.append(SchemaIssue(cloc, msg, missing))
    elif q.type == "score" and isinstance(criteria, list):
        q.levels = list(criteria)
    elif q.type == "score":
        shape = "missing" if criteria is ABSENT else f"a {type(criteria).__name__}"
        shape = "an object" if isinstance(criteria, dict) else shape
        msg = f"{label}: score criteria is {shape} — give a list of levels, lowest level first"
        issues.append(SchemaIssue(cloc, msg, missing))
    elif q.type == "noul" and isinstance(criteria, dict):
        q.noul_criteria = [Option(side, description) for side, description in criteria.items()]
    elif q.type == "noul" and (criteria is None or criteria is ABSENT):
        q.noul_criteria = criteria
    elif q.type == "noul":
        msg = f'{label}: noul criteria must be null or an object with "true" and/or "false"'
        issues.append(SchemaIssue(cloc, msg, "type"))
    return q, issues


def _parse_media(data: dict[str, Any], kind: MediaKind) -> tuple[list[MediaRef], list[SchemaIssue]]:
    name = MEDIA_FIELDS[kind]
    raw = data.get(name)
    if raw is None:
        return [], []
    wanted = "data: URLs" if kind == "image" else "data: URLs or local file paths"
    if not isinstance(raw, list):
        return [], [SchemaIssue((name,), f'"{name}" must be a list of {wanted}', "type")]
    refs, issues = [MediaRef(kind, source) for source in raw], []
    for i, source in enumerate(raw):
        # The wire takes images only inline; a path would let a client read server files.
        is_path = isinstance(source, str) and not URL_SCHEME.match(source)
        if kind == "image" and is_path and source[:5].lower() != "data:":
            msg = f"image {i + 1}: only data: URLs are accepted — send data:image/png;base64,..."
            issues.append(SchemaIssue((name, i), msg, "media_source"))
    return refs, issues


def _parse_systemone(data: object) -> tuple[DecisionRequest, list[SchemaIssue]]:
    if not isinstance(data, dict):
        msg = 'a decision request must be a JSON object with "state" and "questions"'
        raise SchemaError([SchemaIssue((), msg, "type")])
    issues: list[SchemaIssue] = []
    if "state" not in data:
        msg = 'the request has no "state" — add one (a string, object or list)'
        issues.append(SchemaIssue(("state",), msg, "missing"))
    raw_questions = data.get("questions")
    questions: list[Question] = []
    if isinstance(raw_questions, dict):
        for index, (qid, raw) in enumerate(raw_questions.items()):
            question, question_issues = _parse_question(qid, raw, index)
            questions.append(question)
            issues += question_issues
    else:
        msg = '"questions" must be an object mapping each question id to its question'
        kind = "missing" if raw_questions is None else "type"
        issues.append(SchemaIssue(("questions",), msg, kind))
    images, image_issues = _parse_media(data, "image")
    videos, video_issues = _parse_media(data, "video")
    model, state = data.get("model", DEFAULT_MODEL), data.get("state")
    request = DecisionRequest(model, state, questions, images, videos)
    return request, issues + image_issues + video_issues
