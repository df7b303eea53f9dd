"""Frozen dataclasses that flow through the pipeline: Case → Reply/Turn → AssertionResult → CaseResult → RunReport.
``cases`` (what a file says), ``calls`` (what calling models and tools gives), ``results`` (what a run gives)."""

from agenttest.model.calls import (
                      Completion,
                      Context,
                      EndpointLoad,
                      Limits,
                      ModelCall,
                      Reply,
                      Spend,
                      ToolCall,
                      Usage,
)
from agenttest.model.cases import (
                      AssertionSpec,
                      Budget,
                      Case,
                      Checkpoint,
                      Fault,
                      Given,
                      Locator,
                      Mock,
                      ScriptedTurn,
                      SimulatorSpec,
                      SuiteSpec,
                      astuple_shallow,
)
from agenttest.model.exchanges import Answer, CallLog, Exchange, Retry
from agenttest.model.evidence import Calibration, Disagreement, Estimate, Evidence, Judged, Mover, Paired
from agenttest.model.diagnostics import Diagnostics
from agenttest.model.keys import CaseKey
from agenttest.model.plan import Plan, ResolvedCase, RunSettings, Streamed
from agenttest.model.kinds import BuiltinMode, FaultKind, Message, Mode, OutputFrom, Role, Status, UsageSource
from agenttest.model.results import (
                      AssertionResult,
                      CaseResult,
                      CheckpointResult,
                      Gate,
                      PassK,
                      Player,
                      Ran,
                      RunHeader,
                      RunReport,
                      SuiteResult,
                      Summary,
                      Turn,
                      WorldChange,
                      WorldRecord,
)

__all__ = [
    "Answer",
    "AssertionResult",
    "AssertionSpec",
    "Budget",
    "BuiltinMode",
    "Calibration",
    "CallLog",
    "Case",
    "CaseKey",
    "CaseResult",
    "Checkpoint",
    "CheckpointResult",
    "Completion",
    "Context",
    "Diagnostics",
    "Disagreement",
    "EndpointLoad",
    "Estimate",
    "Evidence",
    "Exchange",
    "Fault",
    "FaultKind",
    "Gate",
    "Given",
    "Judged",
    "Limits",
    "Locator",
    "Message",
    "Mock",
    "Mode",
    "ModelCall",
    "Mover",
    "OutputFrom",
    "Paired",
    "PassK",
    "Ran",
    "Plan",
    "Player",
    "Reply",
    "ResolvedCase",
    "Retry",
    "Role",
    "RunHeader",
    "RunReport",
    "RunSettings",
    "ScriptedTurn",
    "SimulatorSpec",
    "Spend",
    "Status",
    "Streamed",
    "SuiteResult",
    "SuiteSpec",
    "Summary",
    "ToolCall",
    "Turn",
    "Usage",
    "UsageSource",
    "WorldChange",
    "WorldRecord",
    "astuple_shallow",
]

import dataclasses as _dataclasses

from agenttest.speed import records as _records

# made by the million in a large run: with the speed machinery installed, their __init__ sets slots through descriptors
_records.hot(*[c for c in list(globals().values()) if isinstance(c, type) and _dataclasses.is_dataclass(c)])
