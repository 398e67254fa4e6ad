"""One registry of converters, filled by scanning the package for modules that define CONVERTER: every module
of the package but the machinery in :data:`NOT_FORMATS` (sub-packages, such as the ``support`` library, are not
formats either). Format detection over the registry is :mod:`.detection`.

A converter's module is named after its format, so a run with an explicit ``--format`` imports that one
module instead of all thirty (a tenth of a second of every CLI start, benchmarks/converter_instructions.py)."""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache, lru_cache

from .base import Converter, Sample

#: the package's modules that are no format: what converters are and run on, the registry, detection, workers
NOT_FORMATS = frozenset({"base", "registry", "detection", "parallel"})


@lru_cache(maxsize=1)
def names() -> tuple[str, ...]:
    """The format names, without importing a converter."""
    pkg = importlib.import_module(__package__)
    return tuple(sorted(info.name for info in pkgutil.iter_modules(pkg.__path__)
                        if not info.ispkg and info.name not in NOT_FORMATS and not info.name.startswith("_")))


@cache
def _load(name: str) -> Converter | None:
    conv = getattr(importlib.import_module(f"{__package__}.{name}"), "CONVERTER", None)
    return conv if isinstance(conv, Converter) and conv.name == name else None


@lru_cache(maxsize=1)
def all_converters() -> tuple[Converter, ...]:
    """Every converter, in name order (importing every converter module)."""
    return tuple(c for c in map(_load, names()) if c is not None)


def get_converter(name: str) -> Converter:
    """The converter of format ``name`` (importing its module alone); KeyError naming the known formats."""
    conv = _load(name) if name in names() else None
    if conv is None:
        raise KeyError(f"unknown format {name!r}; known formats: {', '.join(c.name for c in all_converters())}")
    return conv


def detect(sample: Sample) -> list[tuple[float, Converter]]:
    """Candidates for a file, best first (confidence > 0 only)."""
    scored = [(confidence(c, sample), c) for c in all_converters()]
    return sorted([(s, c) for s, c in scored if s > 0], key=lambda sc: -sc[0])


def confidence(conv: Converter, sample: Sample) -> float:
    """A detector that trips over a file (fuzzing found several on odd JSON) does not claim it."""
    try:
        return float(conv.detect(sample) or 0)
    except Exception:  # noqa: BLE001 - detection must never cost the run
        return 0.0
