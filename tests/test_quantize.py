"""The FP8 quantizer: which layers become FP8, what is copied unchanged, how far answers drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from clef_ui.quantize import DEFAULT_RECIPE, QuantizeError, QuantRecipe, main, quantize_release

IGNORED = ("lm_head", "embed_tokens", "visual", "linear_attn")


def _tensors(folder: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(folder / "model.safetensors"), "pt") as handle:
        return {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118


def _linear_names(folder: Path) -> set[str]:
    """Names of the backbone's Linear layers, read off a freshly built model."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(folder)
    with torch.device("meta"):
        model = transformers.Qwen3_5ForConditionalGeneration(config)
    return {n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}


def test_only_targeted_linear_layers_hold_fp8(tiny_release) -> None:
    tensors = _tensors(tiny_release.fp8)
    fp8 = {name[: -len(".weight")] for name, t in tensors.items() if t.dtype == torch.float8_e4m3fn}
    linears = _linear_names(tiny_release.bf16)
    expected = {n for n in linears if not any(part in n.split(".") for part in IGNORED)}
    assert expected, "the tiny backbone must have layers to quantize"
    assert fp8 == expected
    for name in fp8:
        weight, scale = tensors[f"{name}.weight"], tensors[f"{name}.weight_scale"]
        assert scale.shape == (weight.shape[0], 1), "one scale per output channel"
        assert scale.dtype == torch.bfloat16
    kept = linears - fp8
    assert any("lm_head" in n for n in kept) and any("visual" in n for n in kept)
    assert any("linear_attn" in n for n in kept)
    assert tensors["model.language_model.embed_tokens.weight"].dtype == torch.bfloat16


def test_config_declares_fp8_dynamic(tiny_release) -> None:
    config = json.loads((tiny_release.fp8 / "config.json").read_text())["quantization_config"]
    assert config["quant_method"] == "compressed-tensors"
    assert config["format"] == "float-quantized"
    group = config["config_groups"]["group_0"]
    assert group["weights"]["strategy"] == "channel" and not group["weights"]["dynamic"]
    assert group["input_activations"]["strategy"] == "token"
    assert group["input_activations"]["dynamic"]
    assert "lm_head" in config["ignore"]


def test_head_tokenizer_and_loader_files_are_byte_identical(tiny_release) -> None:
    for path in sorted(tiny_release.bf16.iterdir()):
        if path.name in ("config.json", "generation_config.json", "model.safetensors"):
            continue
        assert (tiny_release.fp8 / path.name).read_bytes() == path.read_bytes(), path.name


def test_fp8_answers_stay_close_to_bf16(tiny_release, figures) -> None:
    from clef_ui.engine import Engine

    request = json.loads((Path(__file__).parent / "data" / "invoice_request.json").read_text())
    bf16 = Engine.load(str(tiny_release.bf16), device="cpu").decide(request)
    fp8 = Engine.load(str(tiny_release.fp8), device="cpu").decide(request)
    drift = max(
        abs(a - b)
        for qa, qb in zip(bf16.questions, fp8.questions, strict=True)
        for a, b in zip(qa.probabilities, qb.probabilities, strict=True)
    )
    figures.append(f"FP8 vs BF16 probability drift on the tiny release: max |dp| = {drift:.4f}")
    print(f"FP8-vs-BF16 max |dp| = {drift:.4f}")
    assert 0 < drift < 0.1


def test_recipe_reads_the_shipped_modifier() -> None:
    recipe = QuantRecipe.from_yaml(DEFAULT_RECIPE)
    assert recipe.scheme == "FP8_DYNAMIC"
    assert recipe.targets == ["Linear"]
    assert "re:.*linear_attn.*" in recipe.ignore


def test_custom_recipe_changes_what_is_kept(tiny_release, tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    text = DEFAULT_RECIPE.read_text().replace('- "re:.*linear_attn.*"', '- "re:.*mlp.*"')
    recipe.write_text(text)
    summary = quantize_release(tiny_release.bf16, tmp_path / "out", recipe, progress=False)
    assert summary.quantized and all("mlp" not in name for name in summary.quantized)
    assert any("linear_attn" in name for name in summary.quantized)
    assert (tmp_path / "out" / "recipe.yaml").read_text() == text


def test_cli_prints_summary(tiny_release, tmp_path: Path, capsys) -> None:
    assert main([str(tiny_release.bf16), str(tmp_path / "fp8")]) == 0
    out = capsys.readouterr().out
    match = re.search(r"quantized to FP8: (\d+) Linear layers", out)
    written = _tensors(tmp_path / "fp8").values()
    assert match and int(match.group(1)) == sum(t.dtype == torch.float8_e4m3fn for t in written)
    assert "kept in BF16" in out and "linear_attn 15" in out  # 3 linear-attention layers x 5


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "config.json is missing"),
        ("quantized", "already quantized"),
    ],
)
def test_refuses_wrong_source(tiny_release, tmp_path: Path, setup: str, message: str) -> None:
    src = tmp_path / "empty" if setup == "missing" else tiny_release.fp8
    src.mkdir(exist_ok=True)
    with pytest.raises(QuantizeError, match=message):
        quantize_release(src, tmp_path / "out", progress=False)


def test_recipe_without_modifier_is_refused(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("stage:\n  other: {}\n")
    with pytest.raises(QuantizeError, match="no QuantizationModifier"):
        QuantRecipe.from_yaml(recipe)
