"""One registry of converters, filled by scanning the package for modules that define CONVERTER."""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from .base import Converter, Sample


@lru_cache(maxsize=1)
def all_converters() -> tuple[Converter, ...]:
    found = []
    pkg = importlib.import_module(__package__)
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name in ("base", "registry") or info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__package__}.{info.name}")
        conv = getattr(mod, "CONVERTER", None)
        if isinstance(conv, Converter):
            found.append(conv)
    return tuple(sorted(found, key=lambda c: c.name))


def get_converter(name: str) -> Converter:
    for c in all_converters():
        if c.name == name:
            return c
    names = ", ".join(c.name for c in all_converters())
    raise KeyError(f"unknown format {name!r}; known formats: {names}")


def detect(sample: Sample) -> list[tuple[float, Converter]]:
    """Candidates for a file, best first (confidence > 0 only)."""
    scored = [(_confidence(c, sample), c) for c in all_converters()]
    return sorted([(s, c) for s, c in scored if s > 0], key=lambda sc: -sc[0])


def _confidence(conv: Converter, sample: Sample) -> float:
    """A detector that trips over a file (fuzzing found several on odd JSON) does not claim it."""
    try:
        return float(conv.detect(sample) or 0)
    except Exception:  # noqa: BLE001 - detection must never cost the run
        return 0.0
