"""Shared ground for media: limits, the error type, and reading data: URLs and local files."""

from __future__ import annotations

import base64
import binascii
import math
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

# Beyond this the processor's smart_resize raises a cryptic error, so we refuse first.
_MAX_ASPECT = 200


class MediaError(ValueError):
    """A user's image or video was refused; the message says what was wrong and how to fix it."""


def _setting(name: str) -> str:
    return f"the CLEF_{name.upper()} environment variable (MediaLimits.{name})"


def over_limit(label: str, what: str, limit: str, name: str, fix: str) -> MediaError:
    return MediaError(f"{label} {what}, over the {limit} limit. {fix}, or raise {_setting(name)}.")


@dataclass(frozen=True)
class MediaLimits:
    """Bounds on what one request may make the machine decode; field x reads env CLEF_X."""

    max_pixels: int = 768 * 768  # per image / video frame after downscaling (~576 vision tokens)
    max_image_input_pixels: int = 100_000_000  # decompression-bomb guard, checked before decoding
    max_input_bytes: int = 64 * 1024 * 1024  # images; videos sent as bytes or data: URLs
    video_frames: int = 16  # most frames sampled per video
    video_max_fps: float = 2.0  # short clips get at most this many frames per second
    max_video_seconds: float = 600.0
    video_scan_max_frames: int = 36_000  # bounds the sequential pass for videos with bad headers
    max_images: int = 16
    max_videos: int = 4

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not (isinstance(value, int | float) and value > 0):
                raise MediaError(f"MediaLimits.{f.name} must be above 0, got {value!r}; fix it.")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> MediaLimits:
        """Defaults, then CLEF_* environment variables, then explicit overrides."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            var, kind = f"CLEF_{f.name.upper()}", type(f.default)
            if raw := environ.get(var, "").strip():
                try:
                    values[f.name] = kind(raw)
                except ValueError:
                    raise MediaError(
                        f"{var}={raw!r} is not a valid {kind.__name__}; set a positive number "
                        f"or unset it to use {f.default}."
                    ) from None
        return cls(**{**values, **overrides})


def fit_size(width: int, height: int, budget: int) -> tuple[int, int]:
    """Largest size with the same aspect ratio and at most `budget` pixels (never upscales)."""
    if width * height <= budget:
        return width, height
    scale = math.sqrt(budget / (width * height))
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def check_aspect(width: int, height: int, label: str) -> None:
    if max(width, height) > _MAX_ASPECT * max(1, min(width, height)):
        raise MediaError(
            f"{label} is {width}×{height}: the model cannot take an aspect ratio over "
            f"{_MAX_ASPECT}:1. Crop it to a less extreme shape."
        )


def check_bytes(size: int, label: str, limits: MediaLimits) -> None:
    if size > limits.max_input_bytes:
        cap = f"{limits.max_input_bytes / 2**20:.1f} MiB"
        raise over_limit(label, f"is {size / 2**20:.1f} MiB", cap, "max_input_bytes", "Send less")


def decode_data_url(url: str, kind: str, label: str, limits: MediaLimits) -> bytes:
    header, sep, payload = url.partition(",")
    params = [p.strip().lower() for p in header[5:].split(";")]
    if not sep:
        raise MediaError(f"{label} is a malformed data: URL (no ','); use data:{kind}/…;base64,…")
    if params[0] and not params[0].startswith(f"{kind}/"):
        raise MediaError(f"{label} is a {params[0]!r} data: URL; only {kind}/* is accepted here.")
    # Checked before decoding so a huge payload is refused without allocating its bytes.
    check_bytes(len(payload) * 3 // 4, label, limits)
    if "base64" not in params[1:]:
        return urllib.parse.unquote_to_bytes(payload)
    try:
        return base64.b64decode(payload.strip())
    except (binascii.Error, ValueError):
        raise MediaError(f"{label} has invalid base64 in its data: URL; re-encode it.") from None


def local_path(source: str | os.PathLike[str], label: str) -> Path:
    text = os.fspath(source)
    if "://" in text or text.lower().startswith(("http:", "https:", "ftp:", "file:", "rtsp:")):
        raise MediaError(
            f"{label} is a URL ({text[:60]!r}); remote media is never fetched. "
            "Upload the file itself or send it as a data: URL."
        )
    path = Path(text)
    if not path.is_file():
        raise MediaError(f"{label}: no file at {text!r}; check the path or upload the file.")
    # Absolute, so FFmpeg can never read a 'proto:' prefix of a relative name as a protocol.
    return path.resolve()
