"""The tool world of one case run (FORMATS §11): its state, the policy that refuses tools it does not allow, the
mocks that answer instead of tools, the faults injected into tool calls, the counters tools keep, and the
difference between the world as the agent found and left it.

Fault draws are a pure function of the seed, the case, the run, the fault and the call number, so a run
is reproducible whatever the order in which cases (or parallel tool calls) run."""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from agenttest.util.matching import equal, matches, name_matches
from agenttest.model import Case, Fault, FaultKind, ToolCall, WorldChange, WorldRecord

MALFORMED = '{"status": "ok", "data": {"id": '  # a result cut short, as a broken connection leaves it


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What answers a tool call instead of the tool: a mock's answer or an injected fault."""

    result: Any = None
    error: str | None = None
    mocked: bool = False
    fault: FaultKind | None = None
    delay: float = 0.0
    violation: str = ""  # the case's policy refused the call: the tool does not run
    commit: bool = False  # commit_timeout: the tool runs (its effect stays), then its response is lost (``error``)


def draw(seed: int, case_id: str, run: int, fault: int, call: int) -> float:
    """A number in [0, 1) that depends only on its arguments."""
    key = f"{seed}\x1f{case_id}\x1f{run}\x1f{fault}\x1f{call}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64


def snapshot(value: Any) -> Any:
    """A JSON copy of a world (what reports and assertions see); values JSON cannot hold become text."""
    if type(value) is dict and not value:  # most cases have no world: no JSON round trip for it
        return {}
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=str))
    except (ValueError, TypeError, RecursionError) as exc:
        return f"<the world is not JSON: {type(exc).__name__}: {exc}>"


class ToolWorld:
    """One run of one case: the live world (``ctx.world``), mock uses left, and the calls made so far; for a
    scenario (``case.scenario``), its run: the tools the world offers, the clock, turns, events and budgets."""

    def __init__(self, case: Case, state: dict[str, Any], seed: int = 0, run: int = 1, calls: list[ToolCall] | None = None,
                 counters: dict[str, Any] | None = None):
        self.case = case
        self.state = state
        self.seed = seed
        self.run = run
        self.initial = snapshot(state)
        self.left = [m.times for m in case.mocks]
        self.called: list[str] = []
        self.scenario: Any = None
        if case.scenario is not None:
            from agenttest.runtime.scenario import ScenarioRun

            self.scenario = ScenarioRun(case.scenario, state, lambda: self.initial, calls if calls is not None else [])
        self.counters = counters if counters is not None else {}  # ctx.metrics: what tools counted

    def begin(self) -> None:
        """The agent starts now (after the Before hook, which may have seeded the world)."""
        self.initial = snapshot(self.state)

    @property
    def before(self) -> Any:
        """What the agent's changes are measured from: the world as it found it, plus the world events so far."""
        return self.scenario.before() if self.scenario is not None else self.initial

    def enter(self, name: str) -> str:
        """A tool call starts: a scenario's budgets and clock (its virtual time, ISO; BudgetExceeded past a budget)."""
        return self.scenario.enter() if self.scenario is not None else ""

    def model_turn(self) -> None:
        """A model call of the agent starts (a scenario's clock and budget of virtual time)."""
        if self.scenario is not None:
            self.scenario.model_turn()

    def tools(self) -> tuple[dict[str, Any], ...]:
        """The function schemas of the tools the world offers the agent beside its own (a scenario's packs)."""
        return self.scenario.offered() if self.scenario is not None else ()

    def tool(self, name: str) -> Any:
        """The world's tool the model called, or None."""
        return self.scenario.tool(name) if self.scenario is not None else None

    def finish(self) -> None:
        """The agent is done: the world events due by now happen."""
        if self.scenario is not None:
            self.scenario.happen()

    def intercept(self, name: str, arguments: dict[str, Any]) -> Outcome | None:
        """Count a call and say what answers it instead of the tool — the policy's refusal, a fault, else a mock — or
        None."""
        self.called.append(name)
        refused = refusal(self.case.policy, name)
        if refused:
            return Outcome(error=f"policy violation: {refused}", violation=refused)
        for index, fault in enumerate(self.case.faults):
            if self._fires(index, fault, name):
                return _injected(fault, self.scenario.canonical(name) if self.scenario is not None else name)
        for index, mock in enumerate(self.case.mocks):
            if self.left[index] == 0 or not name_matches(mock.tool, name):
                continue
            if mock.match is not None and not matches(mock.match, arguments):
                continue
            if self.left[index] is not None:
                self.left[index] -= 1  # type: ignore[operator]
            return Outcome(result=copy.deepcopy(mock.returns), error=mock.error, mocked=True, delay=mock.delay)
        return None

    def _fires(self, index: int, fault: Fault, name: str) -> bool:
        if fault.tool != "*" and not name_matches(fault.tool, name):
            return False
        number = len(self.called) if fault.tool == "*" else sum(1 for c in self.called if name_matches(fault.tool, c))
        if fault.at:
            return number in fault.at
        if fault.rate is not None and fault.seed is not None:  # a keyed PRNG: the "faults" domain of the seed alone
            return draw(fault.seed, "faults", 0, index, number) < fault.rate
        if fault.rate is not None:
            return draw(self.seed, self.case.id, self.run, index, number) < fault.rate
        return True

    def record(self, snapshots: bool = True) -> WorldRecord | None:
        """The world for the report: kept when the case has one, a hook seeded one, or its tools changed it;
        without ``snapshots`` (--report-world changes) only its changes."""
        final = snapshot(self.state)
        changes = diff(self.before, final)
        if self.case.world is None and not changes and not final:
            return None
        return WorldRecord(self.initial, final, changes) if snapshots else WorldRecord(changes=changes)


