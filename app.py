"""Start the Clef-Flash FP8 demo: read the settings, serve the page, load the model behind it."""

from __future__ import annotations

import sys

from clef_ui.config import parse_app_args
from clef_ui.runtime import ModelRuntime
from clef_ui.ui import build_demo, launch_options

# Module-level, as gradio apps are: importing app.py gives the page without loading the model.
settings = parse_app_args(sys.argv[1:] if __name__ == "__main__" else [])
runtime = ModelRuntime(settings)
demo = build_demo(runtime)

if __name__ == "__main__":
    demo.launch(
        server_name=settings.host,
        server_port=settings.port,
        share=settings.share,
        prevent_thread_lock=True,
        **launch_options(),
    )
    # Loading starts once the page is served, so heavy imports never delay the first page.
    runtime.start()
    demo.block_thread()
