"""Script tests: agent-test -i scripts.support.support. Each Test* function is a case, called as
TestX(t, ctx); t.assert_ holds the checks, ctx.agent(id).stream(messages) calls an agent."""

from tools import lookup_order


def TestLookupKnownOrder(t, ctx):
    """the tool finds a known order"""
    t.assert_.Equal(lookup_order(ctx, "1042")["status"], "shipped")


def TestLookupUnknownOrder(t, ctx):
    """the tool refuses an unknown order"""
    t.assert_.Panic(lambda: lookup_order(ctx, "9"))


def TestAgentAnswers(t, ctx):
    """the agent looks the order up and says its status"""
    reply = ctx.agent("support").stream("Where is my order 2001?")
    t.assert_.Contains(reply.content, "being packed")
    t.assert_.Equal(reply.tool_calls[0].name, "lookup_order")
