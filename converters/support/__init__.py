"""The support library every converter is written on, and the shape every converter has.

The shape (:mod:`ls_trajeval.converters.base`): a converter is a module named after its format that defines
``CONVERTER = Converter(name, description, shapes, detect, one, ...)``:

- ``detect(sample)``: how sure it is that a file is its format, from what :class:`~.files.Sample` shows of it;
- ``one(record, origin)``: one record to its traces (and warnings); a bad record raises (``BadRecord``, or
  anything: the driver makes it the record's one located error and goes on with the next record);
- the hooks its format needs: ``split`` (the records one document or line holds), ``read`` (a file that is no
  JSON or JSONL of records: markdown, zip members, a big document streamed, stream events joined) and
  ``gather`` (several records make one trace: a session, a trace's spans in any order).

One driver (``base.run``) reads the records, passes each to ``one`` (or the gather) under a guard, and checks
every trace id against those given before; no converter loops over a file itself. A typical converter::

    NAME = "myformat"

    def detect(sample: Sample) -> float:
        objs = sample_objects(sample)
        return 0.9 if objs and isinstance(objs[0], dict) and "my_steps" in objs[0] else 0.0

    def one(rec: Any, origin: Origin) -> list:        # one record -> its trace (and warnings)
        steps = expect(rec.get("my_steps"), list, "my_steps")
        out = StepList()
        for i, s in enumerate(steps):
            ...
            out.call(cid, step("action", name, render_args(args), {"tool_call_id": cid, "timestamp": ts}))
            out.result(cid, step("observation", value_text(result), None, {"tool_call_id": cid}))
        return [finish(origin, rec.get("id") or default_id(origin), task, out.steps(), {"model": rec.get("model")})]

    CONVERTER = Converter(name=NAME, description="...", shapes="...", detect=detect, one=one)

The modules:

- :mod:`.files`: each record of a file with its :class:`~.files.Origin` (on the reading layer,
  :mod:`ls_trajeval.core.jsonfiles`); what a detector sees of a file; zip archives; big documents streamed with
  ijson; what a file or record holds in words (for refusals).
- :mod:`.errors`: :class:`~.errors.BadRecord` and :func:`~.errors.expect` for bad input, :func:`~.errors.guarded`
  to run a part of a record so its failure is one located error, warnings.
- :mod:`.steps`: **the step convention** (its module docstring), :func:`~.steps.step`,
  :class:`~.steps.StepList` (calls paired with results), :func:`~.steps.finish` (a trace with its provenance),
  stable ids, text and argument rendering.
- :mod:`.chat`: chat-message dialects (OpenAI, Anthropic, generic role/content parts), tool calls, the facts of an
  API log record, and the gather of a log that is records or one session.
- :mod:`.trees`: span and run trees, OTLP attributes, model turns and tool runs assembled into steps, spans
  gathered by trace.
- :mod:`.times`: reading timestamps to order spans and runs.

The code these modules run for every record, message and step tests classes plainly (``x.__class__ is dict``)
where isinstance would do: with isinstance throughout them, the benchmark's cases take 1–3% more instructions
(anthropic 3.2%, claude_code and openai_chat 1.6%; ``benchmarks/converter_instructions.py``). Elsewhere, and in
the converters' own modules, isinstance.
"""
