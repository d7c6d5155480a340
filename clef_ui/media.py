"""Turn user images and videos into bounded, processor-ready inputs and a record of them."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from clef_ui.media_sources import (
    MediaError,
    MediaLimits,
    check_aspect,
    check_bytes,
    decode_data_url,
    fit_size,
    local_path,
    over_limit,
)
from clef_ui.video import SampledVideo, sample_video

_FORMATS = "PNG, JPEG, WebP, GIF, BMP or TIFF"

__all__ = [
    "MediaError",
    "MediaLimits",
    "PreparedImage",
    "PreparedMedia",
    "SampledVideo",
    "SeenItem",
    "load_image",
    "prepare_media",
    "sample_video",
]


@dataclass
class PreparedImage:
    """An upright RGB image within the pixel budget, with what was done to it."""

    image: Image.Image
    source_size: tuple[int, int]  # upright (w, h) before any downscaling
    notes: list[str] = field(default_factory=list)


def _open_image(source: Any, label: str, limits: MediaLimits) -> Image.Image:
    if isinstance(source, Image.Image):
        return source
    if isinstance(source, str) and source[:5].lower() == "data:":
        source = decode_data_url(source, "image", label, limits)
    if isinstance(source, bytes | bytearray | memoryview):
        check_bytes(len(source), label, limits)
        return Image.open(BytesIO(source))
    if isinstance(source, str | os.PathLike):
        path = local_path(source, label)
        check_bytes(path.stat().st_size, label, limits)
        return Image.open(path)
    raise MediaError(
        f"{label} is a {type(source).__name__}; give a path, bytes, a data: URL or a PIL image."
    )


def _to_rgb(im: Image.Image) -> Image.Image:
    if im.mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    if im.mode in ("I", "I;16", "I;16L", "I;16B", "I;16N", "F"):
        # convert("RGB") clips 16-bit and float values at 255, so scale to 8 bits ourselves.
        arr = np.asarray(im, dtype=np.float64)
        peak = float(arr.max(initial=0.0))
        top = 1.0 if im.mode == "F" and peak <= 1.0 else 255.0 if peak <= 255 else 65535.0
        im = Image.fromarray(np.clip(arr / top * 255.0 + 0.5, 0, 255).astype(np.uint8), "L")
    if im.mode in ("RGBA", "LA", "La", "RGBa", "PA"):
        rgba = im.convert("RGBA")
        return Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba).convert("RGB")
    return im.convert("RGB")


def _decode_image(im: Image.Image, label: str, limits: MediaLimits) -> PreparedImage:
    width, height = im.size
    if width * height > limits.max_image_input_pixels:
        what = f"is {width}×{height} ({width * height / 1e6:.0f} MP)"
        cap = f"{limits.max_image_input_pixels / 1e6:.0f} MP decompression-bomb"
        raise over_limit(label, what, cap, "max_image_input_pixels", "Downscale it first")
    check_aspect(width, height, label)
    notes = []
    if (n_frames := getattr(im, "n_frames", 1)) > 1:
        im.seek(0)
        notes.append(f"first of {n_frames} frames")
    orientation = im.getexif().get(0x0112, 1)
    source_size = (height, width) if orientation in (5, 6, 7, 8) else (width, height)
    target = fit_size(width, height, limits.max_pixels)
    if im.format == "JPEG" and target != (width, height):
        # DCT-domain downscaling: a 48 MP photo is never decoded at full size.
        im.draft(None, (target[0] * 2, target[1] * 2))
    im.load()
    if orientation != 1:
        im = ImageOps.exif_transpose(im)
        notes.append(f"turned upright (EXIF orientation {orientation})")
    rgb = _to_rgb(im)
    if (target := fit_size(*rgb.size, limits.max_pixels)) != rgb.size:
        notes.append(f"downscaled from {source_size[0]}×{source_size[1]}")
        rgb = rgb.resize(target, Image.Resampling.LANCZOS, reducing_gap=3.0)
    return PreparedImage(rgb, source_size, notes)


def load_image(
    source: Any, limits: MediaLimits | None = None, label: str = "image"
) -> PreparedImage:
    """Open a path, bytes, data: URL or PIL image as an upright RGB image within the budget."""
    limits = limits or MediaLimits()
    try:
        with warnings.catch_warnings():
            # Our own pixel limit replaces PIL's warning.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = _open_image(source, label, limits)
            try:
                return _decode_image(im, label, limits)
            finally:
                if im is not source:
                    im.close()
    except MediaError:
        raise
    except Image.DecompressionBombError as exc:
        # PIL's own ceiling (2 × Image.MAX_IMAGE_PIXELS) is checked on opening, before ours.
        cap = f"{limits.max_image_input_pixels / 1e6:.0f} MP decompression-bomb"
        what = f"is too large ({exc})"
        raise over_limit(label, what, cap, "max_image_input_pixels", "Downscale it") from None
    except UnidentifiedImageError:
        raise MediaError(f"{label} is not an image that can be read; use {_FORMATS}.") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise MediaError(
            f"{label} could not be decoded ({exc}); it is probably truncated or corrupt. "
            f"Re-export it as {_FORMATS} and upload it again."
        ) from None


@dataclass
class SeenItem:
    """One image or frame exactly as passed to the processor, for 'What the model sees'."""

    kind: str  # "image" or "video"
    source_index: int  # position in the request's images or videos list
    frame_index: int | None  # source frame index (video frames)
    timestamp: float | None  # seconds into the clip (video frames)
    source_size: tuple[int, int]  # (w, h) of the original
    passed_size: tuple[int, int]  # (w, h) passed to the processor
    image: Image.Image
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description, without the pixels."""
        return {k: v for k, v in vars(self).items() if k != "image"}


