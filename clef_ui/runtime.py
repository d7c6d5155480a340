"""The one model of a running app: loaded in the background, with a status people can read."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clef_ui.config import Settings

if TYPE_CHECKING:
    from clef_ui.engine import Engine

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Status:
    state: str  # "loading", "ready" or "failed"
    text: str

    @property
    def ready(self) -> bool:
        return self.state == "ready"


class ModelRuntime:
    """Starts loading at once and answers "is it ready?" without waiting for it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._engine: Engine | None = None
        self._error: str | None = None
        self._started = time.monotonic()
        self._thread: threading.Thread | None = None

    def start(self) -> ModelRuntime:
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name="clef-load", daemon=True)
            self._thread.start()
        return self

    def _load(self) -> None:
        try:
            from clef_ui.engine import Engine
            from clef_ui.release import ModelLoadError

            s = self.settings
            try:
                engine = Engine.load(s.model, s.revision, s.device, s.precision)  # type: ignore[arg-type]
                engine.warm_up()
            except ModelLoadError as exc:
                self._error = str(exc)
                return
            self._engine = engine
        except Exception as exc:  # the page must show any failure, not a dead spinner
            log.exception("loading the model failed")
            self._error = f"{type(exc).__name__}: {exc}"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until loading ends (for scripts and tests); True when ready."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._engine is not None

    @property
    def engine(self) -> Engine | None:
        return self._engine

    def status(self) -> Status:
        if self._engine is not None:
            info = self._engine.info
            return Status("ready", f"Ready · {info.describe()} · {self.settings.model}")
        if self._error is not None:
            return Status("failed", f"Model could not be loaded: {self._error}")
        waited = time.monotonic() - self._started
        return Status("loading", f"Loading {self.settings.model}… ({waited:.0f} s)")
