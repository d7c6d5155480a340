"""Decisions with images and video on the tiny FP8 release: placeholders, frames and timestamps."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from clef_ui.engine import Engine
from clef_ui.schema import DecisionRequest, MediaRef

REQUEST = json.loads((Path(__file__).parent / "data" / "invoice_request.json").read_text())


def _request(images: list[Path] = (), videos: list[Path] = ()) -> DecisionRequest:
    request = DecisionRequest.from_systemone(REQUEST)
    request.images = [MediaRef("image", str(p)) for p in images]
    request.videos = [MediaRef("video", str(p)) for p in videos]
    return request


def _image(path: Path, size: tuple[int, int], seed: int) -> Path:
    pixels = np.random.default_rng(seed).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path


def _clip(path: Path, frames: int, fps: float, size: tuple[int, int] = (96, 64)) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, size)
    for n in range(frames):
        writer.write(np.full((size[1], size[0], 3), (n * 7) % 255, np.uint8))
    writer.release()
    return path


def _count(engine: Engine, ids: tuple[int, ...], token: str) -> int:
    return sum(1 for t in ids if t == engine.tokenizer.convert_tokens_to_ids(token))


def _merge(engine: Engine) -> int:
    return engine.processor.image_processor.merge_size**2


@pytest.mark.parametrize("count", [1, 2])
def test_images_give_one_placeholder_per_merged_patch(
    fp8_engine: Engine, tmp_path: Path, count: int
) -> None:
    paths = [_image(tmp_path / f"{n}.png", (96 + 32 * n, 64), n) for n in range(count)]
    prepared = fp8_engine.prepare(_request(images=paths))
    grid = prepared.encoded.media["image_grid_thw"]
    assert grid.shape[0] == count
    expected = int(sum(int(np.prod(g.tolist())) for g in grid)) // _merge(fp8_engine)
    assert _count(fp8_engine, prepared.encoded.input_ids, "<|image_pad|>") == expected
    assert prepared.tokens.media == expected + 2 * count  # plus vision start and end
    assert [item.kind for item in prepared.seen] == ["image"] * count
    assert [item.source_size for item in prepared.seen] == [(96 + 32 * n, 64) for n in range(count)]

    result = fp8_engine.decide(_request(images=paths))
    assert result.tokens == prepared.tokens
    for question in result.questions:
        assert math.isclose(sum(question.probabilities), 1.0, abs_tol=1e-6)


def test_images_change_the_answers(fp8_engine: Engine, tmp_path: Path) -> None:
    plain = fp8_engine.decide(_request())
    pictured = fp8_engine.decide(_request(images=[_image(tmp_path / "a.png", (96, 64), 1)]))
    assert plain.questions[0].probabilities != pictured.questions[0].probabilities


def test_video_frames_placeholders_and_timestamps(fp8_engine: Engine, tmp_path: Path) -> None:
    clip = _clip(tmp_path / "clip.avi", frames=60, fps=10.0)  # 6 s: 12 frames at 2 per second
    prepared = fp8_engine.prepare(_request(videos=[clip]))
    seen = prepared.seen
    assert len(seen) == 12 and all(item.kind == "video" for item in seen)
    assert all(item.timestamp == item.frame_index / 10.0 for item in seen)
    assert seen == sorted(seen, key=lambda item: item.timestamp)
    assert seen[0].timestamp < 0.6 and seen[-1].timestamp > 5.0

    grid = prepared.encoded.media["video_grid_thw"]
    t, h, w = (int(v) for v in grid[0])
    assert t == len(seen) // 2  # the processor kept every frame (pairs merged in time)
    video_pads = _count(fp8_engine, prepared.encoded.input_ids, "<|video_pad|>")
    assert video_pads == t * h * w // _merge(fp8_engine)

    # The prompt carries one timestamp per merged pair: the mean of the pair's true times.
    text = fp8_engine.tokenizer.decode(list(prepared.encoded.input_ids))
    stamps = [float(s) for s in re.findall(r"<(\d+\.\d) seconds>", text)]
    pairs = [(seen[k].timestamp + seen[k + 1].timestamp) / 2 for k in range(0, len(seen), 2)]
    assert stamps == [float(f"{p:.1f}") for p in pairs]

    result = fp8_engine.decide(_request(videos=[clip]))
    assert [q.id for q in result.questions] == list(REQUEST["questions"])
    assert result.seen and result.tokens.media == prepared.tokens.media


def test_image_and_video_together(fp8_engine: Engine, tmp_path: Path) -> None:
    image = _image(tmp_path / "a.png", (64, 64), 3)
    clip = _clip(tmp_path / "clip.avi", frames=20, fps=10.0)
    result = fp8_engine.decide(_request(images=[image], videos=[clip]))
    kinds = [item.kind for item in result.seen]
    assert kinds[0] == "image" and kinds.count("video") == 4
    assert all(math.isclose(sum(q.probabilities), 1, abs_tol=1e-6) for q in result.questions)
