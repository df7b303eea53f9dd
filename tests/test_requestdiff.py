"""The first difference between a request and its nearest recording, in words."""

from __future__ import annotations

from dataclasses import dataclass

from agenttest.connectors.requestdiff import excerpts, first_difference, nearest

BASE = {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "File $50 for dinner"}],
        "tools": [{"name": "create", "parameters": {"type": "object"}}], "parameters": {"temperature": 0.2}}


def changed(**parts):
    return {**BASE, **parts}


def test_model_first():
    assert first_difference(BASE, changed(model="n", parameters={})) == 'model: recorded "m", now "n"'


def test_a_message_names_its_number_role_and_field_with_the_texts_where_they_part():
    now = changed(messages=[BASE["messages"][0], {"role": "user", "content": "File $70 for dinner"}])
    assert first_difference(BASE, now) == 'message 2 (user) content: recorded "File $50 for dinner", now "File $70 for dinner"'
    now = changed(messages=[{"role": "developer", "content": "Be brief."}, BASE["messages"][1]])
    assert first_difference(BASE, now) == 'message 1 (developer) role: recorded "system", now "developer"'
    now = changed(messages=[{**BASE["messages"][0], "name": "x"}, BASE["messages"][1]])
    assert first_difference(BASE, now) == "message 1 (system) has a new 'name': recorded \"\", now \"x\""
    assert first_difference(now, BASE) == "message 1 (system) lost its 'name': recorded \"x\", now \"\""


def test_long_texts_are_cut_around_the_difference():
    a, b = "x" * 100 + "cat" + "y" * 100, "x" * 100 + "dog" + "y" * 100
    assert excerpts(a, b, 5) == ("…xxxxxcatyy…", "…xxxxxdogyy…")
    assert excerpts("same", "same plus", 40) == ("same", "same plus")


def test_more_or_fewer_messages():
    longer = changed(messages=[*BASE["messages"], {"role": "assistant", "content": "Done"}])
    assert first_difference(BASE, longer) == 'message 3 (assistant) is new: "Done" (the recording has 2 messages)'
    assert first_difference(longer, BASE) == "message 3 is missing: the recording has 3 messages, the request 2"


def test_tools_and_parameters():
    assert first_difference(BASE, changed(tools=[*BASE["tools"], {"name": "delete"}])) == "tool 'delete' is new"
    assert first_difference(BASE, changed(tools=[])) == "tool 'create' is no longer offered"
    assert first_difference(BASE, changed(tools=[{"name": "create", "parameters": {"type": "array"}}])).startswith(
        "tool 'create' schema: recorded ")
    assert first_difference(BASE, changed(parameters={"temperature": 0.7})) == 'parameter temperature: recorded "0.2", now "0.7"'
    assert first_difference(BASE, changed(parameters={"temperature": 0.2, "top_p": 1})) == "parameter top_p is new: 1"
    assert first_difference(BASE, changed(parameters={})) == "parameter temperature is gone (recorded: 0.2)"
    assert first_difference(BASE, BASE) == "the request differs from every recording"


@dataclass
class Rec:
    request: dict


def test_nearest_is_the_longest_equal_start_then_the_most_alike_message():
    one = Rec(changed(messages=[{"role": "user", "content": "other"}]))
    two = Rec(changed(messages=[BASE["messages"][0], {"role": "user", "content": "File $50 for lunch"}]))
    three = Rec(changed(messages=[BASE["messages"][0], {"role": "user", "content": "Something else entirely"}]))
    assert nearest([one, three, two], BASE) is two
    assert nearest([one], BASE) is one
