"""The ``trajectory_eval`` config: YAML (in the guide's dialect or Potato's native one) into typed objects.

:mod:`.model` holds the typed objects every later stage reads; :mod:`.loading` reads a file, text or parsed
value; :mod:`.dialect` puts Potato's keys into the guide's dialect first; :mod:`.validation` checks the one schema,
collecting every problem (the file, the key path as written, what was expected) before :class:`ConfigError` is
raised. The names below are the package's API.
"""
from .loading import load, load_dict, loads
from .model import (
    DEFAULT_SEVERITIES,
    DEFAULT_STEP_DISPLAY,
    Config,
    ConfigError,
    DetectorSpec,
    ErrorCategory,
    ErrorType,
    PrelabelMapping,
    RadioLabel,
    RadioScheme,
    Rationale,
    RunningScore,
    Severity,
    StepStyle,
    Suggestions,
    TrajectoryScheme,
    humanize,
)

__all__ = ["DEFAULT_SEVERITIES", "DEFAULT_STEP_DISPLAY", "Config", "ConfigError", "DetectorSpec", "ErrorCategory",
           "ErrorType", "PrelabelMapping", "RadioLabel", "RadioScheme", "Rationale", "RunningScore", "Severity",
           "StepStyle", "Suggestions", "TrajectoryScheme", "humanize", "load", "load_dict", "loads"]
