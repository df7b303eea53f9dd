"""agenttest: test LLM agents from the command line, the way Yao's ``yao agent test`` does.

The public API: the data that flows (cases, results, reports), the errors, and the plug-in API — one
registry per plug-in kind (``plugins.ASSERTIONS``, ``CONNECTORS``, ``REPORTS``, ``SOURCES``, ``MODES``)
and the decorators that add to them (``register_assertion``, ``register_connector``, ``register_report``)."""

from agenttest.speed import collector as _collector

if _collector.started_as_the_command():  # ``agent-test …``: what these imports make is frozen as they end
    _collector.claim()
with _collector.importing():  # speed/collector.py
    from agenttest.speed import classcache as _classcache

    _classcache.install(__path__[0])  # before any of agenttest's dataclasses is made

    from agenttest import plugins
    from agenttest.assertions import Observation
    from agenttest.assertions import register as register_assertion
    from agenttest.connectors import ChatRequest, Connector, ConnectorSpec
    from agenttest.connectors import register as register_connector
    from agenttest.errors import AgentError, AgentTestError, CallError, ExitCode, InputError, Location, Problem
    from agenttest.inputs.documents import Loaded
    from agenttest.model import (
        AssertionResult,
        AssertionSpec,
        Case,
        CaseResult,
        Checkpoint,
        Completion,
        Context,
        Reply,
        RunReport,
        ToolCall,
        Turn,
        Usage,
    )
    from agenttest.modes.base import CaseEnv
    from agenttest.plugins import Registry
    from agenttest.reporting.formats import register as register_report
    from agenttest.version import __version__

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
