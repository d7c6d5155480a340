"""Sample frames from a video with OpenCV: seek to evenly spread targets, bounded fallback."""

from __future__ import annotations

import math
import os
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
from PIL import Image

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

# Closer targets are reached by decoding forward: a seek decodes from a keyframe anyway.
_SEEK_GAP = 30


@dataclass
class SampledVideo:
    """Frames sampled from a clip, with their source indices and true timestamps."""

    frames: list[Image.Image]  # RGB, all the same size, within the pixel budget
    indices: list[int]  # source frame index of each frame
    fps: float
    total_frames: int
    source_size: tuple[int, int]
    method: str  # "seek", or "sequential" when the container's header could not be trusted
    notes: list[str] = field(default_factory=list)

    @property
    def timestamps(self) -> list[float]:
        return [i / self.fps for i in self.indices]

    @property
    def duration(self) -> float:
        return self.total_frames / self.fps


def _targets(total: int, fps: float, limits: MediaLimits) -> list[int]:
    """Up to video_frames indices, at most video_max_fps per second, at the centres of equal
    segments (which skips the often black first and broken last frame)."""
    n = math.ceil(total / fps * limits.video_max_fps - 1e-9)
    # The vision tower merges frames in pairs (temporal_patch_size 2): an odd count makes the
    # processor repeat the last frame, and it refuses a single frame.
    n = min(max(n, 2), limits.video_frames, total)
    n = n - 1 if n > 2 and n % 2 else n
    return [min(total - 1, int((k + 0.5) * total / n)) for k in range(n)]


def _read_targets(
    cap: cv2.VideoCapture, targets: list[int], budget: int, seek: bool
) -> tuple[list[Image.Image], tuple[int, int]]:
    """Decode the target frames in order, stopping at the first that fails to decode."""
    frames: list[Image.Image] = []
    size, position = (0, 0), 0  # position: index of the frame the next read() returns
    for target in targets:
        if seek and (target < position or target - position > _SEEK_GAP):
            cap.set(cv2.CAP_PROP_POS_FRAMES, target)
            position = target
        while position < target and cap.grab():
            position += 1
        ok, bgr = cap.read() if position == target else (False, None)
        if not ok or bgr is None:
            break
        size = (bgr.shape[1], bgr.shape[0])
        # Downscaled at once: full-size frames are never held.
        if (fit := fit_size(*size, budget)) != size:
            bgr = cv2.resize(bgr, fit, interpolation=cv2.INTER_AREA)
        frames.append(Image.fromarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)))
        position = target + 1
    return frames, size


def _valid_fps(fps: float) -> bool:
    return math.isfinite(fps) and 0.1 <= fps <= 1000


def _too_long(label: str, seconds: float, limits: MediaLimits, at_least: str = "") -> MediaError:
    what = f"is {at_least}{seconds:.0f} s long"
    return over_limit(
        label, what, f"{limits.max_video_seconds:g} s", "max_video_seconds", "Trim it"
    )


def _open_capture(path: Path, label: str) -> cv2.VideoCapture:
    # FFmpeg only: other backends read names as image-sequence patterns or camera devices.
    cap = cv2.VideoCapture(str(path), cv2.CAP_FFMPEG)
    if not cap.isOpened():
        raise MediaError(
            f"{label} could not be opened as a video: it is corrupt or not a video. "
            "Upload an MP4, WebM, MOV, MKV or AVI file."
        )
    return cap


