"""The Gradio page: media, state, the question form, token budget, run and charts; wiring only."""

from __future__ import annotations

import json
import logging
from typing import Any

import gradio as gr

from clef_ui import form, results
from clef_ui.examples import Example, load_examples
from clef_ui.runtime import ModelRuntime
from clef_ui.schema import SchemaError
from clef_ui.ui_editor import EDITS, form_feedback, problems_markdown, question_block

log = logging.getLogger(__name__)

TITLE = "Clef-Flash FP8 · decisions with probabilities"
INTRO = (
    "Drop in an image or a short clip, describe the situation under **State**, ask typed "
    "questions, and press **Run**. Clef-Flash gives every allowed answer of every question a "
    "probability, in one pass."
)
NO_RESULTS = "Results appear here after **Run**."
CSS = """
.question-card { padding: 6px; margin-bottom: 10px; }
.q-problems p { color: #b45309; }
#model-status p { font-size: 0.95em; }
"""
THEME = gr.themes.Soft(primary_hue="orange")


def state_text(state: object) -> str:
    """What the State editor shows for a request's state."""
    return state if isinstance(state, str) else json.dumps(state, indent=2, ensure_ascii=False)


def state_problem(text: str) -> str:
    try:
        form.parse_state(text)
    except form.FormError as exc:
        return f"⚠ {exc}"
    return ""


def _gallery_items(seen: list[Any]) -> list[tuple[Any, str]]:
    items = []
    for item in seen:
        if item.kind == "image":
            caption = f"image {item.source_index + 1} · {item.passed_size[0]}×{item.passed_size[1]}"
        else:
            caption = f"{item.timestamp:.1f} s"
        items.append((item.image, caption + (f" ({item.note})" if item.note else "")))
    return items


def preview_video(video: str | None) -> Any:
    """Sample the uploaded clip the way a run will, and show those frames with their times."""
    if not video:
        return gr.Gallery(value=None, visible=False)
    from clef_ui.media import MediaError, MediaLimits, prepare_media

    try:
        seen = prepare_media([], [video], MediaLimits.from_env()).seen
    except MediaError as exc:
        gr.Warning(str(exc))
        return gr.Gallery(value=None, visible=False)
    return gr.Gallery(value=_gallery_items(seen), visible=True)


