"""A small agent instrumented with the real OpenTelemetry SDK: each run is one trace of an AGENT span over an LLM call
that asks for a tool, the TOOL span that runs it, and a final LLM answer. The OpenInference attributes are set by
hand through the SDK with the names from ``openinference-semantic-conventions`` (the instrumentation libraries set
the same ones around a real model client; no model runs here). Text carries markup and non-ASCII on purpose."""
from __future__ import annotations

import json
from collections.abc import Sequence

from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

NASTY = "<script>alert(1)</script> & \"Grüße\" — 東京"
KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND


def provider(exporter: SpanExporter, service: str = "test-agent", **batch) -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    tp.add_span_processor(BatchSpanProcessor(exporter, **batch))
    return tp


def run(tp: TracerProvider, n: int, *, fail_tool: bool = False) -> str:
    """One agent run; returns its trace id (hex)."""
    tracer = tp.get_tracer("tests.tracing.agent")
    question = f"What is the weather in city {n}? {NASTY}"
    with tracer.start_as_current_span("agent", attributes={
            KIND: OpenInferenceSpanKindValues.AGENT.value, SpanAttributes.INPUT_VALUE: question}) as root:
        with tracer.start_as_current_span("llm", attributes={
                KIND: OpenInferenceSpanKindValues.LLM.value, SpanAttributes.LLM_MODEL_NAME: "stand-in-1",
                "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": question,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": f"I will look up city {n}.",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "weather",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps({"city": n})}):
            pass
        with tracer.start_as_current_span("weather", attributes={
                KIND: OpenInferenceSpanKindValues.TOOL.value, SpanAttributes.TOOL_NAME: "weather",
                SpanAttributes.INPUT_VALUE: json.dumps({"city": n}),
                SpanAttributes.OUTPUT_VALUE: "error: timeout" if fail_tool else f"{n} °C <sunny>"}):
            pass
        with tracer.start_as_current_span("llm", attributes={
                KIND: OpenInferenceSpanKindValues.LLM.value, SpanAttributes.LLM_MODEL_NAME: "stand-in-1",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": f"It is {n} °C in city {n}. {NASTY}"}):
            pass
        return format(root.get_span_context().trace_id, "032x")


def runs(tp: TracerProvider, numbers: Sequence[int]) -> list[str]:
    return [run(tp, n) for n in numbers]
