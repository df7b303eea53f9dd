"""A small weather agent "in production", traced by instrumentation that no one here wrote, writing OTLP/JSON
files with the official OpenTelemetry file exporter — the traces ``agent-test import`` is tested on.

    python tests/traced_app.py openai-v2  API_URL SPANS.jsonl [LOGS.jsonl]   # the openai SDK, instrumented by
        opentelemetry-instrumentation-openai-v2: a hand-written tool loop (two conversations)
    python tests/traced_app.py agents-sdk API_URL SPANS.jsonl                # the OpenAI Agents SDK, instrumented by
        opentelemetry-instrumentation-openai-agents-v2 (the SDK's own tracing, mapped to the GenAI conventions)

The model is the loopback chat-completions server (tests/openai_server.py) answering with ``responder``,
which the tests also give the agent under test. Content capture is whatever the environment says
(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), so the tests can record with and without it."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from openai_server import Answer, last_user

SYSTEM = "You are a weather assistant. Answer with the temperature."
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
CONVERSATIONS = (["What's the weather in Paris? Write to bob@example.com if it rains."],
                 ["Hi!", "Weather in Oslo, please"])


def weather(city: str) -> dict[str, Any]:
    """Production's tool: what the weather service said that day."""
    return {"city": city, "temp": {"Paris": 21, "Oslo": 4}.get(city, 15), "sky": "clear"}


def responder(request: dict[str, Any]) -> Answer:
    """The model: asks the offered weather tool for the city named (lower-case when the system prompt asks for
    it), then says what the tool answered."""
    messages = request.get("messages", [])
    if messages and messages[-1].get("role") == "tool":
        result = json.loads(messages[-1]["content"])
        if "error" in result:
            return Answer("Sorry, I could not get the weather.")
        return Answer(f"It is {result['temp']}°C in {result['city']}, {result['sky']}.")
    found = re.search(r"(?i)weather in (\w+)", last_user(request))
    offered = [t["function"]["name"] for t in request.get("tools", []) if "weather" in t["function"]["name"]]
    if not found or not offered:
        return Answer("Hello! Which city would you like the weather for?")
    system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
    city = found.group(1).lower() if "lower-case" in system else found.group(1)
    return Answer(tool_calls=[{"name": offered[0], "arguments": {"city": city}}])


def openai_v2(url: str, spans: str, logs: str | None) -> None:
    from openai import OpenAI
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(FileSpanExporter(spans)))
    options: dict[str, Any] = {"tracer_provider": provider}
    if logs:
        from opentelemetry.exporter.otlp.json.file._log_exporter import FileLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        options["logger_provider"] = LoggerProvider()
        options["logger_provider"].add_log_record_processor(BatchLogRecordProcessor(FileLogExporter(logs)))
    OpenAIInstrumentor().instrument(**options)
    client = OpenAI(base_url=url, api_key="sk-test-not-a-real-key-0123456789")
    tracer = trace.get_tracer("weather-app", tracer_provider=provider)
    plain, wrapped = CONVERSATIONS
    _loop(client, plain)  # each model call its own trace: the importer joins them by their messages
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather", "gen_ai.conversation.id": "conv-oslo-1"}
    with tracer.start_as_current_span("invoke_agent weather", attributes=attributes):
        _loop(client, wrapped)
    provider.shutdown()
    if logs:
        options["logger_provider"].shutdown()


def _loop(client: Any, said: list[str]) -> None:
    """The app's tool loop: each user message, then model calls until the model answers without tools."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for text in said:
        messages.append({"role": "user", "content": text})
        while True:
            reply = client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS).choices[0].message
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                result = weather(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})


def agents_sdk(url: str, spans: str) -> None:
    import asyncio

    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        RunConfig,
        Runner,
        function_tool,
        set_trace_processors,
    )
    from openai import AsyncOpenAI
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(FileSpanExporter(spans)))
    set_trace_processors([])  # the SDK's own exporter (to OpenAI's backend) never runs here
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return json.dumps(weather(city))

    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=AsyncOpenAI(base_url=url, api_key="sk-test-not-a-real-key-0123456789"))
    agent = Agent(name="weather", instructions=SYSTEM, tools=[get_weather], model=model)
    asyncio.run(Runner.run(agent, CONVERSATIONS[0][0], run_config=RunConfig(tracing_disabled=False)))
    provider.shutdown()


if __name__ == "__main__":
    kind, api, out = sys.argv[1:4]
    if kind == "openai-v2":
        openai_v2(api, out, sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        agents_sdk(api, out)