class Handlers:
    """What the page's events do, for one model runtime; gradio-facing, logic lives elsewhere."""

    def __init__(self, runtime: ModelRuntime, examples: list[Example]) -> None:
        self.runtime = runtime
        self.examples = examples

    def poll(self) -> tuple:
        status = self.runtime.status()
        return (
            f"**Model:** {status.text}",
            gr.Button(interactive=status.ready),
            gr.Timer(active=status.state == "loading"),
        )

    def token_budget(
        self, text: str, drafts: list[form.Draft], image: str | None, video: str | None
    ) -> str:
        engine = self.runtime.engine
        if engine is None:
            return "Token budget: shown once the model is loaded."
        if not drafts:
            return "Token budget: add a question (or load an example) to count tokens."
        try:
            tokens = engine.count_tokens(form.build_request(drafts, text, image, video))
        except (form.FormError, SchemaError):
            return "Token budget: fix the problems on the left to count tokens."
        except ValueError as exc:  # media the engine refuses: MediaError, DecisionError
            return f"⚠ {exc}"
        line = (
            f"Tokens: state {tokens.state_kept:,} + schema {tokens.schema:,}"
            f" + media {tokens.media:,} = **{tokens.total:,}** of {tokens.max_length:,}"
        )
        if tokens.state_cut:
            line += (
                f"  \n⚠ The state is {tokens.state_given:,} tokens: the last "
                f"{tokens.state_cut:,} would be cut to fit. Shorten it or remove questions."
            )
        return line

    def state_feedback(
        self, text: str, drafts: list[form.Draft], image: str | None, video: str | None
    ) -> tuple[str, str]:
        """What the State editor's content means now: a JSON problem, and the token budget."""
        return state_problem(text), self.token_budget(text, drafts, image, video)

    def video_feedback(
        self, text: str, drafts: list[form.Draft], image: str | None, video: str | None
    ) -> tuple[Any, str]:
        """The frames a new clip gives the model, and the token budget with them."""
        return preview_video(video), self.token_budget(text, drafts, image, video)

    def run(
        self,
        text: str,
        drafts: list[form.Draft],
        image: str | None,
        video: str | None,
        progress: gr.Progress = gr.Progress(),  # noqa: B008  (gradio's documented pattern)
    ) -> tuple:
        status = self.runtime.status()
        engine = self.runtime.engine
        if engine is None:
            raise gr.Error(status.text)
        if not drafts:
            raise gr.Error("Add at least one question (or load an example), then press Run.")
        try:
            request = form.build_request(drafts, text, image, video)
            progress(0.2, desc="Running the model")
            result = engine.decide(request)
        except SchemaError as exc:
            raise gr.Error("Fix these first:\n" + "\n".join(i.msg for i in exc.issues)) from None
        except ValueError as exc:  # FormError, MediaError, DecisionError: messages name the fix
            raise gr.Error(str(exc)) from None
        except Exception as exc:
            log.exception("decision failed")
            raise gr.Error(
                f"The model failed on this input ({type(exc).__name__}). Your inputs are "
                "unchanged; try a smaller image or clip, or a shorter state."
            ) from None
        questions = [draft.to_question() for draft in drafts]
        summary = results.run_summary(result, engine.info.describe())
        gallery = gr.Gallery(value=_gallery_items(result.seen), visible=bool(result.seen))
        return (questions, result), summary, gallery

    def load_example(self, index: int, version: int) -> tuple:
        example = self.examples[index]
        drafts = form.drafts_from_request(example.request)
        return (
            drafts,
            version + 1,
            problems_markdown(drafts),
            state_text(example.request.state),
            str(example.image) if example.image else None,
            str(example.video) if example.video else None,
            None,
            NO_RESULTS,
            # Frames of the previous run would describe media that is gone; a video
            # example refills the gallery through the video's change event.
            gr.Gallery(value=None, visible=False),
        )

    def add_question(self, drafts: list[form.Draft], version: int, kind: str) -> tuple:
        try:
            drafts = form.add_question(drafts, kind)  # type: ignore[arg-type]
        except form.FormError as exc:
            raise gr.Error(str(exc)) from None
        return drafts, version + 1, problems_markdown(drafts)


def render_answers(outcome: tuple | None, by_probability: bool) -> None:
    """One bar chart per question, with its numbers and summary underneath."""
    if not outcome:
        return
    questions, result = outcome
    for question, answer in zip(questions, result.questions, strict=True):
        rows = results.chart_rows(question, answer, by_probability)
        with gr.Group(elem_classes=["answer"]):
            gr.BarPlot(
                **results.BAR_PLOT_KWARGS,
                **results.chart_props(rows),
                label=f"{question.id} ({question.type})",
                height=280,
                x_label_angle=-25 if max(len(r.label) for r in rows) > 10 else 0,
            )
            shares = " · ".join(
                f"**{r.label}: {r.probability:.1%}**"
                if r.winner
                else f"{r.label}: {r.probability:.1%}"
                for r in rows
            )
            summary = results.summarize(question, answer).markdown()
            gr.Markdown(f"{shares}  \n{summary}", elem_classes=["answer-text"])


