"""Confidence, entropy, expected scores, chart rows and summaries against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from clef_ui.engine import DecisionResult, QuestionResult, TokenCounts
from clef_ui.results import (
    BAR_PLOT_KWARGS,
    CONFIDENCE_FORMULA,
    chart_frame,
    chart_props,
    chart_rows,
    entropy_bits,
    expected_score,
    nearest_level,
    normalized_entropy,
    run_summary,
    summarize,
    typesafe_confidence,
)
from clef_ui.schema import DecisionRequest, Option, Question

STATUS = Question(
    "status",
    "choice",
    "What is the invoice status?",
    options=[Option("paid", "Invoice is paid."), Option("overdue", "past due"), Option("draft")],
)
# The release sorts choice options by id: draft, overdue, paid.
STATUS_RESULT = QuestionResult("status", "choice", ("draft", "overdue", "paid"), (0.01, 0.94, 0.05))
RISK = Question("risk", "score", "How risky?", levels=["no risk", "some risk", "high risk"])
RISK_RESULT = QuestionResult("risk", "score", ("0", "1", "2"), (0.18, 0.52, 0.30))
LARGE = Question("large", "noul", "Is the total above 1000 USD?")
LARGE_RESULT = QuestionResult("large", "noul", ("true", "false"), (0.97, 0.03))


# --- confidence -------------------------------------------------------------------------------


def test_choice_confidence_matches_typesafe_formula() -> None:
    # k = 3, p_max = 0.94: (3 * 0.94 - 1) / (3 - 1) = 1.82 / 2 = 0.91
    assert typesafe_confidence([0.94, 0.05, 0.01], "choice") == pytest.approx(0.91)
    # k = 4, p_max = 0.5: (4 * 0.5 - 1) / 3 = 1/3
    assert typesafe_confidence([0.5, 0.2, 0.2, 0.1], "choice") == pytest.approx(1 / 3)


def test_confidence_is_zero_when_flat_and_one_when_certain() -> None:
    assert typesafe_confidence([0.25] * 4, "choice") == pytest.approx(0.0)
    assert typesafe_confidence([0.0, 1.0, 0.0], "choice") == pytest.approx(1.0)
    assert typesafe_confidence([0.5, 0.5], "noul") == pytest.approx(0.0)
    assert typesafe_confidence([1.0, 0.0, 0.0], "score") == pytest.approx(1.0)
    # Flat score, mode 0 (first on ties): E|i-0| = (0+1+2)/3 = 1 = the uniform mean: 1 - 1 = 0
    assert typesafe_confidence([1 / 3] * 3, "score") == pytest.approx(0.0)


def test_noul_confidence_is_a_two_option_choice() -> None:
    # (2 * 0.97 - 1) / 1 = 0.94, whether given as [p_true, p_false] or p_true alone
    assert typesafe_confidence([0.97, 0.03], "noul") == pytest.approx(0.94)
    assert typesafe_confidence([0.03], "noul") == pytest.approx(0.94)


def test_score_confidence_uses_distance_from_mode() -> None:
    # mode 1; E|i-1| = 0.18*1 + 0.52*0 + 0.30*1 = 0.48; uniform mean of |i-1| = (1+0+1)/3 = 2/3
    # 1 - 0.48 / (2/3) = 1 - 0.72 = 0.28
    assert typesafe_confidence([0.18, 0.52, 0.30], "score") == pytest.approx(0.28)
    # mode 0 of 5; E|i-0| = 0.1*1 + 0.1*2 + 0.1*3 + 0.3*4 = 1.8; uniform = (0+1+2+3+4)/5 = 2
    # 1 - 1.8/2 = 0.1
    assert typesafe_confidence([0.4, 0.1, 0.1, 0.1, 0.3], "score") == pytest.approx(0.1)


def test_score_confidence_is_floored_at_zero() -> None:
    # 7 levels, mode 0 (0.34); E|i-0| = 0.33*5 + 0.33*6 = 3.63; uniform mean (0+1+...+6)/7 = 3
    # 1 - 3.63/3 = -0.21 -> floored to 0
    assert typesafe_confidence([0.34, 0, 0, 0, 0, 0.33, 0.33], "score") == 0.0
    # Mass split to the ends of 3 levels: mode 2 (0.66); E|i-2| = 0.34*2 = 0.68; uniform 1 -> 0.32
    assert typesafe_confidence([0.34, 0.0, 0.66], "score") == pytest.approx(0.32)


def test_confidence_rejects_bad_input_with_a_message() -> None:
    with pytest.raises(ValueError, match="choice"):
        typesafe_confidence([0.5, 0.5], "ranking")
    with pytest.raises(ValueError, match="finite"):
        typesafe_confidence([math.nan, 0.5], "choice")
    with pytest.raises(ValueError, match="no probabilities"):
        typesafe_confidence([], "choice")


def test_every_type_names_its_formula() -> None:
    assert set(CONFIDENCE_FORMULA) == {"choice", "noul", "score"}
    assert all("System One" in text for text in CONFIDENCE_FORMULA.values())
    assert "(k·p_max − 1)/(k − 1)" in CONFIDENCE_FORMULA["choice"]


# --- entropy and expected score ---------------------------------------------------------------


def test_entropy() -> None:
    assert entropy_bits([0.5, 0.5]) == pytest.approx(1.0)  # -2 * 0.5 * log2(0.5) = 1
    assert entropy_bits([0.25] * 4) == pytest.approx(2.0)  # log2 4
    assert entropy_bits([1.0, 0.0, 0.0]) == 0.0  # 0 * log 0 counts as 0
    # 0.94*0.0893 + 0.05*4.3219 + 0.01*6.6439 = 0.0839 + 0.2161 + 0.0664 = 0.3664
    assert entropy_bits([0.94, 0.05, 0.01]) == pytest.approx(0.3664, abs=1e-4)


def test_normalized_entropy() -> None:
    assert normalized_entropy([0.25] * 4) == pytest.approx(1.0)  # 2 bits / log2 4
    assert normalized_entropy([0.0, 1.0]) == 0.0
    # 0.3664 / log2 3 = 0.3664 / 1.58496 = 0.2312
    assert normalized_entropy([0.94, 0.05, 0.01]) == pytest.approx(0.2312, abs=1e-4)


def test_expected_score_and_nearest_level() -> None:
    # 0*0.18 + 1*0.52 + 2*0.30 = 1.12 -> rounds to level 1
    expected = expected_score([0.18, 0.52, 0.30])
    assert expected == pytest.approx(1.12)
    assert nearest_level(expected, ["no risk", "some risk", "high risk"]) == (1, "some risk")
    # Halves round up (round() would give 0 for 0.5 and 2 for 2.5).
    assert nearest_level(0.5, ["a", "b", "c", "d"])[0] == 1
    assert nearest_level(2.5, ["a", "b", "c", "d"])[0] == 3
    assert nearest_level(9.0, ["a", "b"]) == (1, "b")  # clamped into range
    # JSON descriptions come back compact; null as empty text.
    assert nearest_level(0.1, [{"label": "low", "max": 3}, None]) == (0, '{"label":"low","max":3}')
    assert nearest_level(0.9, [{"label": "low"}, None]) == (1, "")


# --- chart rows -------------------------------------------------------------------------------


def test_choice_rows_keep_the_users_order_not_the_releases() -> None:
    rows = chart_rows(STATUS, STATUS_RESULT)
    assert [r.option_id for r in rows] == ["paid", "overdue", "draft"]
    assert [r.probability for r in rows] == [0.05, 0.94, 0.01]
    assert [r.winner for r in rows] == [False, True, False]
    assert [r.label for r in rows] == ["paid", "overdue", "draft"]


def test_sort_toggle_orders_by_probability_ties_in_user_order() -> None:
    question = Question("q", "choice", options=[Option(x) for x in ("c", "a", "d", "b")])
    result = QuestionResult("q", "choice", ("a", "b", "c", "d"), (0.3, 0.1, 0.3, 0.3))
    rows = chart_rows(question, result, sort_by_probability=True)
    # c, a, d all hold 0.3: they keep the user's order c, a, d; b (0.1) last.
    assert [r.option_id for r in rows] == ["c", "a", "d", "b"]
    # On a tie the first in the user's order wins, and only it.
    assert [r.winner for r in rows] == [True, False, False, False]
    assert sum(r.winner for r in chart_rows(question, result)) == 1


def test_score_rows_in_level_order_with_descriptions() -> None:
    rows = chart_rows(RISK, RISK_RESULT, sort_by_probability=False)
    assert [r.label for r in rows] == ["0 · no risk", "1 · some risk", "2 · high risk"]
    assert [r.winner for r in rows] == [False, True, False]


def test_noul_rows_are_true_then_false() -> None:
    # Even if a result lists false first, the chart reads true, false.
    result = QuestionResult("large", "noul", ("false", "true"), (0.03, 0.97))
    rows = chart_rows(LARGE, result)
    assert [(r.label, r.probability, r.winner) for r in rows] == [
        ("true", 0.97, True),
        ("false", 0.03, False),
    ]


def test_choice_labels_are_ids_and_level_labels_are_short() -> None:
    long = "A refund is issued to the customer within thirty days of the request"
    question = Question(
        "q", "choice", options=[Option("a", long), Option("b", {"x": 1}), Option("c")]
    )
    result = QuestionResult("q", "choice", ("a", "b", "c"), (0.2, 0.3, 0.5))
    assert [r.label for r in chart_rows(question, result)] == ["a", "b", "c"]
    score = Question("s", "score", levels=[long, "ok"])
    labels = [
        r.label for r in chart_rows(score, QuestionResult("s", "score", ("0", "1"), (0.4, 0.6)))
    ]
    assert labels[0].startswith("0 · A refund") and labels[0].endswith("…")
    assert len(labels[0]) <= 20 and labels[1] == "1 · ok"


def test_rows_refuse_a_result_from_another_question() -> None:
    with pytest.raises(ValueError, match="run the decision again"):
        chart_rows(STATUS, RISK_RESULT)
    stale = QuestionResult("status", "choice", ("draft", "paid"), (0.5, 0.5))
    with pytest.raises(ValueError, match="'overdue'"):
        chart_rows(STATUS, stale)


def test_chart_frame_and_props_keep_order_and_mark_the_winner() -> None:
    rows = chart_rows(STATUS, STATUS_RESULT)
    frame = chart_frame(rows)
    assert list(frame.columns) == ["option", "probability", "kind"]
    assert frame["option"].tolist() == ["paid", "overdue", "draft"]
    assert frame["kind"].tolist() == ["other", "winner", "other"]
    props = chart_props(rows)
    assert props["sort"] == ["paid", "overdue", "draft"]
    assert BAR_PLOT_KWARGS["y_lim"] == [0, 1]
    assert set(BAR_PLOT_KWARGS["color_map"]) == {"winner", "other"}


def test_bar_plot_takes_the_kwargs_and_frame() -> None:
    gr = pytest.importorskip("gradio")
    plot = gr.BarPlot(**BAR_PLOT_KWARGS, **chart_props(chart_rows(RISK, RISK_RESULT)))
    data = plot.postprocess(chart_frame(chart_rows(RISK, RISK_RESULT)))
    assert data is not None
    assert data.datatypes == {"option": "nominal", "probability": "quantitative", "kind": "nominal"}
    assert plot.sort == ["0 · no risk", "1 · some risk", "2 · high risk"]


# --- summaries --------------------------------------------------------------------------------


def test_choice_summary() -> None:
    summary = summarize(STATUS, STATUS_RESULT)
    assert (summary.top_option_id, summary.top_probability) == ("overdue", 0.94)
    assert summary.confidence == pytest.approx(0.91)
    assert summary.expected_score is None and summary.nearest_level is None
    (line,) = summary.lines()
    assert line.startswith("Top: overdue (94.0%) · Confidence 0.91 = (k·p_max − 1)/(k − 1)")
    assert "Entropy 0.37 bits" in line


def test_score_summary_reports_expected_score_and_level() -> None:
    summary = summarize(RISK, RISK_RESULT)
    assert summary.top_option_id == "1"
    assert summary.confidence == pytest.approx(0.28)
    assert summary.expected_score == pytest.approx(1.12)
    assert (summary.nearest_level, summary.nearest_level_text) == (1, "some risk")
    assert summary.lines()[1] == "Expected score 1.12 → level 1: some risk"


def test_noul_summary() -> None:
    summary = summarize(LARGE, LARGE_RESULT)
    assert (summary.top_label, summary.confidence) == ("true", pytest.approx(0.94))
    assert "2·p_max − 1" in summary.markdown()


def test_markdown_escapes_user_text() -> None:
    question = Question("q", "choice", options=[Option("*bold*"), Option("_x_")])
    result = QuestionResult("q", "choice", ("*bold*", "_x_"), (0.9, 0.1))
    assert summarize(question, result).markdown().startswith(r"Top: \*bold\* (90.0%)")


# --- run summary ------------------------------------------------------------------------------


def _run(tokens: TokenCounts) -> DecisionResult:
    return DecisionResult(
        request=DecisionRequest(state="x", questions=[LARGE]),
        questions=[LARGE_RESULT],
        response={},
        tokens=tokens,
        timings={"encode_s": 0.012, "forward_s": 0.3},
        device="cuda:0",
        precision="fp8",
    )


def test_run_summary() -> None:
    line = run_summary(_run(TokenCounts(312, 40, 40, 0, 16384)))
    # 12 ms + 300 ms = 312 ms
    assert line.startswith("Latency 312 ms (encode 12.0 ms + forward 300 ms)")
    assert "Tokens 312 of 16,384 (state 40/40 kept)" in line
    assert line.endswith("cuda:0 · fp8")
    assert "⚠" not in line
    path = "NVIDIA H200 · FP8 W8A8 (scaled_mm)"
    assert run_summary(_run(TokenCounts(312, 40, 40, 0, 16384)), path).endswith(path)


def test_run_summary_warns_when_the_state_was_cut() -> None:
    line = run_summary(_run(TokenCounts(16384, 17000, 16000, 64, 16384)))
    assert "state 16,000/17,000 kept, media 64" in line
    assert "⚠ State cut by 1,000 tokens" in line and "shorten the state" in line