def _count_frames(path: Path, fps: float, label: str, limits: MediaLimits) -> tuple[int, float]:
    """Count frames by reading packets without decoding them; returns (count, fps)."""
    cap = _open_capture(path, label)
    cap.set(cv2.CAP_PROP_FORMAT, -1)  # raw packets: counting costs I/O, not decoding
    scan_cap = limits.video_scan_max_frames
    bound = min(scan_cap, int(limits.max_video_seconds * fps) + 1) if _valid_fps(fps) else scan_cap
    count, last_ms = 0, 0.0
    try:
        while cap.grab():
            count, last_ms = count + 1, cap.get(cv2.CAP_PROP_POS_MSEC)
            if count > bound and bound < scan_cap:
                raise _too_long(label, count / fps, limits, at_least="at least ")
            if count > bound:
                what = f"has an untrustworthy header and over {scan_cap} frames"
                cap_text = "frame-by-frame scan"
                raise over_limit(label, what, cap_text, "video_scan_max_frames", "Re-encode it")
    finally:
        cap.release()
    if not _valid_fps(fps):
        # No usable rate in the header: estimate it from the packet timestamps.
        fps = (count - 1) * 1000.0 / last_ms if count > 1 and last_ms > 0 else 24.0
        if count / fps > limits.max_video_seconds:
            raise _too_long(label, count / fps, limits)
    return count, fps


def _sample_path(path: Path, label: str, limits: MediaLimits) -> SampledVideo:
    notes: list[str] = []
    cap = _open_capture(path, label)
    try:
        fps = cap.get(cv2.CAP_PROP_FPS)
        total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        trusted = _valid_fps(fps) and total > 0
        if trusted and total / fps > limits.max_video_seconds:
            # Headers can overstate; believe it only if the frame at the limit decodes.
            cap.set(cv2.CAP_PROP_POS_FRAMES, int(limits.max_video_seconds * fps))
            if cap.grab():
                raise _too_long(label, total / fps, limits)
            trusted = False
        if trusted:
            targets = _targets(total, fps, limits)
            frames, size = _read_targets(cap, targets, limits.max_pixels, seek=True)
            if len(frames) < len(targets):
                notes.append(
                    f"header claims {total} frames; frame {targets[len(frames)]} is missing"
                )
                trusted = False
    finally:
        cap.release()
    if not trusted:
        total, fps = _count_frames(path, fps, label, limits)
        if total == 0:
            raise MediaError(f"{label} contains no frames; upload a clip with at least one frame.")
        targets = _targets(total, fps, limits)
        cap = _open_capture(path, label)
        try:
            frames, size = _read_targets(cap, targets, limits.max_pixels, seek=False)
        finally:
            cap.release()
        if not frames:
            raise MediaError(f"{label} has no decodable frames; re-encode it and upload it again.")
        # Packets past the decodable end were counted: keep what decoded, in pairs.
        keep = len(frames) - 1 if len(frames) > 2 and len(frames) % 2 else len(frames)
        frames, targets = frames[:keep], targets[:keep]
    check_aspect(*size, label)
    method = "seek" if trusted else "sequential"
    return SampledVideo(frames, targets, float(fps), total, size, method, notes)


def sample_video(
    source: Any, limits: MediaLimits | None = None, label: str = "video"
) -> SampledVideo:
    """Sample frames evenly over a clip (a path, bytes or data: URL) by seeking, or by a bounded
    scan when its header lies."""
    limits = limits or MediaLimits()
    if isinstance(source, str) and source[:5].lower() == "data:":
        source = decode_data_url(source, "video", label, limits)
    if isinstance(source, bytes | bytearray | memoryview):
        check_bytes(len(source), label, limits)
        # OpenCV reads only files; the copy lives only while sampling.
        with tempfile.TemporaryDirectory(prefix="clef-video-") as tmp:
            path = Path(tmp) / "upload"
            path.write_bytes(source)
            return _sample_file(path, label, limits)
    if not isinstance(source, str | os.PathLike):
        raise MediaError(f"{label} is a {type(source).__name__}; give a path, bytes or data: URL.")
    return _sample_file(local_path(source, label), label, limits)


def _sample_file(path: Path, label: str, limits: MediaLimits) -> SampledVideo:
    with path.open("rb") as fh:
        head = fh.read(1024)
    if not head:
        raise MediaError(f"{label} is an empty file; upload the video again.")
    # Containers start with binary headers; text is a mislabelled file, or a playlist that
    # would make FFmpeg fetch other files.
    with suppress(UnicodeDecodeError):
        if b"\0" not in head and head.decode("utf-8"):
            raise MediaError(f"{label} is a text file, not a video; upload the video itself.")
    return _sample_path(path, label, limits)
