"""runtime/exchanges.py without the CLI: a case's calls made into its CallLog (messages and tool lists once, bodies
as the connector makes them, attachments summarised), what a call served, and which results keep their calls."""

from __future__ import annotations

import asyncio

import pytest

from agenttest.connectors.base import ChatRequest, ConnectorSpec
from agenttest.model import Completion, ToolCall, Usage
from agenttest.model.exchanges import keeps
from agenttest.runtime import exchanges
from agenttest.runtime.trace import Trace

SYSTEM = {"role": "system", "content": "You help."}
TOOLS = ({"name": "find", "description": "", "parameters": {"type": "object", "properties": {}}},)


class Mocked:
    spec = ConnectorSpec("mock", "mock", {"model": "m-1", "temperature": 0.5, "key": "never-sent"})


def pending(messages, tools=TOOLS, completion=None, **fields):
    p = exchanges.Pending(role="agent", connector="mock", request=ChatRequest(messages, tools, {"seed": 7}), source=Mocked(), **fields)
    exchanges.ended(p, completion)
    return p


def test_a_conversations_repeated_messages_and_tools_are_stored_once():
    user, asked = {"role": "user", "content": "find it"}, {"role": "assistant", "content": None, "tool_calls": []}
    tool = {"role": "tool", "tool_call_id": "c1", "content": "{}"}
    first = pending([SYSTEM, user], completion=Completion("", (ToolCall(name="find", arguments={"q": 1}, id="c1"),), Usage(5, 1, 6), "m-1", "tool_calls"))
    second = pending([dict(SYSTEM), dict(user), asked, tool], completion=Completion("found", usage=Usage(9, 2, 11, source="estimated")))
    log = exchanges.log_of([first, second])
    assert log.messages == (SYSTEM, user, asked, tool) and len(log.tools) == 1
    a, b = log.exchanges
    assert a.messages == (0, 1) and b.messages == (0, 1, 2, 3) and a.tools == b.tools == 0
    assert a.parameters == {"model": "m-1", "temperature": 0.5, "seed": 7}  # the mock's body: its model and the parameters, never the key
    assert log.request(b) == {**b.parameters, "messages": [SYSTEM, user, asked, tool], "tools": [{"type": "function", "function": TOOLS[0]}]}
    assert a.response.tool_calls == ({"id": "c1", "name": "find", "arguments": {"q": 1}},) and a.response.finish_reason == "tool_calls"
    assert b.response.usage.source == "estimated"


def test_a_connector_that_makes_its_own_body_is_asked_for_it():
    class Endpoint(Mocked):
        def request_body(self, request):
            return {"model": "real", "messages": [{"role": "user", "content": "shaped"}], "stream": True}

        def endpoint(self):
            return "http://127.0.0.1:1/v1/chat/completions"

    p = exchanges.Pending(role="agent", connector="e", request=ChatRequest([SYSTEM]), source=Endpoint())
    exchanges.ended(p, Completion("ok"))
    (call,) = exchanges.log_of([p]).exchanges
    assert call.url.endswith("/chat/completions") and call.parameters == {"model": "real", "stream": True} and call.tools == -1


def test_an_attachment_is_summarised_by_its_type_size_and_hash():
    data = "data:image/jpeg;base64," + "QUJD" * 300  # 1,200 characters: 900 bytes
    message = {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": data, "detail": "low"}},
                                           {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}]}
    shown = exchanges.summarised(message)
    image, audio = shown["content"][1], shown["content"][2]
    assert image["image_url"]["url"].startswith("[attachment image/jpeg, 900 bytes, sha256 ") and image["image_url"]["detail"] == "low"
    assert audio["input_audio"]["data"].startswith("[attachment audio/mp3, 3 bytes") and audio["input_audio"]["format"] == "mp3"
    assert message["content"][1]["image_url"]["url"] == data  # what was sent is left as it was
    plain = {"role": "user", "content": "no parts"}
    assert exchanges.summarised(plain) is plain


def test_a_call_with_no_answer_says_why():
    p = exchanges.Pending(role="agent", connector="mock", request=ChatRequest([SYSTEM]), source=Mocked())
    exchanges.ended(p, None, asyncio.CancelledError())
    cancelled = exchanges.log_of([p]).exchanges[0]
    assert cancelled.response is None and cancelled.error.startswith("no answer: the call was cancelled")
    open_call = exchanges.log_of([exchanges.Pending(role="agent", connector="mock", request=ChatRequest([SYSTEM]), source=Mocked())]).exchanges[0]
    assert open_call.error == "no answer: the case ended while the call ran"


def test_what_a_call_served_is_said_within_its_turn():
    trace = Trace()

    async def judged():
        return exchanges.begin(trace, "mock", ChatRequest([SYSTEM]), Mocked()).served

    async def run():
        with exchanges.serving("turn 3"):
            return await asyncio.gather(exchanges.served("assertion 1", judged()), exchanges.served("assertion 2", judged()))

    assert asyncio.run(run()) == ["turn 3 assertion 1", "turn 3 assertion 2"]
    assert [p.served for p in trace.exchanges] == ["turn 3 assertion 1", "turn 3 assertion 2"]
    assert exchanges.current_purpose.get() == ""


@pytest.mark.parametrize("keep, status, kept", [("all", "passed", True), ("failed", "passed", False), ("failed", "skipped", False),
                                                ("failed", "failed", True), ("failed", "error", True), ("failed", "timeout", True),
                                                ("none", "failed", False)])
def test_which_results_keep_their_calls(keep, status, kept):
    assert keeps(keep, status) is kept
