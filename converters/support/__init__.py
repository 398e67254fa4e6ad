"""The support library every converter is written on.

- :mod:`.files`: reading inputs (directories, gzip, zip, JSON, JSONL, big documents streamed with
  ijson), each record with its :class:`~.files.Origin`; what a detector sees of a file, and what a file or
  record holds in words (for refusals).
- :mod:`.errors`: :class:`~.errors.BadRecord` and :func:`~.errors.expect` for bad input,
  :func:`~.errors.guarded` to run one record so its failure is one located error (a record a converter
  found nothing in is described, and named after the format it looks like), warnings.
- :mod:`.steps`: **the step convention** (its module docstring), :func:`~.steps.step`,
  :class:`~.steps.StepList` (calls paired with results), :func:`~.steps.finish` (a trace with its
  provenance), stable ids, text and argument rendering.
- :mod:`.chat`: chat-message dialects (OpenAI, Anthropic, generic role/content parts), tool calls.
- :mod:`.trees`: span and run trees, OTLP attributes, model turns and tool runs assembled into steps.
- :mod:`.times`: reading timestamps to order spans and runs.

A converter module (named after its format) defines ``CONVERTER``; a typical one reads::

    def one(rec, origin):                       # one record -> its trace (and warnings)
        out = StepList()
        ...
        out.call(cid, step("action", name, render_args(args), {"tool_call_id": cid, "timestamp": ts}))
        out.result(cid, step("observation", value_text(result), None, {"tool_call_id": cid}))
        return [finish(origin, rec.get("id") or default_id(origin), task, out.steps(), {"model": rec.get("model")})]

    def convert(path):
        yield from each_record(path, NAME, one)   # each record guarded: a bad one is one located error
"""
