"""Draw the example photo (a parcel at a door) and clip (a box on a belt), same pixels each run."""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

HERE = Path(__file__).resolve().parent
PHOTO = "doorstep-parcel.jpg"
CLIP = "conveyor-box.webm"
CLIP_SIZE = (480, 270)
CLIP_FPS = 12
CLIP_SECONDS = 4


def _font(size: int) -> ImageFont.ImageFont:
    # load_default(size) ships inside Pillow, so the picture is the same on every machine.
    return ImageFont.load_default(size)


def draw_photo() -> Image.Image:
    """A front door, a doormat and a taped parcel with a shipping label, seen from the path."""
    im = Image.new("RGB", (640, 480), (178, 92, 74))
    draw = ImageDraw.Draw(im)
    # Brick courses: the pattern tells a viewer this is a house front, not a studio shot.
    for row, y in enumerate(range(0, 330, 22)):
        offset = 0 if row % 2 else 30
        for x in range(-60 + offset, 640, 60):
            shade = 150 + (x * 7 + y * 3) % 30
            draw.rectangle([x + 2, y + 2, x + 57, y + 19], fill=(shade, 78, 60))
    draw.rectangle([220, 40, 420, 330], fill=(38, 70, 83))  # door
    draw.rectangle([236, 60, 404, 180], outline=(28, 52, 62), width=6)
    draw.rectangle([236, 200, 404, 318], outline=(28, 52, 62), width=6)
    draw.ellipse([384, 186, 398, 200], fill=(212, 175, 55))  # handle
    draw.rectangle([300, 20, 340, 36], fill=(240, 240, 235))
    draw.text((307, 21), "12", fill=(20, 20, 20), font=_font(14))  # house number
    draw.rectangle([0, 330, 640, 480], fill=(150, 150, 146))  # step and path
    draw.rectangle([0, 330, 640, 346], fill=(120, 120, 116))
    draw.rectangle([100, 352, 380, 410], fill=(96, 74, 50))  # doormat
    draw.text((130, 370), "WELCOME", fill=(60, 45, 30), font=_font(20))
    # The parcel: front face, top, and side, so it reads as a box.
    draw.polygon([(300, 300), (440, 300), (480, 270), (340, 270)], fill=(205, 160, 105))
    draw.polygon([(440, 300), (480, 270), (480, 380), (440, 410)], fill=(160, 118, 72))
    draw.rectangle([300, 300, 440, 410], fill=(190, 144, 92))
    draw.rectangle([362, 300, 378, 410], fill=(222, 196, 150))  # tape
    draw.polygon([(362, 300), (378, 300), (418, 270), (402, 270)], fill=(230, 205, 160))
    draw.rectangle([308, 318, 358, 372], fill=(250, 250, 245))  # shipping label
    small = _font(8)
    for i, line in enumerate(["ORDER", "48213", "J RIVERA", "12 ELM ST"]):
        draw.text((311, 321 + i * 10), line, fill=(25, 25, 25), font=small)
    for i in range(12):
        draw.line([(312 + i * 4, 362), (312 + i * 4, 369)], fill=(0, 0, 0), width=1 + i % 2)
    # A little blur: a camera, not a vector drawing.
    return im.filter(ImageFilter.GaussianBlur(0.6))


def draw_clip_frame(index: int, total: int) -> np.ndarray:
    """One BGR frame: a box carried left to right along a conveyor, off the right edge."""
    width, height = CLIP_SIZE
    frame = np.full((height, width, 3), (70, 70, 72), np.uint8)
    cv2.rectangle(frame, (0, 190), (width, 215), (40, 40, 40), -1)  # belt
    shift = (index * 6) % 24  # rollers' stripes move with the belt
    for x in range(-24 + shift, width, 24):
        cv2.line(frame, (x, 192), (x + 10, 213), (90, 90, 90), 2)
    cv2.rectangle(frame, (0, 215), (width, 232), (110, 110, 115), -1)  # frame rail
    # Starts fully in view and ends fully out: "does it leave the frame" has a clear answer.
    x = int(30 + (width + 40) * index / (total - 1))
    cv2.rectangle(frame, (x, 120), (x + 90, 190), (80, 140, 200), -1)  # box (BGR: tan)
    cv2.rectangle(frame, (x + 38, 120), (x + 52, 190), (150, 200, 230), -1)  # tape
    cv2.rectangle(frame, (x, 120), (x + 90, 190), (40, 90, 140), 2)
    cv2.putText(frame, "LINE 3", (12, 30), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (230, 230, 230), 2)
    return frame


def write_clip(path: Path) -> None:
    total = CLIP_FPS * CLIP_SECONDS
    # VP8 in WebM: browsers play it (MPEG-4 Part 2 'mp4v' they do not), and OpenCV's own
    # FFmpeg build writes it without extra codecs.
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"VP80"), CLIP_FPS, CLIP_SIZE)
    if not writer.isOpened():
        raise SystemExit(f"OpenCV cannot write {path} with the VP8 codec on this machine")
    try:
        for index in range(total):
            writer.write(draw_clip_frame(index, total))
    finally:
        writer.release()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write into")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    draw_photo().save(out / PHOTO, quality=85, optimize=True)
    write_clip(out / CLIP)
    for name in (PHOTO, CLIP):
        print(f"{out / name}: {(out / name).stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
