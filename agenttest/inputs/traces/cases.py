"""One conversation made a case: the history up to its last user message as ``input``, the tool results
production returned in the turn after it as ``mocks`` (every other call of those tools answers an error, so
nothing runs for real), and checks proposed from what production did — the tool sequence and each call's
arguments, and with a judge, a validator check that the reply is equivalent to the recorded one."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agenttest.inputs.traces.calls import (
    Message,
    ToolRun,
    call_arguments,
    call_name,
    result_of,
    text_of,
    tool_calls,
)
from agenttest.inputs.traces.stitching import Conversation

SYSTEM_ROLES = ("system", "developer")
CRITERIA = ("The reply is equivalent to the reply recorded in production (options.metadata.recorded_reply): the same "
            "facts, figures, decisions and next steps, nothing contradicting it; wording and order may differ.")


@dataclass(frozen=True)
class Options:
    judge: str | None = None  # a validator agent for the equivalence check
    sequence: str = "strict"  # the tool_sequence mode


@dataclass(frozen=True)
class Recorded:
    """One tool call of the turn under test and what production answered."""

    name: str
    arguments: Any
    result: Any = None
    error: str = ""
    known: bool = False  # production's answer was recorded


class NoUserMessage(ValueError):
    """A conversation with no user message has no turn to test."""


def turn(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """The history up to and with the last user message (system messages left out: the agent under test has
    its own prompt), and what followed it."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    if last is None:
        raise NoUserMessage("no user message")
    history = [m for m in messages[: last + 1] if m.get("role") not in SYSTEM_ROLES]
    return _with_ids(history), messages[last + 1:]


def _with_ids(history: list[Message]) -> list[Message]:
    """Tool calls without an id (some recordings drop them) get ``call_N``, and their results the same id."""
    out, pending, n = [], [], 0
    for message in history:
        message = dict(message)
        if message.get("tool_calls"):
            calls = []
            for call in tool_calls(message):
                if not call.get("id"):
                    n += 1
                    call = dict(call, id=f"call_{n}")
                pending.append(call["id"])
                calls.append(call)
            message["tool_calls"] = calls
        elif message.get("role") == "tool":
            if message.get("tool_call_id") in pending:
                pending.remove(message["tool_call_id"])
            elif pending:
                message["tool_call_id"] = pending.pop(0)
        out.append(message)
    return out


def recorded_calls(history: list[Message], after: list[Message], runs: list[ToolRun]) -> list[Recorded]:
    """The tool calls of the turn under test with their results: from the tool messages that followed, else
    from the ``execute_tool`` spans (by call id, else by name in order, past the runs of earlier turns)."""
    results = {m.get("tool_call_id"): m for m in after if m.get("role") == "tool"}
    unmatched = [m for m in after if m.get("role") == "tool" and not m.get("tool_call_id")]
    by_id = {r.call_id: r for r in runs if r.call_id}
    earlier: dict[str, int] = {}
    for m in history:
        for c in tool_calls(m):
            earlier[call_name(c)] = earlier.get(call_name(c), 0) + 1
    by_name: dict[str, list[ToolRun]] = {}
    for r in runs:
        by_name.setdefault(r.name, []).append(r)
    by_name = {name: found[earlier.get(name, 0):] for name, found in by_name.items()}
    out = []
    for m in after:
        for c in tool_calls(m):
            name, args = call_name(c), call_arguments(c)
            message = results.get(c.get("id")) if c.get("id") else None
            message = message or (unmatched.pop(0) if unmatched else None)
            run = None if message else by_id.get(c.get("id") or "") or next(iter(by_name.get(name, [])), None)
            if run is not None and run in by_name.get(name, []):
                by_name[name].remove(run)
            if message is not None:
                out.append(Recorded(name, args, result_of(text_of(message.get("content"))), known=True))
            elif run is not None and (run.result is not None or run.error):
                out.append(Recorded(name, args, result_of(run.result), run.error, known=True))
            else:
                out.append(Recorded(name, args))
    return out


def reply_of(after: list[Message]) -> str:
    """The recorded answer of the turn: the last assistant text after the last tool result."""
    for m in reversed(after):
        if m.get("role") == "assistant" and text_of(m.get("content")).strip():
            return text_of(m.get("content"))
        if m.get("role") == "tool":
            return ""
    return ""


