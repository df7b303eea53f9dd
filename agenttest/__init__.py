"""agenttest: test LLM agents from the command line, the way Yao's ``yao agent test`` does.

The public API: the data that flows (cases, results, reports), the errors, and the plug-in API — one
registry per plug-in kind (``plugins.ASSERTIONS``, ``CONNECTORS``, ``REPORTS``, ``SOURCES``, ``MODES``)
and the functions that add to them (``register_assertion``, ``register_connector``, ``register_report``,
``register_source``, ``register_mode``). Each name is imported when first used (``import agenttest`` alone
imports nothing else and changes nothing outside the package); ``_PUBLIC`` says where each one lives."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (the command's start-up)

# name → (module, name there): the whole public API, in one table
_PUBLIC: dict[str, tuple[str, str]] = {
    "AgentError": ("agenttest.errors", "AgentError"),
    "AgentTestError": ("agenttest.errors", "AgentTestError"),
    "AssertionResult": ("agenttest.model", "AssertionResult"),
    "AssertionSpec": ("agenttest.model", "AssertionSpec"),
    "CallError": ("agenttest.errors", "CallError"),
    "Case": ("agenttest.model", "Case"),
    "CaseEnv": ("agenttest.modes.base", "CaseEnv"),
    "CaseResult": ("agenttest.model", "CaseResult"),
    "ChatRequest": ("agenttest.connectors", "ChatRequest"),
    "Checkpoint": ("agenttest.model", "Checkpoint"),
    "Completion": ("agenttest.model", "Completion"),
    "Connector": ("agenttest.connectors", "Connector"),
    "ConnectorSpec": ("agenttest.connectors", "ConnectorSpec"),
    "Context": ("agenttest.model", "Context"),
    "ExitCode": ("agenttest.errors", "ExitCode"),
    "InputError": ("agenttest.errors", "InputError"),
    "Loaded": ("agenttest.inputs.documents", "Loaded"),
    "Location": ("agenttest.errors", "Location"),
    "Observation": ("agenttest.assertions", "Observation"),
    "Problem": ("agenttest.errors", "Problem"),
    "Process": ("agenttest.runtime.processes", "Process"),
    "Registry": ("agenttest.plugins", "Registry"),
    "Reply": ("agenttest.model", "Reply"),
    "RunReport": ("agenttest.model", "RunReport"),
    "ToolCall": ("agenttest.model", "ToolCall"),
    "Turn": ("agenttest.model", "Turn"),
    "Usage": ("agenttest.model", "Usage"),
    "__version__": ("agenttest.version", "__version__"),
    "plugins": ("agenttest.plugins", ""),
    "register_assertion": ("agenttest.assertions", "register"),
    "register_connector": ("agenttest.connectors", "register"),
    "register_report": ("agenttest.reporting.formats", "register"),
}

__all__ = [
    "AgentError",
    "AgentTestError",
    "AssertionResult",
    "AssertionSpec",
    "CallError",
    "Case",
    "CaseEnv",
    "CaseResult",
    "ChatRequest",
    "Checkpoint",
    "Completion",
    "Connector",
    "ConnectorSpec",
    "Context",
    "ExitCode",
    "InputError",
    "Loaded",
    "Location",
    "Observation",
    "Problem",
    "Process",
    "Registry",
    "Reply",
    "RunReport",
    "ToolCall",
    "Turn",
    "Usage",
    "__version__",
    "plugins",
    "register_assertion",
    "register_connector",
    "register_report",
]


def __getattr__(name: str) -> Any:
    """A public name, imported the first time it is asked for (then kept as a module attribute)."""
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'agenttest' has no attribute {name!r}")
    module = importlib.import_module(where[0])
    value = getattr(module, where[1]) if where[1] else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what the table names, for type checkers and editors
    from typing import Any

    from agenttest import plugins
    from agenttest.assertions import Observation
    from agenttest.assertions import register as register_assertion
    from agenttest.connectors import ChatRequest, Connector, ConnectorSpec
    from agenttest.connectors import register as register_connector
    from agenttest.errors import AgentError, AgentTestError, CallError, ExitCode, InputError, Location, Problem
    from agenttest.inputs.documents import Loaded
    from agenttest.model import (AssertionResult, AssertionSpec, Case, CaseResult, Checkpoint, Completion, Context, Reply, RunReport,
                                 ToolCall, Turn, Usage)
    from agenttest.modes.base import CaseEnv
    from agenttest.plugins import Registry
    from agenttest.reporting.formats import register as register_report
    from agenttest.runtime.processes import Process
    from agenttest.version import __version__
