"""The ML backend: a ``label-studio-ml`` model (pre-annotations, live running score), its hardened
WSGI app, webhook processing with score write-back, and the connect/resync logic."""