def refusal(policy: dict[str, Any] | None, name: str) -> str:
    """Why the case's policy refuses a call of tool ``name`` (its ``allowed_tools`` do not name it), or ""."""
    allowed = policy.get("allowed_tools") if policy else None
    if not isinstance(allowed, list) or any(name_matches(a, name) for a in allowed if isinstance(a, str)):
        return ""
    listed = ", ".join(a for a in allowed if isinstance(a, str)) or "none"
    return f"tool '{name}' is not allowed by the case's policy (allowed_tools: {listed})"


FAULT_ERRORS = {  # what the model is told by the kinds that fail a call before it runs (FORMATS §11, §18)
    "rate_limit": "RATE_LIMITED: {tool}: too many requests (429); retry later",
    "server_error": "INTERNAL: {tool}: internal server error (500)",
    "permission_denied": "PERMISSION_DENIED: {tool}: the caller may not do this (403)",
    "expired_credentials": "EXPIRED_CREDENTIALS: {tool}: the credentials have expired (401); not retryable: a person must sign in again",
}


def _injected(fault: Fault, tool: str) -> Outcome:
    if fault.kind in FAULT_ERRORS:
        return Outcome(error=fault.message or FAULT_ERRORS[fault.kind].format(tool=tool), fault=fault.kind)
    if fault.kind == "commit_timeout":  # the request reached the service and took effect; its answer never came back
        return Outcome(error=fault.message or f"{tool} timed out", fault="commit_timeout", commit=True)
    if fault.kind == "error":
        return Outcome(error=fault.message or f"{tool} failed: internal server error", fault="error")
    if fault.kind == "timeout":
        return Outcome(error=fault.message or f"{tool} timed out", fault="timeout")
    if fault.kind == "malformed":
        return Outcome(result=fault.message if fault.message is not None else MALFORMED, fault="malformed")
    return Outcome(result="", fault="empty")


# ---- the difference --------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def step(path: str, key: Any) -> str:
    """``$.a`` + ``b`` → ``$.a.b``; a list index or an odd key in brackets (``$.a[0]``, ``$['a b']``)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if _NAME.fullmatch(key) else f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def diff(before: Any, after: Any, path: str = "$") -> tuple[WorldChange, ...]:
    """Added, removed and changed paths from ``before`` to ``after`` (JSON values); lists are aligned, so
    an item inserted at the front is one addition, not a change of every item after it."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[WorldChange] = []
        for key in before:
            if key not in after:
                out.append(WorldChange(step(path, key), "removed", before=before[key]))
            else:
                out += diff(before[key], after[key], step(path, key))
        out += [WorldChange(step(path, k), "added", after=after[k]) for k in after if k not in before]
        return tuple(out)
    if isinstance(before, list) and isinstance(after, list):
        return _list_diff(before, after, path)
    if equal(before, after):
        return ()
    return (WorldChange(path, "changed", before, after),)


def _list_diff(before: list[Any], after: list[Any], path: str) -> tuple[WorldChange, ...]:
    keys = [[json.dumps(x, sort_keys=True, default=str) for x in side] for side in (before, after)]
    out: list[WorldChange] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, keys[0], keys[1], autojunk=False).get_opcodes():
        if op == "replace" and i2 - i1 == j2 - j1:
            for i, j in zip(range(i1, i2), range(j1, j2)):
                out += diff(before[i], after[j], step(path, j))
        elif op != "equal":
            out += [WorldChange(step(path, i), "removed", before=before[i]) for i in range(i1, i2)]
            out += [WorldChange(step(path, j), "added", after=after[j]) for j in range(j1, j2)]
    return tuple(out)
