"""One-line texts of results for the console and the pages: an input preview, a world change."""

from __future__ import annotations

from agenttest.model import CaseResult, WorldChange
from agenttest.util.text import as_text, shorten


def change_text(c: WorldChange, limit: int = 80) -> str:
    """One change on one line: ``+ $.expenses[1] = {…}``, ``- $.draft (was …)``, ``~ $.budget: 100 → 40``."""
    if c.op == "added":
        return f"+ {c.path} = {shorten(c.after, limit)}"
    if c.op == "removed":
        return f"- {c.path} (was {shorten(c.before, limit)})"
    return f"~ {c.path}: {shorten(c.before, limit)} → {shorten(c.after, limit)}"


def preview(value: object) -> str:
    """An input for a one-line preview: the last user message, its attachments as ``+ [name]``."""
    from agenttest.model.messages import last_user_content, normalize

    if isinstance(value, list) and value:  # the common form, a history: its last user message, read in place
        for m in reversed(value):
            if type(m) is not dict or "role" not in m:
                break  # a message without a role is the user's: the general path below
            if m["role"] == "user":
                if type(m.get("content")) is str:
                    return m["content"]  # type: ignore[no-any-return]
                break
    if isinstance(value, (str, dict, list)) and value:
        try:
            text, names = last_user_content(normalize(value))
        except (AttributeError, TypeError):
            return as_text(value)
        return " + ".join([text, *(f"[{n}]" for n in names)] if text else [f"[{n}]" for n in names])
    return ""


def row_input(r: CaseResult) -> str:
    """The input preview of a result: the last user message, or a dynamic case's first turn."""
    return preview(r.input) or (as_text(r.turns[0].input) if r.turns else "") or r.name
