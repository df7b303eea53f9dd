"""Model calls and tool runs put together into conversations, in time order.

A conversation is a ``gen_ai.conversation.id`` (or a chat log's id), else one trace — and recordings that
carry no id are joined when one's first request continues another's whole transcript (an app that sends
the history again on each call, with each call its own trace). Within a conversation each call's messages
extend the transcript: a request that repeats it and adds to it replaces it (its account of the last answer
wins, as it is what the model was sent back); a request of new messages only (an API that keeps the state)
is added after the part of it the transcript already ends with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agenttest.errors import Location
from agenttest.inputs.traces.calls import Call, Message, ToolRun, same
from agenttest.inputs.traces.otlp import Place


@dataclass
class Conversation:
    key: str  # the conversation id, else the trace id (or a chat log's first line)
    calls: list[Call] = field(default_factory=list)
    tools: list[ToolRun] = field(default_factory=list)
    explicit: bool = False  # keyed by a conversation id the recording gave
    messages: list[Message] = field(default_factory=list)  # the stitched transcript

    @property
    def where(self) -> Place | Location:
        return self.calls[0].where

    @property
    def traces(self) -> list[str]:
        return list(dict.fromkeys(c.trace for c in self.calls if c.trace))

    @property
    def model(self) -> str:
        return next((c.model for c in reversed(self.calls) if c.model), "")

    @property
    def agent(self) -> str:
        return next((c.agent for c in self.calls if c.agent), "")

    @property
    def usage(self) -> tuple[int, int]:
        return sum(c.usage[0] for c in self.calls), sum(c.usage[1] for c in self.calls)


def conversations(calls: Sequence[Call], tools: Sequence[ToolRun]) -> list[Conversation]:
    """Every conversation of the recording, in the order each began."""
    groups: dict[str, Conversation] = {}
    for call in sorted(calls, key=lambda c: c.start):
        key = call.conversation or call.trace or f"call@{call.where}"
        groups.setdefault(key, Conversation(key=key, explicit=bool(call.conversation))).calls.append(call)
    ordered = _chained(list(groups.values()))
    by_trace = {t: c for c in ordered for t in c.traces}
    by_key = {c.key: c for c in ordered}
    for run in sorted(tools, key=lambda t: t.start):
        owner = by_key.get(run.conversation) or by_trace.get(run.trace)
        if owner is not None:
            owner.tools.append(run)
    return ordered


def _chained(groups: list[Conversation]) -> list[Conversation]:
    """Groups with no conversation id joined to the earlier group whose transcript their first request
    continues (the longest such transcript)."""
    out: list[Conversation] = []
    for group in sorted(groups, key=lambda g: g.calls[0].start):
        group.calls.sort(key=lambda c: c.start)
        group.messages = stitch(group.calls)
        host = None
        if not group.explicit:
            first = list(group.calls[0].input)
            candidates = [g for g in out if not g.explicit and len(g.messages) >= 2 and _starts_with(first, g.messages)]
            host = max(candidates, key=lambda g: len(g.messages), default=None)
        if host is None:
            out.append(group)
        else:
            host.calls = sorted(host.calls + group.calls, key=lambda c: c.start)
            host.messages = stitch(host.calls)
    return out


def _starts_with(messages: list[Message], prefix: list[Message]) -> bool:
    return len(messages) > len(prefix) and all(same(a, b) for a, b in zip(messages, prefix))


def stitch(calls: Sequence[Call]) -> list[Message]:
    """The transcript of calls in time order: what was sent, and what was answered."""
    transcript: list[Message] = []
    answer_at = 0  # where the last answer begins in the transcript
    for call in calls:
        sent = list(call.input)
        common = _common(transcript, sent)
        if common == len(transcript) or (common and common >= answer_at):
            transcript = sent
        else:
            new = _without_leading_system(sent) if any(m.get("role") == "system" for m in transcript) else sent
            transcript = transcript + new[_overlap(transcript, new):]
        answer_at = len(transcript)
        transcript = transcript + list(call.output)
    return transcript


def _common(a: list[Message], b: list[Message]) -> int:
    n = 0
    while n < len(a) and n < len(b) and same(a[n], b[n]):
        n += 1
    return n


def _without_leading_system(messages: list[Message]) -> list[Message]:
    i = 0
    while i < len(messages) and messages[i].get("role") in ("system", "developer"):
        i += 1
    return messages[i:]


def _overlap(transcript: list[Message], new: list[Message]) -> int:
    """The most messages the transcript ends with that ``new`` begins with."""
    for size in range(min(len(transcript), len(new)), 0, -1):
        if all(same(a, b) for a, b in zip(transcript[-size:], new[:size])):
            return size
    return 0
