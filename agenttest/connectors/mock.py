"""The ``mock`` connector: deterministic answers from ``mock.yml`` in the calling agent's folder.

A tool for offline demos and CI, not a model: ordered rules match the last user message, the
system prompt, the conversation or the tool result just returned, and reply with text and/or tool
calls. See docs/connectors.md."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agenttest.errors import AgentTestError, CallError, InputError, Location, Problem, typo_of
from agenttest.util.positions import yaml_mark, yaml_repeated
from agenttest.util.text import as_text
from agenttest.model.messages import content_text
from agenttest.model import Completion, ToolCall, Usage
from agenttest.connectors.base import ChatRequest, ConnectorSpec, register

_TEMPLATE = re.compile(r"\{\{\s*([\w.]+(?:\[\d+\][\w.]*)*)\s*\}\}")
_INDEX = re.compile(r"\[(\d+)\]")
_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?")
_MATCHERS = ("user", "system", "conversation", "tool", "result")
_RULE_KEYS = {"name", "when", "reply", "json", "tool_calls", "delay", "error", *_MATCHERS}


@dataclass(frozen=True, kw_only=True)
class Rule:
    name: str
    when: dict[str, Any]
    reply: Any
    tool_calls: tuple[dict[str, Any], ...]
    delay: float
    error: str | None


def _rule(raw: Any, where: str, warnings: list[str], at: Location | None = None) -> Rule:
    """One rule; ``where`` names it (``rules[2]``), ``at`` is its place in mock.yml (problems and warnings are said there)."""
    place = f"{at}: " if at is not None else ""
    if not isinstance(raw, dict):
        raise AgentTestError(f"{where}: a rule must be a mapping", at)
    for key in sorted(set(raw) - _RULE_KEYS):
        typo = typo_of(str(key), _RULE_KEYS)
        if typo:
            raise AgentTestError(f"{where}: unknown rule key '{key}'", at, hint=f"did you mean '{typo}'?")
        warnings.append(f"{place}{where}: '{key}' is not a field of a mock rule; ignored")
    when = dict(raw.get("when") or {})
    when.update({k: raw[k] for k in _MATCHERS if k in raw})
    for key, pattern in when.items():
        if key not in _MATCHERS:
            raise AgentTestError(f"{where}: unknown matcher '{key}'", at, hint=f"matchers: {', '.join(_MATCHERS)}")
        if key != "tool":
            try:
                re.compile(pattern)
            except re.error as exc:
                raise AgentTestError(f"{where}: {key} pattern {pattern!r} does not compile: {exc}", at) from None
    reply = raw["json"] if "json" in raw else raw.get("reply", "")
    return Rule(name=str(raw.get("name", where)), when=when, reply=reply, tool_calls=tuple(raw.get("tool_calls") or ()), delay=float(raw.get("delay", 0)), error=raw.get("error"))


class Rules:
    """The parsed rules of one mock.yml. Its problems are said together, each at its line and column; a key
    written twice in one mapping is one of them (YAML keeps only the last: a rule's second ``reply`` would
    replace the first without a word)."""

    def __init__(self, path: str):
        import yaml

        self.warnings: list[str] = []
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            data = yaml.safe_load(text) or {}
        except OSError:
            raise AgentTestError(f"mock connector: {path} does not exist", hint="create mock.yml in the agent's folder") from None
        except UnicodeDecodeError:
            raise AgentTestError(f"mock connector: {path} is not UTF-8", hint="save it as UTF-8") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise AgentTestError(f"mock connector: not valid YAML: {getattr(exc, 'problem', None) or exc}",
                                 Location(path, mark.line + 1, mark.column + 1) if mark else Location(path)) from None
        if not isinstance(data, dict):
            raise AgentTestError(f"mock connector: {path} must hold a mapping with 'rules' and/or 'default'", Location(path, 1, 1))
        problems = [Problem(f"'{key}' is written twice in one mapping (YAML keeps only the last)", Location(path, line, col), "remove one of them")
                    for key, line, col in yaml_repeated(node)]

        def at(*keys: Any) -> Location:
            return Location(path, *yaml_mark(node, keys))

        for key in sorted(set(data) - {"rules", "default"}, key=str):
            typo = typo_of(str(key), ("rules", "default"))
            if typo:
                problems.append(Problem(f"'{key}' is not a field of mock.yml", Location(path, *yaml_mark(node, (key,), True)), f"did you mean '{typo}'?"))
            else:
                self.warnings.append(f"{Location(path, *yaml_mark(node, (key,), True))}: '{key}' is not a field of mock.yml; ignored")
        self.rules: list[Rule] = []
        for i, raw in enumerate(data.get("rules") or []):
            try:
                self.rules.append(_rule(raw, f"rules[{i}]", self.warnings, at("rules", i)))
            except AgentTestError as exc:
                problems += exc.problems
        default = data.get("default", "")
        try:
            self.default = _rule(default if isinstance(default, dict) else {"reply": default}, "default", self.warnings, at("default"))
        except AgentTestError as exc:
            problems += exc.problems
        if problems:
            raise InputError(problems)

    def pick(self, messages: list[dict[str, Any]]) -> tuple[Rule, dict[str, str]]:
        if not self.rules:  # a mock.yml of a default only
            return self.default, {}
        last = messages[-1] if messages else {}
        after_tool = last.get("role") == "tool"
        made: dict[str, str] = {}

        def text(key: str) -> str:  # each text made when a rule first asks for it
            if key not in made:
                if key == "user":
                    made[key] = _last_user(messages)
                elif key == "system":
                    made[key] = "\n".join(content_text(m.get("content")) for m in messages if m.get("role") == "system")
                elif key == "conversation":
                    made[key] = "\n".join(f"{m.get('role')}: {content_text(m.get('content'))}" for m in messages if m.get("role") != "system")
                else:  # "result"
                    made[key] = content_text(last.get("content")) if after_tool else ""
            return made[key]

        tool_name = _tool_name(messages) if after_tool else None
        for rule in self.rules:
            if ("tool" in rule.when) != after_tool:
                continue
            if after_tool and rule.when["tool"] not in ("*", tool_name):
                continue
            groups: dict[str, str] = {}
            for key, pattern in rule.when.items():
                if key == "tool":
                    continue
                m = re.search(pattern, text(key))
                if not m:
                    break
                groups.update({str(i): g or "" for i, g in enumerate(m.groups(), start=1)})
                groups.update({k: v or "" for k, v in m.groupdict().items()})
            else:
                return rule, groups
        return self.default, {}


def _last_user(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return content_text(m.get("content"))
    return ""


def _tool_name(messages: list[dict[str, Any]]) -> str | None:
    call_id = messages[-1].get("tool_call_id")
    for m in reversed(messages):
        for c in m.get("tool_calls") or ():
            if c.get("id") == call_id:
                return c["function"]["name"]
    return None


def _fill(value: Any, scope: dict[str, Any], schema: Any = None) -> Any:
    """``value`` with its templates filled; a whole-template value takes the type ``schema`` (the JSON Schema
    of that tool argument, when there is one) gives it."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value.strip())
        if whole:
            found = _lookup(scope, whole.group(1))
            return _typed(found, _types(schema)) if isinstance(found, str) else found
        return _TEMPLATE.sub(lambda m: as_text(_lookup(scope, m.group(1))), value)
    part: dict[str, Any] = schema if isinstance(schema, dict) else {}
    if isinstance(value, dict):
        properties = part.get("properties")
        return {k: _fill(v, scope, properties.get(k) if isinstance(properties, dict) else None) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, scope, part.get("items")) for v in value]
    return value


