"""A Yao app folder as Yao users write it runs as found (issue 13): `use::` connectors through
agent/agent.yml, $SYS/$CTX/$ENV prompt variables, the global agent/prompts.yml, Yao's extra keys in cases
and package.yao, TypeScript beside its Python port, and Yao's `scripts.<agent path>.<module>`."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest

from helpers import Answer, cli, report

PACKAGE = {
    "name": "{{ name }}", "type": "assistant", "connector": "use::default", "description": "{{ description }}",
    "placeholder": {"title": "{{ chat.title }}"}, "tags": ["Finance"], "modes": ["chat", "task"], "mentionable": True,
    "options": {"temperature": 0.2},
}
PROMPTS = "- role: system\n  content: |\n    Today is $SYS.DATE ($SYS.WEEKDAY), it is $SYS.DATETIME.\n    Answer in $CTX.LOCALE for user $CTX.USER_ID; unknown: [$CTX.NOPE]; region $ENV.YAO_REGION.\n"
ENV_TEST_TS = "export function Before(ctx: agent.Context, testCase: any) {\n  return { data: testCase.id };\n}\n"
ENV_TEST_PY = "def Before(ctx, case):\n    return {'data': case['id']}\n"
CASES = [
    {"id": "T1", "category": "smoke", "input": "hello", "before": "env_test.Before",
     "assert": {"type": "contains", "value": "echo", "description": "Yao's note on an assertion"}},
    {"id": "T2", "category": "smoke", "input": {"role": "user", "content": {"type": "text", "text": "as one part"}}},
]


@pytest.fixture
def yao_app(app, server, monkeypatch):
    monkeypatch.setenv("YAO_REGION", "eu-west")
    app.file("agent/agent.yml", "system:\n  default: fake\n  title: fake\n")
    app.file("agent/prompts.yml", "- role: system\n  content: GLOBAL RULES for $CTX.ASSISTANT_ID\n")
    folder = app.agent("finance", files={"prompts.yml": PROMPTS, "src/env_test.ts": ENV_TEST_TS, "src/env_test.py": ENV_TEST_PY,
                                         "src/flow_test.py": "def TestPing(t, ctx):\n    t.assert_.Contains(ctx.agent('finance').stream('ping').content, 'ping')\n"})
    (folder / "package.yao").write_text(json.dumps(PACKAGE))
    server.responder = lambda req: Answer(content="echo: " + req["messages"][-1]["content"] if isinstance(req["messages"][-1]["content"], str) else "echo: parts")
    return app


def test_a_yao_app_runs_as_found(yao_app, server, tmp_path):
    path = yao_app.cases("assistants/finance/tests/inputs.jsonl", CASES)
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "--ctx", str(yao_app.file("ctx.json", json.dumps({"locale": "zh-cn", "referer": "https://app"}))), "-o", str(out))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "'category' is not a field of a case; ignored" in text
    assert "'description' is not a field" not in text  # an assertion's note: a field that checks nothing
    assert "ignored (not used by agent-test): type, placeholder, tags, modes, mentionable" in text
    assert text.count("'category' is not a field") == 1  # one warning per key and file
    data = report(out)
    assert any("'category' is not a field" in w for w in data["metadata"]["warnings"])  # in the report too
    assert data["results"][0]["assertions"][0]["description"] == "Yao's note on an assertion"
    system = [m["content"] for m in server.bodies()[0]["messages"] if m["role"] == "system"]
    assert system[0] == "GLOBAL RULES for finance"  # the app's global prompts come first
    today = datetime.now().strftime("%Y-%m-%d")
    assert f"Today is {today} ({datetime.now().strftime('%A')}), it is {today} " in system[1]
    assert "Answer in zh-cn for user test-user; unknown: []; region eu-west." in system[1]
    assert server.bodies()[0]["model"] == "fake-model"  # use::default → agent.yml → the fake connector
    assert server.bodies()[1]["messages"][-1]["content"] == [{"type": "text", "text": "as one part"}]


def test_yao_script_test_form(yao_app, tmp_path):
    result = cli("-i", "scripts.finance.flow", cwd=yao_app.root)  # Yao's form: the agent comes from the path
    assert result.exit_code == 0, result.output


def test_disable_global_prompts_and_a_missing_role_connector(yao_app, server):
    folder = yao_app.root / "assistants/finance"
    (folder / "package.yao").write_text(json.dumps({**PACKAGE, "disable_global_prompts": True}))
    path = yao_app.cases("assistants/finance/tests/inputs.jsonl", CASES[1:])
    assert cli("-i", str(path)).exit_code == 0
    assert not any("GLOBAL RULES" in str(m["content"]) for m in server.bodies()[0]["messages"])
    (yao_app.root / "agent/agent.yml").write_text("system:\n  title: fake\n")
    result = cli("-i", str(path))
    assert result.exit_code == 2
    assert re.search(r"connector use::default: .*agent/agent\.yml has no system\.default connector; add e\.g\.\nsystem:\n  default: ", result.stderr)


def test_strict_turns_ignored_keys_into_errors(yao_app):
    path = yao_app.cases("assistants/finance/tests/inputs.jsonl", CASES)
    result = cli("-i", str(path), "--strict")
    assert result.exit_code == 2 and "'category' is not a field of a case; unknown keys are errors with --strict" in result.stderr
