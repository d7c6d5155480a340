"""Decisions on the tiny FP8 release: same numbers as the release's own code, in its order."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from clef_ui.engine import DecisionError, Engine
from clef_ui.schema import DecisionRequest, SchemaError
from tests.strategies import systemone_requests

REQUEST = json.loads((Path(__file__).parent / "data" / "invoice_request.json").read_text())


def _expected_order(spec: dict) -> list[str]:
    if spec["type"] == "noul":
        return ["true", "false"]
    if spec["type"] == "choice":
        return sorted(spec["criteria"])
    return [str(level) for level in range(len(spec["criteria"]))]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=systemone_requests(media=False))
def test_decide_matches_release_systemone_exactly(fp8_engine: Engine, request: dict) -> None:
    result = fp8_engine.decide(request)
    reference = fp8_engine.loader.systemone(fp8_engine.model, fp8_engine.processor, request)
    assert result.response == reference
    assert [q.id for q in result.questions] == list(request["questions"])
    for question in result.questions:
        spec = request["questions"][question.id]
        assert list(question.option_ids) == _expected_order(spec)
        assert math.isclose(sum(question.probabilities), 1.0, abs_tol=1e-6)
        answer = reference["answers"][question.id]
        expected = {"true": answer["noul"]} if spec["type"] == "noul" else answer["probabilities"]
        assert {k: question.as_dict()[k] for k in expected} == expected


def test_result_reports_tokens_timings_and_device(fp8_engine: Engine) -> None:
    result = fp8_engine.decide(REQUEST)
    tokens = result.tokens
    state_text = json.dumps(REQUEST["state"], separators=(",", ":"), sort_keys=True)
    assert tokens.state_given == len(fp8_engine.tokenizer(state_text)["input_ids"])
    assert tokens.state_kept == tokens.state_given and tokens.state_cut == 0
    assert tokens.total == result.response["usage"]["input_tokens"]
    assert tokens.schema == tokens.total - tokens.state_kept > 0 and tokens.media == 0
    assert result.timings["encode_s"] > 0 and result.timings["forward_s"] > 0
    assert (result.device, result.precision) == ("cpu", "bf16")


def test_long_state_is_cut_and_reported(fp8_engine: Engine) -> None:
    short = Engine(
        fp8_engine.model, fp8_engine.processor, fp8_engine.loader, fp8_engine.info, max_length=700
    )
    request = dict(REQUEST, state="The invoice is overdue. " * 200)
    tokens = short.decide(request).tokens
    assert tokens.total == 700
    assert tokens.state_kept < tokens.state_given
    assert tokens.state_cut == tokens.state_given - tokens.state_kept
    # The count without running the model agrees with the run.
    assert short.count_tokens(request) == tokens


def test_schema_that_cannot_fit_is_a_clear_error(fp8_engine: Engine) -> None:
    tiny = Engine(
        fp8_engine.model, fp8_engine.processor, fp8_engine.loader, fp8_engine.info, max_length=50
    )
    with pytest.raises(DecisionError, match="Remove questions or shorten"):
        tiny.decide(REQUEST)


def test_invalid_request_is_refused_before_the_model(fp8_engine: Engine) -> None:
    bad = dict(REQUEST, questions={"risk": {"type": "score", "criteria": ["only one"]}})
    with pytest.raises(SchemaError, match="risk"):
        fp8_engine.decide(bad)
    draft = DecisionRequest.from_systemone(REQUEST)
    draft.questions[0].options[1].id = draft.questions[0].options[0].id
    with pytest.raises(SchemaError, match="paid"):
        fp8_engine.decide(draft)


def test_batch_matches_single_decisions(fp8_engine: Engine) -> None:
    requests = [
        REQUEST,
        dict(REQUEST, state="A much longer state: " + "the vendor called twice. " * 30),
        dict(REQUEST, state=["paid", "in", "full"]),
    ]
    batched = fp8_engine.decide_batch(requests)
    for request, together in zip(requests, batched, strict=True):
        alone = fp8_engine.decide(request)
        assert together.tokens == alone.tokens
        for qa, qb in zip(alone.questions, together.questions, strict=True):
            assert qa.option_ids == qb.option_ids
            # Right padding leaves each record's tokens alone; BF16 kernels vary a little by shape.
            assert (
                max(abs(a - b) for a, b in zip(qa.probabilities, qb.probabilities, strict=True))
                < 0.02
            )


def test_concurrent_callers_never_interleave_forward_passes(fp8_engine: Engine) -> None:
    model = fp8_engine.model
    original = model.forward
    active, overlaps = [0], []
    guard = threading.Lock()

    def tracked(batch):
        with guard:
            active[0] += 1
            overlaps.append(active[0])
        try:
            return original(batch)
        finally:
            with guard:
                active[0] -= 1

    model.forward = tracked
    try:
        states = [f"caller {n} says the invoice is {'paid' if n % 2 else 'late'}" for n in range(6)]
        results: dict[int, list[float]] = {}

        def call(n: int) -> None:
            results[n] = list(
                fp8_engine.decide(dict(REQUEST, state=states[n])).questions[0].probabilities
            )

        threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        del model.forward
    assert len(overlaps) == 6 and max(overlaps) == 1
    for n, probabilities in results.items():
        assert probabilities == list(
            fp8_engine.decide(dict(REQUEST, state=states[n])).questions[0].probabilities
        )
