"""Which options are model parameters (FORMATS §1–§2): only chat-completions parameters reach a request
body; Yao's context options and everything else a case, an agent or a connector carries stay with agent-test."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agenttest.errors import did_you_mean

# the chat-completions parameters that may be sent (``extra_body`` is merged into the body as it is)
CHAT_PARAMETERS = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "response_format",
    "tool_choice", "parallel_tool_calls", "reasoning_effort", "presence_penalty", "frequency_penalty",
    "logit_bias", "user", "extra_body",
})
# how to call, read by the connector (never sent as a key of its own)
TRANSPORT = frozenset({"stream"})
# Yao's context options: they go to ``ctx.options`` and are never sent
CONTEXT_OPTIONS = frozenset({"skip", "search", "mode", "disable_global_prompts", "locale"})
# what agent-test itself reads from a case's options
OWN_CASE_OPTIONS = frozenset({"connector", "metadata"})
KNOWN_CASE_OPTIONS = CHAT_PARAMETERS | TRANSPORT | CONTEXT_OPTIONS | OWN_CASE_OPTIONS


def request_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that may reach a request: chat-completions parameters, and ``stream``."""
    return {k: v for k, v in options.items() if k in CHAT_PARAMETERS or k in TRANSPORT}


def context_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A case's options for ``ctx.options``: everything that is neither a model parameter nor read by agent-test."""
    return {k: v for k, v in options.items() if k not in CHAT_PARAMETERS and k not in TRANSPORT and k not in OWN_CASE_OPTIONS}


def unknown_case_options(options: Mapping[str, Any]) -> list[str]:
    """Case option keys that are neither model parameters, Yao context options nor agent-test's own."""
    return [k for k in options if k not in KNOWN_CASE_OPTIONS]


def not_sent(keys: Iterable[str], where: str) -> str:
    """The warning for option keys that will not be sent to the model (with a did-you-mean for typos)."""
    keys = list(keys)
    names = ", ".join(f"'{k}'" for k in keys)
    hints = [h for h in (did_you_mean(k, CHAT_PARAMETERS) for k in keys) if h]
    return (f"{where}: {names} {'is not a chat-completions parameter' if len(keys) == 1 else 'are not chat-completions parameters'}; "
            f"not sent to the model{' — ' + ' '.join(hints) if hints else ''} (provider-specific parameters go in 'extra_body')")


def unknown_option_warning(key: str, where: str) -> str:
    """The warning for a case option that is neither a model parameter nor a Yao context option."""
    hint = "the model comes from the connector: set options.connector or -c" if key == "model" else did_you_mean(key, KNOWN_CASE_OPTIONS)
    return (f"{where}: '{key}' is not a model parameter or a Yao context option; it goes to ctx.options and is not sent "
            f"to the model{f' ({hint})' if hint else ''}")
