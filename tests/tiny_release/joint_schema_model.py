"""Loader and record encoder of the tiny test release, implementing Clef's published interface."""

from __future__ import annotations

import base64
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

QUESTION_TYPES = {"noul": 0, "choice": 1, "score": 2}
NOUL_DEFAULTS = {"true": "The statement is true.", "false": "The statement is false."}
SYSTEM_LINE = "Read the state and give a probability to every allowed option of every field."
PROMPT_HEAD = "<|im_start|>system\n" + SYSTEM_LINE + "<|im_end|>\n<|im_start|>user\nSTATE:\n"
PROMPT_TAIL = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
IMAGE_PLACEHOLDER = "<|vision_start|><|image_pad|><|vision_end|>"
VIDEO_PLACEHOLDER = "<|video_pad|>"


@dataclass(frozen=True)
class EncodedQuestion:
    question_id: str
    question_type: int
    question_span: tuple[int, int]
    option_spans: tuple[tuple[int, int], ...]
    option_ids: tuple[str, ...]


@dataclass(frozen=True)
class EncodedRecord:
    input_ids: tuple[int, ...]
    questions: tuple[EncodedQuestion, ...]
    record_id: str
    media: dict | None


def render_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def question_options(spec: dict) -> list[tuple[str, Any]]:
    kind = spec["type"]
    criteria = spec.get("criteria")
    if kind == "noul":
        given = criteria or {}
        return [(side, given.get(side, NOUL_DEFAULTS[side])) for side in ("true", "false")]
    if kind == "choice":
        return sorted(dict(criteria).items(), key=lambda item: item[0])
    if kind == "score":
        return [(str(level), text) for level, text in enumerate(criteria)]
    raise ValueError(f"unknown question type {kind!r}")


def _tokens(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _encode_media(processor, record: dict) -> tuple[list[int], dict | None]:
    images = list(record.get("images") or [])
    videos = list(record.get("videos") or [])
    if not images and not videos:
        return [], None
    if processor is None:
        raise ValueError("a record with images or videos needs processor=")
    text = IMAGE_PLACEHOLDER * len(images) + VIDEO_PLACEHOLDER * len(videos)
    out = processor(
        text=[text],
        images=images or None,
        videos=videos or None,
        return_tensors="pt",
        **(record.get("media_kwargs") or {}),
    )
    keys = ("pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw")
    media = {key: out[key] for key in keys if key in out}
    return out["input_ids"][0].tolist(), media


def encode_record(
    tokenizer,
    record: dict,
    max_length: int = 16384,
    max_state_tokens: int | None = None,
    processor=None,
) -> EncodedRecord:
    head = _tokens(tokenizer, PROMPT_HEAD)
    state = _tokens(tokenizer, render_value(record["state"]))
    media_ids, media = _encode_media(processor, record)
    schema: list[int] = _tokens(tokenizer, "\nSCHEMA FIELDS\n")
    fields: list[tuple[str, int, tuple[int, int], list[tuple[int, int]], list[str]]] = []
    for number, (qid, spec) in enumerate(record["questions"].items(), start=1):
        instructions = spec.get("instructions")
        if instructions in (None, ""):
            instructions = qid
        header = (
            f"FIELD {number}\nid: {json.dumps(qid, ensure_ascii=False)}\ntype: {spec['type']}\n"
        )
        header += f"instruction: {render_value(instructions)}\nallowed options:\n"
        header_ids = _tokens(tokenizer, header)
        question_span = (len(schema), len(schema) + len(header_ids))
        schema += header_ids
        spans, option_ids = [], []
        for index, (option_id, description) in enumerate(question_options(spec)):
            schema += _tokens(tokenizer, f"{index}. ")
            body = json.dumps({"id": option_id, "description": description}, ensure_ascii=False)
            body_ids = _tokens(tokenizer, body)
            spans.append((len(schema), len(schema) + len(body_ids)))
            schema += body_ids + _tokens(tokenizer, "\n")
            option_ids.append(option_id)
        fields.append((qid, QUESTION_TYPES[spec["type"]], question_span, spans, option_ids))
    tail = _tokens(tokenizer, PROMPT_TAIL)
    fixed = len(head) + len(media_ids) + len(schema) + len(tail)
    if fixed > max_length:
        raise ValueError(f"the schema needs {fixed} tokens, more than max_length={max_length}")
    budget = max_length - fixed
    if max_state_tokens is not None:
        budget = min(budget, max_state_tokens)
    state = state[:budget]
    offset = len(head) + len(state) + len(media_ids)
    questions = tuple(
        EncodedQuestion(
            question_id=qid,
            question_type=kind,
            question_span=(span[0] + offset, span[1] + offset),
            option_spans=tuple((a + offset, b + offset) for a, b in spans),
            option_ids=tuple(option_ids),
        )
        for qid, kind, span, spans, option_ids in fields
    )
    return EncodedRecord(
        input_ids=tuple(head + state + media_ids + schema + tail),
        questions=questions,
        record_id=str(record.get("id", "")),
        media=media,
    )


def collate_records(records, pad_token_id: int, device) -> dict:
    width = max(len(record.input_ids) for record in records)
    input_ids = torch.full((len(records), width), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((len(records), width), dtype=torch.long)
    for row, record in enumerate(records):
        input_ids[row, : len(record.input_ids)] = torch.tensor(record.input_ids)
        attention_mask[row, : len(record.input_ids)] = 1
    media: dict[str, torch.Tensor] = {}
    for record in records:
        for key, value in (record.media or {}).items():
            media[key] = value if key not in media else torch.cat([media[key], value])
    return {
        "input_ids": input_ids.to(device),
        "attention_mask": attention_mask.to(device),
        "records": list(records),
        "media": {key: value.to(device) for key, value in media.items()} or None,
    }


class JointHead(nn.Module):
    def __init__(self, hidden_size, width, routing_layers, layers, heads, feedforward):
        super().__init__()
        self.routing_layers = list(routing_layers)
        self.route = nn.Parameter(torch.zeros(len(self.routing_layers)))
        self.norm = nn.LayerNorm(hidden_size)
        self.project = nn.Linear(hidden_size, width)
        self.roles = nn.Embedding(6, width)
        block = nn.TransformerEncoderLayer(
            width, heads, feedforward, dropout=0.0, batch_first=True, norm_first=True
        )
        self.fields = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)

    def forward(self, hidden_states, records) -> list[list[torch.Tensor]]:
        weights = torch.softmax(self.route.float(), dim=0)
        mixed = sum(
            w * hidden_states[i].float() for w, i in zip(weights, self.routing_layers, strict=True)
        )
        mixed = self.norm(mixed.to(self.norm.weight.dtype))
        outputs = []
        for row, record in enumerate(records):
            tokens, roles, layout = [], [], []
            for question in record.questions:
                spans = (question.question_span, *question.option_spans)
                layout.append((len(tokens), len(spans)))
                for index, (start, end) in enumerate(spans):
                    tokens.append(mixed[row, start:end].mean(dim=0))
                    roles.append(question.question_type + (0 if index == 0 else 3))
            roles_t = torch.tensor(roles, device=mixed.device)
            fields = self.project(torch.stack(tokens)) + self.roles(roles_t)
            fields = self.fields(fields.unsqueeze(0))[0]
            logits = []
            for first, count in layout:
                query = self.query(fields[first])
                keys = self.key(fields[first + 1 : first + count])
                logits.append((keys @ query).float() / math.sqrt(query.shape[-1]))
            outputs.append(logits)
        return outputs


class JointSchemaModel(nn.Module):
    def __init__(self, backbone, head: JointHead):
        super().__init__()
        self.backbone = backbone
        self.head = head

    @property
    def device(self) -> torch.device:
        return self.head.project.weight.device

    def forward(self, batch: dict) -> list[list[torch.Tensor]]:
        common = {
            "input_ids": batch["input_ids"],
            "attention_mask": batch["attention_mask"],
            "output_hidden_states": True,
            "use_cache": False,
        }
        media = batch.get("media")
        if media:
            image_id = self.backbone.config.image_token_id
            video_id = self.backbone.config.video_token_id
            ids = batch["input_ids"]
            types = (ids == image_id).int() + 2 * (ids == video_id).int()
            out = self.backbone.model(**common, **media, mm_token_type_ids=types)
        else:
            # Text-only records skip the vision tower and go straight to the language model.
            out = self.backbone.model.language_model(**common)
        return self.head(out.hidden_states, batch["records"])


def load_release_model(model_path, device="cuda", dtype=torch.bfloat16, **from_pretrained_kwargs):
    from safetensors.torch import load_file
    from transformers import AutoProcessor, Qwen3_5ForConditionalGeneration

    if Path(model_path).is_dir():
        path = Path(model_path)
    else:
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(str(model_path)))
    backbone = Qwen3_5ForConditionalGeneration.from_pretrained(
        path, dtype=dtype, device_map={"": device}, **from_pretrained_kwargs
    )
    config = json.loads((path / "joint_head_config.json").read_text(encoding="utf-8"))
    head = JointHead(**config)
    head.load_state_dict(load_file(str(path / "joint_head.safetensors")), strict=True)
    head.to(device=device, dtype=dtype)
    model = JointSchemaModel(backbone, head).eval()
    processor = AutoProcessor.from_pretrained(path)
    return model, processor


