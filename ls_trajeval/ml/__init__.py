"""The ML backend: the model (pre-annotations, live running score), its hardened Flask app, webhook
processing with score write-back, the connect/resync logic, and a model class for label-studio-ml's
own server where that is installed (:mod:`.compat`); and an LLM judge on any OpenAI-compatible endpoint
(:mod:`.llm_judge`, its answer cache :mod:`.judge_cache`), whose verdicts ``ls-trajeval judge`` stores as
predictions."""
