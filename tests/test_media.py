"""Tests for clef_ui.media: image normalisation, video sampling and what the processor receives."""

from __future__ import annotations

import base64
import io
import re
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from clef_ui.media import (
    MediaError,
    MediaLimits,
    load_image,
    prepare_media,
    sample_video,
)

W, H = 160, 120  # 5 × 2 blocks of 32 × 60: one bit of the frame index per block


def _encode(index: int) -> np.ndarray:
    frame = np.zeros((H, W, 3), np.uint8)
    for bit in range(10):
        if index >> bit & 1:
            row, col = divmod(bit, 5)
            frame[row * 60 : (row + 1) * 60, col * 32 : (col + 1) * 32] = 255
    return frame


def _decode(frame: Image.Image) -> int:
    # Block centres, scaled to the frame's size, survive compression and downscaling.
    arr = np.asarray(frame.convert("L"), dtype=np.float64)
    sy, sx = arr.shape[0] / H, arr.shape[1] / W
    bits = [
        arr[int((bit // 5 * 60 + 30) * sy), int((bit % 5 * 32 + 16) * sx)] > 128
        for bit in range(10)
    ]
    return sum(1 << b for b, on in enumerate(bits) if on)


def _write_video(path: Path, frames: int, fps: float = 10.0) -> Path:
    fourcc = "MJPG" if path.suffix == ".avi" else "mp4v"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), fps, (W, H))
    assert writer.isOpened()
    for i in range(frames):
        writer.write(_encode(i))
    writer.release()
    return path


def _check_frames(video, fps: float) -> None:
    assert len(video.frames) == len(video.indices) == len(video.timestamps)
    for frame, index, ts in zip(video.frames, video.indices, video.timestamps, strict=True):
        assert _decode(frame) == index == round(ts * fps)


def _zero_png(width: int, height: int, rows_per_block: int = 50) -> bytes:
    """A valid all-black grayscale PNG of any size, built without compressing it in full."""
    block = (b"\0" * (width + 1)) * rows_per_block
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    # After a full flush the compressor forgets its history, so identical blocks compress to
    # identical bytes: compress one, repeat it.
    chunk = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    adler = ((width + 1) * height % 65521) << 16 | 1  # Adler-32 of all-zero data
    body = b"\x78\xda" + chunk * (height // rows_per_block) + c.flush() + struct.pack(">I", adler)

    def part(tag: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(tag + data))
        return struct.pack(">I", len(data)) + tag + data + crc

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + part(b"IHDR", ihdr) + part(b"IDAT", body) + part(b"IEND", b"")


# ---- images ----


def test_exif_rotated_jpeg_comes_out_upright(tmp_path: Path) -> None:
    stored = Image.new("RGB", (200, 100), "blue")
    stored.paste((255, 0, 0), (0, 0, 40, 40))  # marker at the stored top-left
    exif = Image.Exif()
    exif[0x0112] = 6  # display rotated 90° clockwise
    path = tmp_path / "phone.jpg"
    stored.save(path, exif=exif, quality=95)
    prepared = load_image(path)
    assert prepared.image.size == prepared.source_size == (100, 200)
    # 90° clockwise moves the stored top-left corner to the top-right.
    r, g, b = prepared.image.getpixel((80, 20))
    assert r > 200 and g < 60 and b < 60
    assert prepared.image.getpixel((20, 180))[2] > 200
    assert "EXIF orientation 6" in prepared.notes[0]


def test_rgba_alpha_flattens_on_white_and_grayscale_expands(tmp_path: Path) -> None:
    rgba = Image.new("RGBA", (20, 10), (0, 0, 0, 0))
    rgba.paste((10, 200, 30, 255), (0, 0, 10, 10))
    rgba.save(tmp_path / "a.png")
    out = load_image(tmp_path / "a.png").image
    assert out.mode == "RGB" and out.getpixel((15, 5)) == (255, 255, 255)
    assert out.getpixel((5, 5)) == (10, 200, 30)
    gray = load_image(Image.new("L", (8, 8), 77)).image
    assert gray.mode == "RGB" and gray.getpixel((0, 0)) == (77, 77, 77)
    deep = Image.fromarray(np.full((4, 4), 32896, np.uint16))  # 16-bit: 128 × 257
    assert load_image(deep).image.getpixel((0, 0)) == (128, 128, 128)


def test_palette_gif_takes_first_frame(tmp_path: Path) -> None:
    frames = [Image.new("P", (16, 16), i) for i in range(3)]
    palette = [255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * (256 * 3 - 9)
    for f in frames:
        f.putpalette(palette)
    path = tmp_path / "anim.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=50)
    prepared = load_image(path)
    assert prepared.image.getpixel((8, 8)) == (255, 0, 0)
    assert prepared.notes == ["first of 3 frames"]


def test_downscale_keeps_aspect_within_budget() -> None:
    limits = MediaLimits(max_pixels=100 * 100)
    for source in (Image.new("RGB", (2000, 1000), "red"), Image.new("RGB", (300, 1200))):
        out = load_image(source, limits)
        w, h = out.image.size
        assert w * h <= 100 * 100 and abs(w / h - source.width / source.height) < 0.05
        assert out.source_size == source.size
    buf = io.BytesIO()
    Image.new("RGB", (4000, 3000), "green").save(buf, "JPEG")
    big = load_image(buf.getvalue(), limits)  # decoded through JPEG draft mode
    assert big.image.size == (115, 86) and big.source_size == (4000, 3000)


def test_decompression_bomb_refused_without_decoding() -> None:
    small = Image.open(io.BytesIO(_zero_png(300, 200)))
    small.load()  # the generator makes real, decodable PNGs
    assert small.size == (300, 200) and small.getextrema() == (0, 0)
    bomb = _zero_png(20000, 20000)
    assert len(bomb) < 1_000_000
    with pytest.raises(MediaError, match=r"400000000 pixels.*CLEF_MAX_IMAGE_INPUT_PIXELS"):
        load_image(bomb)
    # Under PIL's own ceiling our limit applies, from the header alone.
    with pytest.raises(MediaError, match=r"12000×12000 \(144 MP\).*CLEF_MAX_IMAGE_INPUT_PIXELS"):
        load_image(_zero_png(12000, 12000))


def test_bad_image_inputs_are_refused_clearly(tmp_path: Path) -> None:
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (200, 300, 3), np.uint8)).save(
        buf, "JPEG"
    )
    (tmp_path / "cut.jpg").write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(MediaError, match="truncated or corrupt"):
        load_image(tmp_path / "cut.jpg")
    (tmp_path / "notes.png").write_text("not an image")
    with pytest.raises(MediaError, match="not an image"):
        load_image(tmp_path / "notes.png")
    with pytest.raises(MediaError, match="remote media is never fetched"):
        load_image("https://example.com/cat.png")
    with pytest.raises(MediaError, match="only image/"):
        load_image("data:text/plain;base64,aGVsbG8=")
    with pytest.raises(MediaError, match="CLEF_MAX_INPUT_BYTES"):
        load_image(b"\0" * 2000, MediaLimits(max_input_bytes=1000))
    with pytest.raises(MediaError, match="aspect ratio"):
        load_image(Image.new("RGB", (5000, 10)))


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF"])
def test_accepted_formats(fmt: str) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buf, fmt)
    out = load_image(buf.getvalue()).image
    assert (
        out.size == (40, 30)
        and max(abs(a - b) for a, b in zip(out.getpixel((5, 5)), (200, 10, 10), strict=True)) < 8
    )


