"""A suite of cases with tools, a judge and a simulator on one real model (issue 51 item 7), and the checks
that a run of it holds: no error of agent-test's own, every judge or simulator failure charged to that worker,
usage marked where the server sent none.

The 10 cases × 5 runs at --parallel 4 of the issue, against a server already running (docs/servers.md):

    python tests/realmodel_suite.py http://127.0.0.1:8000 --cases 10 --runs 5 --parallel 4
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

TOOLS = [{"name": "lookup_expense", "description": "Look up the user's expense", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = "def lookup_expense(ctx):\n    return {'id': 'EXP-100', 'amount': 12}\n"
JUDGE_PROMPT = ("You judge an assistant's answer. Reply with only JSON: "
                '{"passed": true or false, "reason": "why"}.')
SIM_PROMPT = ("You play a user who wants to know their expense. Reply with only JSON: "
              '{"message": "what you say next", "goal_achieved": true or false}.')
ERRORS_ALLOWED = ("agent error", "validator", "simulator error", "checkpoint")  # the model's or a worker's fault, each named


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build_suite(root: Path, host: str, cases: int = 10) -> Path:
    """An app under ``root`` (agents suite.bot, suite.judge, suite.sim on one connector, suite.llama: one server, one
    request at a time — two connectors to one server would each have their own max_concurrency) and a case file
    of ``cases`` cases; returns the case file's folder. Answers are streamed (the server sends no usage in streams:
    it is estimated), requests that offer tools — every one of the agent's — not (``stream_tools: false``)."""
    options = {"model": "smollm2", "host": host, "tool_choice": "auto", "temperature": 0.7, "max_tokens": 48, "timeout": 600,
               "max_concurrency": 1, "stream": True, "stream_tools": False}
    write(root / "connectors" / "suite" / "llama.conn.yao", json.dumps({"type": "openai", "options": options}))
    bot = root / "assistants" / "suite" / "bot"
    write(bot / "package.yao", json.dumps({"name": "bot", "connector": "suite.llama", "tools": TOOLS, "max_tool_rounds": 2}))
    write(bot / "src" / "tools.py", TOOLS_PY)
    for name, prompt in (("judge", JUDGE_PROMPT), ("sim", SIM_PROMPT)):
        write(root / "assistants" / "suite" / name / "package.yao",
              json.dumps({"name": name, "connector": "suite.llama", "options": {"max_tokens": 128}}))
        write(root / "assistants" / "suite" / name / "prompts.yml", f"- role: system\n  content: {json.dumps(prompt)}\n")
    judged = {"type": "agent", "use": "agents:suite.judge", "value": "The answer is polite."}
    kinds = [
        {"input": "Look up my expense.", "assert": [{"type": "tool_called", "name": "lookup_expense"}, judged]},
        {"input": "Hello!", "assert": [judged], "budget": {"tokens": 5000}},
        {"simulator": {"use": "suite.sim", "options": {"metadata": {"persona": "an employee", "goal": "learn the expense number"}}},
         "max_turns": 2, "checkpoints": [{"id": "looked", "assert": {"type": "tool_called", "name": "lookup_expense"}},
                                         {"id": "polite", "assert": judged, "required": False}]},
        {"input": "What is my expense number?", "assert": {"type": "contains", "value": "EXP-100"}},
    ]
    folder = root / "assistants" / "suite" / "bot" / "tests"
    lines = [json.dumps({"id": f"case-{i + 1}", **kinds[i % len(kinds)]}) for i in range(cases)]
    write(folder / "cases.jsonl", "\n".join(lines) + "\n")
    return folder


def check_suite(result: Any, data: dict[str, Any]) -> dict[str, int]:
    """The run held: exit 0 or 1, no internal error, each error the model's or a named worker's, usage marked."""
    assert result.exit_code in (0, 1), result.output
    counts = {"passed": 0, "failed": 0, "error": 0, "timeout": 0, "judge": 0, "simulator": 0, "estimated": 0}
    for r in data["results"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        error = r.get("error", "")
        assert "internal error" not in error and "Traceback" not in error, error
        if r["status"] == "error":
            assert error.startswith(ERRORS_ALLOWED), error
            if r.get("error_by") == "validator":
                counts["judge"] += 1
                assert "validator suite.judge" in error
            elif r.get("error_by") == "simulator":
                counts["simulator"] += 1
                assert "simulator suite.sim" in error
        assert r["status"] != "timeout", error
        for spent in r.get("spend", ()):  # the judge and the simulator offer no tools: streamed, the server counted none
            if spent["role"] in ("validator", "simulator") and spent["usage"]["total_tokens"]:
                assert spent["usage"].get("source") in ("estimated", "unknown"), spent
                counts["estimated"] += spent["usage"].get("source") == "estimated"
    if counts["judge"] or counts["simulator"]:
        assert "judge" in result.output or "simulator" in result.output
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("host", help="the server's API base, e.g. http://127.0.0.1:8000")
    parser.add_argument("--cases", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from helpers import cli

    root = Path(tempfile.mkdtemp()) / "app"
    folder = build_suite(root, args.host, args.cases)
    out = root / "suite.json"
    result = cli("-i", str(folder), "-n", "suite.bot", "--runs", str(args.runs), "--parallel", str(args.parallel), "-o", str(out),
                 "--app", str(root))
    print(result.output)
    assert result.exit_code in (0, 1), f"exit {result.exit_code}"
    counts = check_suite(result, json.loads(out.read_text()))
    print("checked:", counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
