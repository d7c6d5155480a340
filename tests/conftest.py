"""Shared fixtures: the tiny release, built once per machine and cached by content hash."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tiny_release import cached_tiny_release

# Figures that tests measure and CI logs should show (drift, sizes); printed at the end.
FIGURES: list[str] = []


@dataclass(frozen=True)
class TinyRelease:
    bf16: Path
    fp8: Path


@pytest.fixture(scope="session")
def tiny_release() -> TinyRelease:
    bf16, fp8 = cached_tiny_release()
    return TinyRelease(bf16=bf16, fp8=fp8)


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
