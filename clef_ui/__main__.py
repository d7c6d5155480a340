"""Run the command line with `python -m clef_ui`."""

from clef_ui.cli import main

raise SystemExit(main())
