"""Probabilities to what people see: confidence, entropy, expected scores, chart rows and text."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from clef_ui.schema import JsonValue, Question, render_state_text

if TYPE_CHECKING:
    import pandas as pd

    from clef_ui.engine import DecisionResult, QuestionResult

# Named after its source: "confidence" means a different number on every server
# (system-one.md), so whatever we show must say which formula made it.
CONFIDENCE_FORMULA: Final[dict[str, str]] = {
    "choice": "(k·p_max − 1)/(k − 1), System One (TypeSafe)",
    "noul": "2·p_max − 1 (a 2-option choice), System One (TypeSafe)",
    "score": "1 − E|i − mode| / E_uniform|i − mode|, floored at 0, System One (TypeSafe)",
}

WINNER, OTHER = "winner", "other"
# For gr.BarPlot(**BAR_PLOT_KWARGS, **chart_props(rows)). The x order must travel with each
# value as `sort`: left unset, gradio sends no sort and Vega-Lite orders labels alphabetically.
BAR_PLOT_KWARGS: Final[dict[str, Any]] = {
    "x": "option",
    "y": "probability",
    "color": "kind",
    "color_map": {WINNER: "#f6821f", OTHER: "#9ca3af"},
    "colors_in_legend": [],  # an empty list hides the legend: "winner" needs no key
    "y_lim": [0, 1],  # a fixed scale, so 0.4 never looks like a landslide
    "y_axis_format": ".0%",
    "y_title": "probability",
    "tooltip": "axis",
}

# Chart labels become x-axis categories; long descriptions would crowd the axis.
LABEL_LIMIT = 20


@dataclass(frozen=True)
class ChartRow:
    option_id: str
    label: str
    probability: float
    winner: bool


def _checked(probabilities: Sequence[float]) -> list[float]:
    values = [float(p) for p in probabilities]
    if not values:
        raise ValueError("no probabilities given: a question has at least two options")
    if any(not math.isfinite(p) or p < 0 for p in values):
        raise ValueError(f"probabilities must be finite and non-negative, got {values}")
    return values


def _argmax(values: Sequence[float]) -> int:
    """Index of the largest value, the first one on ties (so the answer is stable)."""
    return max(range(len(values)), key=lambda i: (values[i], -i))


def typesafe_confidence(probabilities: Sequence[float], kind: str) -> float:
    """System One (TypeSafe) confidence in [0, 1]: 0 for a flat answer, 1 for a certain one."""
    values = _checked(probabilities)
    if kind == "noul" and len(values) == 1:
        values = [values[0], 1.0 - values[0]]  # P(true) alone, as a noul answer carries it
    if kind in ("choice", "noul"):
        k = len(values)
        if k == 1:
            return 1.0
        confidence = (k * max(values) - 1.0) / (k - 1)
    elif kind == "score":
        mode = _argmax(values)
        spread = sum(p * abs(i - mode) for i, p in enumerate(values))
        uniform = sum(abs(i - mode) for i in range(len(values))) / len(values)
        confidence = 1.0 if uniform == 0 else 1.0 - spread / uniform
    else:
        raise ValueError(f'unknown question type {kind!r}: use "choice", "noul" or "score"')
    # Rounded inputs (hosted Clef gives 4 decimals) can step just outside [0, 1].
    return min(1.0, max(0.0, confidence))


def entropy_bits(probabilities: Sequence[float]) -> float:
    """Shannon entropy in bits; zero-probability options add nothing."""
    return max(0.0, -sum(p * math.log2(p) for p in _checked(probabilities) if p > 0))


def normalized_entropy(probabilities: Sequence[float]) -> float:
    """Entropy divided by its maximum, log2 k: 0 for a certain answer, 1 for a flat one."""
    values = _checked(probabilities)
    if len(values) < 2:
        return 0.0
    return min(1.0, entropy_bits(values) / math.log2(len(values)))


def expected_score(probabilities: Sequence[float]) -> float:
    """sum(i * p_i) over levels, lowest first: the System One `score`."""
    return sum(i * p for i, p in enumerate(_checked(probabilities)))


def describe(value: JsonValue) -> str:
    """A description as text: strings as they are, other JSON compact, null as nothing."""
    return "" if value is None else render_state_text(value)


def nearest_level(expected: float, levels: list[JsonValue]) -> tuple[int, str]:
    """The level an expected score rounds to (halves up, unlike round()) and its description."""
    if not levels:
        raise ValueError("a score question needs levels to round to — add at least two")
    index = min(len(levels) - 1, max(0, math.floor(expected + 0.5)))
    return index, describe(levels[index])


def _short(text: str, limit: int = LABEL_LIMIT) -> str:
    text = " ".join(text.split())  # newlines in a description would break the axis label
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _level_label(index: int, level: JsonValue) -> str:
    text = describe(level)
    return _short(f"{index} · {text}") if text else str(index)


def _options(question: Question) -> list[tuple[str, str]]:
    """(option id, chart label) in the order the user defined them."""
    if question.type == "score":
        return [(str(i), _level_label(i, level)) for i, level in enumerate(question.levels)]
    if question.type == "noul":
        return [("true", "true"), ("false", "false")]
    # A choice is labelled by its id, which is what a System One client reads back.
    return [(option.id, option.id) for option in question.options]


def chart_rows(
    question: Question, result: QuestionResult, sort_by_probability: bool = False
) -> list[ChartRow]:
    """One row per option: choices in the user's order (the release sorts them by id), score
    levels lowest first, noul true then false; or by probability, descending, if asked."""
    if question.type != result.type:
        raise ValueError(
            f"question {question.id!r} is a {question.type} question but its result is a "
            f"{result.type}: the result belongs to another request — run the decision again"
        )
    options = _options(question)
    given = result.as_dict()
    if missing := [oid for oid, _ in options if oid not in given]:
        raise ValueError(
            f"question {question.id!r}: the result has no probability for {missing} — "
            "the question changed after the run; run the decision again"
        )
    probabilities = [given[oid] for oid, _ in options]
    top = _argmax(probabilities)
    rows = [
        ChartRow(oid, label, probability, winner=i == top)
        for i, ((oid, label), probability) in enumerate(zip(options, probabilities, strict=True))
    ]
    if sort_by_probability:
        rows.sort(key=lambda row: -row.probability)  # stable: ties keep the user's order
    return rows


def chart_frame(rows: Sequence[ChartRow]) -> pd.DataFrame:
    """The BarPlot value: columns option (the label), probability and kind (winner/other)."""
    import pandas as pd  # comes with gradio; imported late so the math above stays light

    return pd.DataFrame(
        {
            "option": [row.label for row in rows],
            "probability": [row.probability for row in rows],
            "kind": [WINNER if row.winner else OTHER for row in rows],
        }
    )


def chart_props(rows: Sequence[ChartRow]) -> dict[str, Any]:
    """Per-result BarPlot arguments: the frame and the x order that keeps the rows' order."""
    return {"value": chart_frame(rows), "sort": [row.label for row in rows]}