def test_data_url_image() -> None:
    buf = io.BytesIO()
    Image.new("RGB", (6, 4), (1, 2, 3)).save(buf, "PNG")
    url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    assert load_image(url).image.getpixel((0, 0)) == (1, 2, 3)


def test_limits_from_env() -> None:
    limits = MediaLimits.from_env({"CLEF_VIDEO_FRAMES": "8", "CLEF_VIDEO_MAX_FPS": "1.5"})
    assert (limits.video_frames, limits.video_max_fps) == (8, 1.5)
    with pytest.raises(MediaError, match="CLEF_MAX_PIXELS='big'"):
        MediaLimits.from_env({"CLEF_MAX_PIXELS": "big"})
    with pytest.raises(MediaError, match="max_video_seconds"):
        MediaLimits(max_video_seconds=0)
    with pytest.raises(MediaError, match="CLEF_MAX_IMAGES"):
        prepare_media(images=[Image.new("RGB", (4, 4))] * 3, limits=MediaLimits(max_images=2))


# ---- videos ----


@pytest.mark.parametrize("suffix", [".mp4", ".avi"])
def test_seek_sampling_picks_the_right_frames(tmp_path: Path, suffix: str) -> None:
    video = sample_video(_write_video(tmp_path / f"clip{suffix}", 100))
    assert video.method == "seek" and video.total_frames == 100 and video.duration == 10.0
    assert len(video.frames) == 16 and video.source_size == (W, H)
    _check_frames(video, 10.0)
    assert video.indices[0] < 7 and video.indices[-1] > 93  # spread over the whole clip
    if suffix == ".avi":  # bytes and data: URLs go through a temporary file
        data = (tmp_path / "clip.avi").read_bytes()
        url = "data:video/x-msvideo;base64," + base64.b64encode(data).decode()
        for source in (data, url):
            assert sample_video(source).indices == video.indices


def test_short_clip_fps_cap_and_downscaled_frames(tmp_path: Path) -> None:
    video = sample_video(_write_video(tmp_path / "short.mp4", 30))  # 3 s at 10 fps
    assert len(video.frames) == 6
    _check_frames(video, 10.0)
    small = sample_video(tmp_path / "short.mp4", MediaLimits(max_pixels=80 * 60, video_frames=4))
    assert [f.size for f in small.frames] == [(80, 60)] * 4
    _check_frames(small, 10.0)


