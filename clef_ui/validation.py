"""Check a decision request or a form draft against the limits, naming every problem."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from clef_ui.issues import (
    ABSENT,
    CHOICE_OPTIONS,
    DEFAULT_MODEL,
    IMAGE_MIME_TYPES,
    MAX_IMAGES,
    MAX_QUESTION_ID_LENGTH,
    MAX_QUESTIONS,
    MEDIA_FIELDS,
    NOUL_SIDES,
    QUESTION_TYPES,
    SCORE_LEVELS,
    URL_SCHEME,
    Loc,
    MediaKind,
    SchemaIssue,
    is_text,
    json_issues,
    question_where,
    quote,
)

if TYPE_CHECKING:
    from clef_ui.schema import DecisionRequest, MediaRef, Option, Question


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
        if not is_text(oid):
            msg = f"{label}: {noun} {j + 1} needs an id (a non-empty string) — give it a name"
            out.append(SchemaIssue(oloc, msg, "option_id"))
        elif sides is not None and oid not in sides:
            msg = f'{label}: noul criteria keys are "true"/"false", not {quote(oid)} — rename it'
            out.append(SchemaIssue(oloc, msg, "invalid_key"))
        elif oid in seen:
            msg = f"{label}: {noun} {quote(oid)} is given twice — rename or remove one"
            out.append(SchemaIssue(oloc, msg, "duplicate"))
        else:
            seen[oid] = j
        where = f"{label} {noun} {quote(oid) if isinstance(oid, str) else j + 1}"
        out += json_issues(option.description, oloc, where)
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
            out += json_issues(level, (*cloc, j), f"{label} level {j + 1}")
    elif isinstance(q.noul_criteria, list):
        out += _option_issues(q.noul_criteria, qloc, label, "side", NOUL_SIDES)
    return out


def _question_issues(q: Question, index: int, seen: dict[str, int]) -> list[SchemaIssue]:
    out: list[SchemaIssue] = []
    qloc, label = question_where(q.id, index)
    if not is_text(q.id):
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
        got = "has no type" if q.type is None else f"has type {quote(q.type)}"
        msg = f'{label} {got} — set it to "choice", "noul" or "score"'
        out.append(SchemaIssue((*qloc, "type"), msg, "question_type"))
    if q.instructions is not ABSENT:
        out += json_issues(q.instructions, (*qloc, "instructions"), f"{label} instructions")
    return out + _criteria_issues(q, qloc, label)


def _media_issues(refs: list[MediaRef], kind: MediaKind) -> list[SchemaIssue]:
    name, out = MEDIA_FIELDS[kind], []
    if kind == "image" and len(refs) > MAX_IMAGES:
        k = len(refs) - MAX_IMAGES
        msg = f"a request may carry at most {MAX_IMAGES} images, it has {len(refs)} — remove {k}"
        out.append(SchemaIssue((name,), msg, "count"))
    for i, ref in enumerate(refs):
        loc, where, source = (name, i), f"{kind} {i + 1}", ref.source
        if not is_text(source) or not source.strip():
            msg = f"{where}: give a data: URL or a local file path as a string"
            out.append(SchemaIssue(loc, msg, "media_source"))
        elif URL_SCHEME.match(source):
            msg = f"{where}: remote URLs are refused ({quote(source, 30)}) — send a data: URL"
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
        msg = f'model must be a string such as "{DEFAULT_MODEL}", got {quote(request.model)}'
        out.append(SchemaIssue(("model",), msg, "type"))
    if isinstance(request.state, str | dict | list):
        out += json_issues(request.state, ("state",), "state")
    else:
        msg = f"state must be a string, object or list, got a {type(request.state).__name__}"
        out.append(SchemaIssue(("state",), msg, "type"))
    n, limits = len(request.questions), (1, MAX_QUESTIONS)
    out += _count_issues(("questions",), "a request", n, limits, "question")
    seen: dict[str, int] = {}
    for index, question in enumerate(request.questions):
        out += _question_issues(question, index, seen)
    return out + _media_issues(request.images, "image") + _media_issues(request.videos, "video")