def _markdown_text(text: str) -> str:
    """User text made literal in Markdown (an option id like `*` must not turn bold)."""
    return "".join("\\" + c if c in "\\`*_[]<>#|~" else c for c in text)


@dataclass(frozen=True)
class QuestionSummary:
    id: str
    type: str
    top_option_id: str
    top_label: str
    top_probability: float
    confidence: float
    confidence_formula: str
    entropy_bits: float
    normalized_entropy: float
    expected_score: float | None = None  # score questions only
    nearest_level: int | None = None
    nearest_level_text: str | None = None

    def lines(self, markdown: bool = False) -> list[str]:
        """The text shown under a chart, one entry per line."""
        text = _markdown_text if markdown else str
        head = (
            f"Top: {text(self.top_label)} ({self.top_probability:.1%})"
            f" · Confidence {self.confidence:.2f} = {self.confidence_formula}"
            f" · Entropy {self.entropy_bits:.2f} bits ({self.normalized_entropy:.0%} of max)"
        )
        out = [head]
        if self.expected_score is not None and self.nearest_level is not None:
            level = f"level {self.nearest_level}"
            if self.nearest_level_text:
                level += f": {text(self.nearest_level_text)}"
            out.append(f"Expected score {self.expected_score:.2f} → {level}")
        return out

    def markdown(self) -> str:
        return "  \n".join(self.lines(markdown=True))  # two spaces: a Markdown line break


def summarize(question: Question, result: QuestionResult) -> QuestionSummary:
    """Everything the UI says about one answer, computed from its probabilities."""
    rows = chart_rows(question, result)
    probabilities = [row.probability for row in rows]
    top = next(row for row in rows if row.winner)
    expected = level = level_text = None
    if question.type == "score":
        expected = expected_score(probabilities)
        level, level_text = nearest_level(expected, question.levels)
    return QuestionSummary(
        id=question.id,
        type=question.type,
        top_option_id=top.option_id,
        top_label=top.label,
        top_probability=top.probability,
        confidence=typesafe_confidence(probabilities, question.type),
        confidence_formula=CONFIDENCE_FORMULA[question.type],
        entropy_bits=entropy_bits(probabilities),
        normalized_entropy=normalized_entropy(probabilities),
        expected_score=expected,
        nearest_level=level,
        nearest_level_text=level_text,
    )


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.1f} ms"


def run_summary(result: DecisionResult, path: str | None = None) -> str:
    """One line for a whole run: latency, tokens read, and the device and precision path."""
    encode = result.timings.get("encode_s", 0.0)
    forward = result.timings.get("forward_s", 0.0)
    tokens = result.tokens
    parts = [
        f"Latency {_ms(encode + forward)} (encode {_ms(encode)} + forward {_ms(forward)})",
        f"Tokens {tokens.total:,} of {tokens.max_length:,}"
        f" (state {tokens.state_kept:,}/{tokens.state_given:,} kept"
        + (f", media {tokens.media:,})" if tokens.media else ")"),
        path or f"{result.device} · {result.precision}",
    ]
    if tokens.state_cut > 0:
        parts.append(
            f"⚠ State cut by {tokens.state_cut:,} tokens: the model did not read its end — "
            "shorten the state or remove questions"
        )
    return " · ".join(parts)
