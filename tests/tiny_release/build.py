"""Build the tiny Clef release (BF16 and FP8) from nothing, offline and reproducibly to the byte."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
LOADER = HERE / "joint_schema_model.py"

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<think>",
    "</think>",
]
VOCAB_SIZE = 512
HEAD_CONFIG = {
    "hidden_size": 64,
    "width": 32,
    "routing_layers": [2, 4],
    "layers": 1,
    "heads": 2,
    "feedforward": 64,
}
# Square patches of 16 px merged 2x2: every image side is rounded to a multiple of 32.
IMAGE_PROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessor",
    "processor_class": "Qwen3VLProcessor",
    "do_convert_rgb": True,
    "do_normalize": True,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "merge_size": 2,
    "patch_size": 16,
    "temporal_patch_size": 2,
    "size": {"longest_edge": 128 * 128, "shortest_edge": 32 * 32},
}
VIDEO_PROCESSOR = {
    **IMAGE_PROCESSOR,
    "video_processor_type": "Qwen3VLVideoProcessor",
    "cap_pixels_per_frame": True,
    "do_sample_frames": True,
    "fps": 2,
    "max_frames": 64,
    "min_frames": 2,
    "size": {"longest_edge": 16 * 64 * 64, "shortest_edge": 32 * 32},
}
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif part['type'] == 'video' %}"
    "<|video_pad|>{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TRAINING_TEXT = [
    'STATE: {"invoice":{"vendor":"Acme","total":1250.0,"status":"overdue"}}',
    "SCHEMA FIELDS FIELD id type instruction allowed options description true false",
    "choice noul score The statement is true. The statement is false.",
    "Read the state and give a probability to every allowed option of every field.",
    "Is the total above 1000 USD? What is the invoice status? How risky is this invoice?",
    "paid overdue draft no risk some risk high risk billing support refund shipping",
    "système réponse façade naïve coöperate 日本語 テスト 数字 0123456789 émoji ✓ ✗",
]


def build_tokenizer(out: Path) -> dict[str, int]:
    """Train a byte-level BPE with Qwen's pre-tokenizer and save it for AutoTokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers.models.qwen3_5.tokenization_qwen3_5 import PRETOKENIZE_REGEX

    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - 16,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(TRAINING_TEXT * 4, trainer=trainer)
    tokenizer.save(str(out / "tokenizer.json"))
    ids = {token: tokenizer.token_to_id(token) for token in SPECIAL_TOKENS}
    config = {
        "tokenizer_class": "Qwen3_5Tokenizer",
        "model_max_length": 262144,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "bos_token": None,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "split_special_tokens": False,
    }
    _write_json(out / "tokenizer_config.json", config)
    return ids


def build_backbone(ids: dict[str, int]):
    """A tiny random Qwen3.5 vision-language backbone with both attention kinds."""
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    config = Qwen3_5Config(
        text_config={
            "vocab_size": VOCAB_SIZE,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 4,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 32,
            "linear_key_head_dim": 16,
            "linear_value_head_dim": 16,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            "linear_conv_kernel_dim": 4,
            "layer_types": ["linear_attention"] * 3 + ["full_attention"],
            "initializer_range": 0.1,
            "max_position_embeddings": 32768,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.5,
                "mrope_section": [3, 3, 2],
                "mrope_interleaved": True,
            },
            "pad_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "out_hidden_size": 64,
            "num_position_embeddings": 256,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(1234)
    return Qwen3_5ForConditionalGeneration(config).to(torch.bfloat16).eval()


def build_head(out: Path) -> None:
    """Random joint head, scaled so that answers are far from uniform."""
    from safetensors.torch import save_file

    from tests.tiny_release.joint_schema_model import JointHead

    torch.manual_seed(4321)
    head = JointHead(**HEAD_CONFIG)
    with torch.no_grad():
        head.route.normal_(0.0, 1.0)
        for layer in (head.project, head.query, head.key):
            layer.weight.normal_(0.0, 1.5 / HEAD_CONFIG["width"] ** 0.5)
    state = {
        name: tensor.to(torch.bfloat16).contiguous() for name, tensor in head.state_dict().items()
    }
    save_file(state, str(out / "joint_head.safetensors"))
    _write_json(out / "joint_head_config.json", HEAD_CONFIG)


def build_bf16(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    ids = build_tokenizer(out)
    build_backbone(ids).save_pretrained(out)
    build_head(out)
    _write_json(out / "preprocessor_config.json", IMAGE_PROCESSOR)
    _write_json(out / "video_preprocessor_config.json", VIDEO_PROCESSOR)
    _write_json(out / "processor_config.json", {"processor_class": "Qwen3VLProcessor"})
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    shutil.copyfile(LOADER, out / "joint_schema_model.py")
    return out


def build_tiny_release(out: Path) -> tuple[Path, Path]:
    """Write OUT/bf16 and OUT/fp8 (the FP8 one made by the project's own quantizer)."""
    from clef_ui.quantize import quantize_release

    out = Path(out)
    bf16 = build_bf16(out / "bf16")
    fp8 = out / "fp8"
    quantize_release(bf16, fp8, progress=False)
    return bf16, fp8


def source_digest() -> str:
    """Hash of everything the tiny release is made from, for caching built copies."""
    digest = hashlib.sha256()
    sources = [*sorted(HERE.glob("*.py")), HERE.parent.parent / "clef_ui" / "quantize.py"]
    sources.append(HERE.parent.parent / "clef_ui" / "recipe.yaml")
    for path in sources:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    import transformers

    digest.update(transformers.__version__.encode())
    return digest.hexdigest()[:16]


def cached_tiny_release() -> tuple[Path, Path]:
    """(bf16, fp8) folders, built once per source digest under CLEF_TEST_CACHE or ~/.cache."""
    base = os.environ.get("CLEF_TEST_CACHE") or Path.home() / ".cache" / "clef-ui-tests"
    root = Path(base) / f"tiny-{source_digest()}"
    if not (root / "fp8" / "config.json").is_file():
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=root.parent, prefix="building-"))
        build_tiny_release(staging)
        # Moved into place only when complete, so an interrupted build is never reused.
        try:
            staging.rename(root)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    return root / "bf16", root / "fp8"


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
