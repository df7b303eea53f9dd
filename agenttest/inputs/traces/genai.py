"""The OpenTelemetry GenAI semantic conventions read from spans and log records: model calls (``chat``,
``text_completion``, ``generate_content``), tool runs (``execute_tool``) and agent spans (``invoke_agent``).

Messages are read from, in this order: the ``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
``gen_ai.system_instructions`` attributes (conventions 1.37+, JSON text or structured values), the
``gen_ai.client.inference.operation.details`` event, the per-message events of conventions 1.28–1.36
(``gen_ai.{system,user,assistant,tool}.message``, ``gen_ai.choice``) as span events or as log records of the
span, the ``gen_ai.content.prompt``/``gen_ai.content.completion`` events of conventions ≤1.27, and
OpenLLMetry's indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agenttest.inputs.traces.calls import Call, Message, ToolRun, arguments_of
from agenttest.inputs.traces.otlp import Event, Export, OtlpError, Span

INFERENCE = ("chat", "text_completion", "generate_content")
AGENT = ("invoke_agent", "create_agent", "invoke_workflow")
ROLE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user", "gen_ai.assistant.message": "assistant",
               "gen_ai.tool.message": "tool"}
DETAILS = "gen_ai.client.inference.operation.details"


@dataclass
class Read:
    """The GenAI content of an export."""

    calls: list[Call] = field(default_factory=list)
    tools: list[ToolRun] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)  # the GenAI spans (their traces are conversations)
    silent: list[Span] = field(default_factory=list)  # model-call spans that carry no message content
    skipped_traces: int = 0  # traces with no GenAI span


def operation(span: Span) -> str:
    name = span.attributes.get("gen_ai.operation.name")
    if isinstance(name, str) and name:
        return name
    if "gen_ai.request.model" in span.attributes or "gen_ai.system" in span.attributes:
        return "chat"  # conventions before gen_ai.operation.name
    return ""


def read(export: Export) -> Read:
    """Model calls and tool runs of every GenAI span (and of log records whose span is not in the files)."""
    logs: dict[tuple[str, str], list[Event]] = {}
    for record in export.logs:
        logs.setdefault((record.trace_id, record.span_id), []).append(record.event)
    conversations = _conversations(export)
    out = Read()
    traces, genai_traces = set(), set()
    agents: dict[str, str] = {}
    agent_calls: list[Call] = []  # an agent span's messages stand for its model calls only in a trace without any
    for span in export.spans:
        traces.add(span.trace_id)
        op = operation(span)
        if op in AGENT and isinstance(span.attributes.get("gen_ai.agent.name"), str):
            agents.setdefault(span.trace_id, span.attributes["gen_ai.agent.name"])
    for span in export.spans:
        op = operation(span)
        if not op:
            continue
        genai_traces.add(span.trace_id)
        out.spans.append(span)
        conversation = conversations.get(span.trace_id, "")
        events = [*span.events, *logs.pop((span.trace_id, span.span_id), [])]
        if op == "execute_tool":
            out.tools.append(_tool_run(span, conversation))
        elif op in INFERENCE or op in AGENT:
            call = _call(span, events, conversation, agents.get(span.trace_id, ""), op)
            if call is not None:
                (out.calls if op in INFERENCE else agent_calls).append(call)
            elif op in INFERENCE:
                out.silent.append(span)
    with_model_calls = {c.trace for c in out.calls}
    out.calls += [c for c in agent_calls if c.trace not in with_model_calls]
    for (trace, _span), events in logs.items():  # log records of spans not in the files (a logs file alone)
        input_, output = _messages_of({}, events)
        if input_ or output:
            first = events[0]
            assert first.place is not None
            out.calls.append(Call(start=first.time, input=tuple(input_), output=tuple(output), where=first.place, trace=trace,
                                  conversation=conversations.get(trace, ""), **_details(first.attributes)))
    out.skipped_traces = len(traces - genai_traces)
    return out


def _conversations(export: Export) -> dict[str, str]:
    """Each trace's conversation: the first ``gen_ai.conversation.id`` (else ``session.id``) on its spans."""
    out: dict[str, str] = {}
    for span in export.spans:
        for key in ("gen_ai.conversation.id", "session.id"):
            value = span.attributes.get(key)
            if isinstance(value, (str, int)) and str(value) and span.trace_id not in out:
                out[span.trace_id] = str(value)
    for record in export.logs:
        value = record.event.attributes.get("gen_ai.conversation.id")
        if isinstance(value, str) and value and record.trace_id not in out:
            out[record.trace_id] = value
    return out


