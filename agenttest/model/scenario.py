"""A case whose world is a scenario (seed format B; FORMATS §18): tools that act on the world (packs), a
virtual clock, user turns the agent pulls when their condition holds, world events at virtual times, and
budgets in steps and virtual time. What the file says, as data; ``runtime/scenario.py`` runs it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agenttest.errors import Location

OPS = ("create", "read", "update", "list", "delete", "search")  # what a pack's tool does to its collection


@dataclass(frozen=True, kw_only=True)
class WorldTool:
    """A tool the case's world brings (a pack's ``email.send``): offered to the agent beside its own tools,
    acting on ``world[pack][collection]`` by ``op`` — or, with ``function``, a Python function ``fn(ctx, **args)``."""

    name: str  # dotted: "email.send"; the model sees "email__send"
    description: str = ""
    parameters: dict[str, Any] | None = None  # JSON Schema of the arguments (None: the op's default)
    op: str = ""  # one of OPS; "" with a function
    collection: str = ""  # the pack's collection it acts on
    key: str = "id"  # the field that identifies an entity
    fields: tuple[str, ...] = ()  # search: the fields searched (all text fields when empty)
    defaults: dict[str, Any] | None = None  # create: fields the new entity gets when the call leaves them out
    function: Any = None  # a pack's tools.py function (no op)

    @property
    def pack(self) -> str:
        return self.name.partition(".")[0]


@dataclass(frozen=True)
class WorldEvent:
    """Something the world does by itself at a virtual time: a pack operation (``email.deliver``) with its data."""

    op: str  # dotted, a tool or an event of a pack: "email.deliver"
    data: dict[str, Any]
    at: float  # seconds: after the turn's delivery (``relative``), else on the clock (epoch seconds)
    relative: bool = True
    written: str = ""  # as the file gives it: "+8s", "2025-03-14T13:00:08Z"


@dataclass(frozen=True)
class PulledTurn:
    """A scripted user message the agent receives from ``eval.next_turn`` once ``when`` (CEL) holds."""

    user: str
    when: str | None = None
    events: tuple[WorldEvent, ...] = ()
    location: Location | None = None  # of ``when``, for an error while it is evaluated


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """What makes a case's world a scenario: its tools and events, turns, clock and budgets."""

    name: str
    tools: tuple[WorldTool, ...] = ()  # offered to the agent (eval.next_turn included)
    events: tuple[WorldTool, ...] = ()  # operations only world events use (email.deliver)
    turns: tuple[PulledTurn, ...] = ()
    start: float = 0.0  # the virtual clock's start, epoch seconds (meta.start_time)
    max_steps: int | None = None  # tool calls
    max_duration: float | None = None  # seconds of virtual time
    seed: int = 0  # meta.seed: the keyed PRNG of its faults
    identity: str = ""  # sha256 of everything the run's world comes from: file, from_file, base_snapshot, packs
    revision: Any = None

    def tool(self, name: str) -> WorldTool | None:
        """A tool or event by its dotted name or the name the model sees (``email__send``)."""
        for tool in (*self.tools, *self.events):
            if name == tool.name or name == model_name(tool.name):
                return tool
        return None


def model_name(dotted: str) -> str:
    """The name a model sees for a dotted tool: ``email.send`` → ``email__send`` (function names may not hold
    dots), as an MCP server's tools are ``server__tool``."""
    pack, dot, tool = dotted.rpartition(".")
    return f"{pack.replace('.', '_')}__{tool}" if dot else dotted


@dataclass(frozen=True, kw_only=True)
class ScenarioRecord:
    """What a scenario's run adds to its result: the reproduction identity, why it stopped (``BUDGET_EXCEEDED``),
    the virtual clock at its end, the turns delivered and the world events that happened, each at its virtual time."""

    identity: str = ""
    code: str = ""  # "BUDGET_EXCEEDED" when a budget ended the run
    started: str = ""  # ISO
    ended: str = ""  # ISO: the clock when the run ended
    steps: int = 0  # tool calls
    turns: tuple[dict[str, Any], ...] = ()  # {"turn", "vt", "user"} as delivered
    events: tuple[dict[str, Any], ...] = ()  # {"op", "vt", "data"} as they happened
    pending: int = 0  # turns never delivered
