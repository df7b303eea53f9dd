"""Shared fixtures: a loopback OpenAI-compatible server, throwaway app folders, and the CLI."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(__file__))

from openai_server import Answer, OpenAIServer, last_user  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def seed_document(name: str) -> Path:
    """A seed document of ../shared/spec: beside the checkout, one level up, or on the development machine's /work."""
    for root in (REPO.parent, REPO.parent.parent, Path("/work")):
        if (root / "shared" / "spec" / name).exists():
            return root / "shared" / "spec" / name
    return REPO / "missing" / name


@pytest.fixture(autouse=True)
def _history_apart(tmp_path, monkeypatch):
    """The suite's own runs go to a history of their own, not the repository's (tests of the default place
    take the variable away)."""
    monkeypatch.setenv("AGENTTEST_HISTORY", str(tmp_path / "suite-history.sqlite"))


@pytest.fixture(autouse=True)
def _assertion_registry():
    """Assertion types a test registers are gone after it (the case schema is derived from them)."""
    from agenttest import assertions  # noqa: F401 — the built-in types registered before the registry is kept
    from agenttest.plugins import ASSERTIONS

    with ASSERTIONS.kept():
        yield


@pytest.fixture(scope="session")
def _shared_server():
    with OpenAIServer() as srv:
        yield srv


@pytest.fixture
def server(_shared_server):
    """One loopback server for the whole session, reset before each test that uses it."""
    _shared_server.reset()
    return _shared_server


class AppBuilder:
    """Writes an app folder: connectors and agents, with files given as text."""

    def __init__(self, root: Path, server: OpenAIServer | None):
        self.root = root
        (root / "assistants").mkdir(parents=True, exist_ok=True)
        (root / "connectors").mkdir(exist_ok=True)
        if server is not None:
            self.connector("fake", {"type": "openai", "options": {"model": "fake-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY", "max_retries": 2}})
        self.connector("mock", {"type": "mock"})

    def connector(self, conn_id: str, data: dict[str, Any]) -> None:
        path = self.root / "connectors" / (conn_id.replace(".", "/") + ".conn.yao")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))

    def agent(self, agent_id: str, connector: str = "fake", tools: list[dict[str, Any]] | None = None,
              files: dict[str, str] | None = None, **package: Any) -> Path:
        folder = self.root / "assistants" / agent_id.replace(".", "/")
        folder.mkdir(parents=True, exist_ok=True)
        pkg = {"name": agent_id, "description": f"the {agent_id} agent", "connector": connector, **package}
        if tools:
            pkg["tools"] = tools
        (folder / "package.yao").write_text(json.dumps(pkg, indent=2))
        for name, text in (files or {}).items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        return folder

    def file(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def cases(self, rel: str, cases: list[dict[str, Any]]) -> Path:
        return self.file(rel, "\n".join(json.dumps(c) for c in cases) + "\n")


@pytest.fixture
def app(tmp_path, server, monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test-SECRET-0123456789")
    monkeypatch.delenv("AGENTTEST_APP", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return AppBuilder(tmp_path / "app", server)


@pytest.fixture
def offline_app(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTTEST_APP", raising=False)
    return AppBuilder(tmp_path / "app", None)


def cli(*args: str, cwd: Path | None = None) -> Any:
    """Run agent-test in-process as a user would; returns click's Result (exit_code, output, stderr)."""
    from agenttest.cli import main

    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def report(path: Path) -> dict[str, Any]:
    """Read a JSON report, checking it against the documented shape (agenttest/schema/report.schema.json)."""
    from jsonschema import Draft202012Validator

    data = json.loads(Path(path).read_text())
    schema = json.loads((REPO / "agenttest" / "schema" / "report.schema.json").read_text())
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, f"{list(errors[0].absolute_path)}: {errors[0].message}"
    return data


__all__ = ["Answer", "AppBuilder", "OpenAIServer", "alive", "cli", "last_user", "report", "survivors"]


def tool_app(root: Path, tools: tuple[str, ...], tools_py: str) -> Path:
    """An app whose agent ``bot`` (on the mock connector) calls tool NAME for a message "call NAME";
    ``tools_py`` is its src/tools.py."""
    agent = root / "assistants" / "bot"
    (agent / "src").mkdir(parents=True)
    (root / "connectors").mkdir()
    (root / "connectors" / "mock.conn.yao").write_text(json.dumps({"type": "mock"}))
    described = [{"name": n, "description": n, "parameters": {"type": "object", "properties": {}}} for n in tools]
    (agent / "package.yao").write_text(json.dumps({"name": "bot", "connector": "mock", "tools": described}))
    rules = "rules:\n  - tool: \"*\"\n    reply: \"done: {{ tool_result }}\"\n" + "".join(
        f"  - user: \"^call {name}\"\n    tool_calls: [{{name: {name}}}]\n" for name in tools) + "default: \"echo: {{ user }}\"\n"
    (agent / "mock.yml").write_text(rules)
    (agent / "src" / "tools.py").write_text(textwrap.dedent(tools_py))
    return agent


def alive(pid: int) -> bool:
    """A process that runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def survivors(pids: list[int], within: float = 30.0) -> list[int]:
    """The pids still alive once all ended or ``within`` seconds passed: a process being killed takes a moment
    to go, longer on a loaded machine."""
    import time

    ends = time.monotonic() + within
    while time.monotonic() < ends and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]