def _details(attrs: dict[str, Any]) -> dict[str, Any]:
    """Model, usage and the tools offered, as ``Call`` fields."""
    model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or ""
    tokens_in = attrs.get("gen_ai.usage.input_tokens", attrs.get("gen_ai.usage.prompt_tokens", 0))
    tokens_out = attrs.get("gen_ai.usage.output_tokens", attrs.get("gen_ai.usage.completion_tokens", 0))
    usage = (tokens_in if isinstance(tokens_in, int) else 0, tokens_out if isinstance(tokens_out, int) else 0)
    return {"model": str(model), "usage": usage, "tools": _tool_names(attrs.get("gen_ai.tool.definitions"))}


def _tool_names(value: Any) -> tuple[str, ...]:
    value = _json(value) if isinstance(value, str) else value
    names = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict):
            name = item.get("name") or (item.get("function") or {}).get("name")
            if isinstance(name, str):
                names.append(name)
    return tuple(names)


def _call(span: Span, events: list[Event], conversation: str, agent: str, op: str) -> Call | None:
    try:
        input_, output = _messages_of(span.attributes, events)
    except ValueError as exc:
        raise OtlpError(f"span '{span.name}': {exc}", span.place.location()) from None
    if not input_ and not output:
        return None
    name = span.attributes.get("gen_ai.agent.name")
    agent = name if op in AGENT and isinstance(name, str) else agent
    return Call(start=span.start, input=tuple(input_), output=tuple(output), where=span.place, trace=span.trace_id,
                conversation=conversation, error=span.error, agent=agent,
                **_details(span.attributes))


def _tool_run(span: Span, conversation: str) -> ToolRun:
    attrs = span.attributes
    name = attrs.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool").strip()
    arguments = attrs.get("gen_ai.tool.call.arguments")
    error = span.error or (str(attrs["error.type"]) if attrs.get("error.type") else "")
    return ToolRun(start=span.start, name=str(name), call_id=str(attrs.get("gen_ai.tool.call.id") or ""),
                   arguments=arguments_of(arguments) if arguments is not None else None,
                   result=attrs.get("gen_ai.tool.call.result"), error=error, where=span.place, trace=span.trace_id,
                   conversation=conversation)


# ---- messages ------------------------------------------------------------------------------------


def _messages_of(attrs: dict[str, Any], events: list[Event]) -> tuple[list[Message], list[Message]]:
    """The input and output messages of one model call, from wherever the recording put them."""
    sources: list[dict[str, Any]] = [attrs, *(e.attributes for e in events if e.name == DETAILS)]
    for found in sources:
        if "gen_ai.input.messages" in found or "gen_ai.output.messages" in found:
            input_ = messages(found.get("gen_ai.input.messages"), "gen_ai.input.messages")
            system = found.get("gen_ai.system_instructions")
            if system is not None and not any(m["role"] == "system" for m in input_):
                input_ = [{"role": "system", "content": _parts_text(_json(system) if isinstance(system, str) else system)}, *input_]
            return input_, messages(found.get("gen_ai.output.messages"), "gen_ai.output.messages")
    input_, output = _event_messages(events)
    if input_ or output:
        return input_, output
    return _indexed(attrs, "gen_ai.prompt"), _indexed(attrs, "gen_ai.completion")


def _event_messages(events: list[Event]) -> tuple[list[Message], list[Message]]:
    input_: list[Message] = []
    output: list[Message] = []
    for event in events:
        fields = _fields(event)
        if event.name in ROLE_EVENTS:
            input_ += _openai(dict(fields, role=fields.get("role") or ROLE_EVENTS[event.name]), "event " + event.name)
        elif event.name == "gen_ai.choice":
            message: dict[str, Any] = fields["message"] if isinstance(fields.get("message"), dict) else fields
            output += _openai(dict(message, role="assistant"), "event gen_ai.choice")
        elif event.name == "gen_ai.content.prompt":
            input_ += messages(event.attributes.get("gen_ai.prompt"), "gen_ai.prompt")
        elif event.name == "gen_ai.content.completion":
            output += messages(event.attributes.get("gen_ai.completion"), "gen_ai.completion")
    return input_, output


