"""The ML backend: the model (pre-annotations, live running score), its hardened Flask app, webhook
processing with score write-back, the connect/resync logic, and a model class for label-studio-ml's
own server where that is installed (:mod:`.compat`)."""
