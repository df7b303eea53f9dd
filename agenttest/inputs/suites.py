"""A case file's suite: ``{"suite": {"id", "name", "description", "metadata", "assertions"}, "cases": [...]}``
(FORMATS §18; seed format A's suite) read strictly, its checks validated where they are written, and made the
``SuiteSpec`` every case of the file refers to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agenttest.errors import Location, Problem, typo_of
from agenttest.inputs.documents import Document, Loaded
from agenttest.inputs.validation import Path, assertion_list, assertion_problems, type_name
from agenttest.model import AssertionSpec, Case, SuiteSpec
from agenttest.speed.records import replace

FIELDS = ("id", "name", "description", "metadata", "assertions")
TYPES = ("check", "all", "any", "evaluator")  # what can judge {summary, status} and the cases
MAX_CHECKS = 200


@dataclass(frozen=True)
class Within:
    """Finds places inside the suite of a file (a SuiteSpec's locator; picklable, unlike a closure)."""

    doc: Document

    def __call__(self, path: Sequence[Any] = (), key: bool = False, line: int | None = None) -> Location:
        return self.doc.locate(("suite", *path), key)


def attach(doc: Document, loaded: Loaded) -> list[Case]:
    """The file's cases, each referring to the suite its wrapper declares; a bad suite is problems (said at their
    places), and the cases are kept without it."""
    raw = doc.raw["suite"]
    where = Within(doc)
    problems = [Problem(message, where(path), hint) for path, message, hint in problems_of(raw)]
    if problems:
        loaded.problems += problems
        return loaded.cases
    specs = tuple(AssertionSpec(params.get("type") or "equals", params, where(path), path) for path, params in assertion_list(raw, "assertions"))
    suite = SuiteSpec(id=raw["id"], file=doc.source, name=raw.get("name", ""), description=raw.get("description", ""),
                      metadata=raw.get("metadata") or {}, assertions=specs, location=where(), locator=where)
    return [replace(case, suite=suite) for case in loaded.cases]


def problems_of(raw: Any) -> list[tuple[Path, str, str | None]]:
    """What is wrong with a suite, each at its path inside it."""
    if not isinstance(raw, dict):
        return [((), f"'suite' must be an object with an 'id' and 'assertions', not {type_name(raw)}", None)]
    out: list[tuple[Path, str, str | None]] = []
    for key in raw:
        if key not in FIELDS:
            typo = typo_of(str(key), FIELDS)
            out.append(((key,), f"'{key}' is not a field of a suite", f"did you mean '{typo}'?" if typo else f"its fields: {', '.join(FIELDS)}"))
    if not isinstance(raw.get("id"), str) or not raw["id"]:
        out.append((("id",) if "id" in raw else (), "a suite needs an 'id' (a non-empty string)", None))
    for key in ("name", "description"):
        if key in raw and not isinstance(raw[key], str):
            out.append(((key,), f"'{key}' must be a string, not {type_name(raw[key])}", None))
    if "metadata" in raw and not isinstance(raw["metadata"], dict):
        out.append((("metadata",), f"'metadata' must be an object, not {type_name(raw['metadata'])}", None))
    checks = raw.get("assertions", [])
    if not isinstance(checks, list):
        return out + [(("assertions",), f"'assertions' must be a list, not {type_name(checks)}", None)]
    if len(checks) > MAX_CHECKS:
        out.append((("assertions",), f"a suite holds at most {MAX_CHECKS} assertions, not {len(checks)}", None))
    for path, params in assertion_list(raw, "assertions"):
        out += _kind_problems(path, params)
        out += [(f.path, f.message, f.hint) for f in assertion_problems(path, params)]
    return out


def _kind_problems(path: Path, params: Any) -> list[tuple[Path, str, str | None]]:
    """A suite's checks read ``{summary, status}`` and the cases: check, all, any and evaluator (nested ones too)."""
    if not isinstance(params, dict):
        return [(path, f"an assertion must be an object, not {type_name(params)}", None)]
    kind = params.get("type") or "equals"
    if kind not in TYPES:
        return [(path + ("type",) if "type" in params else path, f"'{kind}' cannot be a suite check",
                 f"a suite's checks read {{summary, status}} and its cases: {', '.join(TYPES)}")]
    children = params.get("assertions") if kind in ("all", "any") else None
    if not isinstance(children, list):
        return []
    return [p for i, child in enumerate(children) for p in _kind_problems(path + ("assertions", i), {"type": child} if isinstance(child, str) else child)]
