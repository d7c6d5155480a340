"""The question form editor: keyed components per question, and the events that edit drafts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from clef_ui import form
from clef_ui.results import describe
from clef_ui.schema import ABSENT, MAX_QUESTIONS, QUESTION_TYPES

# Every edit of the drafts runs in one queue lane: two quick edits never race on the state.
EDITS: dict[str, Any] = {
    "concurrency_id": "form-edits",
    "concurrency_limit": 1,
    "show_progress": "hidden",
}
SMALL: dict[str, Any] = {"size": "sm", "scale": 0, "min_width": 44}


def _box(value: str, **options: Any) -> gr.Textbox:
    # Components made inside gr.render start read-only unless told otherwise.
    return gr.Textbox(value, interactive=True, **options)


def form_feedback(drafts: list[form.Draft]) -> tuple[str, dict[str, str]]:
    """One validation of the drafts: the form-wide list of what to fix (with the live question
    count), and each question's own messages by uid."""
    count = f"{len(drafts)} of {MAX_QUESTIONS} questions"
    if not drafts:
        return f"{count}. Add a question below, or load an example.", {}
    request = form.DecisionRequest(questions=[d.to_question() for d in drafts])
    issues = [i for i in request.issues() if i.loc and i.loc[0] == "questions"]
    placed, _ = form.issues_by_question(drafts, issues)
    own = {uid: "\n".join(f"⚠ {m}" for m in messages) for uid, messages in placed.items()}
    if not issues:
        return f"{count} · ✓ ready to run", own
    lines = "\n".join(f"- {issue.msg}" for issue in issues)
    return f"{count} · **{len(issues)} to fix before running:**\n{lines}", own


def problems_markdown(drafts: list[form.Draft]) -> str:
    return form_feedback(drafts)[0]


def _structural(change: Callable[[list[form.Draft]], list[form.Draft] | None]) -> Callable:
    """An edit that adds, removes or reorders components: bumps `layout`, so the form re-renders."""

    def handler(current: list[form.Draft], version: int) -> tuple:
        try:
            changed = change(current)
        except form.FormError as exc:
            raise gr.Error(str(exc)) from None
        current = current if changed is None else changed
        return current, version + 1, problems_markdown(current)

    return handler


def _typed(uid: str, change: Callable[[form.Draft, str], None]) -> Callable:
    """An edit of text in place: no re-render, so the cursor stays where it is."""

    def handler(value: str, current: list[form.Draft]) -> tuple:
        try:
            change(form.find(current, uid), value)
        except form.FormError as exc:
            raise gr.Error(str(exc)) from None
        problems, own = form_feedback(current)
        return current, problems, own.get(uid, "")

    return handler


def question_block(
    draft: form.Draft,
    index: int,
    count: int,
    drafts_state: gr.State,
    layout: gr.State,
    problems: gr.Markdown,
    own_messages: str,
) -> None:
    """The components of one question, keyed by its uid so typed values survive re-renders."""
    uid = draft.uid
    structural_io = {"inputs": [drafts_state, layout], "outputs": [drafts_state, layout, problems]}
    structural = _structural

    with gr.Group(key=f"q-{uid}", elem_classes=["question-card"]):
        with gr.Row(equal_height=True):
            gr.Markdown(f"**Question {index + 1}** · {draft.type}", elem_classes=["q-title"])
            up = gr.Button("↑", **SMALL, interactive=index > 0, key=f"{uid}-up")
            down = gr.Button("↓", **SMALL, interactive=index < count - 1, key=f"{uid}-down")
            twin = gr.Button("Duplicate", size="sm", scale=0, min_width=90, key=f"{uid}-dup")
            drop = gr.Button("Remove", size="sm", scale=0, min_width=80, key=f"{uid}-rm")
        with gr.Row():
            qid = _box(draft.id, label="Question id", key=f"{uid}-id", scale=3)
            kind = gr.Dropdown(
                list(QUESTION_TYPES),
                value=draft.type,
                label="Type",
                key=f"{uid}-type",
                scale=1,
                interactive=True,
            )
        instructions = "" if draft.instructions is ABSENT else describe(draft.instructions)
        instr = _box(
            instructions,
            label="Instructions",
            placeholder="What should the model decide? (left empty, the question id is used)",
            key=f"{uid}-instr",
        )
        own = gr.Markdown(own_messages, elem_classes=["q-problems"])
        # .change, not .input: pasted and autofilled text counts too; the outputs never include
        # the box itself, so a change cannot loop.
        typed_io = {
            "outputs": [drafts_state, problems, own],
            "trigger_mode": "always_last",
            **EDITS,
        }

        def typed(change: Callable[[form.Draft, str], None]) -> Callable:
            return _typed(uid, change)

        def set_id(d: form.Draft, v: str) -> None:
            d.id = v

        def set_instructions(d: form.Draft, v: str) -> None:
            d.instructions = v if v.strip() else ABSENT

        qid.change(typed(set_id), [qid, drafts_state], **typed_io)
        instr.change(typed(set_instructions), [instr, drafts_state], **typed_io)

        def set_type(value: str, current: list[form.Draft], version: int) -> tuple:
            return _structural(lambda c: setattr(form.find(c, uid), "type", value))(
                current, version
            )

        kind.input(set_type, [kind, drafts_state, layout], structural_io["outputs"], **EDITS)
        up.click(structural(lambda c: form.move_question(c, uid, -1)), **structural_io, **EDITS)
        down.click(structural(lambda c: form.move_question(c, uid, 1)), **structural_io, **EDITS)
        twin.click(structural(lambda c: form.duplicate_question(c, uid)), **structural_io, **EDITS)
        drop.click(structural(lambda c: form.remove_question(c, uid)), **structural_io, **EDITS)

        if draft.type == "choice":
            _choice_rows(draft, drafts_state, typed, typed_io, structural, structural_io)
        elif draft.type == "score":
            _score_rows(draft, drafts_state, typed, typed_io, structural, structural_io)
        else:
            with gr.Row():
                for side in ("true", "false"):
                    box = _box(
                        draft.noul_text(side),
                        label=f"What “{side}” means (optional)",
                        placeholder="left empty, the release's default wording is used",
                        key=f"{uid}-noul-{side}",
                    )

                    def set_side(d: form.Draft, v: str, side: str = side) -> None:
                        form.set_noul_side(d, side, v)

                    box.change(typed(set_side), [box, drafts_state], **typed_io)
        gr.Markdown(form.row_count_text(draft), elem_classes=["q-count"])


