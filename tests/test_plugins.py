"""Third-party plug-ins from the ``agenttest.plugins`` entry-point group: an assertion type, a connector
and a report format, registered exactly as the built-ins are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from helpers import REPO

PLUGIN = '''
from agenttest.assertions import register as assertion
from agenttest.connectors import register as connector
from agenttest.model import AssertionResult, Completion
from agenttest.reporting import register as report_format


@assertion("starts_with", fields=("value",))
def starts_with(params, obs):
    ok = obs.text.startswith(params["value"])
    return AssertionResult("starts_with", ok, "" if ok else f"does not start with {params['value']!r}")


@assertion("shorter_than", fields={"threshold": {"type": "integer"}})
def shorter_than(params, obs):
    ok = len(obs.text) < params["threshold"]
    return AssertionResult("shorter_than", ok, "" if ok else f"{len(obs.text)} characters, not under {params['threshold']}")


@assertion("buggy")
def buggy(params, obs):
    return 1 / 0


@connector("shout")
class Shout:
    def __init__(self, spec):
        self.spec = spec

    async def complete(self, request):
        return Completion(request.messages[-1]["content"].upper())


@report_format(".txt")
def plain(report):
    return "".join(f"{r.id} {r.status}\\n" for r in report.results)
'''


def test_entry_point_plugins(tmp_path):
    site = tmp_path / "site"
    dist = site / "demo_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[agenttest.plugins]\ndemo = demo_plugin\n")
    (site / "demo_plugin.py").write_text(textwrap.dedent(PLUGIN))
    app = tmp_path / "app"
    (app / "assistants" / "loud").mkdir(parents=True)
    (app / "connectors").mkdir()
    (app / "connectors" / "shout.conn.yao").write_text(json.dumps({"type": "shout"}))
    (app / "assistants" / "loud" / "package.yao").write_text(json.dumps({"name": "loud", "connector": "shout"}))
    cases = app / "cases.jsonl"
    cases.write_text("\n".join(json.dumps(c) for c in [
        {"id": "yes", "input": "hello there", "assert": {"type": "starts_with", "value": "HELLO"}},
        {"id": "no", "input": "bye", "assert": {"type": "starts_with", "value": "HELLO"}},
        {"id": "short", "input": "hi", "assert": {"type": "shorter_than", "threshold": 5}},
        {"id": "long", "input": "hello there", "assert": {"type": "shorter_than", "threshold": 5}},
        {"id": "bug", "input": "hi", "assert": {"type": "buggy"}}]) + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    out = tmp_path / "r.txt"
    r = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(cases), "-n", "loud", "--app", str(app), "-o", str(out)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stderr
    assert out.read_text() == "yes passed\nno failed\nshort passed\nlong failed\nbug error\n"
    assert "does not start with 'HELLO'" in r.stdout and "11 characters, not under 5" in r.stdout
    assert "internal error in 'buggy' assertion: ZeroDivisionError: division by zero" in r.stdout
    bad = app / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "input": "hi", "assert": {"type": "shorter_than", "threshold": "five", "treshold": 5}}) + "\n")
    r = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(bad), "-n", "loud", "--app", str(app)], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "bad.jsonl:1:76: 'threshold' must be an integer, not a string" in r.stderr
    assert "bad.jsonl:1:84: 'treshold' is not a field; did you mean 'threshold'?" in r.stderr
