"""``--list`` and ``--dry-run``: the cases a run would run, shown instead of run (after the same checks)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable
from typing import Any, TextIO

from agenttest import modes
from agenttest.errors import AgentTestError
from agenttest.inputs.documents import SUFFIXES
from agenttest.model import Case
from agenttest.util import files
from agenttest.util.secrets import Secrets
from agenttest.util.text import printable


def check_outputs(outputs: Iterable[str]) -> None:
    """``--dry-run -o``: case files, their folders made before anything runs."""
    for output in outputs:
        if os.path.splitext(output)[1].lower() not in SUFFIXES:
            raise AgentTestError(f"-o {output}: --dry-run writes cases as {', '.join(SUFFIXES)}")
        files.prepare(output)


def list_cases(cases: Iterable[Case], out: TextIO, secrets: Secrets | None = None) -> None:
    """One line per case — id, mode, tags, file:line — and how many; shown inert (no escape sequence or
    right-to-left override acts) and with no secret (generated cases may echo a key)."""
    hide = secrets.redact if secrets else str
    count = 0
    for case in cases:
        tags = f" [{', '.join(case.tags)}]" if case.tags else ""
        out.write(printable(hide(f"{case.id}  {modes.name_of(case)}{tags}  {case.location}")) + "\n")
        count += 1
    out.write(f"{count} {'case' if count == 1 else 'cases'} selected\n")


async def dry_run(cases: Iterable[Case], outputs: Iterable[str], out: TextIO, secrets: Secrets | None = None) -> None:
    """The cases as JSON lines on ``out``, and as each ``-o`` file's format asks — with no secret in them."""
    rows = [secrets.scrub(normalized(c)) if secrets else normalized(c) for c in cases]
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
    for output in outputs:
        await asyncio.to_thread(files.write_atomic, output, _as(rows, os.path.splitext(output)[1].lower()))


def _as(rows: list[dict], ext: str) -> str:
    if ext == ".jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if ext == ".json":
        return json.dumps(rows, ensure_ascii=False, indent=2) + "\n"
    import yaml

    return yaml.safe_dump(rows, allow_unicode=True, sort_keys=False)


def normalized(case: Case) -> dict[str, Any]:
    """A case as one JSON object that ``-i`` loads back: input as messages, assertions spelled out."""
    out: dict[str, Any] = {}
    for key, value in case.raw.items():
        if key in ("assert", "assertions", "input", "checkpoints"):
            continue
        out[key] = value
    if case.messages:
        out["input"] = list(case.messages)
    if case.assertions:
        out["assertions"] = [dict(a.params, type=a.type) for a in case.assertions]
    if case.checkpoints:
        out["checkpoints"] = [
            {k: v for k, v in {"id": c.id, "description": c.description or None, "assertion": dict(c.assertion.params, type=c.assertion.type),
             "after": list(c.after) or None, "required": None if c.required else False}.items() if v is not None}
            for c in case.checkpoints
        ]
    if case.turns:  # a case of a variants product: its own id, each turn with the input it was built with
        out["id"] = case.id
        out["turns"] = [{k: v for k, v in {"id": t.id or None, "input": list(t.messages),
                                           "assertions": [dict(a.params, type=a.type) for a in t.assertions] or None}.items() if v is not None}
                        for t in case.turns]
    return out
