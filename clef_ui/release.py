"""Find a Clef release, import its own loader, pick the device and precision path, and load it."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

DEFAULT_MODEL = "prithivMLmods/clef-flash-FP8"
LOADER_FILE = "joint_schema_model.py"
REQUIRED_FILES = ("config.json", "joint_head.safetensors", "joint_head_config.json", LOADER_FILE)
# Compute capability from which NVIDIA GPUs have FP8 tensor cores (Ada, Hopper, Blackwell).
FP8_MIN_CAPABILITY = (8, 9)

Device = Literal["auto", "cuda", "cpu"]
Precision = Literal["auto", "fp8", "bf16"]
DEVICES: tuple[str, ...] = ("auto", "cuda", "cpu")
PRECISIONS: tuple[str, ...] = ("auto", "fp8", "bf16")


class ModelLoadError(RuntimeError):
    """Any failure to find or load a release; the message says what is wrong and what to do."""


@dataclass(frozen=True)
class PrecisionPlan:
    precision: Literal["fp8", "bf16"]
    # Keyword arguments of CompressedTensorsConfig, or None for a BF16 release loaded as is.
    compressed_tensors: dict[str, bool] | None
    reason: str


@dataclass(frozen=True)
class RuntimeInfo:
    """What is loaded and how it runs: shown in the UI status line and the API."""

    source: str
    folder: Path
    loader_sha256: str
    device: str
    device_name: str
    precision: Literal["fp8", "bf16"]
    path: str
    fp8_layers: int
    load_seconds: float

    def describe(self) -> str:
        """One line for people: device, then precision path."""
        return f"{self.device_name} · {self.path}"


def is_local_source(source: str) -> bool:
    """A source naming a folder (existing, or written like a path) is local; else a hub id."""
    path = Path(source).expanduser()
    return path.is_dir() or source.startswith((".", "/", "~")) or source.count("/") > 1


def resolve_source(source: str, revision: str | None = None) -> Path:
    """The release folder: a local folder as is, or a hub snapshot through the normal HF cache."""
    if is_local_source(source):
        folder = Path(source).expanduser()
        if not folder.is_dir():
            raise ModelLoadError(
                f"Model folder {source!r} does not exist. Pass a folder holding a Clef release "
                f"snapshot, or a hub id such as {DEFAULT_MODEL!r}."
            )
        return folder.resolve()
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{source}@{revision}" if revision else source
    try:
        return Path(snapshot_download(source, revision=revision))
    except GatedRepoError as exc:
        raise ModelLoadError(
            f"{where} is gated: accept its terms on the hub, then log in with `hf auth login`."
        ) from exc
    except RevisionNotFoundError as exc:
        raise ModelLoadError(f"Revision {revision!r} of {source} does not exist.") from exc
    except RepositoryNotFoundError as exc:
        raise ModelLoadError(
            f"No model {source!r} on the hub (or it is private: log in with `hf auth login`)."
        ) from exc
    except HFValidationError as exc:
        raise ModelLoadError(
            f"{source!r} is neither an existing folder nor a valid hub id (owner/name)."
        ) from exc
    except (LocalEntryNotFoundError, OSError) as exc:
        offline = constants.HF_HUB_OFFLINE
        hint = (
            "HF_HUB_OFFLINE is set, so only the local cache is used: download it once with "
            f"`hf download {source}` while online, or pass a local folder."
            if offline
            else "The hub could not be reached and no cached copy exists: check the network, "
            "or pass a local snapshot folder."
        )
        raise ModelLoadError(f"{where} is not in the local Hugging Face cache. {hint}") from exc


def check_release_files(folder: Path) -> None:
    """Refuse a folder that lacks a file the release needs, naming every missing one."""
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if not any(folder.glob("model*.safetensors")):
        missing.append("model*.safetensors")
    if missing:
        raise ModelLoadError(
            f"{folder} is not a complete Clef release: missing {', '.join(missing)}. "
            "Download the whole snapshot (for example `hf download prithivMLmods/clef-flash-FP8`)."
        )


def import_loader(folder: Path) -> tuple[ModuleType, str]:
    """Import the release's own joint_schema_model.py by path, under a private module name."""
    path = folder / LOADER_FILE
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    name = f"_clef_release_{digest[:16]}"
    if name in sys.modules:
        return sys.modules[name], digest
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before running so that the loader's dataclasses can resolve their module.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ModelLoadError(
            f"The release's {LOADER_FILE} failed to import ({type(exc).__name__}: {exc}). "
            "Check that the installed packages match requirements.txt."
        ) from exc
    needed = ("load_release_model", "encode_record", "collate_records")
    if absent := [attr for attr in needed if not hasattr(module, attr)]:
        raise ModelLoadError(f"{path} lacks {', '.join(absent)}: is this a Clef release?")
    return module, digest


