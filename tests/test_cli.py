"""`python -m clef_ui decide` as a script would use it: JSON out, clear errors, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REQUEST = ROOT / "tests" / "data" / "invoice_request.json"


def _run(*args: str, stdin: str | None = None, env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "clef_ui", "decide", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )


def test_prints_a_valid_systemone_response(tiny_release) -> None:
    done = _run("--model", str(tiny_release.fp8), "--device", "cpu", str(REQUEST))
    assert done.returncode == 0, done.stderr
    response = json.loads(done.stdout)
    request = json.loads(REQUEST.read_text())
    assert list(response["answers"]) == list(request["questions"])
    status = response["answers"]["status"]
    assert status["choice"] in request["questions"]["status"]["criteria"]
    assert abs(sum(status["probabilities"].values()) - 1) < 1e-6
    assert 0 <= response["answers"]["large"]["noul"] <= 1
    assert response["usage"]["input_tokens"] > 0


def test_bad_request_names_the_problem_and_exits_non_zero(tiny_release) -> None:
    bad = {"state": "x", "questions": {"team": {"type": "choice", "criteria": {"sales": None}}}}
    done = _run("--model", str(tiny_release.fp8), "--device", "cpu", "-", stdin=json.dumps(bad))
    assert done.returncode == 2
    assert 'question "team"' in done.stderr and "add another option" in done.stderr
    assert done.stdout == ""


def test_broken_json_gives_line_and_column(tiny_release) -> None:
    done = _run("--model", str(tiny_release.fp8), "--device", "cpu", "-", stdin='{"state": }')
    assert done.returncode == 2
    assert "line 1, column 11" in done.stderr


def test_offline_hub_cache_is_used_and_missing_model_is_explained(tiny_release, tmp_path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--tiny--clef-flash-FP8"
    shutil.copytree(tiny_release.fp8, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    env = {"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "CLEF_DEVICE": "cpu"}
    done = _run("--model", "tiny/clef-flash-FP8", str(REQUEST), env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answers"]
    missing = _run("--model", "tiny/not-downloaded", str(REQUEST), env=env)
    assert missing.returncode == 3
    assert "not in the local Hugging Face cache" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.parametrize("variable", ["CLEF_DEVICE", "CLEF_PRECISION"])
def test_bad_environment_value_is_named(variable: str) -> None:
    done = _run(str(REQUEST), env={variable: "fast"})
    assert done.returncode == 2
    assert f"{variable}='fast'" in done.stderr
