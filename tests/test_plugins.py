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
    return AssertionResult(type="starts_with", passed=ok, message="" if ok else f"does not start with {params['value']!r}")


@assertion("shorter_than", fields={"threshold": {"type": "integer"}})
def shorter_than(params, obs):
    ok = len(obs.text) < params["threshold"]
    return AssertionResult(type="shorter_than", passed=ok, message="" if ok else f"{len(obs.text)} characters, not under {params['threshold']}")


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


def _installed(tmp_path, name: str, source: str):
    """A folder for PYTHONPATH holding module ``<name>_plugin`` and the dist-info that names it in the
    ``agenttest.plugins`` entry-point group, as ``pip install`` would leave a plug-in."""
    site = tmp_path / "site"
    dist = site / f"{name}_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[agenttest.plugins]\n{name} = {name}_plugin\n")
    (site / f"{name}_plugin.py").write_text(textwrap.dedent(source))
    return site


def test_entry_point_plugins(tmp_path):
    site = _installed(tmp_path, "demo", PLUGIN)
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


SOURCE_AND_MODE = '''
import json
from agenttest import CaseResult, plugins
from agenttest.inputs.reading import parse


class Inline:
    """-i inline:<JSON list of cases>: cases written on the command line."""

    def __init__(self, text):
        self.text = "inline:" + text
        self.path = None
        self.needs_agent = False
        self._json = text

    def describe(self, count):
        return f"inline ({count} cases)"

    def report_folder(self):
        return None

    def agent_hint(self, app):
        return None

    async def load(self, env):
        lines = "\\n".join(json.dumps(c) for c in json.loads(self._json))
        return parse(lines, "<inline>", kind=".jsonl")


plugins.SOURCES.add("inline:", Inline)


class Echo:
    """A mode for cases with 'echo_back': passes when the case's input, reversed, is what it says."""

    fields = {"echo_back": {"type": "string", "description": "the input reversed"}}

    @staticmethod
    def claims(case):
        return "echo_back" in case.raw

    @staticmethod
    async def run(case, env, trace):
        ok = case.input[::-1] == case.raw["echo_back"]
        return CaseResult(status="passed" if ok else "failed", name=case.name, input=case.input, output=case.input[::-1],
                          error="" if ok else "not the input reversed")

    @staticmethod
    def partial(case, trace, status, error):
        return CaseResult(status=status, name=case.name, input=case.input, error=error)


plugins.MODES.add("echo", Echo)
'''


