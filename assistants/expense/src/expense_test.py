"""Script tests for the expense assistant: `agent-test -i scripts.expense -n expense`.

Each Test* function is a case, called as TestX(t, ctx). `t.assert_` (assert is a Python keyword)
holds the checks; ctx.agent(id).stream(messages) calls an agent and returns its reply."""


def TestAsksForType(t, ctx):
    """first turn asks for the expense type"""
    reply = ctx.agent("expense").stream([{"role": "user", "content": "I want to submit an expense"}])
    t.assert_.Contains(reply["content"], "type")
    t.assert_.Len(reply["tool_calls"], 0)


def TestFilesAfterConfirmation(t, ctx):
    """files the expense once the user confirms"""
    messages = [
        {"role": "user", "content": "Travel to Berlin, $800"},
        {"role": "assistant", "content": "I'll create a travel expense for $800. Please confirm."},
        {"role": "user", "content": "Yes"},
    ]
    reply = ctx.agent("expense").stream(messages)
    t.log("reply:", reply["content"])
    t.assert_.Match(reply["content"], r"EXP-\d+")
    t.assert_.Equal(reply["tool_calls"][0]["name"], "create_expense")
    t.assert_.JSONPath(reply["tool_calls"][0]["result"], "$.amount", 800)
    t.assert_.Agent(reply["content"], "workers.test.validator", {"criteria": "Confirms the submission with a reference"})


def TestRefusesOverLimit(t, ctx):
    """explains why an expense over the limit is refused"""
    reply = ctx.agent("expense").stream([
        {"role": "user", "content": "Lodging, $7000"},
        {"role": "assistant", "content": "I'll create a lodging expense for $7000. Please confirm."},
        {"role": "user", "content": "ok"},
    ])
    t.assert_.Contains(reply["content"], "policy limit")
    t.assert_.NotNil(reply["tool_calls"][0]["error"])


def TestReceiptNeedsVision(t, ctx):
    """reads a receipt image (needs a real vision model)"""
    t.skip("needs a vision model; run with -c openai.gpt-4o-mini")


def TestDeliberatelyFailing(t, ctx):
    """DELIBERATELY FAILING: shows what a failed script test looks like"""
    reply = ctx.agent("expense").stream("ping")
    t.assert_.Equal(reply["content"], "PONG", "the mock answers lowercase 'pong'")
