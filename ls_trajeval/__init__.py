"""ls-trajeval: per-step error localization for agent traces in Label Studio.

``core`` (pure: config, traces, labels, scoring, result shapes, task data, label config, export records),
``studio`` (the Label Studio client, a local server), ``flows`` (convert, import, export, relayout, prelabels,
demo), ``analysis`` (report, agreement, PRM data), ``ml`` (the ML backend), ``cli`` (the commands);
``converters`` and ``label_configs`` are installed under this package. docs/architecture.md has the map.
"""
__version__ = "0.1.0"
