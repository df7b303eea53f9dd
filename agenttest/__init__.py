"""agenttest: test LLM agents from the command line, the way Yao's ``yao agent test`` does."""

from agenttest.errors import AgentError, AgentTestError, CallError, ExitCode, InputError, Location, Problem
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
from agenttest.version import __version__

__all__ = [
    "AgentError",
    "AgentTestError",
    "AssertionResult",
    "AssertionSpec",
    "CallError",
    "Case",
    "CaseResult",
    "Checkpoint",
    "Completion",
    "Context",
    "ExitCode",
    "InputError",
    "Location",
    "Problem",
    "Reply",
    "RunReport",
    "ToolCall",
    "Turn",
    "Usage",
    "__version__",
]
