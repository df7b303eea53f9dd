"""Chat logs: JSON Lines of chat-completions request/response pairs, as a proxy or a gateway logs them.

A line is ``{"request": {...}, "response": {...}}`` (also ``request_body``/``response_body``, and either one
wrapped in ``{"body": ...}``); the request carries ``messages`` (and ``tools``), the response ``choices`` and
``usage``. An optional ``conversation_id``, ``session_id`` or ``thread_id`` on the line (or in the request's
``metadata``) names the conversation; without one, a request that continues an earlier transcript joins it.
Blank lines and lines starting with ``//`` are skipped."""

from __future__ import annotations

import json
from typing import Any

from agenttest.errors import Location
from agenttest.inputs.traces import genai
from agenttest.inputs.traces.calls import Call
from agenttest.inputs.traces.otlp import OtlpError
from agenttest.util.positions import json_message, json_offset, line_col

CONVERSATION_KEYS = ("conversation_id", "session_id", "thread_id")


class ChatLogError(OtlpError):
    """A line of a chat log that cannot be read: exit 2 at ``file:line:column``."""


def looks_like(text: str) -> bool:
    """A chat log, not OTLP: its first record is an object with a request (or messages) and no resourceSpans."""
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("//"):
            try:
                first = json.loads(line)
            except ValueError:
                return False
            return isinstance(first, dict) and bool({"request", "request_body"} & first.keys())
    return False


def read(file: str, text: str) -> list[Call]:
    calls = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ChatLogError(f"not JSON: {json_message(exc.msg)} (a chat log is one JSON object per line)",
                               Location(file, number, exc.colno)) from None
        calls.append(_call(file, number, line, record))
    return calls


def _at(file: str, number: int, line: str, path: list[Any]) -> Location:
    _, col = line_col(line, json_offset(line, path))
    return Location(file, number, col)


def _part(record: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for name in names:
        if name in record:
            value = record[name]
            if isinstance(value, dict) and isinstance(value.get("body"), (dict, str)) and "messages" not in value and "choices" not in value:
                value = value["body"]
            if isinstance(value, str):  # a body logged as JSON text
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            return name, value
    return None, None


def _call(file: str, number: int, line: str, record: Any) -> Call:
    where = Location(file, number, 1)
    if not isinstance(record, dict):
        raise ChatLogError(f"a chat log line must be a JSON object with 'request' and 'response', not {type(record).__name__}", where)
    req_key, request = _part(record, ("request", "request_body"))
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        raise ChatLogError("no chat-completions request with 'messages' on this line", _at(file, number, line, [req_key] if req_key else []),
                           "a chat log line is {\"request\": {\"model\", \"messages\": [...]}, \"response\": {\"choices\": [...]}}")
    res_key, response = _part(record, ("response", "response_body"))
    if not isinstance(response, dict):
        raise ChatLogError("no response on this line (an object under 'response')", _at(file, number, line, [res_key] if res_key else []),
                           "log the chat-completions response beside its request")
    try:
        sent = genai.messages(request["messages"], "request.messages")
        answered, error = _answer(response)
    except ValueError as exc:
        raise ChatLogError(str(exc), _at(file, number, line, [req_key, "messages"])) from None
    usage: dict[str, Any] = response["usage"] if isinstance(response.get("usage"), dict) else {}
    tools = tuple(str((t.get("function") or t).get("name", "")) for t in request.get("tools") or [] if isinstance(t, dict))
    return Call(start=number, input=tuple(sent), output=tuple(answered), where=where, conversation=_conversation(record, request),
                model=str(response.get("model") or request.get("model") or ""),
                usage=(_tokens(usage, "prompt_tokens", "input_tokens"), _tokens(usage, "completion_tokens", "output_tokens")),
                error=error, tools=tools)


def _answer(response: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    if "error" in response and "choices" not in response:
        error = response["error"]
        return [], str(error.get("message") if isinstance(error, dict) else error)
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError("the response has no 'choices' (a streamed response must be logged assembled)")
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        raise ValueError("the response's first choice has no 'message'")
    return genai.messages([dict(first["message"], role="assistant")], "response message"), ""


def _tokens(usage: dict[str, Any], *names: str) -> int:
    for name in names:
        if isinstance(usage.get(name), int):
            return int(usage[name])
    return 0


def _conversation(record: dict[str, Any], request: dict[str, Any]) -> str:
    metadata: dict[str, Any] = request["metadata"] if isinstance(request.get("metadata"), dict) else {}
    for source in (record, metadata):
        for key in CONVERSATION_KEYS:
            if isinstance(source.get(key), (str, int)) and str(source[key]):
                return str(source[key])
    return ""
