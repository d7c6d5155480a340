"""Command line: python -m tests.tiny_release OUT_DIR writes OUT_DIR/bf16 and OUT_DIR/fp8."""

import sys
import time
from pathlib import Path

from tests.tiny_release import build_tiny_release


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python -m tests.tiny_release OUT_DIR", file=sys.stderr)
        return 2
    start = time.perf_counter()
    bf16, fp8 = build_tiny_release(Path(sys.argv[1]))
    print(f"tiny release written: {bf16} and {fp8} ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
