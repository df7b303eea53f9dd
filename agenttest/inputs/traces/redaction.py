"""Secrets and personal data replaced on import: API keys and tokens, e-mail addresses, phone numbers and
card numbers by default, and the user's own ``--redact NAME=REGEX`` rules. Each distinct value becomes one
placeholder (``<EMAIL_1>``) everywhere it occurs, so a case stays consistent (the address the user gave is
the one the tool was called with); the originals are kept nowhere."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import AgentTestError


@dataclass(frozen=True)
class Rule:
    name: str  # the placeholder's stem: KEY, EMAIL, …
    what: str  # in words, for the summary
    pattern: re.Pattern[str]
    group: int = 0  # the part of a match that is replaced
    accept: Callable[[str], bool] | None = None  # a further check of a candidate (Luhn, a phone's digits)


def _luhn(text: str) -> bool:
    digits = [int(c) for c in text if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_DATE = re.compile(r"^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$|^\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}$")
_IP = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def _phone(text: str) -> bool:
    digits = sum(c.isdigit() for c in text)
    if not 7 <= digits <= 15 or _DATE.match(text.strip()) or _IP.match(text.strip()):
        return False
    # a bare run of digits is an id or an amount, unless it is written as an international number
    return text.lstrip().startswith("+") or bool(re.search(r"[ ().-]", text.strip()))


KEYS = (r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}"
        r"|github_pat_[A-Za-z0-9_]{22,}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
        r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----")
BUILT_IN = (
    Rule(name="KEY", what="API key or token", pattern=re.compile(r"(?<![\w-])(?:" + KEYS + r")")),
    Rule(name="KEY", what="API key or token", pattern=re.compile(r"(?i)\b(?:bearer|basic)\s+([A-Za-z0-9._~+/-]{16,}=*)"), group=1),
    Rule(name="KEY", what="API key or token",
         pattern=re.compile(r"(?i)\b(?:api[_-]?key|secret|token|password|passwd)\b[\"']?\s*[:=]\s*[\"']?([^\s\"',;]{8,})"), group=1),
    Rule(name="CARD", what="card number", pattern=re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), accept=_luhn),
    Rule(name="EMAIL", what="e-mail address", pattern=re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")),
    Rule(name="PHONE", what="phone number",
         pattern=re.compile(r"(?<![\w+-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{1,4}){1,6}(?![\w])"), accept=_phone),
)
KINDS = {"key": "KEY", "card": "CARD", "email": "EMAIL", "phone": "PHONE"}


def parse_rule(text: str) -> Rule:
    """``--redact NAME=REGEX`` (``<NAME_1>``…) or ``--redact REGEX`` (``<REDACTED_1>``…)."""
    name, eq, pattern = text.partition("=")
    if not eq or not re.fullmatch(r"[A-Za-z][\w-]*", name):
        name, pattern = "REDACTED", text
    if not pattern:
        raise AgentTestError(f"--redact {text!r}: an empty pattern", hint="e.g. --redact order=ORD-\\d{6}")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise AgentTestError(f"--redact {text!r}: the pattern does not compile: {exc}", hint="e.g. --redact order=ORD-\\d{6}") from None
    if compiled.search(""):
        raise AgentTestError(f"--redact {text!r}: the pattern matches the empty text, so it would replace nothing useful")
    stem = name.upper().replace("-", "_")
    return Rule(name=stem, what=f"--redact {name}" if eq else "--redact rule", pattern=compiled)


@dataclass
class Redactor:
    """Replaces what the rules find, remembering each value's placeholder and where it was found."""

    rules: tuple[Rule, ...]
    placeholders: dict[str, str] = field(default_factory=dict)  # original → placeholder
    kinds: dict[str, str] = field(default_factory=dict)  # placeholder → what it stands for, in words
    found_in: dict[str, list[str]] = field(default_factory=dict)  # placeholder → the cases it occurs in
    where: str = ""  # the case being redacted

    @classmethod
    def of(cls, custom: Iterable[str] = (), without: Iterable[str] = ()) -> Redactor:
        off = {w.lower() for w in without}
        unknown = off - set(KINDS) - {"all"}
        if unknown:
            raise AgentTestError(f"--no-redact {sorted(unknown)[0]}: not a built-in rule",
                                 hint=f"one of {', '.join(sorted(KINDS))}, or all")
        kept = () if "all" in off else tuple(r for r in BUILT_IN if r.name not in {KINDS[o] for o in off})
        return cls(tuple(parse_rule(c) for c in custom) + kept)

    def text(self, text: str) -> str:
        for rule in self.rules:
            text = rule.pattern.sub(lambda m, r=rule: self._replace(m, r), text)  # type: ignore[misc]
        return text

    def _replace(self, match: re.Match[str], rule: Rule) -> str:
        found = match.group(rule.group)
        if found is None or (rule.accept is not None and not rule.accept(found)) or _placeholder(found):
            return match.group(0)
        holder = self.placeholders.get(found)
        if holder is None:
            count = sum(1 for k in self.kinds if k.startswith(f"<{rule.name}_")) + 1
            holder = self.placeholders[found] = f"<{rule.name}_{count}>"
            self.kinds[holder] = rule.what
        cases = self.found_in.setdefault(holder, [])
        if self.where and self.where not in cases:
            cases.append(self.where)
        start, end = match.span(rule.group)
        whole = match.group(0)
        return whole[: start - match.start()] + holder + whole[end - match.start():]

    def value(self, value: Any) -> Any:
        """Every string inside ``value`` (dict keys aside) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value


def _placeholder(text: str) -> bool:
    return bool(re.fullmatch(r"<[A-Z_]+_\d+>", text))