def _fields(event: Event) -> dict[str, Any]:
    """A per-message event's fields: its body (a log record), else ``gen_ai.event.content`` (JSON), else its
    attributes."""
    if isinstance(event.body, dict):
        return event.body
    content = event.attributes.get("gen_ai.event.content")
    if isinstance(content, str):
        parsed = _json(content)
        if isinstance(parsed, dict):
            return parsed
    return {k: (_json(v) if k == "tool_calls" and isinstance(v, str) else v) for k, v in event.attributes.items()}


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def messages(value: Any, what: str) -> list[Message]:
    """Messages in the conventions' JSON form (role + parts) or OpenAI's (role + content / tool_calls)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{what} is not JSON ({exc})") from None
    if isinstance(value, dict):
        value = value.get("messages", value.get("choices", [value]))
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of messages, not {type(value).__name__}")
    out: list[Message] = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise ValueError(f"{what}: message {i + 1} is not an object")
        if isinstance(item.get("message"), dict):  # a choice
            item = dict(item["message"], role=item["message"].get("role", "assistant"))
        out += _from_parts(item, f"{what} message {i + 1}") if "parts" in item else _openai(item, f"{what} message {i + 1}")
    return out


def _from_parts(item: dict[str, Any], what: str) -> list[Message]:
    role = str(item.get("role") or "user")
    parts = item.get("parts") or []
    if not isinstance(parts, list):
        raise ValueError(f"{what}: 'parts' must be a list")
    content: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    responses: list[Message] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "tool_call":
            calls.append(_tool_call(part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == "tool_call_response":
            result = part.get("response", part.get("result"))
            responses.append({"role": "tool", "tool_call_id": str(part.get("id") or ""), "content": _result_text(result)})
        elif kind in ("uri", "blob") and part.get("modality") == "image":
            url = part.get("uri") if kind == "uri" else f"data:{part.get('mime_type') or 'image/png'};base64,{part.get('content', '')}"
            content.append({"type": "image_url", "image_url": {"url": url}})
        elif kind != "reasoning" and isinstance(part.get("content"), str):
            content.append({"type": "text", "text": part["content"]})
    if responses:  # a tool message (or a user message of tool results): one message per result, its text aside
        return responses
    if role == "tool":
        return [{"role": "tool", "tool_call_id": str(item.get("id") or item.get("tool_call_id") or ""), "content": _joined(content)}]
    return [_message(role, content, calls)]


def _openai(item: dict[str, Any], what: str) -> list[Message]:
    role = str(item.get("role") or "user")
    raw = item.get("content")
    if role == "tool":
        return [{"role": "tool", "tool_call_id": str(item.get("tool_call_id") or item.get("id") or ""), "content": _result_text(raw)}]
    if isinstance(raw, list):
        content = [p if p.get("type") != "text" else {"type": "text", "text": str(p.get("text", ""))} for p in raw if isinstance(p, dict)]
    elif raw is None:
        content = []
    else:
        content = [{"type": "text", "text": raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)}]
    calls = []
    raw_calls = item.get("tool_calls") or []
    for call in raw_calls if isinstance(raw_calls, list) else []:
        if isinstance(call, dict):
            function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
            calls.append(_tool_call(call.get("id"), function.get("name"), function.get("arguments")))
    return [_message(role, content, calls)]


def _message(role: str, content: list[dict[str, Any]], calls: list[dict[str, Any]]) -> Message:
    message: Message = {"role": role}
    if all(p.get("type") == "text" for p in content):
        message["content"] = _joined(content) if content or not calls else None
    else:
        message["content"] = content
    if calls:
        message["tool_calls"] = calls
    return message


def _joined(content: list[dict[str, Any]]) -> str:
    return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    args = arguments_of(arguments) if arguments is not None else {}
    return {"id": str(call_id or ""), "type": "function", "function": {"name": str(name or ""), "arguments": args}}


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in value):
        return "\n".join(str(p.get("text", p.get("content", ""))) for p in value)
    return json.dumps(value, ensure_ascii=False)


def _parts_text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(p.get("content", "")) for p in value if isinstance(p, dict))
    return str(value)


_INDEXED = re.compile(r"^(\d+)\.(.+)$")


def _indexed(attrs: dict[str, Any], prefix: str) -> list[Message]:
    """OpenLLMetry's flattened messages: ``gen_ai.prompt.0.role``, ``….content``, ``….tool_calls.1.name``."""
    found: dict[int, dict[str, Any]] = {}
    for name, value in attrs.items():
        if not name.startswith(prefix + "."):
            continue
        match = _INDEXED.match(name[len(prefix) + 1:])
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    out: list[Message] = []
    for index in sorted(found):
        fields = found[index]
        calls: dict[int, dict[str, Any]] = {}
        for name, value in fields.items():
            call = _INDEXED.match(name.removeprefix("tool_calls.")) if name.startswith("tool_calls.") else None
            if call:
                calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
        item = {"role": fields.get("role") or ("assistant" if prefix.endswith("completion") else "user"),
                "content": fields.get("content"), "tool_call_id": fields.get("tool_call_id"),
                "tool_calls": [{"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
                               for _, c in sorted(calls.items())]}
        out += _openai(item, f"{prefix}.{index}")
    return out
