"""The observation of a turn (seed format A's adapter; docs/formats-a.md): what ``check`` assertions read and
custom evaluators receive — the turn's ``response`` (status, text, tool calls, the interaction it opened) and the
conversation's ``checkpoint`` (every fact published so far, the open interaction, the world). By default it is
made of the agent's reply, its tool calls and the world; an agent's Next hook publishes ``interaction``,
``facts`` and ``status`` beside its data. A turn's ``selection`` chooses among the options the previous turn's
interaction published."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import CallError
from agenttest.model import Message, Reply, ToolCall
from agenttest.util.text import shorten


class SelectionError(CallError):
    """A turn's selection cannot be resolved (seed format A's evaluation errors): the case is an error."""


def tool_calls(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    """A turn's tool calls as the observation shows them (no timings: an evaluator compares them run to run)."""
    return [{k: v for k, v in c.as_dict().items() if k not in ("duration_ms", "traceback", "location", "id")} for c in calls]


def document(reply: Reply, facts: list[Any], interaction: Any, world: Any) -> dict[str, Any]:
    """The observation of one turn: its ``response`` and the conversation's ``checkpoint``."""
    published = reply.published or {}
    response: dict[str, Any] = {"status": published.get("status", "completed"),
                                "text": reply.data if reply.has_data else reply.text, "toolCalls": tool_calls(reply.tool_calls)}
    checkpoint: dict[str, Any] = {"facts": list(facts), "world": world if world is not None else {}}
    if interaction is not None:
        response["interaction"] = checkpoint["interaction"] = interaction
    return {"response": response, "checkpoint": checkpoint}


def single(reply: Reply, world: Any) -> dict[str, Any]:
    """The observation of a one-call case (standard mode): its reply, and the facts it published."""
    return document(reply, _facts((reply.published or {}).get("facts")), (reply.published or {}).get("interaction"), world)


def _facts(published: Any) -> list[Any]:
    if published is None:
        return []
    return list(published) if isinstance(published, list) else [published]


@dataclass
class Observing:
    """What a scripted conversation has published so far, and the turns it recorded (an evaluator's history)."""

    facts: list[Any] = field(default_factory=list)
    interaction: Any = None
    history: list[dict[str, Any]] = field(default_factory=list)
    last: dict[str, Any] | None = None

    def observe(self, reply: Reply, world: Any) -> dict[str, Any]:
        """This turn's observation: the facts it published added to the conversation's; the interaction it opened
        replaces the last one (a turn that opens none closes it)."""
        published = reply.published or {}
        self.facts += _facts(published.get("facts"))
        self.interaction = published.get("interaction")
        self.last = document(reply, self.facts, self.interaction, world)
        return self.last

    def record(self, current: dict[str, Any], reply: Reply, observed: dict[str, Any]) -> None:
        """The turn (its number, id, input and selection), as later evaluators receive it in their history."""
        self.history.append({**current, "text": reply.data if reply.has_data else reply.text, "toolCalls": tool_calls(reply.tool_calls),
                             "observation": observed})

    def select(self, selection: dict[str, Any], label: str) -> dict[str, Any]:
        """The published option a selection names, with its ``index``; SelectionError as seed format A says it."""
        options = self.interaction.get("options") if isinstance(self.interaction, dict) else None
        if not isinstance(options, list):
            raise SelectionError(f"{label}: selection {_said(selection)}: no active interaction to choose from "
                                 "(the previous turn published none)")
        if "optionIndex" in selection:
            index = selection["optionIndex"]
            if not 0 <= index < len(options):
                raise SelectionError(f"{label}: selection optionIndex {index} is out of range (the interaction has "
                                     f"{len(options)} option{'s' if len(options) != 1 else ''})")
            return _chosen(options[index], index)
        key, wanted = ("id", selection["optionId"]) if "optionId" in selection else ("label", selection["optionLabel"])
        found = [i for i, o in enumerate(options) if isinstance(o, dict) and o.get(key) == wanted]
        if not found:
            known = ", ".join(str(o.get(key)) for o in options if isinstance(o, dict))
            raise SelectionError(f"{label}: selection option{key.capitalize()} {wanted!r}: no published option has that {key} "
                                 f"(they are: {shorten(known, 200) or 'none'})")
        if len(found) > 1:
            raise SelectionError(f"{label}: selection optionLabel {wanted!r} is ambiguous: {len(found)} options have it")
        return _chosen(options[found[0]], found[0])


def _chosen(option: Any, index: int) -> dict[str, Any]:
    return {**option, "index": index} if isinstance(option, dict) else {"value": option, "index": index}


def _said(selection: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v!r}" for k, v in selection.items())


def with_selection(messages: tuple[Message, ...], option: dict[str, Any]) -> tuple[Message, ...]:
    """The turn's messages with the chosen option as a ``data`` part of its (last) user message — sent as its JSON
    text, as a UI click reaches a host — or a user message of that part alone when the text is empty."""
    part = {"type": "data", "data": {"selection": option}}
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i].get("role", "user") == "user":
            content = out[i].get("content")
            parts = [{"type": "text", "text": content}] if isinstance(content, str) and content else \
                list(content) if isinstance(content, list) else [content] if isinstance(content, dict) else []
            out[i] = {**out[i], "content": [*parts, part]}
            return tuple(out)
    return (*out, {"role": "user", "content": [part]})
