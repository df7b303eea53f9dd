"""Assertion types (FORMATS §4): the registry and its built-ins — ``static`` (equals, contains, regex,
json_path, type, tool_called, tool_result), ``trajectory`` (tool_sequence, tool_args, tool_count),
``state`` (the tool world), ``metrics`` (the journal's figures and counters), ``observed`` (check, all, any:
the observation of seed format A), ``cel`` and ``collateral`` (CEL over world, diff and journal; a change
allowlist), ``budget`` (what the agent spent), ``judge`` (a validator agent), ``pairwise`` (a validator choosing
between the output and a reference, in both orders), ``script`` and ``evaluators`` (user Python). Built-ins
register exactly as plug-ins do."""

from agenttest.assertions import budget, cel, evaluators, judge, metrics, observed, pairwise, script, state, static, trajectory  # noqa: F401  the built-ins
from agenttest.assertions.registry import (
    AssertionType,
    Check,
    CheckProblem,
    Judge,
    Need,
    Observation,
    check,
    describe,
    evaluate,
    evaluate_all,
    get,
    meant,
    names,
    needs,
    register,
    types,
    version,
)

__all__ = ["AssertionType", "Check", "CheckProblem", "Judge", "Need", "Observation", "check", "describe", "evaluate",
           "evaluate_all", "get", "meant", "names", "needs", "register", "types", "version"]
