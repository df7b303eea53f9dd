"""Workloads: a throwaway app pointed at the benchmark server, and case files of N cases."""

from __future__ import annotations

import json
import os
from typing import Any

NEEDLE = "submitted"
HISTORY = [
    {"role": "user", "content": "I want to submit an expense"},
    {"role": "assistant", "content": "What type of expense would you like to submit?"},
    {"role": "user", "content": "Business travel to Beijing, $3500"},
]


def make_app(root: str, host: str) -> None:
    """An app with the agent under test ``bot`` and a simulator ``sim``, both on the server, and
    ``mockbot``, the same agent on the mock connector (the runner with no network and no SDK)."""
    for folder in ("assistants/bot", "assistants/sim", "assistants/mockbot", "connectors"):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
    with open(os.path.join(root, "connectors", "bench.conn.yao"), "w") as fh:
        json.dump({"type": "openai", "options": {"model": "bench-model", "host": host, "key": "bench-key", "max_retries": 0}}, fh)
    with open(os.path.join(root, "connectors", "mock.conn.yao"), "w") as fh:
        json.dump({"type": "mock"}, fh)
    with open(os.path.join(root, "assistants", "mockbot", "package.yao"), "w") as fh:
        json.dump({"name": "mockbot", "connector": "mock"}, fh)
    with open(os.path.join(root, "assistants", "mockbot", "mock.yml"), "w") as fh:
        fh.write(f"default: 'Expense {NEEDLE}! Reference EXP-001.'\n")
    cpu = os.path.join(root, "assistants", "cpubot")  # CPU-bound: one tool call doing ~20 ms of Python a case
    os.makedirs(os.path.join(cpu, "src"), exist_ok=True)
    with open(os.path.join(cpu, "package.yao"), "w") as fh:
        json.dump({"name": "cpubot", "connector": "mock",
                   "tools": [{"name": "burn", "description": "work", "parameters": {"type": "object", "properties": {}}}]}, fh)
    with open(os.path.join(cpu, "mock.yml"), "w") as fh:
        fh.write(f"rules:\n  - tool: burn\n    reply: 'Expense {NEEDLE}! {{{{ tool_result }}}}'\n"
                 "  - user: '.'\n    tool_calls:\n      - name: burn\n        arguments: {}\n"
                 f"default:\n  reply: 'Expense {NEEDLE}!'\n")
    with open(os.path.join(cpu, "src", "tools.py"), "w") as fh:
        fh.write(BURN)
    for agent, prompt in (("bot", "You are the agent under test."), ("sim", "SIM")):
        with open(os.path.join(root, "assistants", agent, "package.yao"), "w") as fh:
            json.dump({"name": agent, "connector": "bench"}, fh)
        with open(os.path.join(root, "assistants", agent, "prompts.yml"), "w") as fh:
            fh.write(f"- role: system\n  content: {prompt}\n")


BURN = '''import time


def burn(ctx):
    """~20 ms of pure Python (holds the GIL): the CPU-bound tool of the workers' workload."""
    end, n = time.thread_time() + 0.02, 0
    while time.thread_time() < end:
        n += sum(range(200))
    return {"n": n}
'''


def standard_cases(n: int) -> list[dict[str, Any]]:
    return [{"id": f"case-{i:05d}", "input": HISTORY + [{"role": "user", "content": f"Yes, confirm #{i}"}],
             "assertions": [{"type": "contains", "value": NEEDLE}]} for i in range(n)]


def dynamic_cases(n: int) -> list[dict[str, Any]]:
    return [{"id": f"dyn-{i:04d}", "simulator": {"use": "sim", "options": {"metadata": {"persona": "p", "goal": "g"}}},
             "input": "I want to submit an expense",
             "checkpoints": [{"id": "asks", "assert": {"type": "contains", "value": "alpha"}},
                             {"id": "done", "after": ["asks"], "assert": {"type": "contains", "value": "omega"}}],
             "max_turns": 5} for i in range(n)]


FLAKY = "Flaky request #"


def flaky_cases(n: int) -> list[dict[str, Any]]:
    """Cases whose agent fails 3 runs in every 10 (see ``flaky_passes``)."""
    return [{"id": f"flaky-{i:05d}", "input": f"{FLAKY}{i}", "assertions": [{"type": "contains", "value": NEEDLE}]} for i in range(n)]


def flaky_passes(case: int, run: int) -> bool:
    """The ``run``-th request (from 0) of flaky case ``case`` fails when (7 × case + 3 × run) mod 10 < 3: exactly
    3 of any 10 consecutive runs fail (3 and 10 are coprime), at positions that differ from case to case."""
    return (7 * case + 3 * run) % 10 >= 3


def expected_runs_with_early_stop(n: int, runs: int) -> int:
    """Runs a pass^k gate needs before its verdict is settled (the first failure), over ``n`` flaky cases."""
    return sum(next((k + 1 for k in range(runs) if not flaky_passes(i, k)), runs) for i in range(n))


def write_standard(path: str, n: int) -> None:
    """``standard_cases(n)`` written a line at a time (a million cases are not made in memory first)."""
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"case-{i:05d}", "input": HISTORY + [{"role": "user", "content": f"Yes, confirm #{i}"}],
                                 "assertions": [{"type": "contains", "value": NEEDLE}]}) + "\n")


def write_cases(path: str, cases: list[dict[str, Any]]) -> None:
    with open(path, "w") as fh:
        for c in cases:
            fh.write(json.dumps(c) + "\n")


SIM_REPLY = json.dumps({"message": "go on", "goal_achieved": False, "reasoning": "bench"})


def reply_for(messages: list[dict[str, Any]], seen: dict[str, int] | None = None) -> str:
    """The agent answers 'alpha' on turn 1, 'middle' on 2, 'omega' on 3 (a confirmation: 'submitted');
    the simulator (system prompt SIM) answers its JSON; a flaky case passes by ``flaky_passes``, counting
    its requests in ``seen``."""
    if messages and messages[0].get("content") == "SIM":
        return SIM_REPLY
    last = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    if last.startswith(FLAKY) and seen is not None:
        run = seen.get(last, 0)
        seen[last] = run + 1
        return f"Expense {NEEDLE}!" if flaky_passes(int(last[len(FLAKY):]), run) else "Sorry, try again."
    if "confirm" in last:
        return f"Expense {NEEDLE}! Reference EXP-001."
    turns = sum(1 for m in messages if m.get("role") == "user")
    return ("alpha", "middle", "omega")[min(turns, 3) - 1]
