"""agenttest: test LLM agents from the command line, the way Yao's ``yao agent test`` does."""

from .errors import AgentError, AgentTestError, ExitCode, InputError, Location, Problem
from .model import (
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

__version__ = "0.1.0"

__all__ = [
    "AgentError",
    "AgentTestError",
    "AssertionResult",
    "AssertionSpec",
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