def test_a_third_party_input_source_and_mode_load_through_the_entry_point(tmp_path):
    site = _installed(tmp_path, "inline", SOURCE_AND_MODE)
    app = tmp_path / "app"
    (app / "assistants" / "bot").mkdir(parents=True)
    (app / "assistants" / "bot" / "package.yao").write_text(json.dumps({"name": "bot", "connector": "mock"}))
    (app / "assistants" / "bot" / "mock.yml").write_text("rules: []\n")
    (app / "connectors").mkdir()
    (app / "connectors" / "mock.conn.yao").write_text(json.dumps({"type": "mock"}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    cases = [{"id": "good", "input": "abc", "echo_back": "cba"}, {"id": "bad", "input": "abc", "echo_back": "abc"}]
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "agenttest", "-i", "inline:" + json.dumps(cases), "-n", "bot", "--app", str(app),
                        "-o", str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    results = {x["id"]: x for x in json.loads(out.read_text())["results"]}
    assert results["good"]["status"] == "passed" and results["good"]["output"] == "cba"
    assert results["bad"]["status"] == "failed" and results["bad"]["error"] == "not the input reversed"
    # the mode's field is a field of a case: a typo of it is a did-you-mean, as for the built-in fields
    typo = [{"id": "t", "input": "abc", "echo_bak": "cba"}]
    r = subprocess.run([sys.executable, "-m", "agenttest", "-i", "inline:" + json.dumps(typo), "-n", "bot", "--app", str(app)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "'echo_bak' is not a field; did you mean 'echo_back'?" in r.stderr, r.stderr
    # the mode is open: --list names the plug-in mode that claims a case, a built-in's name the others
    mixed = [*cases[:1], {"id": "plain", "input": "hi"}]
    r = subprocess.run([sys.executable, "-m", "agenttest", "-i", "inline:" + json.dumps(mixed), "-n", "bot", "--app", str(app), "--list"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "good  echo  " in r.stdout and "plain  standard  " in r.stdout, r.stdout + r.stderr


def test_built_in_report_formats_are_known_at_once_and_imported_when_asked_for(tmp_path):
    """Markdown, HTML and JUnit are deferred built-ins: listed (and checked, with a did-you-mean) from the
    start, imported only by a run that writes one — a JSON-only run never pays for the HTML viewer."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from agenttest.reporting import extensions, renderer\n"
        "assert {'.html', '.md', '.xml', '.json', '.jsonl'} <= set(extensions()), extensions()\n"
        "assert 'agenttest.reporting.html' not in sys.modules and 'agenttest.reporting.markdown' not in sys.modules\n"
        "assert renderer('.json') is not None and 'agenttest.reporting.html' not in sys.modules\n"
        "assert renderer('.html') is not None and 'agenttest.reporting.html' in sys.modules\n"
        "assert renderer('.htm') is None\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    import pytest

    from agenttest import reporting
    from agenttest.errors import AgentTestError

    with pytest.raises(AgentTestError) as bad:
        reporting.check_path(str(tmp_path / "report.htm"))
    assert "did you mean '.html'?" in bad.value.format_message()


def test_the_quick_look_for_plugins_finds_what_importlib_metadata_would(tmp_path, monkeypatch):
    """plugins.load() reads importlib.metadata only when a distribution on sys.path may declare a plug-in."""
    import sys
    from importlib.metadata import entry_points

    from agenttest.plugins import GROUP, _may_have_plugins

    assert _may_have_plugins() == bool(list(entry_points(group=GROUP)))  # this environment as it is
    site = _installed(tmp_path, "demo", PLUGIN)
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    assert _may_have_plugins() and [ep.name for ep in entry_points(group=GROUP)] == ["demo"]
    other = tmp_path / "other"
    (other / "x-1.0.dist-info").mkdir(parents=True)
    (other / "x-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nx = x:main\n")
    monkeypatch.setattr(sys, "path", [str(other)])
    assert not _may_have_plugins()  # entry points, but none of ours
    (tmp_path / "lib.zip").write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    monkeypatch.setattr(sys, "path", [str(other), str(tmp_path / "lib.zip")])
    assert _may_have_plugins()  # a zip on the path: not looked into, so importlib.metadata decides


def test_a_registry_kept_over_a_block_is_as_it_was_after_it():
    """``Registry.kept``: what a test registers is gone after it (the fixture in conftest.py uses it), and the
    version moves on so that what was derived from the registry (the case schema) is made again."""
    from agenttest.plugins import Registry

    reg: Registry[int] = Registry("thing")
    reg.add("a", 1)
    reg.defer("later", "some.module")
    version = reg.version
    with reg.kept():
        reg.add("b", 2)
        reg.add("a", 3)
        assert reg.mapping == {"a": 3, "b": 2} and reg.version > version
    assert dict(reg.mapping) == {"a": 1} and "later" in reg and reg.version > version + 2
    with reg.kept():
        pass
    assert reg.version == version + 3  # nothing changed: the version too


def test_the_worked_examples_of_the_architecture_page_work(tmp_path):
    """docs/architecture.md shows a new assertion type and a new report format as one file and one registration
    each: both, run as written, are used by a case file and by -o."""
    import re

    import pytest

    from agenttest import plugins
    from agenttest.inputs.reading import parse_text
    from agenttest.model import CaseKey, CaseResult, RunReport
    from agenttest.reporting import formats, write

    page = (REPO / "docs" / "architecture.md").read_text()
    assertion, report_format = re.findall(r"### Worked example: [^\n]*\n.*?```python\n(.*?)```", page, re.S)
    with plugins.ASSERTIONS.kept(), plugins.REPORTS.kept():
        exec(compile(assertion, "starts_with.py", "exec"), {"__name__": "starts_with"})
        exec(compile(report_format, "csv.py", "exec"), {"__name__": "reporting_csv"})
        (case,) = parse_text(json.dumps({"id": "a", "input": "hi", "assert": {"type": "starts_with", "value": "Hel"}}), "c.jsonl")
        assert case.assertions[0].type == "starts_with"
        with pytest.raises(Exception, match="did you mean 'value'"):  # its fields are checked at load time
            parse_text(json.dumps({"id": "a", "input": "hi", "assert": {"type": "starts_with", "valeu": "Hel"}}), "c.jsonl")
        report = RunReport(results=(CaseResult(key=CaseKey(id="a", connector="m"), status="failed", error="why"),), started_at="",
                           completed_at="", duration_ms=0.0)
        assert ".csv" in formats.report_formats()
        write(report, str(tmp_path / "r.csv"))
        assert (tmp_path / "r.csv").read_text().splitlines() == ["id,connector,run,status,reason", "a,m,1,failed,why"]
    assert ".csv" not in formats.report_formats()
