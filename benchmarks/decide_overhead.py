"""Measure what Engine.decide adds over a direct call of the release's own systemone()."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REQUESTS = [
    json.loads((ROOT / "tests" / "data" / "invoice_request.json").read_text()),
    {
        "model": "clef-flash",
        "state": "Hi, my order #4411 arrived broken and I was charged twice. Please help!",
        "questions": {
            "team": {
                "type": "choice",
                "instructions": "Which team should handle this ticket?",
                "criteria": {
                    "billing": "Charges, refunds, invoices",
                    "shipping": "Delivery and damaged parcels",
                    "technical": "Bugs and outages",
                    "account": "Logins and profiles",
                    "sales": None,
                    "other": None,
                },
            },
            "urgency": {
                "type": "score",
                "instructions": "How urgent is it?",
                "criteria": ["can wait", "soon", "today", "right now"],
            },
            "angry": {"type": "noul", "instructions": "Is the customer upset?"},
        },
    },
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=60, help="timed calls of each (>= 50)")
    args = parser.parse_args()

    from transformers.utils import logging as hf_logging

    from clef_ui.engine import Engine
    from tests.tiny_release import cached_tiny_release

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    _, fp8 = cached_tiny_release()
    engine = Engine.load(str(fp8), device="cpu")
    loader, model, processor = engine.loader, engine.model, engine.processor

    def direct(request: dict) -> dict:
        return loader.systemone(model, processor, request)

    def ours(request: dict) -> dict:
        return engine.decide(request).response

    for request in REQUESTS:  # warm-up: first calls pay for lazy initialisation
        assert ours(request) == direct(request)
    times: dict[str, list[float]] = {"decide": [], "systemone": []}
    for n in range(args.rounds):
        request = REQUESTS[n % len(REQUESTS)]
        # Alternate which goes first so that drift in machine load hits both alike.
        pair = [("decide", ours), ("systemone", direct)]
        for name, call in pair if n % 2 == 0 else pair[::-1]:
            start = time.perf_counter()
            call(request)
            times[name].append(time.perf_counter() - start)
    decide_ms = statistics.median(times["decide"]) * 1e3
    direct_ms = statistics.median(times["systemone"]) * 1e3
    print(f"tiny FP8 release on {engine.info.describe()}, {args.rounds} alternating calls each")
    print(f"median Engine.decide        : {decide_ms:8.2f} ms")
    print(f"median loader systemone()   : {direct_ms:8.2f} ms")
    print(f"ratio decide / systemone    : {decide_ms / direct_ms:8.3f}  (target <= 1.05)")


if __name__ == "__main__":
    main()
