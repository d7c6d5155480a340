"""A tiny, random Clef release built from nothing, for tests and benchmarks on CPU."""

from tests.tiny_release.build import build_tiny_release, cached_tiny_release, source_digest

__all__ = ["build_tiny_release", "cached_tiny_release", "source_digest"]
