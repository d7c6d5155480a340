"""Load the example decision requests in examples/*.yaml, validated, with their media resolved."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from clef_ui.schema import DecisionRequest, MediaRef, SchemaError

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
_KEYS = {"title", "description", "order", "image", "video", "request"}


class ExampleError(ValueError):
    """An example file that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class Example:
    slug: str  # the file name without .yaml
    title: str
    description: str
    request: DecisionRequest  # without media: the wire takes images only as data: URLs
    image: Path | None = None
    video: Path | None = None
    order: int = 0

    def request_with_media(self) -> DecisionRequest:
        """A copy of the request carrying the example's image and video as local file paths."""
        return dataclasses.replace(
            self.request,
            images=[MediaRef("image", str(self.image))] if self.image else [],
            videos=[MediaRef("video", str(self.video))] if self.video else [],
        )


def _media(data: dict[str, Any], key: str, path: Path) -> Path | None:
    name = data.get(key)
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise ExampleError(f"{path.name}: {key!r} must be a file name next to the YAML file")
    media = (path.parent / name).resolve()
    if not media.is_file():
        raise ExampleError(
            f"{path.name}: {key} file {name!r} does not exist in {path.parent} — "
            "run `python examples/make_media.py` or fix the name"
        )
    return media


def load_example(path: Path) -> Example:
    """Read and check one example file; raises ExampleError naming the file and the problem."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ExampleError(f"{path.name}: cannot read it as YAML — {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
        raise ExampleError(f"{path.name}: needs a mapping with a 'request:' System One request")
    if unknown := sorted(set(data) - _KEYS):
        # A typo such as "imgae:" would otherwise silently drop the picture.
        raise ExampleError(f"{path.name}: unknown keys {unknown} — use {sorted(_KEYS)}")
    for key in ("title", "description"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ExampleError(f"{path.name}: give a non-empty {key!r} (text)")
    order = data.get("order", 0)
    if isinstance(order, bool) or not isinstance(order, int):
        raise ExampleError(f"{path.name}: 'order' must be a whole number, got {order!r}")
    try:
        request = DecisionRequest.from_systemone(data["request"])
    except SchemaError as exc:
        problems = "; ".join(issue.msg for issue in exc.issues)
        raise ExampleError(f"{path.name}: the request is not valid — {problems}") from exc
    return Example(
        slug=path.stem,
        title=data["title"].strip(),
        description=data["description"].strip(),
        request=request,
        image=_media(data, "image", path),
        video=_media(data, "video", path),
        order=order,
    )


def load_examples(folder: Path = EXAMPLES_DIR) -> list[Example]:
    """Every examples/*.yaml, by their `order` field and then by name."""
    examples = [load_example(path) for path in sorted(Path(folder).glob("*.yaml"))]
    return sorted(examples, key=lambda example: (example.order, example.slug))