def read_quantization(folder: Path) -> dict[str, Any] | None:
    """The config's quantization_config block, or None for a BF16 release."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{folder / 'config.json'} is not valid JSON: {exc}") from exc
    block = config.get("quantization_config")
    if block is not None and block.get("quant_method") != "compressed-tensors":
        raise ModelLoadError(
            f"{folder} is quantized with {block.get('quant_method')!r}; only compressed-tensors "
            "FP8 releases and BF16 releases are supported."
        )
    return block


def plan_precision(
    release_is_fp8: bool,
    device_type: str,
    capability: tuple[int, int] | None,
    requested: Precision,
) -> PrecisionPlan:
    """Fastest precision path for the hardware, or the one asked for when it can run."""
    fp8_capable = (
        device_type == "cuda" and capability is not None and capability >= FP8_MIN_CAPABILITY
    )
    if not release_is_fp8:
        if requested == "fp8":
            raise ModelLoadError(
                "This release holds BF16 weights. Load prithivMLmods/clef-flash-FP8, or make an "
                "FP8 copy with `python -m clef_ui.quantize SRC DST`, or choose --precision bf16."
            )
        return PrecisionPlan("bf16", None, "BF16 release")
    if requested in ("auto", "fp8") and fp8_capable:
        return PrecisionPlan(
            "fp8", {"use_optimized_inference": True}, "FP8 W8A8 matmuls on this GPU"
        )
    if requested == "fp8":
        where = "the CPU" if device_type != "cuda" else f"a GPU of compute capability {capability}"
        raise ModelLoadError(
            f"FP8 compute needs an NVIDIA GPU of compute capability 8.9 or higher (Ada, Hopper, "
            f"Blackwell); this is {where}. Use --precision auto or bf16 to run it dequantized."
        )
    reason = "asked for BF16" if requested == "bf16" else "no FP8 matmul on this hardware"
    return PrecisionPlan("bf16", {"dequantize": True}, f"dequantized from FP8 ({reason})")


def pick_device(requested: Device) -> tuple[str, str, tuple[int, int] | None]:
    """(device, human name, CUDA compute capability) for the device asked for."""
    import torch

    if requested == "cpu":
        return "cpu", "CPU", None
    if not torch.cuda.is_available():
        raise ModelLoadError(
            "No CUDA GPU is visible to PyTorch. Run on a machine with an NVIDIA GPU, or start "
            "with --device cpu (CLEF_DEVICE=cpu) to run on the CPU, which is slow for the 9B model."
        )
    capability = torch.cuda.get_device_capability(0)
    name = f"{torch.cuda.get_device_name(0)} (cc {capability[0]}.{capability[1]})"
    return "cuda:0", name, capability


def inspect_precision(model: Any, plan: PrecisionPlan) -> tuple[str, int]:
    """What actually runs, read off the loaded modules: transformers may fall back silently."""
    import torch

    fp8_kernel_layers = 0
    raw_fp8 = 0
    for module in model.modules():
        if type(module).__name__ == "CompressedTensorsFP8Linear":
            fp8_kernel_layers += 1
        elif isinstance(module, torch.nn.Linear) and module.weight.dtype == torch.float8_e4m3fn:
            raw_fp8 += 1
    if raw_fp8:
        raise ModelLoadError(
            f"{raw_fp8} layers kept FP8 weights without an FP8 kernel, which the release's model "
            "cannot run. Start with --precision bf16 to dequantize at load."
        )
    if fp8_kernel_layers:
        return f"FP8 W8A8 kernels ({fp8_kernel_layers} layers)", fp8_kernel_layers
    return f"BF16, {plan.reason}" if plan.compressed_tensors else "BF16 release", 0


def load_release(
    source: str = DEFAULT_MODEL,
    revision: str | None = None,
    device: Device = "auto",
    precision: Precision = "auto",
) -> tuple[Any, Any, ModuleType, RuntimeInfo]:
    """Load (model, processor, loader module, runtime info); every failure is a ModelLoadError."""
    start = time.perf_counter()
    folder = resolve_source(source, revision)
    check_release_files(folder)
    module, digest = import_loader(folder)
    quantization = read_quantization(folder)
    device_id, device_name, capability = pick_device(device)
    plan = plan_precision(quantization is not None, device_id.split(":")[0], capability, precision)
    model, processor = _call_loader(module, folder, device_id, plan)
    path, fp8_layers = inspect_precision(model, plan)
    info = RuntimeInfo(
        source=source,
        folder=folder,
        loader_sha256=digest,
        device=device_id,
        device_name=device_name,
        precision="fp8" if fp8_layers else "bf16",
        path=path,
        fp8_layers=fp8_layers,
        load_seconds=time.perf_counter() - start,
    )
    return model, processor, module, info


def _call_loader(module: ModuleType, folder: Path, device: str, plan: PrecisionPlan) -> tuple:
    import torch

    kwargs: dict[str, Any] = {}
    if plan.compressed_tensors is not None:
        from transformers import CompressedTensorsConfig

        kwargs["quantization_config"] = CompressedTensorsConfig(**plan.compressed_tensors)
    try:
        with warnings.catch_warnings():
            # Passing load-time options for a quantized checkpoint is the documented way; the
            # warning that the checkpoint's own quantization_config is kept says nothing new.
            warnings.filterwarnings("ignore", message="You passed `quantization_config`")
            return module.load_release_model(
                str(folder), device=device, dtype=torch.bfloat16, **kwargs
            )
    except torch.cuda.OutOfMemoryError as exc:
        raise ModelLoadError(
            "The GPU ran out of memory while loading. Free GPU memory (close other programs), "
            "use a GPU with more memory, or the FP8 release, which needs less."
        ) from exc
    except RuntimeError as exc:
        text = str(exc)
        if "state_dict" in text or "size mismatch" in text or "Missing key" in text:
            raise ModelLoadError(
                "The joint head does not match joint_head_config.json "
                f"({text.splitlines()[0]}). Re-download the release: its head files disagree."
            ) from exc
        raise ModelLoadError(f"Loading {folder} failed: {text.splitlines()[0]}") from exc
    except (OSError, ValueError, KeyError, TypeError, ImportError) as exc:
        raise ModelLoadError(
            f"Loading {folder} failed ({type(exc).__name__}: {str(exc).splitlines()[0]}). "
            "Check that the snapshot is complete and its config files are intact."
        ) from exc
