"""The page in a real browser, as a person uses it: build questions in the form, upload media,
type a state, load the examples, press Run and read the bars. Needs Debian's Chromium."""

from __future__ import annotations

import json
import re

import pytest

from clef_ui.examples import load_examples
from tests.browser import (
    ARTIFACTS,
    CHROMIUM,
    DOCS_SCREENSHOT,
    NO_CHROMIUM,
    NO_RESULTS,
    REPO,
    RUN_TIMEOUT_MS,
    add_question,
    answers,
    app_page,
    artifact_name,
    axis_labels,
    card_values,
    chromium,
    media_block,
    paste_state,
    question_cards,
    served_app,
    set_text,
    settle,
    shares,
    state_text,
    upload_image,
    wait_taken,
)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

PHOTO = REPO / "examples" / "doorstep-parcel.jpg"


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def app_url(tiny_release, browser):
    """`python app.py --model <tiny FP8 release> --device cpu --port N`, as the README runs it
    (after the browser: without Chromium the app is never started)."""
    with served_app(tiny_release.fp8, ARTIFACTS / "app.log") as url:
        yield url


@pytest.fixture
def page(browser, app_url, request):
    """A fresh session on the page, model loaded; screenshot in artifacts/<test>.png."""
    with app_page(browser, app_url, request.node.name) as opened:
        yield opened


LATENCY = re.compile(r"Latency [\d.]+ ms \(encode [\d.]+ ms \+ forward [\d.]+ ms\)")
LOAD_TIMEOUT_MS = 30_000
TOKENS = re.compile(r"Tokens [\d,]+ of [\d,]+")


def run(page, questions: int) -> None:
    """Press Run and wait for one chart per question, drawn."""
    page.locator("#run").click()
    expect(answers(page)).to_have_count(questions, timeout=RUN_TIMEOUT_MS)
    for i in range(questions):
        expect(answers(page).nth(i).locator("svg g.role-axis-label text").first).to_be_visible()
    settle(page)


def answer_title(page, index: int):
    return answers(page).nth(index).get_by_test_id("block-info").first


def check_answer(page, index: int, title: str, labels: list[str]) -> None:
    """One chart: its title, exactly these labels in this order (text and axis), shares that
    add up to 100% and the largest one in bold."""
    answer = answers(page).nth(index)
    expect(answer_title(page, index)).to_have_text(title)
    shown = shares(answer)
    assert [s.label for s in shown] == labels, f"{title}: text under the chart"
    assert axis_labels(answer) == labels, f"{title}: the chart's x axis"
    total = sum(s.percent for s in shown)
    assert abs(total - 100) <= 0.05 * len(shown) + 1e-6, f"{title}: shares add up to {total}%"
    bold = [s for s in shown if s.bold]
    assert len(bold) == 1, f"{title}: one winner in bold, got {bold}"
    assert bold[0].percent == max(s.percent for s in shown), f"{title}: the winner is the top"
    expect(answer.locator(".answer-text p")).to_contain_text(f"Top: {bold[0].label} (")


def test_three_question_schema_built_in_the_form_runs_with_an_image(page):
    add_question(page, "choice")
    add_question(page, "noul")
    add_question(page, "score")
    choice, noul, score = (question_cards(page).nth(i) for i in range(3))

    set_text(choice.get_by_label("Question id"), "placement")
    set_text(choice.get_by_label("Instructions"), "Where was the parcel left?")
    set_text(choice.get_by_label("Option id").nth(0), "front_door")
    set_text(choice.get_by_label("Description (optional)").nth(0), "On the doormat.")
    set_text(choice.get_by_label("Option id").nth(1), "porch_steps")
    choice.get_by_role("button", name="+ Add option").click()
    expect(choice.get_by_label("Option id")).to_have_count(3)
    expect(choice.get_by_label("Option id").nth(2)).to_have_value("option_3")
    expect(choice).to_contain_text("3 options (2–255)")
    settle(page)
    # Not alphabetical: the chart must keep the user's order, not the release's sorted one.
    set_text(choice.get_by_label("Option id").nth(2), "mailbox")

    set_text(noul.get_by_label("Question id"), "label_readable")
    set_text(noul.get_by_label("Instructions"), "Can the shipping label be read?")
    set_text(noul.get_by_label("What “true” means (optional)"), "The order number is legible.")

    set_text(score.get_by_label("Question id"), "damage")
    set_text(score.get_by_label("Instructions"), "How damaged does the parcel look?")
    set_text(score.get_by_label("Level 0 (lowest)"), "none")
    set_text(score.get_by_label("Level 1", exact=True), "minor")
    score.get_by_role("button", name="+ Add level").click()
    expect(score.get_by_label("Level 2", exact=True)).to_be_visible()
    settle(page)
    set_text(score.get_by_label("Level 2", exact=True), "severe")
    expect(score).to_contain_text("3 levels (2–10), lowest first")

    paste_state(page, "Courier photo for order 48213, to J. Rivera, 12 Elm St.")
    upload_image(page, PHOTO)
    expect(page.locator("#form-problems")).to_have_text("3 of 64 questions · ✓ ready to run")
    expect(page.locator("#token-budget")).to_contain_text(re.compile(r"media [1-9]"))

    run(page, 3)
    check_answer(page, 0, "placement (choice)", ["front_door", "porch_steps", "mailbox"])
    check_answer(page, 1, "label_readable (noul)", ["true", "false"])
    check_answer(page, 2, "damage (score)", ["0 · none", "1 · minor", "2 · severe"])
    summary = page.locator("#run-summary")
    expect(summary).to_contain_text(LATENCY)
    expect(summary).to_contain_text(TOKENS)
    expect(summary).to_contain_text(re.compile(r"media [1-9]"))
    expect(page.locator("#model-sees")).to_contain_text(re.compile(r"image 1 · \d+×\d+"))

    # The README's picture: a finished run with its charts.
    page.mouse.move(0, 0)
    DOCS_SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=DOCS_SCREENSHOT, full_page=True)


