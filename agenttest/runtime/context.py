"""Who a test runs as (FORMATS §5): ``-u/-t`` > the case's ``user``/``team`` > ``--ctx`` > defaults,
and the ``ctx`` that tools, hooks and scripts receive."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
from dataclasses import dataclass, field
from typing import Any

from agenttest.util.positions import json_message
from agenttest.util.values import fresh
from agenttest.errors import AgentTestError, Location, typo_of
from agenttest.model import Case, Context
from agenttest.model.parameters import context_options

_chat_ids = itertools.count(1)
_process: tuple[int, str] = (0, "")  # (pid, a random prefix): chat ids unique across runs and worker processes
CTX_KEYS = {"chat_id", "locale", "authorized", "metadata", "client", "user_id", "team_id", "referer", "theme", "accept", "route"}


@dataclass(frozen=True)
class Identity:
    """The run-wide identity: flags and the ``--ctx`` file."""

    user: str | None = None
    team: str | None = None
    ctx: dict[str, Any] = field(default_factory=dict)

    def context(self, case: Case | None = None, run: int = 1, test_mode: str = "", metadata: dict[str, Any] | None = None,
                caller: Any = None, connector: str = "") -> Context:
        base = self.ctx
        authorized = dict(base.get("authorized") or {})
        user = self.user or (case.user if case else None) or authorized.get("user_id") or "test-user"
        team = self.team or (case.team if case else None) or authorized.get("team_id") or "test-team"
        meta = dict(base.get("metadata") or {})
        if case is not None:
            meta.update(case.metadata)
            meta.update(case.options.get("metadata") or {})
        meta.update(metadata or {})
        meta = fresh(meta)  # user code's own, to any depth: the case's dicts may be other cases' too (the loader shares them)
        chat_id = base.get("chat_id") or f"test-{_prefix()}-{next(_chat_ids)}"
        if case is not None and base.get("chat_id"):  # ids are unique per file: the file (and matrix connector) tell them apart
            where = hashlib.sha256(f"{case.file}\0{connector}".encode()).hexdigest()[:6]
            chat_id = f"{base['chat_id']}-{case.id}-{run}-{where}"
        world = copy.deepcopy(case.world) if case is not None and case.world is not None else {}  # fresh for every run
        options = fresh(context_options(case.options)) if case is not None else {}
        locale = options.get("locale") if isinstance(options.get("locale"), str) else None
        return Context(user_id=user, team_id=team, locale=locale or base.get("locale") or "en-us", chat_id=chat_id, metadata=meta, authorized=authorized, client=dict(base.get("client") or {}),
                       test_mode=test_mode, caller=caller, world=world, options=options, policy=fresh(case.policy) if case is not None and case.policy else {})

    def environment(self) -> dict[str, Any]:
        """What the report says the run ran as."""
        ctx = self.context()
        return {"user_id": ctx.user_id, "team_id": ctx.team_id, "locale": ctx.locale}


def _prefix() -> str:
    """A random prefix drawn once per process (os.urandom per context cost ~45 µs a case)."""
    global _process
    if _process[0] != os.getpid():
        _process = (os.getpid(), os.urandom(6).hex())
    return _process[1]


def read_ctx(path: str, strict: bool = False, warnings: list[str] | None = None) -> dict[str, Any]:
    """``--ctx FILE``: JSON with chat_id, locale, authorized, metadata, client (Yao's ``referer``, ``theme``,
    ``accept`` and ``route`` too). A misspelt key is an error; other unknown keys are ignored with a
    warning, or errors when ``strict``."""
    if not os.path.isfile(path):
        raise AgentTestError(f"--ctx: '{path}' does not exist")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise AgentTestError(f"invalid JSON: {json_message(exc.msg)}", Location(path, exc.lineno, exc.colno)) from None
    if not isinstance(data, dict):
        raise AgentTestError("--ctx must hold a JSON object", hint=f"keys: {', '.join(sorted(CTX_KEYS))}")
    for key in list(data):
        if key in CTX_KEYS:
            continue
        typo = typo_of(key, CTX_KEYS)
        if typo or strict:
            hint = f"did you mean '{typo}'?" if typo else f"keys: {', '.join(sorted(CTX_KEYS))} (unknown keys are errors with --strict)"
            raise AgentTestError(f"--ctx {path}: '{key}' is not a field", hint=hint)
        if warnings is not None:
            warnings.append(f"--ctx {path}: '{key}' is not a field of a context; ignored")
        del data[key]
    if "user_id" in data or "team_id" in data:
        auth = dict(data.get("authorized") or {})
        auth.setdefault("user_id", data.pop("user_id", None))
        auth.setdefault("team_id", data.pop("team_id", None))
        data["authorized"] = {k: v for k, v in auth.items() if v is not None}
    return data
