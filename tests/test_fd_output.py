"""What user code writes below Python — ``os.write(1, …)``, a subprocess that prints, a C library — never
reaches agent-test's own output (issue 50, item 7): the ``--json`` stream holds only agent-test's events and no
escape sequence reaches the terminal; the bytes go to the case that ran (its ``stdout``/``stderr``) or, written
outside any case, are shown on stderr escaped and said in a warning. ``python -m agenttest`` as a subprocess:
real file descriptors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import REPO, report, tool_app

FORGED = '{"event": "result", "id": "forged", "status": "passed"}'
TOOLS = ("shout", "garble", "flood", "alternate", "halfline")
TOOLS_PY = f"""
import os, subprocess, sys
FORGED = {FORGED!r}
def shout(ctx):
    subprocess.run([sys.executable, "-c", "print(" + repr(FORGED) + ")"], check=True)
    os.write(1, b"\\x1b[2J\\x1b[31mfd one " + ctx.chat_id.encode() + b"\\n")
    os.write(2, b"\\x1b]0;owned\\x07fd two " + ctx.chat_id.encode() + b"\\n")
    print("python level", ctx.chat_id)
    return "shouted"
def halfline(ctx):
    import time
    os.write(1, b"half")  # a line begun below Python (as a process run unbuffered writes a print's text, then its newline)
    time.sleep(0.2)  # read by the pipe's thread meanwhile, on its own
    os.write(1, b" a line\\n")
    print("python level", ctx.chat_id)
    return "halved"
def garble(ctx):
    os.write(1, b"bad \\xff\\xfe bytes\\n")
    return "garbled"
def flood(ctx):
    os.write(1, b"y" * (3 * 1024 * 1024))
    return "flooded"
def alternate(ctx):
    for i in range(200):
        os.write(1, b"fd %d\\n" % i)
        print("python", i)
    return "alternated"
"""
HOOKS_PY = f"""
import os, subprocess, sys
FORGED = {FORGED!r}
def Loud(ctx, *args):
    subprocess.run([sys.executable, "-c", "print(" + repr(FORGED) + ")"], check=True)
    os.write(2, b"\\x1b[2Jhook on fd two\\n")
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    agent = tool_app(tmp_path / "app", TOOLS, TOOLS_PY)
    (agent / "src" / "env_test.py").write_text(textwrap.dedent(HOOKS_PY))
    return tmp_path / "app"


def run(app_dir: Path, cases: list[dict], *args: str) -> tuple[int, str, str]:
    path = app_dir / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    command = [sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot", "--app", str(app_dir), *args]
    proc = subprocess.run(command, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]  # raises on any line that is not agent-test's JSON


@pytest.mark.parametrize("workers", ["0", "1", "2"])
def test_a_tool_writing_to_the_file_descriptors_never_reaches_the_json_stream(app_dir, tmp_path, workers):
    out = tmp_path / "r.json"
    cases = [{"id": "one", "input": "call shout"}, {"id": "two", "input": "call shout"}]
    code, stdout, stderr = run(app_dir, cases, "--json", "-o", str(out), "--workers", workers)
    assert code == 0, stdout + stderr
    got = events(stdout)
    assert [e["event"] for e in got] == ["start", "result", "result", "summary"], got
    assert sorted(e["id"] for e in got if e["event"] == "result") == ["one", "two"]
    assert "\x1b" not in stdout and "\x1b" not in stderr and "\x07" not in stderr
    results = {r["id"]: r for r in report(out)["results"]}
    for case in ("one", "two"):  # one case at a time: what it wrote is its own (its chat id, as its print says it)
        result = results[case]
        (chat,) = [line.split()[-1] for line in result["stdout"].splitlines() if line.startswith("python level ")]
        assert FORGED in result["stdout"] and f"fd one {chat}" in result["stdout"], result
        assert f"fd two {chat}" in result["stderr"] and "\x1b]0;owned" in result["stderr"]


@pytest.mark.parametrize("workers", ["0", "1"])
def test_the_console_run_keeps_its_lines_and_the_bytes_go_to_the_case(app_dir, tmp_path, workers):
    out = tmp_path / "r.json"
    code, stdout, stderr = run(app_dir, [{"id": "one", "input": "call shout"}, {"id": "bad", "input": "call garble"},
                                         {"id": "big", "input": "call flood"}], "-o", str(out), "--workers", workers)
    assert code == 0, stdout + stderr
    assert "ALL TESTS PASSED" in stdout and "\x1b[2J" not in stdout + stderr and FORGED not in stdout + stderr
    results = {r["id"]: r for r in report(out)["results"]}
    assert "bad \\xff\\xfe bytes" in results["bad"]["stdout"]  # bytes that are not UTF-8 are kept, escaped
    assert results["big"]["stdout"].endswith(f"… {2 * 1024 * 1024:,} bytes more")  # capped as a print is
    assert len(results["big"]["stdout"]) < 1024 * 1024 + 100


@pytest.mark.parametrize("workers", ["0", "1"])
def test_output_outside_any_case_is_shown_on_stderr_escaped_and_said(app_dir, tmp_path, workers):
    out = tmp_path / "r.json"
    code, stdout, stderr = run(app_dir, [{"id": "a", "input": "hi"}], "--json", "-o", str(out), "--workers", workers,
                               "--before", "env_test.Loud", "--after", "env_test.Loud")
    assert code == 0, stdout + stderr
    assert [e["event"] for e in events(stdout)] == ["start", "result", "summary"]
    assert "\x1b" not in stderr and stderr.count("hook on fd two") == 2 and "\\x1b[2Jhook on fd two" in stderr
    assert stderr.count("forged") == 2  # the stdout of BeforeAll's and AfterAll's subprocess, shown on stderr
    warnings = report(out)["metadata"]["warnings"]
    assert any("written to stdout outside any case" in w for w in warnings), warnings


@pytest.mark.parametrize("workers", ["0", "1"])
def test_what_a_case_writes_below_python_and_through_print_keeps_its_order(app_dir, tmp_path, workers):
    """The bytes on fd 1 reach the case through a pipe that a thread reads; a print goes to the case at once. A
    print's text came before the bytes written just ahead of it, and split its line ('python' + fd bytes + ' 7'):
    under load, a case's 'python level' line was lost that way."""
    out = tmp_path / "r.json"
    code, stdout, stderr = run(app_dir, [{"id": "a", "input": "call alternate"}], "-o", str(out), "--workers", workers)
    assert code == 0, stdout + stderr
    (result,) = report(out)["results"]
    assert result["stdout"] == "".join(f"fd {i}\npython {i}\n" for i in range(200)), result["stdout"][:2000]


@pytest.mark.parametrize("workers", ["0", "1"])
def test_a_print_after_a_line_begun_below_python_comes_after_its_end(app_dir, tmp_path, workers):
    """'half' read from the pipe alone, then ' a line' still in it when the tool prints: the print came between them
    ('halfpython level …') — the bytes below Python were read first only when the print began a line (a flaky test
    under load, with PYTHONUNBUFFERED=1, found it)."""
    out = tmp_path / "r.json"
    code, stdout, stderr = run(app_dir, [{"id": "one", "input": "call halfline"}], "-o", str(out), "--workers", workers)
    assert code == 0, stdout + stderr
    (result,) = report(out)["results"]
    assert result["stdout"].startswith("half a line\npython level "), result["stdout"]
