"""The model for label-studio-ml's own server, for teams that run it instead of ``ls-trajeval ml serve``.

Where ``label-studio-ml`` (1.0.9, the last release on the package index) is installed,
:class:`TrajevalLabelStudioModel` is a ``LabelStudioMLBase`` that its ``init_app(model_class=...)`` (and so
``label-studio-ml init --script ...`` / ``start``) can serve. The config comes from ``LS_TRAJEVAL_ML_CONFIG``,
as in our own workers; the label config of each project decides the layout. That server brings its own
behaviour with it (one worker, state filled by ``/setup``, a process per webhook, no authentication, version
``INITIAL``): predictions and the live score work, score write-back needs ``ml serve`` or ``ml resync``.

label-studio-ml is no dependency of this project: it pins Flask 1.1.2, Werkzeug 2.0.2 and Jinja2 3.0.3, and
imports redis and rq without declaring them; install those yourself next to it.
"""
from __future__ import annotations

from functools import cache

from label_studio_ml.model import LabelStudioMLBase

from . import env
from .model import Predictor, TrajevalModel


@cache
def _model() -> TrajevalModel:
    # label-studio-ml makes a new model object on every /setup: build the detectors once per process
    return TrajevalModel(Predictor(env.config()))


class TrajevalLabelStudioModel(LabelStudioMLBase):
    def __init__(self, label_config=None, train_output=None, **kwargs):
        super().__init__(label_config=label_config, train_output=train_output, **kwargs)
        self.model = _model()

    def predict(self, tasks, **kwargs):
        return self.model.predict(tasks, label_config=self.label_config or "", context=kwargs.get("context"))
