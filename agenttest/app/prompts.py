"""Prompts (FORMATS §1): ``prompts.yml`` files — an agent's own and the app's global ``agent/prompts.yml`` —
and Yao's prompt variables, substituted at every call: ``$SYS.DATETIME`` and the other ``$SYS.*``,
``$CTX.LOCALE`` and the other ``$CTX.*`` (from the call's ``ctx``), ``$ENV.NAME``. An unknown ``$SYS``
name is left as written; an unknown ``$CTX`` name and an unset ``$ENV`` variable become "" (as Yao does)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from agenttest.errors import AgentTestError, Location
from agenttest.model import Message
from agenttest.runtime.trace import note_volatile

SYSTEM: dict[str, Callable[[datetime], str]] = {
    "TIME": lambda t: t.strftime("%H:%M:%S"),
    "DATE": lambda t: t.strftime("%Y-%m-%d"),
    "DATETIME": lambda t: t.strftime("%Y-%m-%d %H:%M:%S"),
    "TIMEZONE": lambda t: t.strftime("%Z") or "Local",
    "WEEKDAY": lambda t: t.strftime("%A"),
    "YEAR": lambda t: t.strftime("%Y"),
    "MONTH": lambda t: t.strftime("%m"),
    "DAY": lambda t: t.strftime("%d"),
    "HOUR": lambda t: t.strftime("%H"),
    "MINUTE": lambda t: t.strftime("%M"),
    "SECOND": lambda t: t.strftime("%S"),
    "UNIX": lambda t: str(int(t.timestamp())),
}
_SYS = re.compile(r"\$SYS\.([A-Z_]+)")
_ENV = re.compile(r"\$ENV\.([A-Za-z_][A-Za-z0-9_]*)")
_CTX = re.compile(r"\$CTX\.([A-Za-z_][A-Za-z0-9_]*)")


def load(path: str) -> tuple[Message, ...]:
    """The messages of a ``prompts.yml`` (a list of ``{role, content, name?}``); none if it does not exist."""
    if not os.path.isfile(path):
        return ()
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = Location(path, mark.line + 1, mark.column + 1) if mark else Location(path)
        raise AgentTestError(f"invalid YAML: {getattr(exc, 'problem', exc)}", loc) from None
    if not isinstance(data, list) or not all(isinstance(m, dict) and "content" in m for m in data):
        raise AgentTestError("prompts.yml must be a list of {role, content} messages", Location(path))
    return tuple({"role": m.get("role", "system"), "content": m["content"], **({"name": m["name"]} if m.get("name") else {})}
                 for m in data)


def context_variables(ctx: Any, agent_id: str, agent_name: str) -> dict[str, str]:
    """``$CTX.*`` values for one call."""
    options = getattr(ctx, "options", None) or {}
    authorized = getattr(ctx, "authorized", None) or {}
    values = {
        "LOCALE": getattr(ctx, "locale", ""), "USER_ID": getattr(ctx, "user_id", ""), "TEAM_ID": getattr(ctx, "team_id", ""),
        "TENANT_ID": authorized.get("tenant_id", ""), "CHAT_ID": getattr(ctx, "chat_id", ""),
        "ASSISTANT_ID": agent_id, "ASSISTANT_NAME": agent_name, "MODE": options.get("mode", ""),
        "THEME": options.get("theme", ""), "ROUTE": options.get("route", ""), "REFERER": options.get("referer", ""),
    }
    return {k: str(v) for k, v in values.items()}


def render(prompts: Sequence[Message], variables: dict[str, str], now: datetime | None = None) -> list[Message]:
    """The prompts with their variables substituted (only string contents are touched)."""
    when = now or datetime.now().astimezone()
    out = []
    for message in prompts:
        content = message.get("content")
        if isinstance(content, str) and "$" in content:
            content = _SYS.sub(lambda m: _system(m, when), content)
            content = _ENV.sub(lambda m: os.environ.get(m.group(1), ""), content)
            content = _CTX.sub(lambda m: _context(m, variables), content)
            message = {**message, "content": content}
        out.append(message)
    return out


def _system(m: re.Match[str], when: datetime) -> str:
    if m.group(1) not in SYSTEM:
        return m.group(0)
    value = SYSTEM[m.group(1)](when)
    note_volatile(value, m.group(0))  # the time differs at every run: cassettes key the request without it
    return value


def _context(m: re.Match[str], variables: dict[str, str]) -> str:
    value = variables.get(m.group(1).upper(), "")
    if m.group(1).upper() == "CHAT_ID":  # a new one for every case and run
        note_volatile(value, m.group(0))
    return value
