"""Hypothesis strategies for valid System One requests, small enough for a tiny model to run."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Surrogates are excluded: they cannot be encoded, so no valid request holds one.
_TEXT = st.characters(codec="utf-8")
# Hand-picked ids next to random ones, so non-ASCII, emoji, spaces and JSON-looking ids all
# show up in short runs instead of only when hypothesis happens upon them.
_FIXED_IDS = [
    "status",
    "Größe",
    "état",
    "問題",
    "🙂",
    "👩‍💻 dev",
    "a b",
    '"quoted"',
    "{}",
    "0",
    "true",
]


def ids() -> st.SearchStrategy[str]:
    """Question or option ids: non-empty, at most 100 characters, often non-ASCII."""
    return st.one_of(
        st.sampled_from(_FIXED_IDS),
        st.text(_TEXT, min_size=1, max_size=12),
        st.text(_TEXT, min_size=100, max_size=100),
    )


def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Nested JSON with finite numbers only."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(_TEXT, max_size=20),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.text(_TEXT, max_size=6), inner, max_size=3),
        ),
        max_leaves=max_leaves,
    )


_JSON = json_values()
_DESCRIPTIONS = st.one_of(st.text(_TEXT, max_size=30), st.none(), json_values(max_leaves=4))
_IDS = ids()


def descriptions() -> st.SearchStrategy[Any]:
    """Instructions and descriptions: mostly text, sometimes null or structured JSON."""
    return _DESCRIPTIONS


@st.composite
def questions(draw: st.DrawFn, qtype: str | None = None) -> dict[str, Any]:
    """One System One question; key order is type, instructions, criteria (what we emit)."""
    qtype = qtype or draw(st.sampled_from(["choice", "noul", "score"]))
    question: dict[str, Any] = {"type": qtype}
    if draw(st.integers(0, 4)):  # instructions present four times out of five
        question["instructions"] = draw(_DESCRIPTIONS)
    if qtype == "choice":
        keys = draw(st.lists(_IDS, min_size=2, max_size=6, unique=True))
        question["criteria"] = {key: draw(_DESCRIPTIONS) for key in keys}
    elif qtype == "score":
        question["criteria"] = draw(st.lists(_DESCRIPTIONS, min_size=2, max_size=5))
    elif draw(st.booleans()):  # noul: criteria key absent half the time
        sides = draw(
            st.none() | st.lists(st.sampled_from(["true", "false"]), max_size=2, unique=True)
        )
        question["criteria"] = (
            None if sides is None else {side: draw(_DESCRIPTIONS) for side in sides}
        )
    return question


_PNG = "data:image/png;base64,iVBORw0KGgo="
_JPEG = "data:image/jpeg;base64,/9j/4AAQ"
_VIDEO = "data:video/mp4;base64,AAAAIGZ0eXA="


@st.composite
def systemone_requests(draw: st.DrawFn, media: bool = True) -> dict[str, Any]:
    """A valid System One request dict, always with "model"; media lists absent or non-empty
    (media=False: text only, for running the model)."""
    names = draw(st.lists(_IDS, min_size=1, max_size=6, unique=True))
    state = draw(
        st.one_of(
            st.text(_TEXT, max_size=40),
            st.dictionaries(st.text(_TEXT, max_size=8), _JSON, max_size=4),
            st.lists(_JSON, max_size=4),
        )
    )
    request: dict[str, Any] = {
        "model": draw(st.sampled_from(["clef-flash", "jev-latest", "my-model"])),
        "state": state,
        "questions": {name: draw(questions()) for name in names},
    }
    if not media:
        return request
    if draw(st.integers(0, 3)) == 0:
        request["images"] = draw(st.lists(st.sampled_from([_PNG, _JPEG]), min_size=1, max_size=4))
    if draw(st.integers(0, 5)) == 0:
        request["x_videos"] = draw(
            st.lists(st.sampled_from([_VIDEO, "clip.mp4"]), min_size=1, max_size=2)
        )
    return request
