"""Decision requests as typed data: System One in and out, validation, and the release's record."""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
QuestionType: TypeAlias = Literal["choice", "noul", "score"]
MediaKind: TypeAlias = Literal["image", "video"]

QUESTION_TYPES: Final = ("choice", "noul", "score")
DEFAULT_MODEL: Final = "clef-flash"
MAX_QUESTIONS: Final = 64
MAX_QUESTION_ID_LENGTH: Final = 100
CHOICE_OPTIONS: Final = (2, 255)
SCORE_LEVELS: Final = (2, 10)
MAX_IMAGES: Final = 4
IMAGE_MIME_TYPES: Final = ("image/png", "image/jpeg", "image/webp")
NOUL_SIDES: Final = ("true", "false")
# Not a System One limit: it keeps json.dumps (and our own walk) far from Python's recursion
# limit, so a pathological state is refused with a message instead of crashing the server.
MAX_JSON_DEPTH: Final = 100

# The wire names of the two media lists; video has no hosted-API field, hence the x_ prefix.
MEDIA_FIELDS: Final = {"image": "images", "video": "x_videos"}
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")

Loc: TypeAlias = tuple[str | int, ...]


class Absent(enum.Enum):
    """Marks a key that was not in the request at all, as distinct from an explicit null."""

    ABSENT = "absent"


ABSENT: Final = Absent.ABSENT


@dataclass(frozen=True)
class SchemaIssue:
    """One problem with a request; `loc` is the path from the request root."""

    loc: Loc
    msg: str
    type: str

    def to_dict(self) -> dict[str, Any]:
        return {"loc": list(self.loc), "msg": self.msg, "type": self.type}