def build(conv: Conversation, case_id: str, options: Options, source: str) -> tuple[dict[str, Any], list[str]]:
    """The case of one (already redacted) conversation, and notes for the summary."""
    history, after = turn(conv.messages)
    calls = recorded_calls(history, after, conv.tools)
    reply = reply_of(after)
    notes = []
    if any(not c.known for c in calls):
        missing = sorted({c.name for c in calls if not c.known})
        notes.append(f"no recorded result for {', '.join(missing)}: the mock answers an error")
    if not reply and not calls:
        notes.append("no recorded reply after the last user message")
    case: dict[str, Any] = {"id": case_id, "name": _name(history[-1])}
    case["input"] = _input(history)
    if calls:
        case["mocks"] = mocks(calls, source)
    case["assert"] = checks(calls, reply, options)
    imported: dict[str, Any] = {"from": source}
    if conv.explicit:
        imported["conversation"] = conv.key
    if conv.traces:
        imported["traces"] = conv.traces
    for key, value in (("agent", conv.agent), ("model", conv.model)):
        if value:
            imported[key] = value
    if any(conv.usage):
        imported["usage"] = {"input_tokens": conv.usage[0], "output_tokens": conv.usage[1]}
    if reply:
        imported["reply"] = reply
    case["metadata"] = {"imported": imported}
    case["tags"] = ["imported"]
    return case, notes


def _name(message: Message) -> str:
    text = " ".join(text_of(message.get("content")).split())
    return text if len(text) <= 60 else text[:59] + "…"


def _input(history: list[Message]) -> Any:
    if len(history) == 1 and isinstance(history[0].get("content"), str):
        return history[0]["content"]
    return [_written(m) for m in history]


def _written(message: Message) -> Message:
    """A message as a case writes it: no empty ``content`` beside tool calls, arguments as objects."""
    out = {k: v for k, v in message.items() if not (k == "content" and v is None)}
    return out


def mocks(calls: list[Recorded], source: str) -> list[dict[str, Any]]:
    """A mock per recorded call, matching its arguments (a call made again with other answers is answered in
    turn), then one per tool that answers every other call with an error: nothing runs for real."""
    groups: dict[tuple[str, str], list[Recorded]] = {}
    for c in calls:
        if c.known:
            groups.setdefault((c.name, _key(c.arguments)), []).append(c)
    out: list[dict[str, Any]] = []
    for group in groups.values():
        answers = group if len({(_key(c.result), c.error) for c in group}) > 1 else group[:1]
        for i, c in enumerate(answers):
            mock: dict[str, Any] = {"tool": c.name}
            if isinstance(c.arguments, dict) and c.arguments:
                mock["match"] = literal(c.arguments)
            if c.error:
                mock["error"] = c.error
            else:
                mock["returns"] = c.result
            if i < len(answers) - 1:
                mock["times"] = 1
            out.append(mock)
    for name in dict.fromkeys(c.name for c in calls):
        out.append({"tool": name, "error": f"not recorded: production made no such call of {name} (agent-test import)"})
    return out


def _key(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, default=str)


def literal(value: Any) -> Any:
    """``value`` with any string that would be read as a pattern (``regex:…``) made a pattern of itself."""
    if isinstance(value, str) and value.startswith("regex:"):
        return "regex:^" + re.escape(value) + "$"
    if isinstance(value, dict):
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(v) for v in value]
    return value


def checks(calls: list[Recorded], reply: str, options: Options) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if calls:
        out.append({"type": "tool_sequence", "value": [c.name for c in calls], "mode": options.sequence})
        seen = set()
        for c in calls:
            if isinstance(c.arguments, dict) and c.arguments and (c.name, _key(c.arguments)) not in seen:
                seen.add((c.name, _key(c.arguments)))
                out.append({"type": "tool_args", "tool": c.name, "arguments": literal(c.arguments)})
    else:
        out.append({"type": "tool_count", "max": 0})
    if options.judge and reply:
        out.append({"type": "agent", "use": f"agents:{options.judge}", "value": CRITERIA,
                    "options": {"metadata": {"recorded_reply": reply}}})
    return out
