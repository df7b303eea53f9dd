"""``agent-test import``: OpenTelemetry GenAI traces and chat logs made cases (FORMATS §20, docs/traces.md).

The traces of the end-to-end tests are written by instrumentation no one here wrote — the official
opentelemetry-instrumentation-openai-v2 and the OpenAI Agents SDK's instrumentation — through the official
OTLP/JSON file exporter (tests/traced_app.py), against the loopback chat-completions server; the imported
cases then run against the same server, with production's tool results replayed by mocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from helpers import REPO, cli, report
from traced_app import responder

from agenttest.errors import AgentTestError, Location
from agenttest.inputs.reading import load_file
from agenttest.inputs.traces import genai, otlp
from agenttest.inputs.traces.calls import Call
from agenttest.inputs.traces.cases import Options, Recorded, build, mocks
from agenttest.inputs.traces.redaction import Redactor
from agenttest.inputs.traces.stitching import Conversation, conversations, stitch

WEATHER = [{"name": "get_weather", "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
TOOLS_PY = "def get_weather(ctx, city):\n    raise RuntimeError('the weather service is not reachable from tests')\n"


# ---- OTLP/JSON, read by hand and located ------------------------------------------------------------


def span(name="chat m", trace="0" * 31 + "1", span_id="0" * 15 + "1", parent="", attrs=None, events=None, start="1"):
    raw = {"traceId": trace, "spanId": span_id, "name": name, "startTimeUnixNano": start, "endTimeUnixNano": start,
           "attributes": [{"key": k, "value": v} for k, v in (attrs or {}).items()]}
    if parent:
        raw["parentSpanId"] = parent
    if events:
        raw["events"] = events
    return raw


def export(*spans, logs=None):
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}
    if logs:
        doc["resourceLogs"] = [{"scopeLogs": [{"logRecords": logs}]}]
    return doc


def s(text):
    return {"stringValue": text}


def chat(input_, output, **more):
    return {"gen_ai.operation.name": s("chat"), "gen_ai.input.messages": s(json.dumps(input_)),
            "gen_ai.output.messages": s(json.dumps(output)), **more}


def user(text):
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def said(text):
    return {"role": "assistant", "parts": [{"type": "text", "content": text}]}


def read_text(text, name="t.json"):
    found = otlp.Export()
    otlp.read(name, text, found)
    return found


def error_of(text, name="t.json"):
    with pytest.raises(AgentTestError) as info:
        read_text(text, name)
    return info.value.format_message()


def test_the_mapping_is_read_as_otlp_json_says():
    """Hex ids (base64 too), 64-bit integers as strings, every AnyValue kind; one document per line as well."""
    values = {"s": s("x"), "b": {"boolValue": True}, "i": {"intValue": "12"}, "d": {"doubleValue": 1.5},
              "a": {"arrayValue": {"values": [s("y"), {"intValue": 3}]}}, "k": {"kvlistValue": {"values": [{"key": "z", "value": s("w")}]}},
              "bytes": {"bytesValue": "aGk="}}
    one = span(attrs=values, start="1700000000000000001")
    two = span(trace="AAAAAAAAAAAAAAAAAAAAAg==", span_id="AAAAAAAAAAI=", parent="0" * 15 + "1")
    found = read_text(json.dumps(export(one)) + "\n" + json.dumps(export(two)) + "\n")
    first, second = found.spans
    assert first.attributes == {"s": "x", "b": True, "i": 12, "d": 1.5, "a": ["y", 3], "k": {"z": "w"}, "bytes": b"hi"}
    assert first.start == 1700000000000000001 and first.trace_id == "0" * 31 + "1"
    assert (second.trace_id, second.span_id, second.parent_id) == ("0" * 31 + "2", "0" * 15 + "2", "0" * 15 + "1")
    assert found.documents == 2


def test_malformed_otlp_is_a_located_error():
    assert error_of('{"resourceSpans": [\n  {"scopeSpans": [}\n]}').startswith("t.json:2:19: not JSON: Expecting value")
    assert error_of('{"spans": []}').startswith("t.json:1:1: not an OTLP/JSON export: no 'resourceSpans'")
    assert "lowerCamelCase" in error_of('{"resource_spans": []}')
    bad_id = json.dumps(export(span(trace="xyz")), indent=1)
    message = error_of(bad_id)
    line = next(i for i, text in enumerate(bad_id.splitlines(), 1) if '"xyz"' in text)
    assert message.startswith(f"t.json:{line}:") and "'traceId' must be 32 hex digits" in message
    lines = json.dumps(export(span())) + "\n" + '{"resourceSpans": [oops]}\n'
    assert error_of(lines, "t.jsonl").startswith("t.jsonl:2:20: not JSON: Expecting value (a file of one OTLP/JSON document per line)")
    assert "an attribute value must be an object" in error_of(json.dumps(export(span(attrs={"k": "bare"}))))


# ---- the GenAI conventions ---------------------------------------------------------------------------


def calls_of(doc):
    return genai.read(read_text(json.dumps(doc))).calls


def test_messages_from_attributes_parts_and_tool_calls():
    input_ = [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}, user("weather?"),
              {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}]},
              {"role": "tool", "parts": [{"type": "text", "content": "21"}, {"type": "tool_call_response", "id": "c1", "result": "21"}]}]
    [call] = calls_of(export(span(attrs=chat(input_, [said("It is 21.")], **{"gen_ai.usage.input_tokens": {"intValue": "7"}}))))
    assert call.input == ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "weather?"},
                          {"role": "assistant", "content": None,
                           "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                          {"role": "tool", "tool_call_id": "c1", "content": "21"})
    assert call.output == ({"role": "assistant", "content": "It is 21."},) and call.usage == (7, 0)


def test_messages_from_the_older_per_message_events_and_log_records():
    """Conventions 1.28–1.36: gen_ai.*.message / gen_ai.choice as span events (fields as attributes or in
    gen_ai.event.content) or as log records of the span (fields in the body)."""
    events = [{"name": "gen_ai.user.message", "timeUnixNano": "1", "attributes": [{"key": "content", "value": s("hi")}]},
              {"name": "gen_ai.choice", "timeUnixNano": "2",
               "attributes": [{"key": "gen_ai.event.content", "value": s(json.dumps({"message": {"content": "hello"}}))}]}]
    [call] = calls_of(export(span(attrs={"gen_ai.operation.name": s("chat")}, events=events)))
    assert call.input == ({"role": "user", "content": "hi"},) and call.output == ({"role": "assistant", "content": "hello"},)
    body = {"kvlistValue": {"values": [{"key": "content", "value": s("from a log")}]}}
    logs = [{"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "1", "eventName": "gen_ai.user.message", "body": body}]
    [call] = calls_of(export(span(attrs={"gen_ai.operation.name": s("chat")}), logs=logs))
    assert call.input == ({"role": "user", "content": "from a log"},)


def test_messages_from_the_oldest_events_and_openllmetry_attributes():
    prompt = [{"key": "gen_ai.prompt", "value": s(json.dumps([{"role": "user", "content": "old"}]))}]
    events = [{"name": "gen_ai.content.prompt", "attributes": prompt}]
    [call] = calls_of(export(span(attrs={"gen_ai.system": s("openai")}, events=events)))
    assert call.input == ({"role": "user", "content": "old"},)
    attrs = {"gen_ai.request.model": s("m"), "gen_ai.prompt.0.role": s("user"), "gen_ai.prompt.0.content": s("q"),
             "gen_ai.completion.0.tool_calls.0.name": s("f"), "gen_ai.completion.0.tool_calls.0.arguments": s('{"a": 1}')}
    [call] = calls_of(export(span(attrs=attrs)))
    assert call.input == ({"role": "user", "content": "q"},)
    assert call.output[0]["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}


# ---- stitching -----------------------------------------------------------------------------------------


def c(input_, output, start, trace="t1", conversation=""):
    return Call(start=start, input=tuple(input_), output=tuple(output), where=Location("f"), trace=trace, conversation=conversation)


U1, A1, U2, A2 = ({"role": "user", "content": "one"}, {"role": "assistant", "content": "1"},
                  {"role": "user", "content": "two"}, {"role": "assistant", "content": "2"})


def test_stitching_repeated_history_new_messages_only_and_a_misrecorded_answer():
    assert stitch([c([U1], [A1], 1), c([U1, A1, U2], [A2], 2)]) == [U1, A1, U2, A2]  # the history sent again
    assert stitch([c([U1], [A1], 1), c([U2], [A2], 2)]) == [U1, A1, U2, A2]  # a stateful API: only what is new
    garbled = {"role": "assistant", "content": "{'tool_calls': …}"}  # an answer recorded as text, sent back as a call
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": {}}}]}
    assert stitch([c([U1], [garbled], 1), c([U1, call], [A1], 2)]) == [U1, call, A1]


def test_conversations_by_id_and_by_continuation_in_time_order():
    found = conversations([c([U1], [A1], 1, "a"), c([U1, A1, U2], [A2], 3, "b"), c([U2], [A2], 2, "c")], [])
    assert [len(x.calls) for x in found] == [2, 1]  # trace b continues trace a; c is another conversation
    found = conversations([c([U2], [A2], 5, "x", "conv"), c([U1], [A1], 4, "y", "conv")], [])
    assert len(found) == 1 and found[0].messages == [U1, A1, U2, A2]


# ---- cases, mocks, redaction ----------------------------------------------------------------------------


def test_a_call_answered_differently_each_time_is_mocked_in_turn_and_patterns_are_taken_literally():
    calls = [Recorded("f", {"q": "a"}, 1, known=True), Recorded("f", {"q": "a"}, 2, known=True), Recorded("g", {"p": "regex:x"}, 3, known=True)]
    made = mocks(calls, "here")
    assert made[:3] == [{"tool": "f", "match": {"q": "a"}, "returns": 1, "times": 1}, {"tool": "f", "match": {"q": "a"}, "returns": 2},
                        {"tool": "g", "match": {"p": "regex:^regex:x$"}, "returns": 3}]
    assert [m["tool"] for m in made[3:]] == ["f", "g"] and all("error" in m for m in made[3:])


def test_the_judge_check_carries_the_recorded_reply():
    conv = Conversation(key="k", messages=[U1, A1], calls=[c([U1], [A1], 1)])
    case, _ = build(conv, "k", Options(judge="workers.judge"), "f:1")
    assert case["assert"][-1] == {"type": "agent", "use": "agents:workers.judge", "value": case["assert"][-1]["value"],
                                  "options": {"metadata": {"recorded_reply": "1"}}}
    assert case["assert"][0] == {"type": "tool_count", "max": 0} and case["input"] == "one"


@pytest.mark.parametrize("text, kind", [
    ("mail bob.smith+x@mail.example.co.uk now", "EMAIL"), ("call +1 (555) 010-2345", "PHONE"), ("ring 030 1234 5678", "PHONE"),
    ("key sk-proj-abcdefghijklmnopqrstuvwx", "KEY"), ("Authorization: Bearer abcdefghijklmnop1234", "KEY"),
    ("password=hunter2hunter2", "KEY"), ("card 4111 1111 1111 1111", "CARD"), ("AKIAABCDEFGHIJKLMNOP", "KEY")])
def test_built_in_rules_replace(text, kind):
    assert f"<{kind}_1>" in Redactor.of().text(text)


@pytest.mark.parametrize("text", ["on 2024-05-17 at 10:30", "order ORD-2024-123456", "total 3500.00 USD", "host 10.20.30.40",
                                  "id 1234567890", "card 4111 1111 1111 1112", "version 1.2.3"])
def test_built_in_rules_leave_ordinary_text(text):
    assert Redactor.of().text(text) == text


def test_a_value_is_one_placeholder_everywhere_and_rules_can_be_added_or_dropped():
    r = Redactor.of(["order=ORD-\\d{6}"], ["phone"])
    assert r.value({"a": "bob@x.io ORD-123456", "b": ["bob@x.io", "+1 555 010 2345"]}) == \
        {"a": "<EMAIL_1> <ORDER_1>", "b": ["<EMAIL_1>", "+1 555 010 2345"]}
    with pytest.raises(AgentTestError, match="does not compile"):
        Redactor.of(["x=("])
    with pytest.raises(AgentTestError, match="not a built-in rule"):
        Redactor.of((), ["fone"])


# ---- end to end: traces no one here wrote ----------------------------------------------------------------


def record(server, kind, out, content="SPAN_ONLY", logs=None):
    """Run the traced app against the loopback server; its spans (and logs) in OTLP/JSON files."""
    server.responder = responder
    env = dict(os.environ, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=content, PYTHONPATH=str(REPO / "tests"))
    args = [sys.executable, str(REPO / "tests" / "traced_app.py"), kind, server.url, str(out)] + ([str(logs)] if logs else [])
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def weather_app(app, prompt="You are a weather assistant.", tools=("get_weather",)):
    described = [dict(WEATHER[0], name=name) for name in tools]
    code = "".join(TOOLS_PY.replace("get_weather", name) for name in tools)
    app.agent("weather", tools=described, files={"src/tools.py": code, "prompts.yml": f"- role: system\n  content: {prompt}\n"})
    return app


def run_cases(app, cases, *more):
    out = app.root / "report.json"
    result = cli("-i", str(cases), "-n", "weather", "-o", str(out), "--no-history", *more)
    assert out.exists(), result.output
    return result, report(out)


def test_openai_v2_traces_import_into_cases_that_replay_and_pass(app, server, tmp_path):
    spans = record(server, "openai-v2", tmp_path / "spans.jsonl")
    result = cli("import", str(spans), "-o", str(app.root / "imported.yaml"))
    assert result.exit_code == 0, result.output
    assert "Imported 2 conversations" in result.output and "1 e-mail address (<EMAIL_1>)" in result.output
    assert "bob@example.com" not in result.output + (app.root / "imported.yaml").read_text()
    cases = load_file(str(app.root / "imported.yaml")).check()
    assert [case.id for case in cases][1] == "conv-oslo-1"
    oslo = yaml.safe_load((app.root / "imported.yaml").read_text())[1]
    assert oslo["input"] == [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello! Which city would you like the weather for?"},
                             {"role": "user", "content": "Weather in Oslo, please"}]
    assert oslo["mocks"][0] == {"tool": "get_weather", "match": {"city": "Oslo"}, "returns": {"city": "Oslo", "temp": 4, "sky": "clear"}}
    weather_app(app)
    result, data = run_cases(app, app.root / "imported.yaml")
    assert result.exit_code == 0, result.output
    assert [r["output"] for r in data["results"]] == ["It is 21°C in Paris, clear.", "It is 4°C in Oslo, clear."]  # the mocks answered


def test_a_changed_agent_fails_the_imported_cases(app, server, tmp_path):
    spans = record(server, "openai-v2", tmp_path / "spans.jsonl")
    assert cli("import", str(spans), "-o", str(app.root / "imported.jsonl")).exit_code == 0
    weather_app(app, tools=("lookup_weather", "get_weather"))  # another tool chosen for the job
    result, data = run_cases(app, app.root / "imported.jsonl")
    assert result.exit_code == 1 and [r["status"] for r in data["results"]] == ["failed", "failed"]
    failed = [a["type"] for a in data["results"][0]["assertions"] if not a["passed"]]
    assert failed == ["tool_sequence", "tool_args"] and data["results"][0]["output"] == "Sorry, I could not get the weather."
    weather_app(app, prompt="Give city names in lower-case.")  # a different argument
    result, data = run_cases(app, app.root / "imported.jsonl")
    failed = [a["type"] for a in data["results"][0]["assertions"] if not a["passed"]]
    assert result.exit_code == 1 and failed == ["tool_args"]
    weather_app(app, tools=("lookup_weather",))  # the tool renamed: the cases name a tool the agent no longer has
    result = cli("-i", str(app.root / "imported.jsonl"), "-n", "weather", "--no-history")
    assert result.exit_code == 2 and "tool_sequence: the agent has no tool 'get_weather'; did you mean 'lookup_weather'?" in result.output


def test_openai_v2_content_in_log_events_imports_from_the_two_files(app, server, tmp_path):
    spans, logs = tmp_path / "spans.jsonl", tmp_path / "logs.jsonl"
    record(server, "openai-v2", spans, content="EVENT_ONLY", logs=logs)
    result = cli("import", str(spans), str(logs), "-o", str(app.root / "imported.yaml"))
    assert result.exit_code == 0, result.output
    weather_app(app)
    assert run_cases(app, app.root / "imported.yaml")[0].exit_code == 0


def test_a_trace_recorded_without_content_is_a_located_error_with_the_remedy(tmp_path, server):
    """opentelemetry-instrumentation-openai-v2 2.4 on the latest conventions takes SPAN_ONLY…, not 'true'."""
    spans = record(server, "openai-v2", tmp_path / "spans.jsonl", content="true")
    result = cli("import", str(spans), "-o", str(tmp_path / "c.yaml"))
    assert result.exit_code == 2 and not (tmp_path / "c.yaml").exists()
    assert f"{spans}:1:" in result.output and "carries no messages" in result.output
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in result.output and "Traceback" not in result.output


def test_openai_agents_sdk_traces_import_and_pass(app, server, tmp_path):
    spans = record(server, "agents-sdk", tmp_path / "spans.jsonl")
    result = cli("import", str(spans), "-o", str(app.root / "imported.yaml"), "--judge", "judge")
    assert result.exit_code == 0, result.output
    [case] = yaml.safe_load((app.root / "imported.yaml").read_text())
    assert case["metadata"]["imported"]["agent"] == "weather"
    assert case["mocks"][0]["returns"] == {"city": "Paris", "temp": 21, "sky": "clear"}
    assert case["assert"][-1]["options"]["metadata"]["recorded_reply"] == "It is 21°C in Paris, clear."
    weather_app(app)
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: judge\n"})
    judged = responder

    def both(request):
        if request["messages"][0].get("content") == "judge":
            payload = json.loads(request["messages"][-1]["content"])
            from openai_server import Answer
            return Answer(json.dumps({"passed": payload["output"] == payload["recorded_reply"], "reason": "compared"}))
        return judged(request)

    server.responder = both
    result, data = run_cases(app, app.root / "imported.yaml")
    assert result.exit_code == 0, result.output
    assert [a["type"] for a in data["results"][0]["assertions"]] == ["tool_sequence", "tool_args", "agent"]


# ---- chat logs ---------------------------------------------------------------------------------------


def chat_line(messages, reply, **more):
    return json.dumps({"request": {"model": "m", "messages": messages}, "response": {"model": "m", "choices": [{"message": reply}],
                                                                                    "usage": {"prompt_tokens": 3, "completion_tokens": 2}}, **more})


def test_a_chat_log_imports_one_case_per_conversation(app, server, tmp_path):
    ask = {"role": "user", "content": "Weather in Paris? My number is +33 6 12 34 56 78"}
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "k1", "type": "function",
                                                                  "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    result_ = {"role": "tool", "tool_call_id": "k1", "content": json.dumps({"city": "Paris", "temp": 21, "sky": "clear"})}
    log = tmp_path / "gateway.jsonl"
    log.write_text("\n".join([chat_line([ask], call), chat_line([{"role": "user", "content": "hello"}], {"role": "assistant", "content": "hi"}),
                              chat_line([ask, call, result_], {"role": "assistant", "content": "It is 21°C in Paris, clear."})]) + "\n")
    result = cli("import", str(log), "-o", str(app.root / "imported.jsonl"))
    assert result.exit_code == 0, result.output
    assert "Imported 2 conversations" in result.output and "<PHONE_1>" in result.output
    first, second = [json.loads(line) for line in (app.root / "imported.jsonl").read_text().splitlines()[1:]]
    assert first["input"] == "Weather in Paris? My number is <PHONE_1>" and second["assert"] == [{"type": "tool_count", "max": 0}]
    weather_app(app)
    server.responder = responder
    result, data = run_cases(app, app.root / "imported.jsonl", "--run", first["id"])
    assert result.exit_code == 0, result.output


def test_a_chat_log_with_a_broken_line_is_a_located_error(tmp_path):
    log = tmp_path / "gateway.jsonl"
    log.write_text(chat_line([{"role": "user", "content": "x"}], {"role": "assistant", "content": "y"}) + '\n{"request": {"messages": [}\n')
    result = cli("import", str(log), "-o", str(tmp_path / "c.yaml"))
    assert result.exit_code == 2 and result.output.startswith(f"Error: {log}:2:27: not JSON")
    log.write_text('{"request": {"model": "m"}, "response": {}}\n')
    result = cli("import", str(log), "-o", str(tmp_path / "c.yaml"))
    assert result.exit_code == 2 and f"{log}:1:13: no chat-completions request with 'messages'" in result.output


def test_a_span_tree_with_a_gap_is_a_located_error_unless_allowed(tmp_path):
    doc = export(span(attrs=chat([user("q")], [said("a")]), parent="00000000000000ff"))
    file = tmp_path / "gap.json"
    file.write_text(json.dumps(doc, indent=2))
    result = cli("import", str(file), "-o", str(tmp_path / "c.yaml"))
    assert result.exit_code == 2 and "names a parent span 00000000000000ff that is in no file" in result.output
    line = next(i for i, text in enumerate(file.read_text().splitlines(), 1) if "parentSpanId" in text)
    assert f"{file}:{line}:31: span 'chat m'" in result.output and "--allow-gaps" in result.output
    assert cli("import", str(file), "-o", str(tmp_path / "c.yaml"), "--allow-gaps").exit_code == 0


def test_bad_usage_is_said_in_one_line(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(export(span(attrs=chat([user("q")], [said("a")])))))
    result = cli("import", str(tmp_path / "t.json"), "-o", str(tmp_path / "c.txt"))
    assert result.exit_code == 2 and ".jsonl or .yaml" in result.output
    result = cli("import", str(tmp_path / "missing.json"), "-o", str(tmp_path / "c.yaml"))
    assert result.exit_code == 2 and "does not exist" in result.output
    (tmp_path / "empty.json").write_text("")
    assert "is empty" in cli("import", str(tmp_path / "empty.json"), "-o", str(tmp_path / "c.yaml")).output
    (tmp_path / "none.json").write_text(json.dumps(export(span(name="GET /", attrs={"http.method": s("GET")}))))
    result = cli("import", str(tmp_path / "none.json"), "-o", str(tmp_path / "c.yaml"))
    assert result.exit_code == 2 and "no model call with messages" in result.output


def test_the_example_imports_to_the_shipped_cases_which_run_offline_and_report(tmp_path):
    """examples/traces/README.md, command by command, from the repository's root."""
    example = REPO / "examples" / "traces"
    shipped = example / "assistants" / "weather" / "tests" / "imported.yaml"
    made = tmp_path / "imported.yaml"
    result = cli("import", "examples/traces/production/spans.jsonl", "-o", str(made), cwd=REPO)
    assert result.exit_code == 0, result.output
    assert made.read_text() == shipped.read_text()  # the shipped cases are what the shipped trace gives
    assert "bob@example.com" in (example / "production" / "spans.jsonl").read_text() and "bob@example.com" not in made.read_text()
    html = tmp_path / "report.html"
    result = cli("-i", "examples/traces/assistants/weather/tests/imported.yaml", "-o", str(html), "-o", str(tmp_path / "r.json"), cwd=REPO)
    assert result.exit_code == 0, result.output
    data = report(tmp_path / "r.json")
    assert [r["status"] for r in data["results"]] == ["passed", "passed"] and html.stat().st_size > 1000


