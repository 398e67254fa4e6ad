"""One registry of converters, filled by scanning the package for modules that define CONVERTER
(sub-packages, such as the ``support`` library, are not formats).

A converter's module is named after its format, so a run with an explicit ``--format`` imports that one
module instead of all twenty (a tenth of a second of every CLI start)."""
from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from .base import Converter, Sample

#: below this a detector's guess is not trusted
MIN_CONFIDENCE = 0.5


@lru_cache(maxsize=1)
def names() -> tuple[str, ...]:
    """The format names, without importing a converter."""
    pkg = importlib.import_module(__package__)
    return tuple(sorted(info.name for info in pkgutil.iter_modules(pkg.__path__)
                        if not info.ispkg and info.name not in ("base", "registry") and not info.name.startswith("_")))


@lru_cache(maxsize=None)
def _load(name: str) -> Converter | None:
    conv = getattr(importlib.import_module(f"{__package__}.{name}"), "CONVERTER", None)
    return conv if isinstance(conv, Converter) and conv.name == name else None


@lru_cache(maxsize=1)
def all_converters() -> tuple[Converter, ...]:
    return tuple(c for c in map(_load, names()) if c is not None)


def get_converter(name: str) -> Converter:
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


# ---------------------------------------------------------------- the formats nearest to a file none claims

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=None)
def _shape_words(name: str) -> frozenset[str]:
    """The key names a format's ``shapes`` text mentions."""
    return frozenset(_WORD.findall(get_converter(name).shapes))


def closest(sample: Sample, exclude: Iterable[str] = (), limit: int = 3) -> list[tuple[str, float, list[str]]]:
    """(format, detector confidence, keys shared with the shapes it reads) of the formats nearest to a file:
    those whose detector gives it any confidence first, then those whose shapes share the most keys with it."""
    from .support.files import sample_objects, shape_keys

    objs = sample_objects(sample)
    keys = shape_keys(objs[0] if len(objs) == 1 else objs)
    skip = set(exclude)
    scored = []
    for c in all_converters():
        if c.name in skip:
            continue
        conf = confidence(c, sample)
        shared = sorted(keys & _shape_words(c.name))
        if conf > 0 or len(shared) >= 2:  # one shared key (an id, a type) says nothing
            scored.append((conf, len(shared), c.name, shared))
    scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
    return [(name, conf, shared) for conf, _, name, shared in scored[:limit]]


def closest_text(near: list[tuple[str, float, list[str]]]) -> str:
    """``closest formats: a (shares keys x, y), b (detector 0.30)``, or that none shares a key."""
    if not near:
        return "no format reads more than one of its keys"
    parts = []
    for name, conf, shared in near:
        why = [f"detector {conf:.2f}"] if conf > 0 else []
        if shared:
            why.append("shares keys " + ", ".join(shared[:6]) + (", …" if len(shared) > 6 else ""))
        parts.append(f"{name} ({'; '.join(why)})")
    return "closest formats: " + ", ".join(parts)


def looks_like(value: Any, source: str, exclude: Iterable[str] = ()) -> str:
    """``looks like potato`` when another format's detector is confident about one record, else ""."""
    sample = Sample(path=Path(source), head="", first_json=value)
    sure = [name for name, conf, _ in closest(sample, exclude) if conf >= MIN_CONFIDENCE]
    return "looks like " + " or ".join(sure[:2]) if sure else ""
