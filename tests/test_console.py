"""The console as a person sees it: previews cut by characters, colour only on a terminal."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest

from agenttest.util.durations import format_duration, format_timeout, parse_duration
from agenttest.model import CaseKey, CaseResult
from agenttest.reporting.console import Console, cut
from helpers import REPO


def test_previews_are_cut_by_characters_not_bytes():
    text = "人工智能和机器学习正在改变我们的世界，并且影响每一个行业的未来发展方向与速度，这是一个很长的句子"
    shown = cut(text, 14)
    assert shown == "人工智能和机器学习正在改变我..." and shown.encode("utf-8").decode("utf-8") == shown
    assert cut("short", 14) == "short" and cut("a\nb   c", 14) == "a b c"


def test_standard_line_and_reasons():
    out = io.StringIO()
    console = Console(out)
    console.finished(CaseResult(key=CaseKey(id="T001"), status="failed", input="人工智能和机器学习正在改变我们的世界" * 3, duration_ms=1234,
                                error="agent error: boom"))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("► [T001] 人工智能") and lines[0].endswith("... FAILED (1.2s)")
    assert lines[1] == "  └─ agent error: boom"


@pytest.mark.parametrize("value, seconds", [("30s", 30), ("2m30s", 150), ("1h", 3600), ("500ms", 0.5), (5, 5), ("1.5s", 1.5), ("90", 90)])
def test_durations(value, seconds):
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["soon", "", "5x", "-1s", 0, True, "1h-2m", None])
def test_bad_durations(value):
    with pytest.raises(ValueError):
        parse_duration(value)


def test_duration_formats():
    assert format_timeout(300) == "5m0s" and format_timeout(3725) == "1h2m5s" and format_timeout(0.5) == "0.5s"
    assert format_duration(0.0042) == "4.2ms" and format_duration(0.00031) == "0.31ms"
    assert format_duration(0) == "0ms" and format_duration(0.35) == "350ms" and format_duration(0.0123) == "12ms"
    assert format_duration(2.7) == "2.7s" and format_duration(108) == "1.8m"


def run_in_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run agent-test with its stdout and stderr on a pseudo-terminal, as in a person's shell."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a 120×40 window
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", *args], stdin=child, stdout=child, stderr=child, cwd=REPO, env=env)
    os.close(child)
    chunks = []
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_on_a_terminal_but_never_with_no_color(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = str(REPO)
    args = ["-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense", "--run", "^ping$", "-o", str(tmp_path / "r.json")]
    coloured = run_in_terminal(args, env)
    assert "\x1b[32mPASSED\x1b[0m" in coloured
    plain = run_in_terminal(args, {**env, "NO_COLOR": "1"})
    assert "PASSED" in plain and "\x1b[3" not in plain
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["passed"] == 1


def test_progress_bar_on_a_terminal_with_parallel(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, "PYTHONPATH": str(REPO)}
    shown = run_in_terminal(["-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense", "--parallel", "3",
                             "-o", str(tmp_path / "r.json")], env)
    assert "%|" in shown and "/11" in shown  # tqdm's bar on stderr
    assert shown.count("► [") == 11


def test_lines_as_the_design_draws_them(offline_app, tmp_path):
    """A 47-character preview, attachments shown as + [name], the header in the design's order, and a
    final banner that counts cases and names what went wrong."""
    from helpers import cli

    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: 'echo: {{ user }}'\n", "tests/r.jpg": "jpg"})
    long = "The rapid development of cloud computing has reshaped how teams ship"
    cases = [{"id": "T1", "input": long},
             {"id": "T2", "input": [{"role": "user", "content": [{"type": "text", "text": "Submit receipt"}, {"type": "image", "source": "file://./r.jpg"}]}]},
             {"id": "T3", "input": "x", "assert": {"type": "contains", "value": "nope"}},
             {"id": "T4", "input": "x", "skip": True}]
    path = offline_app.cases("assistants/bot/tests/c.jsonl", cases)
    result = cli("-i", str(path), "--app", str(offline_app.root))
    out = result.stdout
    assert "► [T1] The rapid development of cloud computing has re... PASSED" in out  # 47 characters, as Yao
    assert "► [T2] Submit receipt + [r.jpg] PASSED" in out
    header = [line.split(":")[0] for line in out.splitlines() if line.startswith("ℹ")]
    assert header == ["ℹ Agent", "ℹ Connector", "ℹ Input", "ℹ Timeout"]
    assert "❌ 1 failed — 1 of 4 tests did not pass" in out


@pytest.mark.parametrize("errors, said", [(1, "❌ 1 error — 1 of 1 test did not pass"), (3, "❌ 3 errors — 3 of 3 tests did not pass")])
def test_the_closing_line_counts_errors_in_the_plural(tmp_path, errors, said):
    """A new user's trial read '3 error — …'."""
    from helpers import cli

    app = tmp_path / "app"
    (app / "assistants" / "bot").mkdir(parents=True)
    (app / "connectors").mkdir()
    (app / "connectors" / "mock.conn.yao").write_text(json.dumps({"type": "mock"}))
    (app / "assistants" / "bot" / "package.yao").write_text(json.dumps({"name": "bot", "connector": "mock"}))
    (app / "assistants" / "bot" / "mock.yml").write_text('rules:\n  - user: broken\n    error: "simulated outage"\ndefault: ok\n')
    cases = app / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "input": "broken"}) + "\n" for i in range(errors)))
    result = cli("-i", str(cases), "-n", "bot", "--no-history", "-o", str(tmp_path / "r.json"), cwd=app)
    assert result.exit_code == 1 and said in result.output, result.output
