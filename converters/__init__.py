"""Converters from agent-log formats to the trace model (installed as ``ls_trajeval.converters``).

Each format is one module here that defines ``CONVERTER``, an instance of
:class:`ls_trajeval.converters.base.Converter`. The registry finds them by scanning this
package, so adding a format is adding a module.
"""
from .registry import all_converters, detect, get_converter

__all__ = ["all_converters", "detect", "get_converter"]
