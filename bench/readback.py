"""Reading a report back (``merge``, ``diff``, ``--baseline``, ``view FILE``): the time ``codec.read`` takes for
reports of N results, and the share of it that checks the report against its schema — compiled
(``util/schemas.py``) next to ``jsonschema`` walking the same document, as the codec did before.

    python bench/readback.py [N …]        (default: 10000 100000)
    PYTHONPATH=TREE python bench/readback.py 10000    (another source tree's codec, e.g. git archive of an older commit)

Each report is made of results like a run's (an input history, two assertions, a tool call, usage, spend),
written by the codec itself; times are the best of three."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agenttest.reporting import codec  # noqa: E402
from agenttest.model import AssertionResult, CaseKey, CaseResult, RunReport, Spend, ToolCall, Usage  # noqa: E402


def report(n: int) -> RunReport:
    results = tuple(
        CaseResult(key=CaseKey("tests/cases.jsonl", f"case-{i}", "mock"), status="passed" if i % 20 else "failed",
                   input=[{"role": "user", "content": f"book {i} nights"}],
                   output=f"Booked {i} nights: reference BK-{i:06d}", duration_ms=12.5, run=1, index=i, line=i + 1,
                   assertions=(AssertionResult(type="contains", passed=True, checked='value="Booked"'),
                               AssertionResult(type="tool_called", passed=i % 20 != 0, message="" if i % 20 else "not called", expected="book")),
                   tool_calls=(ToolCall(name="book", arguments={"nights": i}, id=f"call_{i}", result={"ok": True, "ref": f"BK-{i:06d}"},
                                        duration_ms=0.4),),
                   usage=Usage(120, 14, 134), spend=(Spend("agent", "mock", Usage(120, 14, 134), 1, None),))
        for i in range(n))
    return RunReport(results=results, started_at="2026-12-01T10:00:00Z", completed_at="2026-12-01T10:00:09Z", duration_ms=9000.0,
                     agent_id="bot", connector="mock", input_source="tests/cases.jsonl",
                     environment={"user_id": "test-user", "team_id": "test-team", "locale": "en-us"})


def best(fn, times: int = 3) -> float:
    out = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - start)
    return out


def main(sizes: list[int]) -> None:
    print("| results | report | read (s) | schema check, compiled (s) | schema check, jsonschema (s) |")
    print("|---:|---:|---:|---:|---:|")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(codec.report_dict(report(n)), fh, indent=2)
            size = os.path.getsize(path) / 1e6
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            read = best(lambda path=path: codec.read(path), 3 if n <= 20_000 else 1)
            check = getattr(codec, "_schema_check", lambda: None)()  # None: a tree from before the compiled check
            compiled = best(lambda check=check, data=data: check(data)) if check is not None else float("nan")
            walked = best(lambda data=data: list(codec._schema_validator().iter_errors(data)), 1) if n <= 20_000 else float("nan")
            print(f"| {n:,} | {size:.0f} MB | {read:.2f} | {compiled:.2f} | {walked:.2f} |")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])
