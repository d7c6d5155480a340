"""Time from `python app.py` to the first HTTP 200 of the page, next to a bare gradio app."""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HELLO = """
import sys
import gradio as gr

with gr.Blocks() as demo:
    gr.Markdown("hello")

demo.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def time_to_page(command: list[str], port: int, timeout: float = 120.0) -> float:
    """Seconds from starting the process until GET / answers 200."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while time.perf_counter() - start < timeout:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as reply:
                    if reply.status == 200:
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"{command[1]} served no page within {timeout:.0f} s")
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from tests.tiny_release import cached_tiny_release

    _, fp8 = cached_tiny_release()
    with tempfile.TemporaryDirectory() as folder:
        hello = Path(folder) / "hello.py"
        hello.write_text(HELLO)
        times: dict[str, list[float]] = {"app": [], "hello": []}
        for n in range(args.rounds):
            runs = [
                (
                    "app",
                    lambda p: [
                        sys.executable,
                        "app.py",
                        "--model",
                        str(fp8),
                        "--device",
                        "cpu",
                        "--port",
                        str(p),
                    ],
                ),
                ("hello", lambda p: [sys.executable, str(hello), str(p)]),
            ]
            # Alternate the order so that warm file caches favour neither.
            for name, command in runs if n % 2 == 0 else runs[::-1]:
                port = free_port()
                times[name].append(time_to_page(command(port), port))
    app_s, hello_s = statistics.median(times["app"]), statistics.median(times["hello"])
    print(f"{args.rounds} alternating starts each, median time to first HTTP 200 of /")
    print(f"python app.py (tiny release) : {app_s:6.2f} s")
    print(f"bare gradio hello app        : {hello_s:6.2f} s")
    print(f"ratio app / hello            : {app_s / hello_s:6.2f}  (target <= 1.5)")


if __name__ == "__main__":
    main()
