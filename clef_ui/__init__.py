"""Clef-Flash demo: System One decisions from a Gradio app and an HTTP API."""