def build_demo(runtime: ModelRuntime) -> gr.Blocks:
    """The whole page, wired to one model runtime."""
    examples = load_examples()
    on = Handlers(runtime, examples)
    with gr.Blocks(title="Clef-Flash FP8 demo") as demo:
        drafts = gr.State([])
        layout = gr.State(0)
        outcome = gr.State(None)
        gr.Markdown(f"# {TITLE}\n{INTRO}")
        status = gr.Markdown(f"**Model:** {runtime.status().text}", elem_id="model-status")
        with gr.Row():
            with gr.Column(scale=6):
                example_list = gr.Dataset(
                    label="Examples: click one to load it",
                    components=[gr.Textbox(visible=False), gr.Textbox(visible=False)],
                    headers=["Example", "What it shows"],
                    samples=[[e.title, e.description] for e in examples],
                    type="index",
                    elem_id="examples",
                )
                with gr.Row():
                    image = gr.Image(
                        type="filepath", label="Image", sources=["upload", "clipboard"], height=220
                    )
                    video = gr.Video(label="Video", sources=["upload"], height=220)
                seen = gr.Gallery(
                    label="What the model sees",
                    columns=8,
                    height=140,
                    object_fit="contain",  # a whole frame, not a cropped strip
                    visible=False,
                    elem_id="model-sees",
                )
                state = gr.Code(
                    "",
                    language="json",
                    label="State (JSON, or plain text)",
                    lines=6,
                    max_lines=18,
                    wrap_lines=True,
                    elem_id="state",
                )
                state_msg = gr.Markdown(elem_id="state-problem")
                gr.Markdown("### Questions")
                problems = gr.Markdown(problems_markdown([]), elem_id="form-problems")

                @gr.render(inputs=[drafts], triggers=[layout.change, demo.load])
                def editor(current: list[form.Draft]) -> None:
                    _, own = form_feedback(current)
                    for index, draft in enumerate(current):
                        question_block(
                            draft,
                            index,
                            len(current),
                            drafts,
                            layout,
                            problems,
                            own.get(draft.uid, ""),
                        )

                with gr.Row(equal_height=True):
                    new_type = gr.Dropdown(
                        ["choice", "noul", "score"],
                        value="choice",
                        label="Type of the new question",
                        scale=2,
                        elem_id="new-type",
                    )
                    add = gr.Button("Add question", scale=1, elem_id="add-question")
            with gr.Column(scale=5):
                run_button = gr.Button("Run", variant="primary", interactive=False, elem_id="run")
                budget = gr.Markdown(
                    "Token budget: shown once the model is loaded.", elem_id="token-budget"
                )
                run_md = gr.Markdown(NO_RESULTS, elem_id="run-summary")
                sort = gr.Checkbox(label="Sort choice options by probability", value=False)
                gr.render(inputs=[outcome, sort], triggers=[outcome.change, sort.change])(
                    render_answers
                )

        budget_io = {"inputs": [state, drafts, image, video], "outputs": budget}
        timer = gr.Timer(1.0)
        timer.tick(on.poll, outputs=[status, run_button, timer]).then(
            on.token_budget, **budget_io, show_progress="hidden"
        )
        # A process that did not start the model itself (gradio's reload mode) starts it here.
        demo.load(lambda: runtime.start() and None)
        add.click(on.add_question, [drafts, layout, new_type], [drafts, layout, problems], **EDITS)
        # One listener per trigger: gradio re-dispatches every always_last listener of a
        # trigger for each deferred one, so two on state.change would flood the queue.
        state.change(
            on.state_feedback,
            budget_io["inputs"],
            [state_msg, budget],
            show_progress="hidden",
            trigger_mode="always_last",
        )
        for trigger in (drafts.change, image.change):
            trigger(
                on.token_budget, **budget_io, show_progress="hidden", trigger_mode="always_last"
            )
        video.change(on.video_feedback, budget_io["inputs"], [seen, budget], show_progress="hidden")
        run_button.click(on.run, [state, drafts, image, video], [outcome, run_md, seen])
        example_list.click(
            on.load_example,
            [example_list, layout],
            [drafts, layout, problems, state, image, video, outcome, run_md, seen],
        )
    return demo


def launch_options() -> dict[str, Any]:
    """Theme and style, passed to launch() as gradio 6 expects."""
    return {"theme": THEME, "css": CSS}
