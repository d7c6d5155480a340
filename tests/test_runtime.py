"""The app's model runtime and settings: background loading, readable status, flags and env."""

from __future__ import annotations

import pytest

from clef_ui.config import Settings, parse_app_args
from clef_ui.runtime import ModelRuntime


def test_status_goes_from_loading_to_ready(tiny_release) -> None:
    runtime = ModelRuntime(Settings(model=str(tiny_release.fp8), device="cpu"))
    assert runtime.status().state == "loading" and runtime.engine is None
    assert runtime.start().wait(timeout=300)
    status = runtime.status()
    assert status.ready and "CPU" in status.text and "dequantized from FP8" in status.text


def test_failed_load_says_what_to_do(tmp_path) -> None:
    runtime = ModelRuntime(Settings(model=str(tmp_path / "missing"), device="cpu"))
    assert not runtime.start().wait(timeout=60)
    status = runtime.status()
    assert status.state == "failed"
    assert "does not exist" in status.text and "hub id" in status.text


def test_flags_override_environment(monkeypatch) -> None:
    monkeypatch.setenv("CLEF_MODEL", "/models/clef")
    monkeypatch.setenv("CLEF_PORT", "9000")
    monkeypatch.setenv("CLEF_SHARE", "1")
    settings = parse_app_args(["--device", "cpu", "--port", "8000"])
    assert settings == Settings(
        model="/models/clef", device="cpu", precision="auto", port=8000, share=True
    )


def test_bad_environment_value_stops_with_its_name(monkeypatch, capsys) -> None:
    monkeypatch.setenv("CLEF_PRECISION", "int4")
    with pytest.raises(SystemExit):
        parse_app_args([])
    assert "CLEF_PRECISION='int4' is not one of auto, fp8, bf16" in capsys.readouterr().err
