"""Benchmark: seek-based frame sampling against decoding every frame, in time and peak memory."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run as a script from anywhere: make the project importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WIDTH, HEIGHT, FPS = 1280, 720, 30


def write_clip(path: Path, seconds: int) -> None:
    """A clip with real motion (a scrolling gradient), so the encoder makes real P-frames."""
    import cv2
    import numpy as np

    x = np.arange(WIDTH, dtype=np.uint16)
    y = np.arange(HEIGHT, dtype=np.uint16)[:, None]
    channels = [(x + y) % 256, (2 * x + 0 * y) % 256, (x * y // 64) % 256]
    base = np.stack(channels, axis=-1).astype(np.uint8)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (WIDTH, HEIGHT))
    for i in range(seconds * FPS):
        writer.write(np.roll(base, 8 * i, axis=1))
    writer.release()


def measure(kind: str, path: str) -> dict:
    """One measurement; run in a fresh process so ru_maxrss is this measurement's own peak."""
    import cv2

    from clef_ui.media import MediaLimits, sample_video
    from clef_ui.media_sources import fit_size

    limits = MediaLimits(video_frames=16)
    start = time.perf_counter()
    if kind == "seek":
        video = sample_video(path, limits)
        indices, method = video.indices, video.method
    else:
        # The naive way: decode every frame in order and keep the ones wanted.
        cap = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
        total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        wanted = {int((k + 0.5) * total / 16) for k in range(16)}
        kept, index = [], 0
        while True:
            ok, bgr = cap.read()
            if not ok:
                break
            if index in wanted:
                kept.append(cv2.resize(bgr, fit_size(WIDTH, HEIGHT, limits.max_pixels)))
            index += 1
        cap.release()
        indices, method = sorted(wanted), f"decoded {index} frames"
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"seconds": seconds, "peak_mib": peak_mib, "indices": indices, "method": method}


def run(kind: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--measure", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    with tempfile.TemporaryDirectory(prefix="clef-bench-") as tmp:
        clips = {}
        for seconds in (60, 120):
            clips[seconds] = Path(tmp) / f"clip{seconds}.mp4"
            start = time.perf_counter()
            write_clip(clips[seconds], seconds)
            size = clips[seconds].stat().st_size / 2**20
            took = time.perf_counter() - start
            print(
                f"wrote {seconds} s {WIDTH}×{HEIGHT} {FPS} fps clip: {size:.1f} MiB in {took:.1f} s"
            )
        seek, naive = run("seek", clips[60]), run("baseline", clips[60])
        long = run("seek", clips[120])
        assert seek["indices"] == naive["indices"], "the two methods picked different frames"
        ratio = seek["seconds"] / naive["seconds"]
        print(f"16 frames from the 60 s clip ({seek['method']}):")
        print(
            f"  seek sampler      {seek['seconds']:7.3f} s   peak RSS {seek['peak_mib']:6.1f} MiB"
        )
        print(f"  decode-all ({naive['method']}) {naive['seconds']:7.3f} s   "
              f"peak RSS {naive['peak_mib']:6.1f} MiB")  # fmt: skip
        verdict = "OK" if ratio <= 0.25 else "MISSED"
        print(f"  ratio             {ratio:7.3f}     (target <= 0.25: {verdict})")
        growth = long["peak_mib"] - seek["peak_mib"]
        print(f"  seek sampler on the 120 s clip: {long['seconds']:.3f} s, peak RSS "
              f"{long['peak_mib']:.1f} MiB ({growth:+.1f} MiB vs 60 s)")  # fmt: skip


if __name__ == "__main__":
    main()
