"""Budgets (FORMATS §8): limits on what one run of a case may spend — the agent under test's tokens and
cost, its tool calls, the turns of the conversation, the case's duration — read from a case's ``budget``
or ``--budget``, and checked as the case runs."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agenttest.util.durations import format_duration, parse_duration
from agenttest.accounting.costs import EXAMPLE as COST_EXAMPLE
from agenttest.accounting.costs import Pricing, money, spend_of, total
from agenttest.errors import Problem, did_you_mean
from agenttest.model import Budget, ResolvedCase, UsageSource
from agenttest.runtime.trace import Trace

LIMITS = ("tokens", "cost", "tool_calls", "turns", "duration", "model_calls")
EXAMPLE = "tokens=20000,cost=0.05,tool_calls=10,turns=8,duration=2m"


@dataclass(frozen=True, kw_only=True)
class Spent:
    """What a case run has spent so far, in the units of a Budget."""

    tokens: int = 0
    cost: float | None = 0.0  # None: some of the agent's calls went through a connector with no pricing
    tool_calls: int = 0
    turns: int = 0
    duration: float = 0.0  # seconds
    model_calls: int = 0  # the agent under test's
    usage: UsageSource = "endpoint"  # who counted the tokens (and so the cost): estimated or unknown, reports say

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tokens": self.tokens, "tool_calls": self.tool_calls, "turns": self.turns,
                               "duration": round(self.duration, 3), "model_calls": self.model_calls}
        if self.cost is not None:
            out["cost"] = round(self.cost, 8)
        if self.usage != "endpoint":
            out["usage"] = self.usage
        return out


def value(name: str, raw: Any) -> float | int:
    """One limit checked: whole numbers for counts, USD for cost, a duration for duration. ValueError."""
    if name == "duration":
        return parse_duration(raw)
    if isinstance(raw, str):
        try:
            raw = float(raw.replace("_", ""))
        except ValueError:
            raise ValueError(f"{name} must be a number, not {raw!r}") from None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 0 or raw != raw:
        raise ValueError(f"{name} must be a number of 0 or more, not {raw!r}")
    if name != "cost" and raw != int(raw):
        raise ValueError(f"{name} must be a whole number, not {raw!r}")
    return float(raw) if name == "cost" else int(raw)


def problem(name: str) -> str | None:
    """Why ``name`` is not a limit, with a did-you-mean hint; None when it is one."""
    if name in LIMITS:
        return None
    return f"'{name}' is not a budget limit ({did_you_mean(name, LIMITS) or 'limits: ' + ', '.join(LIMITS)})"


def parse(text: str) -> Budget:
    """``--budget tokens=20000,cost=0.05,duration=30s`` → Budget. ValueError says what is wrong."""
    limits: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not raw.strip():
            raise ValueError(f"'{item}' is not NAME=LIMIT (e.g. {EXAMPLE})")
        why = problem(name)
        if why:
            raise ValueError(why)
        limits[name] = value(name, raw.strip())
    if not limits:
        raise ValueError(f"no limits given (e.g. {EXAMPLE})")
    return Budget(**limits)


def of_case(raw: Mapping[str, Any]) -> Budget:
    """A case's ``budget`` object (already validated) → Budget."""
    limits: dict[str, Any] = {name: value(name, raw[name]) for name in LIMITS if name in raw}
    return Budget(**limits)


def spent(trace: Trace, prices: Mapping[str, Pricing | None], turns: int, duration: float | None = None) -> Spent:
    """The agent under test's spending so far, from the case's trace."""
    agent = [s for s in spend_of(trace.by_connector, trace.calls, prices) if s.role == "agent"]
    cost = None if any(s.cost is None for s in agent) else (total(agent) or 0.0)
    elapsed = time.perf_counter() - trace.started if duration is None else duration
    calls = sum(n for (role, _), n in trace.calls.items() if role == "agent")
    usage = trace.agent_usage
    return Spent(tokens=usage.total_tokens, cost=cost, tool_calls=len(trace.tool_calls), turns=turns, duration=elapsed, model_calls=calls, usage=usage.source)


def overruns(budget: Budget, now: Spent) -> list[str]:
    """Each exceeded limit as ``tokens 25,130 > 20,000`` (a cost that could not be priced is not one)."""
    out = []
    estimated = " (estimated: the endpoint sent no usage)" if now.usage == "estimated" else ""
    if budget.tokens is not None and now.tokens > budget.tokens:
        out.append(f"tokens {now.tokens:,} > {budget.tokens:,}{estimated}")
    if budget.cost is not None and now.cost is not None and now.cost > budget.cost:
        out.append(f"cost {money(now.cost)} > {money(budget.cost)}{estimated}")
    if budget.tool_calls is not None and now.tool_calls > budget.tool_calls:
        out.append(f"tool_calls {now.tool_calls:,} > {budget.tool_calls:,}")
    if budget.turns is not None and now.turns > budget.turns:
        out.append(f"turns {now.turns:,} > {budget.turns:,}")
    if budget.model_calls is not None and now.model_calls > budget.model_calls:
        out.append(f"model_calls {now.model_calls:,} > {budget.model_calls:,}")
    if budget.duration is not None and now.duration > budget.duration:
        out.append(f"duration {format_duration(now.duration)} > {format_duration(budget.duration)}")
    return out


UNPRICED = "a cost limit needs the connector's 'pricing' (USD per million tokens) in its .conn.yao"


UNKNOWN = ("the agent's token usage is unknown: its endpoint sent no usage and no tokenizer is installed to estimate it "
           "(pip install 'agent-test[tokens]'); a token or cost limit cannot pass on tokens nobody counted")


def unmeasured(budget: Budget, now: Spent) -> str | None:
    """Why a limit cannot be checked: a token or cost limit on usage nobody counted, a cost limit on calls
    through a connector with no pricing."""
    if now.usage == "unknown" and (budget.tokens is not None or budget.cost is not None):
        return f"budget: {UNKNOWN}"
    return f"budget: {UNPRICED}" if budget.cost is not None and now.cost is None else None


def problems(items: Iterable[ResolvedCase], prices: Mapping[str, Pricing | None]) -> list[Problem]:
    """Cost limits on cases whose connector has no pricing, found before the first model call (one
    problem per case that sets the limit, one per connector for --budget)."""
    out: dict[tuple[str, str], Problem] = {}
    for item in items:
        case = item.case
        if item.budget is None or item.budget.cost is None:
            continue
        own = case.budget is not None and case.budget.cost is not None
        if prices.get(item.key.connector) is None:
            where = case.locate(("budget", "cost")) if own else None
            whose = f"case '{case.id}'" if own else "--budget cost"
            out.setdefault((whose, item.key.connector), Problem(f"{whose}: connector {item.key.connector} has no pricing", where,
                                                        f"{UNPRICED}, e.g. {COST_EXAMPLE}"))
    return list(out.values())


PREFIX = "budget exceeded: "


def message(exceeded: list[str]) -> str:
    return PREFIX + "; ".join(exceeded)
