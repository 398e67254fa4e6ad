"""The tracing tools' edge, beside ``studio/``: the OTLP/HTTP receiver and its on-disk spool, the Phoenix and
Langfuse clients, and the local state (ingest checkpoints, the write-back ledger). Nothing here parses spans into
steps: the converters do that (``flows/ingest.py`` hands them the spans as the files they read)."""