def test_invalid_json_state_is_reported_and_blocks_the_run(page):
    add_question(page, "choice")
    set_text(question_cards(page).first.get_by_label("Question id"), "placement")
    upload_image(page, PHOTO)
    text = paste_state(page, '{"order": 48213,\n  "note": ')
    with pytest.raises(json.JSONDecodeError) as bad:
        json.loads(text)
    where = f"line {bad.value.lineno}, column {bad.value.colno}"
    assert bad.value.lineno > 1, text
    expect(page.locator("#state-problem")).to_contain_text(f"does not parse ({where}")

    before = (text, card_values(page), page.locator("#form-problems").inner_text())
    image = media_block(page, "Image").locator("img")
    image_src = image.get_attribute("src")

    page.locator("#run").click()
    toast = page.locator(".toast-body")
    expect(toast).to_be_visible()
    expect(toast).to_contain_text("Error")
    expect(toast).to_contain_text(f"State: this looks like JSON but does not parse ({where}")
    settle(page)
    expect(answers(page)).to_have_count(0)
    # gradio marks the output of a failed event with an "Error" badge; the text stays.
    expect(page.locator("#run-summary")).to_contain_text(NO_RESULTS)

    after = (state_text(page), card_values(page), page.locator("#form-problems").inner_text())
    assert after == before
    expect(image).to_have_attribute("src", image_src)
    expect(page.locator("#state-problem")).to_contain_text(where)


def test_typed_text_survives_adding_removing_and_moving_questions(page):
    add_question(page, "choice")
    first = question_cards(page).first
    set_text(first.get_by_label("Question id"), "at_door")
    set_text(first.get_by_label("Instructions"), "Is the parcel at the front door?")
    add_question(page, "noul")
    add_question(page, "score")

    def expect_typed(index: int) -> None:
        card = question_cards(page).nth(index)
        expect(card).to_contain_text(f"Question {index + 1} · choice")
        expect(card.get_by_label("Question id")).to_have_value("at_door")
        expect(card.get_by_label("Instructions")).to_have_value("Is the parcel at the front door?")

    expect_typed(0)
    question_cards(page).nth(1).get_by_role("button", name="Remove").click()
    expect(question_cards(page)).to_have_count(2)
    expect(question_cards(page).nth(1)).to_contain_text("Question 2 · score")
    settle(page)
    expect_typed(0)

    question_cards(page).first.get_by_role("button", name="↓").first.click()
    expect(question_cards(page).first).to_contain_text("Question 1 · score")
    settle(page)
    expect_typed(1)
    question_cards(page).nth(1).get_by_role("button", name="↑").first.click()
    expect(question_cards(page).first).to_contain_text("Question 1 · choice")
    settle(page)
    expect_typed(0)
    expect(page.locator("#form-problems")).to_have_text("2 of 64 questions · ✓ ready to run")

    run(page, 2)
    check_answer(page, 0, "at_door (choice)", ["option_a", "option_b"])
    check_answer(page, 1, "score_question (score)", ["0 · low", "1 · high"])


def chart_labels(question) -> list[str]:
    """What a chart is labelled with: choice ids in the given order, true/false, or score
    levels as "0 · description", cut to 20 characters."""
    if question.type == "choice":
        return [option.id for option in question.options]
    if question.type == "noul":
        return ["true", "false"]
    labels = []
    for i, level in enumerate(question.levels):
        text = " ".join(f"{i} · {level}".split())
        labels.append(text if len(text) <= 20 else text[:19].rstrip() + "…")
    return labels


def _editor_text(state: object) -> str:
    return state if isinstance(state, str) else json.dumps(state, indent=2, ensure_ascii=False)


