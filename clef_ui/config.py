"""Settings from command-line flags and environment variables, in one place."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from clef_ui.release import DEFAULT_MODEL, DEVICES, PRECISIONS

# flag -> (environment variable, default)
ENVIRONMENT = {
    "model": ("CLEF_MODEL", DEFAULT_MODEL),
    "revision": ("CLEF_REVISION", None),
    "device": ("CLEF_DEVICE", "auto"),
    "precision": ("CLEF_PRECISION", "auto"),
    "host": ("CLEF_HOST", "127.0.0.1"),
    "port": ("CLEF_PORT", "7860"),
}


@dataclass(frozen=True)
class Settings:
    model: str = DEFAULT_MODEL
    revision: str | None = None
    device: str = "auto"
    precision: str = "auto"
    host: str = "127.0.0.1"
    port: int = 7860
    share: bool = False


def _env(name: str) -> str | None:
    return os.environ.get(ENVIRONMENT[name][0]) or ENVIRONMENT[name][1]


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """--model/--revision/--device/--precision, each defaulting to its CLEF_* variable."""
    parser.add_argument(
        "--model",
        default=_env("model"),
        help=f"release folder or hub id (env CLEF_MODEL; default {DEFAULT_MODEL})",
    )
    parser.add_argument("--revision", default=_env("revision"), help="hub revision (CLEF_REVISION)")
    parser.add_argument(
        "--device",
        default=_env("device"),
        choices=DEVICES,
        help="auto uses the CUDA GPU; cpu must be asked for (CLEF_DEVICE)",
    )
    parser.add_argument(
        "--precision",
        default=_env("precision"),
        choices=PRECISIONS,
        help="auto: FP8 kernels where the GPU has them, else BF16 (CLEF_PRECISION)",
    )


def check_choices(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """argparse checks choices of typed flags only; CLEF_* values are checked here."""
    for name, allowed in (("device", DEVICES), ("precision", PRECISIONS)):
        if getattr(args, name) not in allowed:
            variable = ENVIRONMENT[name][0]
            parser.error(
                f"{variable}={getattr(args, name)!r} is not one of {', '.join(allowed)}; "
                f"fix or unset {variable}"
            )


def parse_app_args(argv: list[str] | None = None) -> Settings:
    """Settings for `python app.py`; flags override CLEF_* variables."""
    parser = argparse.ArgumentParser(
        prog="python app.py", description="Clef-Flash FP8 demo: a web app for decisions."
    )
    add_model_arguments(parser)
    parser.add_argument("--host", default=_env("host"), help="address to serve on (CLEF_HOST)")
    parser.add_argument("--port", type=int, default=_env("port"), help="port (CLEF_PORT)")
    parser.add_argument(
        "--share",
        action=argparse.BooleanOptionalAction,
        default=os.environ.get("CLEF_SHARE", "").lower() in ("1", "true", "yes"),
        help="create a public gradio.live link (CLEF_SHARE=1)",
    )
    args = parser.parse_args(argv)
    check_choices(parser, args)
    return Settings(
        model=args.model,
        revision=args.revision,
        device=args.device,
        precision=args.precision,
        host=args.host,
        port=args.port,
        share=args.share,
    )
