"""ls-trajeval: per-step error localization for agent traces in Label Studio."""
__version__ = "0.1.0"
