"""The shipped examples load, validate, carry working media and cover every kind of request."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest
from PIL import Image

from clef_ui.examples import EXAMPLES_DIR, Example, ExampleError, load_examples
from clef_ui.schema import ABSENT

EXAMPLES = load_examples()


def _types(example: Example) -> set[str]:
    return {q.type for q in example.request.questions}


def test_every_yaml_file_is_an_example_in_order() -> None:
    assert {e.slug for e in EXAMPLES} == {p.stem for p in EXAMPLES_DIR.glob("*.yaml")}
    assert len(EXAMPLES) >= 4
    assert [e.order for e in EXAMPLES] == sorted(e.order for e in EXAMPLES)
    assert EXAMPLES[0].slug == "invoice-triage"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.slug)
def test_example_is_a_valid_request_with_instructions(example: Example) -> None:
    assert example.title and example.description
    example.request_with_media().check()
    # The hosted API requires instructions on every question; examples teach by showing them.
    for q in example.request.questions:
        assert isinstance(q.instructions, str) and q.instructions.strip(), (example.slug, q.id)


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.image], ids=lambda e: e.slug)
def test_example_images_open(example: Example) -> None:
    assert example.image is not None
    with Image.open(example.image) as im:
        im.load()
        assert im.size[0] >= 320 and im.size[1] >= 240
    assert example.image.stat().st_size < 100_000


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.video], ids=lambda e: e.slug)
def test_example_videos_decode(example: Example) -> None:
    assert example.video is not None
    capture = cv2.VideoCapture(str(example.video))
    try:
        ok, frame = capture.read()
        assert ok and frame is not None and frame.size > 0
        assert capture.get(cv2.CAP_PROP_FRAME_COUNT) >= 10
    finally:
        capture.release()
    assert example.video.stat().st_size < 500_000


def test_the_four_required_kinds_are_present() -> None:
    json_state = [
        e for e in EXAMPLES if isinstance(e.request.state, dict) and not (e.image or e.video)
    ]
    assert any({"choice", "noul"} <= _types(e) for e in json_state)
    text_router = [
        e
        for e in EXAMPLES
        if isinstance(e.request.state, str)
        and "score" in _types(e)
        and any(q.type == "choice" and len(q.options) >= 6 for q in e.request.questions)
    ]
    assert text_router
    assert any(e.image and _types(e) == {"choice", "noul", "score"} for e in EXAMPLES)
    assert any(e.video for e in EXAMPLES)


def test_router_options_all_have_descriptions() -> None:
    router = next(e for e in EXAMPLES if e.slug == "support-router")
    team = next(q for q in router.request.questions if q.id == "team")
    assert all(isinstance(o.description, str) and o.description for o in team.options)
    assert router.request.questions[0].instructions is not ABSENT


def test_request_with_media_attaches_paths_without_touching_the_example() -> None:
    photo = next(e for e in EXAMPLES if e.image)
    with_media = photo.request_with_media()
    assert [ref.source for ref in with_media.images] == [str(photo.image)]
    assert photo.request.images == []


def _write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text, encoding="utf-8")


GOOD_REQUEST = """
request:
  state: hello
  questions:
    ok: {type: noul, instructions: "Is it fine?"}
"""


def test_order_then_name(tmp_path: Path) -> None:
    _write(tmp_path, "b.yaml", "title: B\ndescription: b\norder: 1\n" + GOOD_REQUEST)
    _write(tmp_path, "a.yaml", "title: A\ndescription: a\norder: 1\n" + GOOD_REQUEST)
    _write(tmp_path, "z.yaml", "title: Z\ndescription: z\norder: 0\n" + GOOD_REQUEST)
    assert [e.slug for e in load_examples(tmp_path)] == ["z", "a", "b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("title: T\ndescription: d\n" + GOOD_REQUEST.replace("noul", "choice"), "choice"),
        ("title: T\ndescription: d\nimage: missing.png\n" + GOOD_REQUEST, "make_media.py"),
        ("title: T\ndescription: d\nimgae: x.png\n" + GOOD_REQUEST, "unknown keys"),
        ("title: T\n" + GOOD_REQUEST, "'description'"),
        ("title: T\ndescription: d\n", "'request:'"),
        ("title: [unclosed\n", "YAML"),
    ],
)
def test_bad_example_files_name_the_file_and_the_problem(
    tmp_path: Path, text: str, message: str
) -> None:
    _write(tmp_path, "broken.yaml", text)
    with pytest.raises(ExampleError, match=r"broken\.yaml") as caught:
        load_examples(tmp_path)
    assert message in str(caught.value)