def test_each_example_fills_every_field_and_runs(page, request):
    examples = load_examples()
    assert [e.slug for e in examples] == [
        "invoice-triage",
        "support-router",
        "photo-check",
        "clip-check",
    ]
    rows = page.locator("#examples tbody tr")
    expect(rows).to_have_count(len(examples))
    for example in examples:
        page.locator("#examples").get_by_text(example.title, exact=True).click()
        questions = example.request.questions
        # The whole form is rebuilt in the browser: seconds on a small machine.
        first_id = question_cards(page).first.get_by_label("Question id")
        expect(first_id).to_have_value(questions[0].id, timeout=LOAD_TIMEOUT_MS)
        settle(page)
        expect(question_cards(page)).to_have_count(len(questions))
        for i, question in enumerate(questions):
            card = question_cards(page).nth(i)
            expect(card.get_by_label("Question id")).to_have_value(question.id)
            expect(card).to_contain_text(f"Question {i + 1} · {question.type}")
        expect(answers(page)).to_have_count(0)
        expect(page.locator("#run-summary")).to_have_text(NO_RESULTS)
        assert state_text(page) == _editor_text(example.request.state), example.slug
        expect(page.locator("#form-problems")).to_contain_text("✓ ready to run")

        image = media_block(page, "Image").locator("img")
        video = media_block(page, "Video").locator("video")
        if example.image:
            expect(image).to_be_visible()
            expect(image).to_have_attribute("src", re.compile(re.escape(example.image.name)))
        else:
            expect(image).to_have_count(0)
        if example.video:
            expect(video).to_have_attribute("src", re.compile(re.escape(example.video.name)))
            sees = page.locator("#model-sees")
            expect(sees).to_be_visible()
            captions = sees.locator(".caption-label")
            expect(captions.first).to_be_visible()
            times = captions.all_inner_texts()
            assert len(times) >= 2, times
            assert all(re.fullmatch(r"\d+\.\d s", t) for t in times), times
            seconds = [float(t.removesuffix(" s")) for t in times]
            assert seconds == sorted(seconds), times
        else:
            expect(video).to_have_count(0)

        run(page, len(questions))
        for i, question in enumerate(questions):
            check_answer(page, i, f"{question.id} ({question.type})", chart_labels(question))
        expect(page.locator("#run-summary")).to_contain_text(LATENCY)
        ARTIFACTS.mkdir(exist_ok=True)
        name = artifact_name(f"{request.node.name}-{example.slug}")
        page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)


def test_loading_an_example_clears_what_the_model_saw(page):
    """Frames of the previous run must not stay on screen for an example without media."""
    page.locator("#examples").get_by_text("Proof-of-delivery photo", exact=True).click()
    expect(question_cards(page)).to_have_count(4, timeout=LOAD_TIMEOUT_MS)
    settle(page)
    run(page, 4)
    expect(page.locator("#model-sees")).to_contain_text("image 1 · ")

    page.locator("#examples").get_by_text("Invoice triage", exact=True).click()
    first_id = question_cards(page).first.get_by_label("Question id")
    expect(first_id).to_have_value("status", timeout=LOAD_TIMEOUT_MS)
    expect(media_block(page, "Image").locator("img")).to_have_count(0)
    settle(page)
    expect(page.locator("#model-sees")).to_be_hidden(timeout=3_000)


def test_typing_in_the_state_editor_settles(page):
    """Typing a line into the State editor: the page is quiet again within a second or so,
    with the warning for what was typed. One always_last listener sends 2-3 events here; two
    on state.change made gradio re-dispatch both for each deferred one: 30-300 events."""
    text = '{"order": 48213, "note": "left at the door", x'
    sent = page.evaluate("window.__queue.count()")
    page.locator("#state .cm-content").click()
    page.keyboard.type(text)
    wait_taken(page, state_text(page))
    try:
        settle(page, timeout_ms=8_000)
    except sync_api.TimeoutError:
        events = page.evaluate("window.__queue.count()") - sent
        pytest.fail(f"still sending events 8 s after typing stopped: {events} so far")
    events = page.evaluate("window.__queue.count()") - sent
    expect(page.locator("#state-problem")).to_contain_text("does not parse")
    assert events <= 10, f"{events} events for {len(text)} keystrokes"


def test_the_example_clip_plays_in_the_browser(page):
    """The clip's codec is one browsers play (MPEG-4 Part 2 was not: "Video not playable")."""
    page.locator("#examples").get_by_text("Conveyor camera clip", exact=True).click()
    video = media_block(page, "Video").locator("video")
    expect(video).to_have_count(1, timeout=LOAD_TIMEOUT_MS)
    video.evaluate(
        """v => new Promise(done => {
          if (v.readyState >= 1 || v.error) return done();
          v.addEventListener("loadedmetadata", () => done(), { once: true });
          v.addEventListener("error", () => done(), { once: true });
        })"""
    )
    assert video.evaluate("v => v.error && v.error.code") is None
    expect(page.get_by_test_id("toast-text").filter(has_text="not playable")).to_have_count(0)