def _official(value):
    """An AnyValue of opentelemetry-proto-json as Python, to compare with the hand reader's."""
    if value.array_value is not None:
        return [_official(v) for v in value.array_value.values]
    if value.kvlist_value is not None:
        return {kv.key: _official(kv.value) for kv in value.kvlist_value.values}
    for name in ("string_value", "bool_value", "int_value", "double_value", "bytes_value"):
        if getattr(value, name) is not None:
            return getattr(value, name)
    return None


def test_the_hand_reader_agrees_with_the_official_otlp_json_classes(server, tmp_path):
    """The same file read by opentelemetry-proto-json (the OTLP/JSON message classes the file exporter's encoder
    is built on): every span's ids, name, times and attributes alike."""
    from opentelemetry.proto_json.collector.trace.v1.trace_service import (
        ExportTraceServiceRequest,
    )

    spans = record(server, "agents-sdk", tmp_path / "spans.jsonl")
    ours = read_text(spans.read_text(), "spans.jsonl").spans
    theirs = [s for line in spans.read_text().splitlines() if line.strip()
              for resource in ExportTraceServiceRequest.from_json(line).resource_spans
              for scope in resource.scope_spans for s in scope.spans]
    assert len(ours) == len(theirs) > 5
    for mine, official in zip(ours, theirs):
        assert (mine.trace_id, mine.span_id, mine.parent_id) == (official.trace_id.hex(), official.span_id.hex(), official.parent_span_id.hex())
        assert (mine.name, mine.start, mine.end) == (official.name, official.start_time_unix_nano, official.end_time_unix_nano)
        assert mine.attributes == {kv.key: _official(kv.value) for kv in official.attributes}


