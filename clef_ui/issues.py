"""Limits of a decision request, and the issues that say which one a request breaks."""

from __future__ import annotations

import enum
import json
import math
import re
from dataclasses import dataclass
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
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")

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


def quote(value: object, limit: int = 40) -> str:
    if not isinstance(value, str):
        return repr(value)
    return json.dumps(value if len(value) <= limit else value[:limit] + "…", ensure_ascii=False)


def is_text(value: object) -> bool:
    """A non-empty string that can be encoded (JSON can carry lone surrogates; tokenizers can't)."""
    try:
        return isinstance(value, str) and bool(value.encode("utf-8"))
    except UnicodeEncodeError:
        return False


def question_where(qid: object, index: int) -> tuple[Loc, str]:
    """The loc of a question and how messages name it (by position when its id is unusable)."""
    label = f"question {quote(qid)}" if is_text(qid) else f"question {index + 1}"
    return ("questions", qid if isinstance(qid, str) else index), label


def _json_problem(item: object, depth: int, looped: bool) -> tuple[str, str] | None:
    if isinstance(item, float) and not math.isfinite(item):
        return f"numbers must be finite, got {item} — use null or a string", "not_finite"
    if isinstance(item, str) and item and not is_text(item):
        return "holds an unpaired surrogate (invalid Unicode) — remove it", "invalid_text"
    if item is not None and not isinstance(item, str | int | float | list | dict):
        return (
            f"a {type(item).__name__} is not JSON — use text, numbers, lists, objects",
            "not_json",
        )
    if isinstance(item, list | dict) and (depth >= MAX_JSON_DEPTH or looped):
        return f"nested over {MAX_JSON_DEPTH} levels (or holds itself) — flatten it", "too_deep"
    return None


def json_issues(value: object, loc: Loc, where: str) -> list[SchemaIssue]:
    """Everything in `value` that is not plain JSON with finite numbers, each named by path."""
    out: list[SchemaIssue] = []
    ancestors: set[int] = set()

    def walk(item: object, path: Loc) -> None:
        if problem := _json_problem(item, len(path), id(item) in ancestors):
            # Paths are spelled out only on failure: a valid state can be large.
            here = where + "".join(f"[{quote(p) if isinstance(p, str) else p}]" for p in path)
            out.append(SchemaIssue(loc + path, f"{here}: {problem[0]}", problem[1]))
        elif isinstance(item, list | dict):
            ancestors.add(id(item))
            for key, child in item.items() if isinstance(item, dict) else enumerate(item):
                if isinstance(item, dict) and key != "" and not is_text(key):
                    msg = f"{where}: object key {quote(key)} must be a valid string"
                    out.append(SchemaIssue(loc + path, msg, "invalid_key"))
                else:
                    walk(child, (*path, key))
            ancestors.discard(id(item))

    walk(value, ())
    return out
