"""Crafted reports (issue 25, item 5), from the outside: a report given to ``merge``/``diff``/``--baseline``
is input like a case file — a crafted world change never becomes an executable attribute in the merged
HTML, and a wrong-typed field is exit 2 with its location, never a traceback or a silent acceptance."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from helpers import cli

RULES = """
rules:
  - tool: "*"
    reply: "stored"
  - user: ".*"
    tool_calls: [{name: put}]
"""
TOOLS = [{"name": "put", "description": "d", "parameters": {"type": "object", "properties": {}}}]


@pytest.fixture
def base(offline_app, tmp_path):
    """A real report of one case whose tool changed the world, as ``-o`` writes it."""
    offline_app.agent("bot", connector="mock", tools=TOOLS,
                      files={"mock.yml": RULES, "src/tools.py": "def put(ctx):\n    ctx.world['x'] = 1\n    return 'ok'\n"})
    path = offline_app.cases("cases.jsonl", [{"id": "a", "input": "store", "world": {"x": 0}, "tags": ["t"]}])
    out = tmp_path / "base.json"
    result = cli("-i", str(path), "-n", "bot", "--app", str(offline_app.root), "-o", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["results"][0]["world"]["changes"], data["results"][0]
    return data


class Attributes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.handlers: list[tuple[str, str, str | None]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.handlers += [(tag, name, value) for name, value in attrs if name.lower().startswith("on")]


def test_a_crafted_world_change_never_becomes_an_executable_attribute(base, tmp_path):
    base["results"][0]["world"]["changes"][0]["op"] = '"><img src=x onerror=alert(1)>'
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(base, indent=2))
    out = tmp_path / "x.html"
    result = cli("merge", str(crafted), "-o", str(out))
    assert "Traceback" not in result.output + result.stderr
    if result.exit_code == 2:  # refused as input: it must say where
        assert f"{crafted}:" in result.stderr and "op" in result.stderr
        return
    page = Attributes()
    page.feed(out.read_text())
    assert page.handlers == [] and "img" not in page.tags


def _at(data: dict, path: tuple, value) -> dict:
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


DEEP = "DEEP"  # replaced by 100,000 nested lists in the file's text
WRONG = {  # name: (path in the report, value); each is exit 2 with the file's name and a line
    "run": (("results", 0, "run"), [1]),
    "usage": (("results", 0, "usage"), "x"),
    "tags": (("results", 0, "tags"), 5),
    "status": (("results", 0, "status"), 7),
    "id": (("results", 0, "id"), {"a": 1}),
    "duration": (("results", 0, "duration_ms"), "fast"),
    "tool_calls": (("results", 0, "tool_calls"), "none"),
    "assertions": (("results", 0, "assertions"), [5]),
    "world": (("results", 0, "world"), []),
    "changes": (("results", 0, "world", "changes"), [{"op": 1}]),
    "results": (("results",), {"a": 1}),
    "summary": (("summary",), 5),
    "deep": (("results", 0, "metadata"), DEEP),
}


def _write(tmp_path, data: dict) -> str:
    text = json.dumps(data, indent=2)
    if DEEP in text:
        text = text.replace(f'"{DEEP}"', "[" * 100_000 + "]" * 100_000)
    path = tmp_path / "wrong.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("command", ["diff", "merge", "--baseline"])
@pytest.mark.parametrize("name", list(WRONG))
def test_a_wrong_typed_report_field_is_exit_2_with_its_location(base, tmp_path, offline_app, command, name):
    field, value = WRONG[name]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(base))
    wrong = _write(tmp_path, _at(json.loads(json.dumps(base)), field, value))
    if command == "diff":
        result = cli("diff", str(good), wrong, "-o", str(tmp_path / "d.md"))
    elif command == "merge":
        result = cli("merge", wrong, "-o", str(tmp_path / "m.json"), "-o", str(tmp_path / "m.html"))
    else:
        path = offline_app.root / "cases.jsonl"
        result = cli("-i", str(path), "-n", "bot", "--app", str(offline_app.root), "--baseline", wrong, "-o", str(tmp_path / "r.json"))
    assert "Traceback" not in result.output + result.stderr, result.output + result.stderr
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert f"{wrong}:" in result.stderr, result.stderr


def _strict(text: str):
    """JSON as a strict parser (a browser's, jq's) reads it: NaN and Infinity are not JSON."""
    def refuse(word: str):
        raise ValueError(f"not JSON: {word}")
    return json.loads(text, parse_constant=refuse)


def test_nan_and_infinity_from_a_tool_are_text_in_every_json_report(offline_app, tmp_path):
    """A tool's NaN or infinity (a ratio of zeros, a metric) is kept as the text "NaN" / "Infinity" in the JSON and
    JSONL reports and the NDJSON events — valid JSON for any parser — and the report reads back (``diff``)."""
    offline_app.agent("bot", connector="mock", tools=TOOLS,
                      files={"mock.yml": RULES, "src/tools.py": "def put(ctx):\n    return {'ratio': float('nan'), 'top': float('inf')}\n"})
    path = offline_app.cases("cases.jsonl", [{"id": "a", "input": "store"}])
    out, lines = tmp_path / "r.json", tmp_path / "r.jsonl"
    result = cli("-i", str(path), "-n", "bot", "--app", str(offline_app.root), "-o", str(out), "-o", str(lines), "--json")
    assert result.exit_code == 0, result.output
    call = _strict(out.read_text())["results"][0]["tool_calls"][0]
    assert call["result"] == {"ratio": "NaN", "top": "Infinity"}, call
    assert [_strict(line) for line in lines.read_text().splitlines()][0]["tool_calls"][0]["result"]["ratio"] == "NaN"
    events = [_strict(line) for line in result.stdout.splitlines() if line.strip()]
    assert any(e.get("event") == "result" for e in events), events
    again = cli("diff", str(out), str(out))
    assert again.exit_code == 0, again.output
