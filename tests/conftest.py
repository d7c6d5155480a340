"""Shared fixtures: the tiny release, built once per machine and cached by content hash."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tiny_release import build_tiny_release, source_digest

# Figures that tests measure and CI logs should show (drift, sizes); printed at the end.
FIGURES: list[str] = []


@dataclass(frozen=True)
class TinyRelease:
    bf16: Path
    fp8: Path


def _cache_root() -> Path:
    base = os.environ.get("CLEF_TEST_CACHE") or Path.home() / ".cache" / "clef-ui-tests"
    return Path(base) / f"tiny-{source_digest()}"


@pytest.fixture(scope="session")
def tiny_release() -> TinyRelease:
    root = _cache_root()
    if not (root / "fp8" / "config.json").is_file():
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=root.parent, prefix="building-"))
        build_tiny_release(staging)
        # Renamed into place only when complete, so an interrupted build is never reused.
        try:
            staging.rename(root)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    return TinyRelease(bf16=root / "bf16", fp8=root / "fp8")


@pytest.fixture(scope="session")
def fp8_engine(tiny_release: TinyRelease):
    from clef_ui.engine import Engine

    return Engine.load(str(tiny_release.fp8), device="cpu")


@pytest.fixture
def figures() -> list[str]:
    return FIGURES


def pytest_terminal_summary(terminalreporter) -> None:
    if FIGURES:
        terminalreporter.section("measured figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