def _choice_rows(draft, drafts_state, typed, typed_io, structural, structural_io) -> None:
    uid = draft.uid
    for number, row in enumerate(draft.options):
        with gr.Row(equal_height=True, key=f"{uid}-{row.uid}-row"):
            # Column labels once, above the first row; later rows keep them for screen readers.
            oid = _box(
                row.id,
                label="Option id",
                show_label=number == 0,
                key=f"{uid}-{row.uid}-id",
                scale=2,
            )
            text = _box(
                describe(row.description),
                label="Description (optional)",
                show_label=number == 0,
                placeholder="what this option means (optional)",
                key=f"{uid}-{row.uid}-text",
                scale=4,
            )
            drop = gr.Button("✕", **SMALL, key=f"{uid}-{row.uid}-rm")

        def set_option_id(d: form.Draft, v: str, r: str = row.uid) -> None:
            if (found := form.find_row(d, "option", r)) is not None:
                found.id = v

        def set_option_text(d: form.Draft, v: str, r: str = row.uid) -> None:
            if (found := form.find_row(d, "option", r)) is not None:
                found.description = form.text_value(v)

        oid.change(typed(set_option_id), [oid, drafts_state], **typed_io)
        text.change(typed(set_option_text), [text, drafts_state], **typed_io)
        drop.click(
            structural(lambda c, r=row.uid: form.remove_row(form.find(c, uid), "option", r)),
            **structural_io,
            **EDITS,
        )
    add = gr.Button("+ Add option", size="sm", key=f"{uid}-add-option")
    add.click(
        structural(lambda c: form.add_row(form.find(c, uid), "option")), **structural_io, **EDITS
    )


def _score_rows(draft, drafts_state, typed, typed_io, structural, structural_io) -> None:
    uid = draft.uid
    for level, row in enumerate(draft.levels):
        with gr.Row(equal_height=True, key=f"{uid}-{row.uid}-row"):
            text = _box(
                describe(row.description),
                label=f"Level {level}" + (" (lowest)" if level == 0 else ""),
                key=f"{uid}-{row.uid}-text",
                scale=5,
            )
            up = gr.Button("↑", **SMALL, interactive=level > 0, key=f"{uid}-{row.uid}-up")
            down = gr.Button(
                "↓", **SMALL, interactive=level < len(draft.levels) - 1, key=f"{uid}-{row.uid}-dn"
            )
            drop = gr.Button("✕", **SMALL, key=f"{uid}-{row.uid}-rm")

        def set_level(d: form.Draft, v: str, r: str = row.uid) -> None:
            if (found := form.find_row(d, "level", r)) is not None:
                found.description = form.text_value(v)

        text.change(typed(set_level), [text, drafts_state], **typed_io)
        for button, delta in ((up, -1), (down, 1)):
            button.click(
                structural(
                    lambda c, r=row.uid, n=delta: form.move_row(form.find(c, uid), "level", r, n)
                ),
                **structural_io,
                **EDITS,
            )
        drop.click(
            structural(lambda c, r=row.uid: form.remove_row(form.find(c, uid), "level", r)),
            **structural_io,
            **EDITS,
        )
    add = gr.Button("+ Add level", size="sm", key=f"{uid}-add-level")
    add.click(
        structural(lambda c: form.add_row(form.find(c, uid), "level")), **structural_io, **EDITS
    )