def systemone_answer(question: dict, probabilities: dict) -> dict:
    kind = question["type"]
    if kind == "noul":
        return {"type": "noul", "noul": probabilities["true"]}
    top = max(probabilities, key=probabilities.get)
    if kind == "choice":
        return {
            "type": "choice",
            "choice": top,
            "confidence": probabilities[top],
            "probabilities": dict(probabilities),
        }
    legend = {str(level): text for level, text in enumerate(question["criteria"])}
    return {
        "type": "score",
        "score": sum(int(level) * p for level, p in probabilities.items()),
        "confidence": probabilities[top],
        "legend": legend,
        "probabilities": dict(probabilities),
    }


def _decode_image(url: str):
    from PIL import Image

    _, _, payload = url.partition(",")
    return Image.open(io.BytesIO(base64.b64decode(payload))).convert("RGB")


def systemone(model, processor, request: dict, max_length: int = 16384) -> dict:
    record = {
        "state": request["state"],
        "questions": {
            qid: {
                "type": spec["type"],
                "instructions": spec.get("instructions"),
                "criteria": spec.get("criteria"),
            }
            for qid, spec in request["questions"].items()
        },
    }
    if request.get("images"):
        record["images"] = [_decode_image(url) for url in request["images"]]
    encoded = encode_record(
        processor.tokenizer,
        record,
        max_length=max_length,
        processor=processor if "images" in record else None,
    )
    batch = collate_records([encoded], processor.tokenizer.pad_token_id, model.device)
    with torch.inference_mode():
        logits = model(batch)[0]
    answers = {}
    for question, values in zip(encoded.questions, logits, strict=True):
        probabilities = torch.softmax(values.float(), dim=-1).tolist()
        answers[question.question_id] = systemone_answer(
            request["questions"][question.question_id],
            dict(zip(question.option_ids, probabilities, strict=True)),
        )
    return {
        "model": request.get("model", "clef-flash"),
        "answers": answers,
        "usage": {"input_tokens": len(encoded.input_ids), "output_tokens": 0},
    }