def test_bad_input_makes_no_folder_of_the_output(tmp_path):
    """docs/traces.md: bad input is exit 2 before anything is written — a missing file made -o's folders first."""
    log = tmp_path / "gateway.jsonl"
    log.write_text('{"request": {"messages": [}\n')
    for given in (tmp_path / "nonexist.jsonl", log):
        result = cli("import", str(given), "-o", str(tmp_path / "imp-x" / "deep" / "out.yaml"))
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert not (tmp_path / "imp-x").exists()
    assert "nonexist.jsonl does not exist" in cli("import", str(tmp_path / "nonexist.jsonl"), "-o", str(tmp_path / "o.yaml")).output


def test_an_existing_case_file_is_replaced_only_with_force(tmp_path):
    log = tmp_path / "gateway.jsonl"
    log.write_text(chat_line([{"role": "user", "content": "hello"}], {"role": "assistant", "content": "hi"}) + "\n")
    out = tmp_path / "tests" / "imported.yaml"
    assert cli("import", str(log), "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + "# edited by hand\n")
    result = cli("import", str(log), "-o", str(out))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"Error: -o {out}: the file exists (import would replace it, and any edits made to it by hand); " \
           "give another file name, or --force to replace it" in result.output
    assert out.read_text().endswith("# edited by hand\n")
    result = cli("import", str(log), "-o", str(out), "--force")
    assert result.exit_code == 0, result.output
    assert "# edited by hand" not in out.read_text() and "hello" in out.read_text()


def test_what_was_replaced_is_said_in_good_english(tmp_path):
    said = [chat_line([{"role": "user", "content": f"key sk-proj-{c * 40} and {c}{c}x@example.com"}], {"role": "assistant", "content": "ok"},
                      conversation_id=c) for c in "ab"]
    log = tmp_path / "gateway.jsonl"
    log.write_text("\n".join(said) + "\n")
    result = cli("import", str(log), "-o", str(tmp_path / "c.yaml"))
    assert result.exit_code == 0, result.output
    assert "Replaced 2 API keys or tokens (<KEY_1>, <KEY_2>); 2 e-mail addresses (<EMAIL_1>, <EMAIL_2>)" in result.output, result.output
