"""The small vocabularies the data uses: statuses, modes, roles, fault kinds, and the message shape."""

from __future__ import annotations

from typing import Any, Literal

Status = Literal["passed", "failed", "error", "timeout", "skipped"]
BuiltinMode = Literal["standard", "dynamic", "scripted", "script", "scenario", "judged"]  # what a case's own fields make it
Mode = str  # a mode's registered name: a built-in's, or a plug-in mode's (one that claims the case)
Role = Literal["agent", "simulator", "validator", "generator"]
FaultKind = Literal["error", "timeout", "malformed", "empty", "rate_limit", "server_error", "permission_denied", "expired_credentials",
                    "commit_timeout"]
OutputFrom = Literal["text", "tool_result"]  # what an agent's output is: its final reply, or its first tool result
OUTPUT_FROM = ("text", "tool_result")
UsageSource = Literal["endpoint", "estimated", "unknown"]  # who counted a model call's tokens
Message = dict[str, Any]