def _passed(video: SampledVideo) -> tuple[list[Image.Image], list[int]]:
    # The processor refuses a one-frame video (its smart_resize needs 2), so pass it twice.
    n = 2 if len(video.frames) == 1 else 1
    return video.frames * n, video.indices * n


@dataclass
class PreparedMedia:
    """Everything a request's media became, in record form and as a viewable list."""

    images: list[PreparedImage]
    videos: list[SampledVideo]

    def record_fields(self) -> dict[str, Any]:
        """The record's `images`, `videos` and `media_kwargs` keys, only those non-empty.

        `do_sample_frames=False` keeps every frame; `video_metadata` (one dict per video, with
        `frames_indices`) makes the prompt's `<t seconds>` stamps the true ones.
        """
        out: dict[str, Any] = {}
        if self.images:
            out["images"] = [p.image for p in self.images]
        if self.videos:
            passed = [_passed(v) for v in self.videos]
            out["videos"] = [np.stack([np.asarray(f) for f in frames]) for frames, _ in passed]
            metadata = [
                # A fresh indices list each call: the processor extends it in place.
                {
                    "fps": v.fps,
                    "total_num_frames": v.total_frames,
                    "duration": v.duration,
                    "frames_indices": list(indices),
                }
                for v, (_, indices) in zip(self.videos, passed, strict=True)
            ]
            out["media_kwargs"] = {"do_sample_frames": False, "video_metadata": metadata}
        return out

    @property
    def seen(self) -> list[SeenItem]:
        """Every image and frame passed, in order."""
        items = [
            SeenItem(
                "image", i, None, None, p.source_size, p.image.size, p.image, "; ".join(p.notes)
            )
            for i, p in enumerate(self.images)
        ]
        for v, video in enumerate(self.videos):
            frames, indices = _passed(video)
            for k, (frame, index) in enumerate(zip(frames, indices, strict=True)):
                note = (
                    "repeated: the processor needs 2 frames"
                    if k and index == indices[k - 1]
                    else ""
                )
                size = video.source_size
                items.append(
                    SeenItem("video", v, index, index / video.fps, size, frame.size, frame, note)
                )
        return items


def prepare_media(
    images: Sequence[Any] = (), videos: Sequence[Any] = (), limits: MediaLimits | None = None
) -> PreparedMedia:
    """Load every image and sample every video of a request, refusing anything out of bounds."""
    limits = limits or MediaLimits()
    for kind, items in (("images", images), ("videos", videos)):
        if len(items) > (most := getattr(limits, f"max_{kind}")):
            raise over_limit(
                f"{len(items)} {kind}", "were given", str(most), f"max_{kind}", "Send fewer"
            )
    return PreparedMedia(
        [load_image(s, limits, f"image {i + 1}") for i, s in enumerate(images)],
        [sample_video(s, limits, f"video {i + 1}") for i, s in enumerate(videos)],
    )
