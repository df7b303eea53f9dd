"""Costs (FORMATS §8): a connector's ``pricing`` (USD per million tokens), what a case run spent by role
and connector, and the sums that reports show — per case, per connector, per role and in total."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agenttest.errors import AgentTestError, Location, did_you_mean
from agenttest.model import CaseResult, Spend, Usage
from agenttest.util.spool import is_spooled

PRICE_KEYS = ("input", "output", "cached_input")
EXAMPLE = '"pricing": {"input": 0.15, "output": 0.60, "cached_input": 0.075}'


@dataclass(frozen=True)
class Pricing:
    """USD per million tokens: prompt (``input``), completion (``output``), and cached prompt tokens
    (``cached_input``; priced as ``input`` when not given)."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: Usage) -> float:
        cached = min(usage.cached_tokens, usage.prompt_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((usage.prompt_tokens - cached) * self.input + cached * cached_price + usage.completion_tokens * self.output) / 1e6


def pricing_of(options: Mapping[str, Any], connector_id: str, path: str | None = None) -> Pricing | None:
    """A connector's ``options.pricing`` checked; None when it has none. Bad pricing is a usage error at
    the connector file."""
    raw = options.get("pricing")
    if raw is None:
        return None
    problem = _problem(raw)
    if problem is not None:
        message, hint = problem
        raise AgentTestError(f"connector {connector_id}: {message}", Location(path) if path else None,
                             hint or f"e.g. {EXAMPLE} (USD per million tokens)")
    return Pricing(float(raw["input"]), float(raw["output"]), None if raw.get("cached_input") is None else float(raw["cached_input"]))


def _problem(raw: Any) -> tuple[str, str | None] | None:
    if not isinstance(raw, dict):
        return f"'pricing' must be an object, not {type(raw).__name__}", None
    for key in raw:
        if key not in PRICE_KEYS:
            return f"'pricing.{key}' is not a price", did_you_mean(key, PRICE_KEYS) or f"prices: {', '.join(PRICE_KEYS)}"
    for key in ("input", "output"):
        if key not in raw:
            return f"'pricing' needs '{key}'", None
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            return f"'pricing.{key}' must be a number of USD per million tokens (0 or more), not {value!r}", None
    return None


Key = tuple[str, str]  # (role, connector)
ROLES = ("agent", "simulator", "validator", "generator")


def _order(key: Key) -> tuple[int, str]:
    role, connector = key
    return (ROLES.index(role) if role in ROLES else len(ROLES), connector)


def spend_of(usage: Mapping[Key, Usage], calls: Mapping[Key, int], prices: Mapping[str, Pricing | None]) -> tuple[Spend, ...]:
    """A case run's model usage by (role, connector), priced."""
    out = []
    for (role, connector), used in (usage.items() if len(usage) < 2 else sorted(usage.items(), key=lambda item: _order(item[0]))):
        pricing = prices.get(connector)
        out.append(Spend(role, connector, used, calls.get((role, connector), 0), pricing.cost(used) if pricing is not None else None))
    return tuple(out)


def total(spends: Iterable[Spend], role: str | None = None) -> float | None:
    """The priced cost of these spends (of one role, if given); None when none was priced."""
    priced = [s.cost for s in spends if s.cost is not None and (role is None or s.role == role)]
    return sum(priced) if priced else None


def add(a: float | None, b: float | None) -> float | None:
    """Sum two costs where None means "not priced"."""
    return b if a is None else a if b is None else a + b


@dataclass(frozen=True)
class Totals:
    """Tokens and cost summed over a report, by role and by connector."""

    cost: float | None
    by_role: dict[str, tuple[Usage, float | None]]
    by_connector: dict[str, tuple[Usage, float | None]]
    unpriced_tokens: int  # tokens of calls through connectors with no pricing

    @property
    def any(self) -> bool:
        return bool(self.by_role)


def totals(results: Iterable[CaseResult], generation: Iterable[Spend] = ()) -> Totals:
    """Sum every result's spend (and what generating the cases cost), in the order of roles then connectors
    (the sums of costs are made in that order, spend by spend)."""
    tokens: dict[tuple[int, str], list[int]] = {}  # (0: by role, 1: by connector; its name) → the four token counts
    counted: dict[tuple[int, str], Usage] = {}  # → who counted them (an empty Usage of that source)
    costs: dict[tuple[int, str], float | None] = {}
    unpriced, cost = 0, None
    for key, spends in _grouped(results, generation):
        places = ((0, key[0]), (1, key[1]))
        for place in places:
            tokens.setdefault(place, [0, 0, 0, 0])
            costs.setdefault(place, None)
        for s in spends:
            u = s.usage
            for place in places:
                sums = tokens[place]
                sums[0] += u.prompt_tokens
                sums[1] += u.completion_tokens
                sums[2] += u.total_tokens
                sums[3] += u.cached_tokens
                costs[place] = add(costs[place], s.cost)
                if u.source != "endpoint":
                    counted[place] = counted.get(place, _NONE) + Usage(source=u.source)
            cost = add(cost, s.cost)
            if s.cost is None:
                unpriced += u.total_tokens
    by_role = {name: (_usage(tokens[(0, name)], counted.get((0, name), _NONE)), costs[(0, name)]) for kind, name in tokens if kind == 0}
    by_connector = {name: (_usage(tokens[(1, name)], counted.get((1, name), _NONE)), costs[(1, name)]) for kind, name in tokens if kind == 1}
    return Totals(cost, by_role, by_connector, unpriced)


_NONE = Usage()


def _grouped(results: Iterable[CaseResult], generation: Iterable[Spend]) -> Iterator[tuple[Key, Iterable[Spend]]]:
    """Each (role, connector) in order with its spends in the results' order, then the generation's. A streamed run's
    results (on disk) are read once for the keys and once per key: a million spends are not held to be summed."""
    generation = tuple(generation)
    if is_spooled(results):
        keys = {(s.role, s.connector) for r in results for s in r.spend} | {(s.role, s.connector) for s in generation}
        for key in sorted(keys, key=_order):
            yield key, _of(results, generation, key)
        return
    groups: dict[Key, list[Spend]] = {}
    for r in results:
        for s in r.spend:
            groups.setdefault((s.role, s.connector), []).append(s)
    for s in generation:
        groups.setdefault((s.role, s.connector), []).append(s)
    for key in sorted(groups, key=_order):
        yield key, groups[key]


def _of(results: Iterable[CaseResult], generation: tuple[Spend, ...], key: Key) -> Iterator[Spend]:
    for r in results:
        for s in r.spend:
            if (s.role, s.connector) == key:
                yield s
    for s in generation:
        if (s.role, s.connector) == key:
            yield s


def _usage(sums: list[int], counted: Usage) -> Usage:
    """The four sums as a Usage, counted as ``counted`` says."""
    return Usage(sums[0], sums[1], sums[2], sums[3], counted.source)


def counted(usage: Usage) -> str:
    """What a figure of these tokens (or their cost) adds: `` (estimated)``, `` (unknown usage)``, or nothing."""
    return "" if usage.source == "endpoint" else " (estimated)" if usage.source == "estimated" else " (usage unknown for some calls)"


def money(usd: float | None) -> str:
    """``$1,234.50``, ``$0.0123``, ``$0.000105`` (three significant digits below a dollar), ``—`` when unpriced."""
    if usd is None:
        return "—"
    if usd >= 1 or usd <= 0:
        return f"${usd:,.2f}"
    text = f"{usd:.{max(2, 2 - math.floor(math.log10(usd)))}f}".rstrip("0")
    return "$" + (text + "0" if len(text.partition(".")[2]) < 2 else text)