def _typed(text: str, types: set[str]) -> Any:
    """A filled-in string as its schema types it: kept for ``string``, converted for ``number``/``integer``/
    ``boolean``. Untyped, a string of digits becomes a number (what a model would most likely send)."""
    if "string" in types:
        return text
    if (not types or types & {"number", "integer"}) and _NUMBER.fullmatch(text):
        return json.loads(text.replace(",", ""))
    if "boolean" in types and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def _types(schema: Any) -> set[str]:
    """The types a JSON Schema allows (``"type"`` as a name or a list, and its ``anyOf``/``oneOf`` branches)."""
    if not isinstance(schema, dict):
        return set()
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    types = {t for t in names if isinstance(t, str)}
    for branch in (*(schema.get("anyOf") or ()), *(schema.get("oneOf") or ())):
        types |= _types(branch)
    return types


def _parameters(tools: Sequence[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The JSON Schema of tool ``name``'s arguments among the request's tools (plain or OpenAI-wrapped)."""
    for tool in tools:
        spec = tool.get("function") if tool.get("type") == "function" else tool
        if isinstance(spec, dict) and spec.get("name") == name:
            return spec.get("parameters") if isinstance(spec.get("parameters"), dict) else None
    return None


class MissingField(Exception):
    """A template names a field the scope does not have (the rule's reply would be wrong, not empty)."""


def _lookup(scope: dict[str, Any], dotted: str) -> Any:
    """``a.b.0.c`` or ``a.b[0].c`` in the scope; a missing part raises MissingField saying what is there."""
    current: Any = scope
    walked: list[str] = []
    for part in _INDEX.sub(r".\1", dotted).split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            where = "".join(f"[{w}]" if w.isdigit() else f".{w}" for w in walked).lstrip(".") or "the template scope"
            if isinstance(current, dict):
                has = f"its keys: {', '.join(map(str, current)) or 'none'}"
            elif isinstance(current, list):
                has = f"a list of {len(current)}"
            else:
                has = f"it is {json.dumps(current, ensure_ascii=False)[:60]}"
            raise MissingField(f"{{{{ {dotted} }}}}: {where} has no '{part}' ({has})")
        walked.append(part)
    return current


class MockConnector:
    local = True  # no endpoint: nothing to throttle or retry

    def __init__(self, spec: ConnectorSpec):
        self.spec = spec
        self.model = str(spec.options.get("model", "mock"))
        self._rules: dict[str, Rules] = {}
        self._by_dir: dict[str, Rules] = {}
        self._lock = threading.Lock()
        self._calls = 0

    def rules_for(self, agent_dir: str) -> Rules:
        rules = self._by_dir.get(agent_dir)  # every call asks: the path is made, and the lock taken, once per agent
        if rules is not None:
            return rules
        path = os.path.join(agent_dir, str(self.spec.options.get("rules", "mock.yml")))
        with self._lock:
            if path not in self._rules:
                self._rules[path] = Rules(path)
            rules = self._by_dir[agent_dir] = self._rules[path]
            return rules

    def prepare(self, agent_dir: str) -> list[str]:
        """Load-time check: the agent's mock.yml exists and parses; its warnings."""
        return self.rules_for(agent_dir).warnings

    async def complete(self, request: ChatRequest) -> Completion:
        messages = list(request.messages)
        rule, groups = self.rules_for(request.agent_dir).pick(messages)
        if rule.delay:
            await asyncio.sleep(rule.delay)
        calls: tuple[ToolCall, ...]
        if not rule.error and not rule.tool_calls and type(rule.reply) is str and "{{" not in rule.reply:  # a fixed reply
            self._calls += 1
            text, calls = rule.reply, ()
        else:
            text, calls = self._made(rule, groups, messages, request)
        words = sum(_words(m.get("content")) for m in messages)
        produced = _words(text)
        return Completion(text, calls, Usage(words, produced, words + produced), self.model, "tool_calls" if calls else "stop")

    def _made(self, rule: Rule, groups: dict[str, str], messages: list[dict[str, Any]], request: ChatRequest) -> tuple[str, tuple[ToolCall, ...]]:
        """The reply and tool calls of a rule with templates, an error or calls."""
        scope = {**groups, "user": _last_user(messages), "tool_result": _tool_result(messages)}
        try:
            if rule.error:
                raise CallError(f"mock error: {_fill(rule.error, scope)}")
            reply = _fill(rule.reply, scope)
            arguments = [_fill(c.get("arguments") or {}, scope, _parameters(request.tools, c["name"])) for c in rule.tool_calls]
        except MissingField as exc:  # a reply with the template left in would let the case pass on a wrong answer
            raise CallError(f"mock rule '{rule.name}': a template names a missing field: {exc}") from None
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        self._calls += 1
        return text, tuple(ToolCall(name=c["name"], arguments=args, id=f"call_mock_{self._calls}_{i}") for i, (c, args) in enumerate(zip(rule.tool_calls, arguments)))


_COUNTED: dict[str, int] = {}  # a text's words, for texts up to 4 KB (a suite's histories repeat their messages)


def _words(content: Any) -> int:
    """The words of a message's content: the mock's token count."""
    if type(content) is str and len(content) <= 4096:
        n = _COUNTED.get(content)
        if n is None:
            n = len(content.split())
            if len(_COUNTED) < 65536:
                _COUNTED[content] = n
        return n
    return len(content_text(content).split())


def _tool_result(messages: list[dict[str, Any]]) -> Any:
    if not messages or messages[-1].get("role") != "tool":
        return ""
    content = messages[-1].get("content", "")
    try:
        return json.loads(content)
    except (TypeError, ValueError):
        return content


register("mock")(MockConnector)
