"""Reproduce the FP8 W8A8 dynamic checkpoint from a BF16 Clef release with compressed-tensors."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_RECIPE = Path(__file__).with_name("recipe.yaml")
# Files that save_pretrained writes anew; everything else in a release is copied byte for byte.
BACKBONE_FILES = ("config.json", "generation_config.json", "model.safetensors.index.json")


class QuantizeError(RuntimeError):
    """A quantization run that cannot proceed; the message says what to fix."""


@dataclass(frozen=True)
class QuantRecipe:
    targets: list[str]
    ignore: list[str]
    scheme: str

    @classmethod
    def from_yaml(cls, path: Path) -> QuantRecipe:
        """Read the QuantizationModifier of an llm-compressor recipe, wherever it is nested."""
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise QuantizeError(f"cannot read recipe {path}: {exc}") from exc
        modifier = _find_key(data, "QuantizationModifier")
        if not isinstance(modifier, dict):
            raise QuantizeError(f"recipe {path} has no QuantizationModifier block")
        scheme = modifier.get("scheme")
        if not isinstance(scheme, str):
            raise QuantizeError(
                f"recipe {path}: QuantizationModifier needs a preset `scheme` such as FP8_DYNAMIC"
            )
        return cls(
            targets=list(modifier.get("targets") or ["Linear"]),
            ignore=list(modifier.get("ignore") or []),
            scheme=scheme,
        )


@dataclass
class QuantizeSummary:
    quantized: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0

    def report(self) -> str:
        """Human-readable lines: how many layers of each kind were quantized or kept."""

        def kinds(names: list[str]) -> str:
            counts = Counter(_layer_kind(name) for name in names)
            return ", ".join(f"{kind} {count}" for kind, count in sorted(counts.items()))

        lines = [
            f"quantized to FP8: {len(self.quantized)} Linear layers ({kinds(self.quantized)})",
            f"kept in BF16:     {len(self.kept)} Linear layers ({kinds(self.kept) or 'none'})",
            f"backbone size:    {self.bytes_before / 1e6:.2f} MB -> "
            f"{self.bytes_after / 1e6:.2f} MB",
        ]
        return "\n".join(lines)


def quantize_release(
    src: Path | str,
    dst: Path | str,
    recipe: Path | str = DEFAULT_RECIPE,
    progress: bool = True,
) -> QuantizeSummary:
    """Quantize the backbone of the release in SRC into DST; head and processor files are copied."""
    import torch
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import (
        QuantizationConfig,
        QuantizationStatus,
        preset_name_to_scheme,
    )
    from compressed_tensors.quantization.lifecycle.apply import apply_quantization_config
    from compressed_tensors.quantization.utils.helpers import calculate_qparams
    from tqdm.auto import tqdm

    src, dst = Path(src), Path(dst)
    plan = QuantRecipe.from_yaml(Path(recipe))
    if not (src / "config.json").is_file():
        raise QuantizeError(f"{src} is not a release folder: config.json is missing")
    if (src / "config.json").read_text(encoding="utf-8").find('"quantization_config"') >= 0:
        raise QuantizeError(f"{src} is already quantized; point SRC at the BF16 release")
    if dst.resolve() == src.resolve():
        raise QuantizeError("DST must be a different folder from SRC")

    model = _load_backbone(src)
    summary = QuantizeSummary(bytes_before=_param_bytes(model))
    config = QuantizationConfig(
        config_groups={"group_0": preset_name_to_scheme(plan.scheme, plan.targets)},
        ignore=plan.ignore,
    )
    apply_quantization_config(model, config, show_progress=False)
    layers = [(n, m) for n, m in model.named_modules() if hasattr(m, "quantization_scheme")]
    summary.quantized = [name for name, _ in layers]
    summary.kept = [
        name
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and name not in set(summary.quantized)
    ]
    with torch.no_grad():
        for _, module in tqdm(layers, desc="FP8 weight scales", unit="layer", disable=not progress):
            # Data-free: FP8_DYNAMIC only needs per-output-channel weight ranges.
            args = module.quantization_scheme.weights
            weight = module.weight
            scale, zero_point = calculate_qparams(
                weight.amin(dim=1, keepdim=True), weight.amax(dim=1, keepdim=True), args
            )
            module.weight_scale.data.copy_(scale)
            if hasattr(module, "weight_zero_point"):
                module.weight_zero_point.data.copy_(zero_point)
            module.quantization_status = QuantizationStatus.FROZEN

    compressor = ModelCompressor.from_pretrained_model(model, quantization_format="float-quantized")
    compressor.compress_model(model)
    summary.bytes_after = _param_bytes(model)
    dst.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dst)
    compressor.update_config(str(dst))
    for path in sorted(src.iterdir()):
        if path.is_file() and not _is_backbone_file(path.name):
            shutil.copyfile(path, dst / path.name)
    shutil.copyfile(recipe, dst / "recipe.yaml")
    return summary


def _load_backbone(src: Path) -> Any:
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(src)
    architecture = (config.architectures or ["Qwen3_5ForConditionalGeneration"])[0]
    model_class = getattr(transformers, architecture, None)
    if model_class is None:
        raise QuantizeError(f"transformers {transformers.__version__} has no class {architecture}")
    return model_class.from_pretrained(src, dtype=torch.bfloat16, device_map={"": "cpu"}).eval()


def _param_bytes(model: Any) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _is_backbone_file(name: str) -> bool:
    return name in BACKBONE_FILES or (name.startswith("model") and name.endswith(".safetensors"))


def _layer_kind(name: str) -> str:
    for kind in ("lm_head", "visual", "linear_attn", "self_attn", "mlp"):
        if kind in name.split("."):
            return kind
    return "other"


def _find_key(data: Any, key: str) -> Any:
    if isinstance(data, dict):
        if key in data:
            return data[key]
        for value in data.values():
            if (found := _find_key(value, key)) is not None:
                return found
    return None


def main(argv: list[str] | None = None) -> int:
    """Command line: python -m clef_ui.quantize SRC DST [--recipe FILE]."""
    parser = argparse.ArgumentParser(
        prog="python -m clef_ui.quantize",
        description="Quantize a BF16 Clef release to FP8 W8A8 dynamic (compressed-tensors).",
    )
    parser.add_argument("src", type=Path, help="BF16 release folder")
    parser.add_argument("dst", type=Path, help="output folder for the FP8 release")
    parser.add_argument("--recipe", type=Path, default=DEFAULT_RECIPE, help="llm-compressor recipe")
    args = parser.parse_args(argv)
    try:
        summary = quantize_release(args.src, args.dst, args.recipe)
    except QuantizeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary.report())
    print(f"written to {args.dst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
