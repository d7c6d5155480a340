"""Run decisions on a loaded Clef release: records in, probabilities and System One answers out."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from clef_ui.release import Device, Precision, RuntimeInfo, load_release
from clef_ui.schema import DecisionRequest, render_state_text

if TYPE_CHECKING:
    from clef_ui.media import MediaLimits, SeenItem

DEFAULT_MAX_LENGTH = 16384
# Tokens the processor wraps around or puts in place of images and video frames.
MEDIA_TOKENS = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")
# A state is cut only when the record fills max_length; this margin keeps the exact
# (second) encoding for records that come close, whatever the loader's rounding.
CUT_MARGIN = 16


class DecisionError(ValueError):
    """A request that cannot be answered as given; the message says how to fix it."""


@dataclass(frozen=True)
class TokenCounts:
    total: int
    state_given: int
    state_kept: int
    media: int
    max_length: int

    @property
    def schema(self) -> int:
        """Everything but the state and media: fixed prompt parts and the schema fields."""
        return self.total - self.state_kept - self.media

    @property
    def state_cut(self) -> int:
        """How many state tokens the release dropped from the end to fit max_length."""
        return self.state_given - self.state_kept


@dataclass(frozen=True)
class QuestionResult:
    id: str
    type: str
    option_ids: tuple[str, ...]
    probabilities: tuple[float, ...]

    def as_dict(self) -> dict[str, float]:
        """Option id -> probability, in the release's option order."""
        return dict(zip(self.option_ids, self.probabilities, strict=True))


@dataclass
class DecisionResult:
    request: DecisionRequest
    questions: list[QuestionResult]
    response: dict[str, Any]
    tokens: TokenCounts
    timings: dict[str, float]
    device: str
    precision: str
    seen: list[SeenItem] = field(default_factory=list)


@dataclass
class PreparedRecord:
    """A request encoded as the release reads it, before any forward pass."""

    request: DecisionRequest
    encoded: Any  # the loader's EncodedRecord
    tokens: TokenCounts
    seen: list[SeenItem]
    encode_s: float


class Engine:
    """One loaded model shared by every caller; forward passes never interleave."""

    def __init__(
        self,
        model: Any,
        processor: Any,
        loader: ModuleType,
        info: RuntimeInfo,
        max_length: int = DEFAULT_MAX_LENGTH,
        media_limits: MediaLimits | None = None,
    ) -> None:
        self.model = model
        self.processor = processor
        self.loader = loader
        self.info = info
        self.max_length = max_length
        self.media_limits = media_limits
        self._lock = threading.Lock()
        tokenizer = processor.tokenizer
        self._media_ids = frozenset(tokenizer.convert_tokens_to_ids(t) for t in MEDIA_TOKENS)

    @classmethod
    def load(
        cls,
        source: str,
        revision: str | None = None,
        device: Device = "auto",
        precision: Precision = "auto",
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> Engine:
        """Load a release (folder or hub id); raises ModelLoadError with the fix on failure."""
        model, processor, loader, info = load_release(source, revision, device, precision)
        return cls(model, processor, loader, info, max_length=max_length)

    def warm_up(self) -> None:
        """One small decision, so that lazy initialisation does not land on a user's first run."""
        self.decide(
            {"state": "warm-up", "questions": {"ready": {"type": "noul", "instructions": "Ready?"}}}
        )

    @property
    def tokenizer(self) -> Any:
        return self.processor.tokenizer

    def prepare(self, request: DecisionRequest | dict) -> PreparedRecord:
        """Validate, load media and encode a request without running the model."""
        return self._prepare(_as_request(request))

    def count_tokens(self, request: DecisionRequest | dict) -> TokenCounts:
        """Token counts of a request as the release would read it, without running the model."""
        return self.prepare(request).tokens

    def decide(self, request: DecisionRequest | dict) -> DecisionResult:
        """Answer one request: per-question probabilities and its System One response."""
        return self.decide_batch([request])[0]

    def decide_batch(self, requests: list[DecisionRequest | dict]) -> list[DecisionResult]:
        """Answer several requests in one forward pass of the model."""
        if not requests:
            return []
        prepared = [self.prepare(r) for r in requests]
        import torch

        start = time.perf_counter()
        with self._lock, torch.inference_mode():
            batch = self.loader.collate_records(
                [p.encoded for p in prepared], self.tokenizer.pad_token_id, self.model.device
            )
            logits = self.model(batch)
            probabilities = [
                [torch.softmax(values.float(), dim=-1).tolist() for values in row] for row in logits
            ]
        forward_s = time.perf_counter() - start
        return [
            self._result(p, rows, forward_s)
            for p, rows in zip(prepared, probabilities, strict=True)
        ]

    def _prepare(self, request: DecisionRequest) -> PreparedRecord:
        start = time.perf_counter()
        record = request.to_record()
        seen: list[SeenItem] = []
        if request.images or request.videos:
            from clef_ui.media import MediaLimits, prepare_media

            media = prepare_media(
                [ref.source for ref in request.images],
                [ref.source for ref in request.videos],
                self.media_limits or MediaLimits.from_env(),
            )
            record.update(media.record_fields())
            seen = media.seen
        encoded = self._encode(record)
        tokens = self._count(record, encoded)
        return PreparedRecord(request, encoded, tokens, seen, time.perf_counter() - start)

    def _encode(self, record: dict, max_length: int | None = None) -> Any:
        has_media = bool(record.get("images") or record.get("videos"))
        try:
            return self.loader.encode_record(
                self.tokenizer,
                record,
                max_length=max_length or self.max_length,
                processor=self.processor if has_media else None,
            )
        except ValueError as exc:
            raise DecisionError(
                f"The questions alone do not fit in the {self.max_length}-token context "
                f"({exc}). Remove questions or shorten instructions and option descriptions."
            ) from exc

    def _count(self, record: dict, encoded: Any) -> TokenCounts:
        total = len(encoded.input_ids)
        media = sum(1 for token in encoded.input_ids if token in self._media_ids)
        text = render_state_text(record["state"])
        given = len(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else 0
        kept = given
        if total >= self.max_length - CUT_MARGIN:
            # Only a record that fills the context can have lost state tokens: measure exactly.
            without_state = self._encode({**record, "state": ""})
            kept = total - len(without_state.input_ids)
        return TokenCounts(total, given, kept, media, self.max_length)

    def _result(
        self, prepared: PreparedRecord, rows: list[list[float]], forward_s: float
    ) -> DecisionResult:
        request = prepared.request
        specs = request.to_systemone()["questions"]
        questions, answers = [], {}
        for encoded_q, probabilities in zip(prepared.encoded.questions, rows, strict=True):
            qid = encoded_q.question_id
            result = QuestionResult(
                id=qid,
                type=specs[qid]["type"],
                option_ids=tuple(encoded_q.option_ids),
                probabilities=tuple(probabilities),
            )
            questions.append(result)
            answers[qid] = self.loader.systemone_answer(specs[qid], result.as_dict())
        response = {
            "model": request.model,
            "answers": answers,
            "usage": {"input_tokens": prepared.tokens.total, "output_tokens": 0},
        }
        return DecisionResult(
            request=request,
            questions=questions,
            response=response,
            tokens=prepared.tokens,
            timings={"encode_s": prepared.encode_s, "forward_s": forward_s},
            device=self.info.device,
            precision=self.info.precision,
            seen=prepared.seen,
        )


def _as_request(request: DecisionRequest | dict) -> DecisionRequest:
    # Validation happens once, in to_record(), on the way to the model.
    if isinstance(request, DecisionRequest):
        return request
    return DecisionRequest.from_systemone(request)