class SchemaError(ValueError):
    """A request that cannot be run; `issues` lists every problem found, not just the first."""

    def __init__(self, issues: list[SchemaIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(issue.msg for issue in self.issues))


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


def _quote(value: object, limit: int = 40) -> str:
    if not isinstance(value, str):
        return repr(value)
    return json.dumps(value if len(value) <= limit else value[:limit] + "…", ensure_ascii=False)


def _is_text(value: object) -> bool:
    """A non-empty string that can be encoded (JSON can carry lone surrogates; tokenizers can't)."""
    try:
        return isinstance(value, str) and bool(value.encode("utf-8"))
    except UnicodeEncodeError:
        return False


def _question_where(qid: object, index: int) -> tuple[Loc, str]:
    """The loc of a question and how messages name it (by position when its id is unusable)."""
    label = f"question {_quote(qid)}" if _is_text(qid) else f"question {index + 1}"
    return ("questions", qid if isinstance(qid, str) else index), label


def _json_problem(item: object, depth: int, looped: bool) -> tuple[str, str] | None:
    if isinstance(item, float) and not math.isfinite(item):
        return f"numbers must be finite, got {item} — use null or a string", "not_finite"
    if isinstance(item, str) and item and not _is_text(item):
        return "holds an unpaired surrogate (invalid Unicode) — remove it", "invalid_text"
    if item is not None and not isinstance(item, str | int | float | list | dict):
        return (
            f"a {type(item).__name__} is not JSON — use text, numbers, lists, objects",
            "not_json",
        )
    if isinstance(item, list | dict) and (depth >= MAX_JSON_DEPTH or looped):
        return f"nested over {MAX_JSON_DEPTH} levels (or holds itself) — flatten it", "too_deep"
    return None


def _json_issues(value: object, loc: Loc, where: str) -> list[SchemaIssue]:
    """Everything in `value` that is not plain JSON with finite numbers, each named by path."""
    out: list[SchemaIssue] = []
    ancestors: set[int] = set()

    def walk(item: object, path: Loc) -> None:
        if problem := _json_problem(item, len(path), id(item) in ancestors):
            # Paths are spelled out only on failure: a valid state can be large.
            here = where + "".join(f"[{_quote(p) if isinstance(p, str) else p}]" for p in path)
            out.append(SchemaIssue(loc + path, f"{here}: {problem[0]}", problem[1]))
        elif isinstance(item, list | dict):
            ancestors.add(id(item))
            for key, child in item.items() if isinstance(item, dict) else enumerate(item):
                if isinstance(item, dict) and key != "" and not _is_text(key):
                    msg = f"{where}: object key {_quote(key)} must be a valid string"
                    out.append(SchemaIssue(loc + path, msg, "invalid_key"))
                else:
                    walk(child, (*path, key))
            ancestors.discard(id(item))

    walk(value, ())
    return out


def _count_issues(
    loc: Loc, what: str, n: int, limits: tuple[int, int], noun: str
) -> list[SchemaIssue]:
    lo, hi = limits
    if lo <= n <= hi:
        return []
    if n < lo:
        k = lo - n
        fix = f"add {k} more {noun}s" if k > 1 else f"add {'one' if n == 0 else 'another'} {noun}"
    else:
        fix = f"remove {n - hi} {noun}{'s' if n - hi > 1 else ''}"
    return [SchemaIssue(loc, f"{what} needs {lo} to {hi} {noun}s, it has {n} — {fix}", "count")]


def _option_issues(
    options: list[Option], qloc: Loc, label: str, noun: str, sides: tuple[str, ...] | None
) -> list[SchemaIssue]:
    """Ids, duplicates and descriptions of choice options, or of noul sides when `sides` is set."""
    out: list[SchemaIssue] = []
    seen: dict[str, int] = {}
    for j, option in enumerate(options):
        oid = option.id
        oloc = (*qloc, "criteria", oid if isinstance(oid, str) else j)
        if not _is_text(oid):
            msg = f"{label}: {noun} {j + 1} needs an id (a non-empty string) — give it a name"
            out.append(SchemaIssue(oloc, msg, "option_id"))
        elif sides is not None and oid not in sides:
            msg = f'{label}: noul criteria keys are "true"/"false", not {_quote(oid)} — rename it'
            out.append(SchemaIssue(oloc, msg, "invalid_key"))
        elif oid in seen:
            msg = f"{label}: {noun} {_quote(oid)} is given twice — rename or remove one"
            out.append(SchemaIssue(oloc, msg, "duplicate"))
        else:
            seen[oid] = j
        where = f"{label} {noun} {_quote(oid) if isinstance(oid, str) else j + 1}"
        out += _json_issues(option.description, oloc, where)
    return out


def _criteria_issues(q: Question, qloc: Loc, label: str) -> list[SchemaIssue]:
    out: list[SchemaIssue] = []
    cloc = (*qloc, "criteria")
    if q.type == "choice":
        what = f"{label}: a choice question"
        out += _count_issues(cloc, what, len(q.options), CHOICE_OPTIONS, "option")
        out += _option_issues(q.options, qloc, label, "option", None)
    elif q.type == "score":
        what = f"{label}: a score question"
        out += _count_issues(cloc, what, len(q.levels), SCORE_LEVELS, "level")
        for j, level in enumerate(q.levels):
            out += _json_issues(level, (*cloc, j), f"{label} level {j + 1}")
    elif isinstance(q.noul_criteria, list):
        out += _option_issues(q.noul_criteria, qloc, label, "side", NOUL_SIDES)
    return out


def _question_issues(q: Question, index: int, seen: dict[str, int]) -> list[SchemaIssue]:
    out: list[SchemaIssue] = []
    qloc, label = _question_where(q.id, index)
    if not _is_text(q.id):
        msg = f"{label} needs an id (a non-empty string) — give it a name"
        out.append(SchemaIssue(qloc, msg, "question_id"))
    elif len(q.id) > MAX_QUESTION_ID_LENGTH:
        msg = f"{label}: the id has {len(q.id)} characters, over {MAX_QUESTION_ID_LENGTH} — shorten"
        out.append(SchemaIssue(qloc, msg, "question_id"))
    if isinstance(q.id, str) and q.id in seen:
        msg = f"{label}: id used twice (questions {seen[q.id] + 1} and {index + 1}) — rename one"
        out.append(SchemaIssue(qloc, msg, "duplicate"))
    elif isinstance(q.id, str):
        seen[q.id] = index
    if q.type not in QUESTION_TYPES:
        got = "has no type" if q.type is None else f"has type {_quote(q.type)}"
        msg = f'{label} {got} — set it to "choice", "noul" or "score"'
        out.append(SchemaIssue((*qloc, "type"), msg, "question_type"))
    if q.instructions is not ABSENT:
        out += _json_issues(q.instructions, (*qloc, "instructions"), f"{label} instructions")
    return out + _criteria_issues(q, qloc, label)


def _media_issues(refs: list[MediaRef], kind: MediaKind) -> list[SchemaIssue]:
    name, out = MEDIA_FIELDS[kind], []
    if kind == "image" and len(refs) > MAX_IMAGES:
        k = len(refs) - MAX_IMAGES
        msg = f"a request may carry at most {MAX_IMAGES} images, it has {len(refs)} — remove {k}"
        out.append(SchemaIssue((name,), msg, "count"))
    for i, ref in enumerate(refs):
        loc, where, source = (name, i), f"{kind} {i + 1}", ref.source
        if not _is_text(source) or not source.strip():
            msg = f"{where}: give a data: URL or a local file path as a string"
            out.append(SchemaIssue(loc, msg, "media_source"))
        elif _URL_SCHEME.match(source):
            msg = f"{where}: remote URLs are refused ({_quote(source, 30)}) — send a data: URL"
            out.append(SchemaIssue(loc, msg, "remote_url"))
        elif source[:5].lower() == "data:":
            mime = re.split(r"[;,]", source[5:], maxsplit=1)[0].strip().lower()
            if "," not in source:
                msg = f"{where}: not a valid data: URL — expected data:<type>;base64,<data>"
                out.append(SchemaIssue(loc, msg, "media_source"))
            elif kind == "image" and mime not in IMAGE_MIME_TYPES:
                msg = f"{where}: {mime or 'untyped data'} is not supported — use PNG, JPEG or WebP"
                out.append(SchemaIssue(loc, msg, "media_type"))
            elif kind == "video" and not mime.startswith("video/"):
                msg = f"{where}: {mime or 'untyped'} data is not a video — use a video/* data: URL"
                out.append(SchemaIssue(loc, msg, "media_type"))
    return out


def validate(request: DecisionRequest) -> list[SchemaIssue]:
    """Every problem with a request or a draft, in form order; empty when it can run."""
    out: list[SchemaIssue] = []
    if not isinstance(request.model, str):
        msg = f'model must be a string such as "{DEFAULT_MODEL}", got {_quote(request.model)}'
        out.append(SchemaIssue(("model",), msg, "type"))
    if isinstance(request.state, str | dict | list):
        out += _json_issues(request.state, ("state",), "state")
    else:
        msg = f"state must be a string, object or list, got a {type(request.state).__name__}"
        out.append(SchemaIssue(("state",), msg, "type"))
    n, limits = len(request.questions), (1, MAX_QUESTIONS)
    out += _count_issues(("questions",), "a request", n, limits, "question")
    seen: dict[str, int] = {}
    for index, question in enumerate(request.questions):
        out += _question_issues(question, index, seen)
    return out + _media_issues(request.images, "image") + _media_issues(request.videos, "video")


def _parse_question(qid: object, raw: object, index: int) -> tuple[Question, list[SchemaIssue]]:
    qloc, label = _question_where(qid, index)
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
        is_path = isinstance(source, str) and not _URL_SCHEME.match(source)
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
