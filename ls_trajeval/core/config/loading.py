"""Reading a config: a YAML (or JSON) file or text, or a dict already parsed, into the typed :class:`.Config`.

Parsing refuses duplicate keys; the parsed value is put into the guide's dialect (:mod:`.dialect`) and checked
against the one schema (:mod:`.validation`). Every problem found is collected, each naming its key path as the
user wrote it, before :class:`.ConfigError` is raised.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from . import dialect, validation
from .model import Config, ConfigError


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one (libyaml's parser where
    PyYAML has it: the pure-Python scanner takes seconds on a hostile megabyte)."""


def _construct_mapping(loader, node, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(None, None, f"unhashable key {key!r}", key_node.start_mark) \
                from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load(path: str | Path) -> Config:
    """Load a config file (YAML or JSON); raise ConfigError with every problem found."""
    p = Path(path)
    source = str(p)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(source, ["file not found"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(source, [f"not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None
    except OSError as exc:
        raise ConfigError(source, [f"cannot read: {exc.strerror}"]) from None
    return loads(text, source=source)


def loads(text: str, source: str = "<config>") -> Config:
    """Load a config from its YAML (or JSON) text; ``source`` names it in errors."""
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [f"{where}invalid YAML: {problem}"]) from None
    except RecursionError:
        raise ConfigError(source, ["invalid YAML: nested too deeply"]) from None
    return load_dict(data, source=source)


def load_dict(data: Any, source: str = "<config>") -> Config:
    """Validate an already-parsed config, in either dialect, and build the typed Config."""
    checker = validation.Checker(source)
    return validation.validate(dialect.to_guide(data, checker), checker)
