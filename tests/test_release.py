"""Finding and loading a release: precision paths, the loader import, and every load failure."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from clef_ui.release import (
    ModelLoadError,
    import_loader,
    load_release,
    plan_precision,
    resolve_source,
)

REQUEST = json.loads((Path(__file__).parent / "data" / "invoice_request.json").read_text())


@pytest.mark.parametrize(
    ("fp8", "device", "capability", "asked", "precision", "options"),
    [
        (True, "cuda", (9, 0), "auto", "fp8", {"use_optimized_inference": True}),
        (True, "cuda", (8, 9), "fp8", "fp8", {"use_optimized_inference": True}),
        (True, "cuda", (12, 0), "auto", "fp8", {"use_optimized_inference": True}),
        (True, "cuda", (8, 6), "auto", "bf16", {"dequantize": True}),
        (True, "cuda", (9, 0), "bf16", "bf16", {"dequantize": True}),
        (True, "cpu", None, "auto", "bf16", {"dequantize": True}),
        (False, "cuda", (9, 0), "auto", "bf16", None),
        (False, "cpu", None, "bf16", "bf16", None),
    ],
)
def test_precision_plan_picks_fastest_path_that_runs(
    fp8, device, capability, asked, precision, options
) -> None:
    plan = plan_precision(fp8, device, capability, asked)
    assert (plan.precision, plan.compressed_tensors) == (precision, options)


@pytest.mark.parametrize(
    ("fp8", "device", "capability", "message"),
    [
        (True, "cpu", None, "compute capability 8.9"),
        (True, "cuda", (8, 0), r"--precision auto or bf16"),
        (False, "cuda", (9, 0), "clef_ui.quantize"),
    ],
)
def test_fp8_asked_where_it_cannot_run_says_why(fp8, device, capability, message) -> None:
    with pytest.raises(ModelLoadError, match=message):
        plan_precision(fp8, device, capability, "fp8")


def test_default_load_of_fp8_fails_and_engine_load_runs(tiny_release) -> None:
    """The release's model calls its inner language model, past transformers' decompress hook."""
    loader, _ = import_loader(tiny_release.fp8)
    model, processor = loader.load_release_model(str(tiny_release.fp8), device="cpu")
    with pytest.raises(RuntimeError, match="same dtype"):
        loader.systemone(model, processor, REQUEST)

    model, processor, loader, info = load_release(str(tiny_release.fp8), device="cpu")
    response = loader.systemone(model, processor, REQUEST)
    assert set(response["answers"]) == set(REQUEST["questions"])
    assert info.precision == "bf16" and "dequantized from FP8" in info.path
    assert info.device == "cpu"


def test_loader_imported_privately_by_path(tiny_release) -> None:
    path_before = list(sys.path)
    module, digest = import_loader(tiny_release.fp8)
    assert sys.path == path_before
    file = tiny_release.fp8 / "joint_schema_model.py"
    assert digest == hashlib.sha256(file.read_bytes()).hexdigest()
    assert module.__name__.startswith("_clef_release_")
    assert sys.modules[module.__name__] is module
    assert "joint_schema_model" not in sys.modules


def test_cpu_must_be_asked_for_when_no_gpu(tiny_release) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: auto picks it")
    with pytest.raises(ModelLoadError, match="--device cpu"):
        load_release(str(tiny_release.fp8), device="auto")


@pytest.fixture
def broken_copy(tiny_release, tmp_path: Path) -> Path:
    copy = tmp_path / "release"
    shutil.copytree(tiny_release.fp8, copy)
    return copy


def test_missing_files_are_named(broken_copy: Path) -> None:
    (broken_copy / "joint_head.safetensors").unlink()
    (broken_copy / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match=r"missing joint_head.safetensors, model\*"):
        load_release(str(broken_copy), device="cpu")


def test_bad_config_is_reported(broken_copy: Path) -> None:
    (broken_copy / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match=r"config\.json is not valid JSON"):
        load_release(str(broken_copy), device="cpu")


def test_loader_that_fails_to_import_is_reported(broken_copy: Path) -> None:
    (broken_copy / "joint_schema_model.py").write_text("import not_a_package_here\n")
    with pytest.raises(ModelLoadError, match=r"failed to import.*not_a_package_here"):
        load_release(str(broken_copy), device="cpu")


def test_head_mismatch_is_reported(broken_copy: Path) -> None:
    config = json.loads((broken_copy / "joint_head_config.json").read_text())
    config["width"] *= 2
    (broken_copy / "joint_head_config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="joint head does not match"):
        load_release(str(broken_copy), device="cpu")


def test_out_of_memory_is_reported(broken_copy: Path, monkeypatch) -> None:
    import torch

    module, _ = import_loader(broken_copy)

    def out_of_memory(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(module, "load_release_model", out_of_memory)
    with pytest.raises(ModelLoadError, match="ran out of memory"):
        load_release(str(broken_copy), device="cpu")


def test_unknown_quantization_is_refused(broken_copy: Path) -> None:
    config = json.loads((broken_copy / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gptq"}
    (broken_copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="'gptq'"):
        load_release(str(broken_copy), device="cpu")


def test_missing_folder_is_reported() -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        resolve_source("./no/such/folder")


def _fake_hub_cache(root: Path, repo: str, release: Path) -> None:
    """Lay out a release the way huggingface_hub caches a downloaded snapshot."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo_dir = root / "hub" / f"models--{repo.replace('/', '--')}"
    shutil.copytree(release, repo_dir / "snapshots" / commit)
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(commit)


def test_hub_id_resolves_from_cache_offline(tiny_release, tmp_path: Path, monkeypatch) -> None:
    from huggingface_hub import constants

    _fake_hub_cache(tmp_path, "tiny/clef-flash-FP8", tiny_release.fp8)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    folder = resolve_source("tiny/clef-flash-FP8")
    assert (folder / "joint_schema_model.py").read_bytes() == (
        tiny_release.fp8 / "joint_schema_model.py"
    ).read_bytes()


def test_hub_id_not_cached_offline_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(
        ModelLoadError, match=r"not in the local Hugging Face cache.*HF_HUB_OFFLINE"
    ):
        resolve_source("prithivMLmods/clef-flash-FP8")