def test_header_claiming_too_many_frames_falls_back(tmp_path: Path) -> None:
    path = _write_video(tmp_path / "cut.avi", 100)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # header still says 100 frames
    video = sample_video(path)
    assert video.method == "sequential" and 30 < video.total_frames < 60
    assert "header claims 100 frames" in video.notes[0]
    assert max(video.indices) < video.total_frames and len(video.frames) % 2 == 0
    _check_frames(video, 10.0)


def test_bad_videos_are_refused_clearly(tmp_path: Path) -> None:
    _write_video(tmp_path / "empty.avi", 0)
    with pytest.raises(MediaError, match="no frames"):
        sample_video(tmp_path / "empty.avi")
    (tmp_path / "fake.mp4").write_text("this is not a video\n" * 20)
    with pytest.raises(MediaError, match="text file"):
        sample_video(tmp_path / "fake.mp4")
    (tmp_path / "junk.mp4").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(MediaError, match="could not be opened as a video"):
        sample_video(tmp_path / "junk.mp4")
    long = _write_video(tmp_path / "long.mp4", 100)
    with pytest.raises(MediaError, match=r"10 s long.*5 s limit.*CLEF_MAX_VIDEO_SECONDS"):
        sample_video(long, MediaLimits(max_video_seconds=5))


def test_one_frame_video_is_passed_twice(tmp_path: Path) -> None:
    prepared = prepare_media(videos=[_write_video(tmp_path / "one.mp4", 1)])
    assert prepared.videos[0].indices == [0]
    fields = prepared.record_fields()
    assert fields["videos"][0].shape == (2, H, W, 3)
    assert fields["media_kwargs"]["video_metadata"][0]["frames_indices"] == [0, 0]
    assert [s.note != "" for s in prepared.seen] == [False, True]


def test_record_fields_and_seen(tmp_path: Path) -> None:
    prepared = prepare_media(
        images=[Image.new("RGB", (1600, 900))], videos=[_write_video(tmp_path / "v.mp4", 40)]
    )
    fields = prepared.record_fields()
    assert set(fields) == {"images", "videos", "media_kwargs"}
    meta = fields["media_kwargs"]["video_metadata"][0]
    assert meta["fps"] == 10.0 and meta["total_num_frames"] == 40 and meta["duration"] == 4.0
    assert meta["frames_indices"] == prepared.videos[0].indices
    seen = [s.to_dict() for s in prepared.seen]
    assert seen[0]["kind"] == "image" and seen[0]["source_size"] == (1600, 900)
    assert [s["timestamp"] for s in seen[1:]] == prepared.videos[0].timestamps
    assert set(prepare_media(images=[Image.new("RGB", (4, 4))]).record_fields()) == {"images"}


# ---- the release's processor ----


def _processor():
    pytest.importorskip("torchvision")
    from tokenizers import Tokenizer, models
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLImageProcessor,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    class Capture(PreTrainedTokenizerFast):
        def __call__(self, text=None, *args, **kwargs):
            self.last_text = text
            return super().__call__(text, *args, **kwargs)

    tok = Capture(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")))
    specials = ["<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>"]
    tok.add_special_tokens({"additional_special_tokens": specials})
    size = {"shortest_edge": 32 * 32 * 4, "longest_edge": 32 * 32 * 256}
    videos = Qwen3VLVideoProcessor(size=size, cap_pixels_per_frame=False)
    return Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=size), tokenizer=tok, video_processor=videos
    )


def test_media_kwargs_keep_every_frame_and_true_timestamps(tmp_path: Path) -> None:
    processor = _processor()
    prepared = prepare_media(
        videos=[_write_video(tmp_path / "v.mp4", 100), _write_video(tmp_path / "one.mp4", 1)]
    )
    fields = prepared.record_fields()
    prompt = "<|vision_start|><|video_pad|><|vision_end|>" * 2
    out = processor(text=[prompt], videos=fields["videos"], **fields["media_kwargs"])
    assert [t for t, _, _ in out["video_grid_thw"].tolist()] == [8, 1]  # 16 and 2 frames, in pairs
    stamps = [float(s) for s in re.findall(r"<([\d.]+) seconds>", processor.tokenizer.last_text[0])]
    ts = prepared.videos[0].timestamps
    # One stamp per temporal patch: the mean of its two frames' true timestamps.
    assert stamps == [round((ts[i] + ts[i + 1]) / 2, 1) for i in range(0, 16, 2)] + [0.0]
    # Without the kwargs the processor resamples: 16 given frames become fewer.
    plain = processor.video_processor(videos=fields["videos"][:1])
    assert plain["video_grid_thw"][0][0] < 8
