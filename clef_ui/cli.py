"""Command line: `python -m clef_ui decide` answers a System One request file with a release."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from clef_ui.config import add_model_arguments, check_choices

EXIT_BAD_REQUEST = 2
EXIT_LOAD_FAILED = 3


def _read_request(name: str, stdin: TextIO) -> object:
    text = stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    return json.loads(text)


def decide_command(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Validate the request first (cheap), then load the model and print its response."""
    from clef_ui.schema import DecisionRequest, SchemaError

    try:
        request = DecisionRequest.from_systemone(_read_request(args.request, sys.stdin))
    except OSError as exc:
        print(f"error: cannot read {args.request}: {exc.strerror or exc}", file=stderr)
        return EXIT_BAD_REQUEST
    except json.JSONDecodeError as exc:
        print(
            f"error: {args.request} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg})",
            file=stderr,
        )
        return EXIT_BAD_REQUEST
    except SchemaError as exc:
        print(f"error: the request is not valid:\n{exc}", file=stderr)
        return EXIT_BAD_REQUEST

    from transformers.utils import logging as hf_logging

    from clef_ui.engine import DecisionError, Engine
    from clef_ui.media import MediaError
    from clef_ui.release import ModelLoadError

    if not args.verbose:
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    try:
        engine = Engine.load(args.model, args.revision, args.device, args.precision)
    except ModelLoadError as exc:
        print(f"error: could not load the model: {exc}", file=stderr)
        return EXIT_LOAD_FAILED
    try:
        result = engine.decide(request)
    except (DecisionError, MediaError) as exc:
        print(f"error: {exc}", file=stderr)
        return EXIT_BAD_REQUEST
    json.dump(result.response, stdout, ensure_ascii=False, indent=2)
    stdout.write("\n")
    if args.verbose:
        tokens = result.tokens
        print(
            f"{engine.info.describe()} · {tokens.total} tokens "
            f"(state {tokens.state_kept}/{tokens.state_given}) · "
            f"encode {result.timings['encode_s'] * 1e3:.1f} ms, "
            f"forward {result.timings['forward_s'] * 1e3:.1f} ms",
            file=stderr,
        )
    if tokens_cut := result.tokens.state_cut:
        print(f"warning: the state was cut by {tokens_cut} tokens to fit the context", file=stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m clef_ui`."""
    parser = argparse.ArgumentParser(prog="python -m clef_ui", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    decide = commands.add_parser("decide", help="answer a System One request (JSON) and print it")
    add_model_arguments(decide)
    decide.add_argument("request", help="request file (System One JSON), or - for stdin")
    decide.add_argument("-v", "--verbose", action="store_true", help="timings and load messages")
    args = parser.parse_args(argv)
    check_choices(decide, args)
    return decide_command(args, sys.stdout, sys.stderr)
