"""Unknown keys in a case (FORMATS §2): which fail the load and what they say. A check lost in silence is a
false green, so every unknown key inside an assertion is an error, and so is a key that holds assertions
anywhere (``checks: [...]``). At the case level the keys Yao files carry beside Yao's fields are ignored with
a warning, as Yao ignores them; any other unknown key of a case is an error. Typos are errors everywhere;
``--strict`` makes every unknown key one; a generator's cases (``lenient``) keep only the first two rules."""

from __future__ import annotations

from typing import Any

from agenttest import assertions
from agenttest.errors import typo_of
from agenttest.inputs.validation import Finding, container

# Keys found in suites written for Yao (whose loader ignores what it does not know) that are notes, not checks:
# ignored with one warning per key and file. A key that starts with "_" (``_comment``, ``__yao_created_by``) too.
YAO_CASE_KEYS = frozenset({
    "category", "comment", "comments", "note", "notes", "priority", "group", "scenario", "feature", "author",
    "owner", "source", "version", "created_at", "updated_at",
})
# Names other tools (and first drafts) give a list of checks: never ignored.
ASSERTION_LIST_KEYS = frozenset({
    "check", "checks", "asserts", "expect", "expects", "expectation", "expectations", "validate", "validation",
    "validations", "validators", "verify", "verifications", "tests", "evals", "graders", "scorers", "expected_output",
    "expected_outputs",
})
_ASSERTION_HOLDERS = ("a case", "a turn", "a checkpoint")
_ASSERTION_KEYS = ("assert", "assertions", "assertion")  # a typo of one of these loses checks: an error even in generated cases


def judged(f: Finding, raw: Any, strict: bool, lenient: bool) -> tuple[bool, Finding]:
    """Whether an unknown-key finding is an error, and the finding as it is said."""
    key, where = str(f.path[-1]), container(f.path)
    if f.typo is not None and (not lenient or f.typo in _ASSERTION_KEYS):
        return True, f
    if _holds_assertions(key, _at(raw, f.path)):
        meant = "assert" if where in _ASSERTION_HOLDERS else None
        return True, f._replace(message=f"'{key}' is not a field of {where}: it holds assertions, which would never be checked",
                                hint=f"did you mean '{meant}'?" if meant else "assertions go in the case's 'assert'")
    if where == "an assertion":
        return True, f
    if strict:
        return True, f._replace(hint="unknown keys are errors with --strict")
    if len(f.path) == 1 and not lenient and not yao_key(key):
        note = typo_of(key, YAO_CASE_KEYS)
        return True, f._replace(message=f"'{key}' is not a field of a case",
                                hint=f"did you mean '{note}'?" if note else "keep your own data under 'metadata' (only the notes "
                                     "Yao files carry — category, comment, priority … — are ignored, with a warning)")
    return False, f


def yao_key(key: str) -> bool:
    """A key of a Yao suite that agent-test ignores with a warning: a note, not a field with an effect."""
    return key in YAO_CASE_KEYS or key.startswith("_")


def _holds_assertions(key: str, value: Any) -> bool:
    """A key named as a list of checks, or whose value is assertions (``{"type": "contains", …}``, a list of them)."""
    if key.lower() in ASSERTION_LIST_KEYS:
        return True
    items = value if isinstance(value, list) else [value]
    known = assertions.names()
    return bool(items) and all(isinstance(a, dict) and a.get("type") in known for a in items)


def _at(raw: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        try:
            raw = raw[step]
        except (KeyError, IndexError, TypeError):
            return None
    return raw
