"""The report codec (FORMATS §6): a RunReport written as JSON-ready records — the one shape every report
format, the After/AfterAll hooks and the ``--json`` events share — and a report file read back into a
RunReport (``diff``, ``merge``, ``--baseline``), in one module.

Each result type has one table of its JSON keys (``SHAPES``), read in both directions: writing follows
it in order, leaving out what its rule says is empty; reading maps each key back to its field and checks
the value against the field's type, so a wrong-typed report is exit 2 at the place of the bad value. Any
value can be written: text is made safe (lone surrogates, as a proxy cutting an emoji sends them), and
values JSON cannot hold (circular structures, ``object()``, bytes, sets) become text saying what they were."""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from agenttest.errors import AgentTestError, Location
from agenttest.speed import collector
from agenttest.model import (Answer, AssertionResult, Calibration, CallLog, CaseKey, CaseResult, CheckpointResult, EndpointLoad, Estimate, Exchange, Gate,
                             Judged, ModelCall, Paired, PassK, Player, Retry, RunReport, Spend, SuiteResult, ToolCall, Turn, Usage, WorldChange,
                             WorldRecord)
from agenttest.model.scenario import ScenarioRecord
from agenttest.util.positions import json_offset, line_col
from agenttest.util.text import safe_text
from agenttest.accounting import costs
from agenttest.verdicts import evidence, gates

HINT = "give a JSON report written by agent-test (-o report.json, or the default output-<timestamp>.json)"
MAX_DEPTH = 200  # deeper values are cut: no report is lost to a value nested without end


# -- values: anything a model, a tool or a file gave, made writable ------------------------------------


def jsonable(value: Any, depth: int = 0, path: tuple[int, ...] = ()) -> Any:
    """``value`` as JSON can hold it: safe text; tuples and sets as lists; bytes as text; NaN and the
    infinities as text (``"NaN"``, ``"Infinity"``: JSON has no such numbers, and a strict parser — the
    browser's, the viewer's — refuses the bare words); circular references, objects JSON has no form for
    and nesting past MAX_DEPTH as text saying so."""
    t = type(value)
    if t is str:
        return value if value.isascii() else safe_text(value)
    if t is float:
        return value if value - value == 0 else nonfinite(value)
    if value is None or t is int or t is bool:
        return value
    if isinstance(value, str):
        return safe_text(value)
    if depth >= MAX_DEPTH:
        return "<nested too deep>"
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if id(value) in path:
            return "<circular reference>"
        inner = (*path, id(value))
        depth += 1
        if isinstance(value, dict):
            return {k if type(k) is str and k.isascii() else _key(k): jsonable(v, depth, inner) for k, v in value.items()}
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v, depth, inner) for v in items]
    if isinstance(value, (bytes, bytearray)):
        return safe_text(bytes(value).decode("utf-8", "backslashreplace"))
    if isinstance(value, (int, float)):  # bool and int subclasses, numpy-like scalars
        return jsonable(float(value)) if isinstance(value, float) else int(value)
    return safe_text(f"<{type(value).__name__} object>")


def parsed(value: Any, depth: int = 0) -> Any:
    """``jsonable`` of a value ``json.loads`` made (no cycles, no foreign objects: only its text and its floats may
    need a word), ~3× faster: a report read back holds every input, output and tool argument of its run."""
    t = type(value)
    if t is str:
        return value if value.isascii() else safe_text(value)
    if t is dict:
        if depth >= MAX_DEPTH:
            return "<nested too deep>"
        return {k if k.isascii() else safe_text(k): parsed(v, depth + 1) for k, v in value.items()}
    if t is list:
        if depth >= MAX_DEPTH:
            return "<nested too deep>"
        return [parsed(v, depth + 1) for v in value]
    if t is float:
        return value if value - value == 0 else nonfinite(value)
    return value if value is None or t is int or t is bool else jsonable(value, depth)


def nonfinite(value: float) -> str:
    """NaN or an infinity as the report writes it: the word Python's and JavaScript's parsers print."""
    return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return safe_text(key)
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return safe_text(str(jsonable(key)))


# -- the shapes ---------------------------------------------------------------------------------------

Rule = Callable[[Any, Any], bool]  # (object, value) → is it written?


def _set(obj: Any, value: Any) -> bool:
    return bool(value)


def _given(obj: Any, value: Any) -> bool:
    return value is not None


@dataclass(frozen=True)
class Key:
    """One JSON key of a type: the field it holds (``attr``, default the key), when it is written, how
    (``put``), and — for keys computed from the object (``derived``) — that it is never read back."""

    name: str
    attr: str | None = None
    when: Rule | None = None
    put: Callable[[Any], Any] | None = None
    derived: bool = False

    @property
    def field(self) -> str:
        return self.attr or self.name


def _finite(obj: Any, value: Any) -> bool:
    """A score is written when it is a number: a judge's NaN (or a plug-in's text) is left out — the report's
    score is a number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value - value == 0


def _ms(value: float) -> float:
    return round(value, 1)


def _usd(value: float) -> float:
    return round(value, 8)


def _not_passed(r: CaseResult, _: Any) -> bool:
    return r.status not in ("passed", "skipped")


def _dynamic(r: CaseResult, _: Any) -> bool:
    return r.dynamic


def _conversation(r: CaseResult, _: Any) -> bool:
    return r.conversation


def _rates(values: tuple[float, ...]) -> list[float]:
    return [round(p, 6) for p in values]


SHAPES: dict[type, tuple[Key, ...]] = {
    Usage: (Key("prompt_tokens"), Key("completion_tokens"), Key("total_tokens"), Key("cached_tokens", when=_set),
            Key("source", when=lambda u, v: v != "endpoint")),
    AssertionResult: (Key("type"), Key("passed"), Key("message", when=_set), Key("expected", when=_given),
                      Key("actual", when=_given), Key("score", when=_finite), Key("details", when=_set), Key("error", when=_set),
                      Key("checked", when=_set), Key("traceback", when=_set), Key("id", attr="label", when=_set),
                      Key("severity", when=_set), Key("weight", when=_given), Key("description", when=_set),
                      Key("judged", when=_given), Key("negated", when=_set)),
    Judged: (Key("validator"), Key("connector", when=_set), Key("verdict", when=_given), Key("label", when=_given), Key("votes", when=_set),
             Key("consistent", when=_given), Key("min_agreement", when=_given), Key("min_kappa", when=_given)),
    ToolCall: (Key("name"), Key("arguments"), Key("result"), Key("duration_ms", put=_ms), Key("id", when=_set),
               Key("error", when=_given), Key("server", when=_given), Key("mocked", when=_set), Key("fault", when=_given),
               Key("location", when=_set), Key("traceback", when=_set), Key("vt", when=_set), Key("violation", when=_set)),
    Turn: (Key("turn"), Key("input"), Key("output"), Key("tool_calls"), Key("checkpoints"), Key("duration_ms", put=_ms),
           Key("simulator_reasoning", when=_set), Key("attachments", when=_set), Key("id", when=_set), Key("assertions", when=_set),
           Key("passed", when=lambda t, v: bool(t.assertions), put=lambda t: all(a.passed for a in t.assertions), derived=True),
           Key("ended", when=_set), Key("error", when=_set), Key("truncated", when=_set)),
    CheckpointResult: (Key("id"), Key("reached"), Key("reached_at_turn"), Key("required"),
                       Key("passed", put=lambda c: c.passed, derived=True), Key("description", when=_set), Key("message", when=_set),
                       Key("tool", when=_set), Key("verdict", when=_given)),
    WorldChange: (Key("path"), Key("op"), Key("before", when=lambda c, v: c.op != "added"), Key("after", when=lambda c, v: c.op != "removed")),
    WorldRecord: (Key("initial", when=_given), Key("final", when=_given), Key("changes")),
    Spend: (Key("role"), Key("connector"), Key("calls"), Key("usage"), Key("cost", when=_given, put=_usd)),
    ModelCall: (Key("role"), Key("connector"), Key("model", when=_set), Key("duration_ms", put=_ms)),
    Retry: (Key("kind"), Key("error", when=_set), Key("status", when=_set), Key("waited_ms", when=_set, put=_ms)),
    Answer: (Key("content"), Key("tool_calls", when=_set), Key("finish_reason", when=_set), Key("model", when=_set), Key("usage")),
    Exchange: (Key("role"), Key("connector"), Key("url", when=_set), Key("turn", when=_set), Key("for", attr="served", when=_set),
               Key("replayed", when=_set), Key("messages"), Key("tools", when=lambda e, v: v >= 0), Key("parameters"),
               Key("response", when=_given), Key("error", when=_set), Key("queued_ms", put=_ms),
               Key("first_byte_ms", when=_given, put=_ms), Key("duration_ms", put=_ms), Key("retries", when=_set)),
    CallLog: (Key("messages"), Key("tools", when=_set), Key("exchanges")),
    CaseResult: (
        Key("id"), Key("name", when=_set), Key("description", when=_set), Key("tags", when=_set), Key("status"), Key("input"),
        Key("output"), Key("output_from", when=_set), Key("truncated", when=_set), Key("error_by", when=_set), Key("duration_ms", put=_ms),
        Key("skip_reason", when=lambda r, v: r.status == "skipped" and bool(v)),
        Key("error", when=_not_passed, put=lambda r: r.reasons[0], derived=True),  # read back by _result_fields
        Key("assertion_errors", when=_not_passed, put=lambda r: r.assertion_errors, derived=True),
        Key("run"), Key("assertions"), Key("tool_calls"), Key("usage"), Key("simulator", when=_given), Key("turns", when=_conversation), Key("checkpoints", when=_dynamic),
        Key("total_turns", when=_conversation, put=lambda r: len(r.turns), derived=True),
        Key("turns_not_run", attr="not_run_turns", when=_set), Key("variants", when=_set), Key("checked_nothing", when=_set),
        Key("world", when=_given),
        Key("warnings", when=_set), Key("logs", when=_set), Key("file", when=_set),
        Key("line", when=lambda r, v: bool(r.file and v)), Key("connector", when=_set), Key("spend", when=_set),
        Key("cost", when=lambda r, v: bool(r.spend) and costs.total(r.spend) is not None, put=lambda r: _usd(costs.total(r.spend) or 0),
            derived=True),
        Key("stdout", when=_set), Key("stderr", when=_set), Key("traceback", when=_set), Key("model_calls", when=_set),
        Key("score", when=_finite), Key("minor_failures", when=lambda r, v: bool(r.minor_failures), put=lambda r: r.minor_failures, derived=True),
        Key("scenario", when=_given),
        Key("calls", when=_given), Key("metadata", when=_set),
    ),
    ScenarioRecord: (Key("identity"), Key("code", when=_set), Key("started"), Key("ended"), Key("steps"), Key("turns"),
                     Key("events"), Key("pending", when=_set)),
    SuiteResult: (Key("id"), Key("name", when=_set), Key("file", when=_set), Key("connector", when=_set),
                  Key("passed", put=lambda s: s.passed, derived=True), Key("assertions"), Key("metadata", when=_set)),
    Gate: (
        Key("id"), Key("connector"), Key("file", when=_set), Key("verdict", put=lambda g: g.verdict, derived=True), Key("runs"),
        Key("planned"), Key("passed"), Key("pass_rate", put=lambda g: round(g.pass_rate, 4), derived=True), Key("min_pass_rate"),
        Key("pass_hat_k", put=lambda g: g.pass_hat_k, derived=True), Key("pass_at_k", put=lambda g: g.pass_at_k, derived=True),
        Key("flaky", put=lambda g: g.flaky, derived=True),
        Key("classification", put=lambda g: g.classification if g.runs and g.verdict != "incomplete" else None, derived=True),
        Key("pass_hat", when=lambda g, v: g.runs > 1, put=lambda g: _rates(g.pass_hat), derived=True),
        Key("pass_at", when=lambda g, v: g.runs > 1, put=lambda g: _rates(g.pass_at), derived=True),
        Key("saved", when=_set), Key("skipped", when=_set),
        Key("duration", put=lambda g: {"median_ms": g.median_ms, "mean_ms": g.mean_ms, "min_ms": g.min_ms, "max_ms": g.max_ms,
                                       "std_ms": g.std_ms}, derived=True),  # read back by _gate_fields
        Key("tokens"), Key("cost", when=_given, put=_usd), Key("total_cost", when=_given, put=_usd),
    ),
    Player: (Key("role"), Key("agent"), Key("connector"), Key("mock", when=_set)),
}


def encode(value: Any) -> Any:
    """A result type (by its shape) or any value, as JSON-ready records."""
    t = type(value)
    if t is str:
        return value if value.isascii() else safe_text(value)
    if value is None or t is int or t is bool or (t is float and value - value == 0):
        return value
    shaped = _ENCODERS.get(t)
    if shaped is not None:
        return shaped(value)
    if t is tuple and value and type(value[0]) in SHAPES:
        return [encode(v) for v in value]
    if t in SHAPES:
        return _encoder(t)(value)
    return jsonable(value)


_ENCODERS: dict[type, Callable[[Any], dict[str, Any]]] = {}
ALWAYS, IF_SET, IF_GIVEN, IF = range(4)  # when a key is written: always, when set, when given (not None), by its rule


Step = tuple[str, str, bool, int, Rule, "Callable[[Any], Any] | None"]  # name, field, derived, when, rule, put


def steps(cls: type) -> list[Step]:
    """A shape's keys as plain tuples, the common rules (written when set, when given) as small numbers tested
    without a call: the encoders below, and the JSON report's writer (``reporting/jsonfile.py``), go through them."""
    out: list[Step] = []
    for key in SHAPES[cls]:
        when = ALWAYS if key.when is None else IF_SET if key.when is _set else IF_GIVEN if key.when is _given else IF
        out.append((key.name, key.field, key.derived, when, key.when or _set, key.put))
    return out


def _encoder(cls: type) -> Callable[[Any], dict[str, Any]]:
    """The encoder of one shape, made once: its keys one after another (``steps``), text and numbers put as they
    are, anything else through ``encode``. A plain loop (bench/RESULTS.md: a function written with ``exec`` for
    each shape encoded 10,000 results in ~185 ms of CPU, this loop in ~220 ms; the JSON report has its own writer,
    and what encodes results here — hooks, ``--json`` events, HTML and Markdown — is not the command's hot path)."""
    shape = steps(cls)

    def shaped(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, attr, derived, when, rule, put in shape:  # the rule tested inline: a call per key was a third of the time
            f = obj if derived else getattr(obj, attr)
            if when:
                if when == IF_SET:
                    if not f:
                        continue
                elif when == IF_GIVEN:
                    if f is None:
                        continue
                elif not rule(obj, f):
                    continue
            if put is not None:
                out[name] = jsonable(put(f))
                continue
            t = type(f)
            out[name] = (f if f.isascii() else safe_text(f)) if t is str else f if (t is int or t is bool or f is None) else encode(f)
        return out

    _ENCODERS[cls] = shaped
    return shaped


def result_dict(r: CaseResult) -> dict[str, Any]:
    return encode(r)


def gate_dict(g: Gate) -> dict[str, Any]:
    return encode(g)


def spend_dict(s: Spend) -> dict[str, Any]:
    return encode(s)


def pass_k_dict(table: PassK, hat: Sequence[tuple[float, float]] = (), at: Sequence[tuple[float, float]] = ()) -> dict[str, Any]:
    """The suite's pass^k and pass@k for k = 1 … N, item k-1 of each list (docs/gates.md), with their intervals."""
    out = {"k": list(table.k), "pass_hat": _rates(table.pass_hat), "pass_at": _rates(table.pass_at), "cases": list(table.cases)}
    if hat and at:
        out.update(pass_hat_interval=[[_r(lo), _r(hi)] for lo, hi in hat], pass_at_interval=[[_r(lo), _r(hi)] for lo, hi in at])
    return out


def _spent(usage: Usage, cost: float | None) -> dict[str, Any]:
    return {"usage": usage.as_dict(), **({"cost": round(cost, 8)} if cost is not None else {})}


def cost_dict(report: RunReport) -> dict[str, Any] | None:
    """Tokens and cost by role and by connector, and in total; None when no model was called."""
    t = costs.totals(report.results, report.generation)
    if not t.any:
        return None
    out: dict[str, Any] = {"total": round(t.cost, 8) if t.cost is not None else None,
                           "by_role": {role: _spent(*v) for role, v in t.by_role.items()},
                           "by_connector": {conn: _spent(*v) for conn, v in t.by_connector.items()}}
    if t.unpriced_tokens:
        out["unpriced_tokens"] = t.unpriced_tokens
    return out


def load_dict(load: tuple[EndpointLoad, ...]) -> dict[str, Any]:
    """How the endpoints held up (FORMATS §13): totals, then per connector."""
    return {
        "rate_limited": sum(e.rate_limited for e in load),
        "absorbed": sum(e.absorbed for e in load),
        "retries": sum(e.retries for e in load),
        "connectors": {e.connector: {k: [list(p) for p in v] if k == "timeline" else v for k, v in dataclasses.asdict(e).items() if k != "connector"}
                       for e in load},
    }


def _stability_dict(g: Gate, matrix: bool) -> dict[str, Any]:
    """A gate's figures as Yao's stability entry (FORMATS §8): the pass rate in percent, the durations of its runs."""
    out = {"id": g.id, "runs": g.runs, "passed": g.passed, "pass_rate": g.percent, "avg_ms": g.mean_ms, "min_ms": g.min_ms,
           "max_ms": g.max_ms, "std_ms": g.std_ms, "classification": g.classification}
    if matrix:
        out["connector"] = g.connector
    return out


def summary_dict(report: RunReport) -> dict[str, Any]:
    s = report.summary
    out: dict[str, Any] = {
        "total": s.total, "passed": s.passed, "failed": s.failed, "skipped": s.skipped, "errors": s.errors, "timeouts": s.timeouts,
        "duration_ms": round(report.duration_ms, 1), "agent_id": report.agent_id, "agent_path": report.agent_path,
        "connector": report.connector,
    }
    if report.simulator:
        out["simulator"] = report.simulator
    if report.players:
        out["roles"] = [encode(p) for p in report.players]
    out["usage"] = s.usage.as_dict()
    out["pass_rate"] = s.pass_rate
    out.update(evidence_dict(report))
    if report.stability:
        out["runs"] = report.options.get("runs", 1)
        out["stability"] = [_stability_dict(g, bool(report.matrix)) for g in report.stability]
        out["stable_cases"] = sum(1 for st in report.stability if st.classification == "stable")
        total_runs = sum(st.runs for st in report.stability)
        out["overall_pass_rate"] = round(100.0 * sum(st.passed for st in report.stability) / total_runs, 1) if total_runs else 100.0
    known = evidence.of(report)
    if gates.shown(report.gates, report.matrix):
        out["cases"] = len(report.gates)
        out["gates_passed"] = sum(1 for g in report.gates if g.verdict == "passed")
        out["gates_failed"] = len(gates.failed(report.gates))
        out["gates"] = [_with_interval(gate_dict(g), evidence.case_interval(g, known.confidence)) for g in report.gates]
        table = gates.pass_k(report.gates)
        if table is not None:
            out["pass_k"] = pass_k_dict(table, known.pass_hat, known.pass_at)
        if report.matrix:
            by = {c: gates.pass_k([g for g in report.gates if g.connector == c]) for c in report.matrix}
            ks = {c: (hat, at) for c, hat, at in known.pass_k_by_connector}
            out["pass_k_by_connector"] = {c: pass_k_dict(t, *ks.get(c, ((), ()))) for c, t in by.items() if t is not None}
    if report.matrix:
        out["matrix"] = list(report.matrix)
    saved = gates.runs_saved(report.gates)
    if saved:
        out["runs_saved"] = saved
    spent = cost_dict(report)
    if spent is not None:
        out["costs"] = spent
    if report.generation:
        out["generation"] = [spend_dict(sp) for sp in report.generation]
    if report.generation_calls is not None:
        out["generation_calls"] = encode(report.generation_calls)
    for flag in ("interrupted", "terminated", "stopped_early"):  # terminated: by SIGTERM, not Ctrl-C
        if getattr(report, flag):
            out[flag] = True
    if report.not_run:
        out["not_run"] = report.not_run
    if report.checked_nothing:
        out["checked_nothing"] = len(report.checked_nothing)
    if report.load:
        out["load"] = load_dict(report.load)
    if report.suites:  # the suite checks (FORMATS §18): a failed one fails the run
        out["suites"] = [encode(suite) for suite in report.suites]
    return out


def metadata_dict(report: RunReport) -> dict[str, Any]:
    from agenttest.version import __version__

    return {
        "started_at": report.started_at, "completed_at": report.completed_at, "input_file": report.input_source,
        "output_file": report.output_file, "version": __version__, "options": jsonable(report.options),
        **({"warnings": [safe_text(w) for w in report.warnings]} if report.warnings else {}),
    }


def report_dict(report: RunReport) -> dict[str, Any]:
    return {"summary": summary_dict(report), "environment": jsonable(report.environment),
            "results": [result_dict(r) for r in report.results], "metadata": metadata_dict(report)}


# -- reading ------------------------------------------------------------------------------------------


class _Bad(Exception):
    """A value of a report file that is not what agent-test writes there; ``path`` is where it sits (each
    decoder that meets it on the way out puts its own key or index in front)."""

    def __init__(self, message: str, path: Sequence[Any] = ()):
        super().__init__(message)
        self.message = message
        self.path = list(path)

    def __str__(self) -> str:
        """Names the value: 'status' must be …, 'tags'[0] must be …"""
        path, message = self.path, self.message
        if message.startswith("must"):
            last = max((i for i, p in enumerate(path) if isinstance(p, str)), default=None)
            if last is not None:
                message = f"'{path[last]}'" + "".join(f"[{p}]" for p in path[last + 1:]) + " " + message
        return message


def read(path: str) -> RunReport:
    """The report in ``path``; a missing, unreadable or malformed file — or one whose values have the
    wrong types — is an AgentTestError at the place of the problem."""
    if not os.path.isfile(path):
        raise AgentTestError(f"{path}: no such report file", hint=HINT)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentTestError(f"{path}: cannot be read: {exc}", hint=HINT) from None
    with collector.paused():  # what it makes has no cycle: no pass of the collector over it (speed/collector.py)
        return _decoded(path, text)


def _decoded(path: str, text: str) -> RunReport:
    try:
        data = json.loads(text)
    except RecursionError:
        raise AgentTestError("not an agent-test report: nested too deep", Location(path), HINT) from None
    except ValueError as exc:
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        raise AgentTestError(f"not valid JSON: {getattr(exc, 'msg', exc)}", Location(path, line, col), HINT) from None
    try:
        report = report_of(data)
        _conforms(data)
        return report
    except _Bad as exc:
        try:
            line, col = line_col(text, json_offset(text, exc.path))
        except RecursionError:
            line = col = None
        raise AgentTestError(f"not an agent-test report: {exc}", Location(path, line, col), HINT) from None
    except RecursionError:
        raise AgentTestError("not an agent-test report: nested too deep", Location(path), HINT) from None


@cache
def _schema() -> dict[str, Any]:
    from importlib import resources

    return json.loads(resources.files("agenttest.schema").joinpath("report.schema.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@cache
def _schema_validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(_schema())


@cache
def _schema_check() -> Callable[[Any], bool] | None:
    """The shipped schema compiled into plain checks (util.schemas), or None if it uses a keyword they lack."""
    from agenttest.util import schemas

    try:
        return schemas.compiled(_schema())
    except schemas.Unsupported:
        return None


def _conforms(data: Any) -> None:
    """The shipped report schema holds: what the types let through (a value out of range, a key of the
    wrong kind) is still said at its place. The compiled schema says whether it holds (jsonschema took
    10.6 s for 10,000 results); only a report it refuses is walked by jsonschema, to say where and why."""
    check = _schema_check()
    if check is not None and check(data):
        return
    import jsonschema

    error = jsonschema.exceptions.best_match(_schema_validator().iter_errors(data))
    if error is not None:
        raise _Bad(error.message, list(error.absolute_path))


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Bad(f"'{key}' must be an object, not {_kind(value)}", [key])
    return value


def report_of(data: Any) -> RunReport:
    """A report's JSON document → RunReport (raises _Bad with the JSON path of the problem)."""
    if not isinstance(data, dict):
        raise _Bad(f"the report must be an object, not {_kind(data)}", [])
    if not isinstance(data.get("results"), list):
        raise _Bad("'results' is missing or not a list", ["results"])
    summary, meta, environment = _section(data, "summary"), _section(data, "metadata"), _section(data, "environment")
    _section(meta, "options")

    def get(where: dict[str, Any], key: str, tp: Any, path: list[Any], default: Any) -> Any:
        return decode(tp, where[key], path + [key]) if where.get(key) is not None else default

    s, m = ["summary"], ["metadata"]
    return RunReport(
        results=tuple(_result(r, i) for i, r in enumerate(data["results"])),
        started_at=get(meta, "started_at", str, m, ""), completed_at=get(meta, "completed_at", str, m, ""),
        duration_ms=get(summary, "duration_ms", float, s, 0.0), agent_id=get(summary, "agent_id", str, s, ""),
        agent_path=get(summary, "agent_path", str, s, ""), connector=get(summary, "connector", str, s, ""),
        simulator=get(summary, "simulator", str, s, ""), input_source=get(meta, "input_file", str, m, ""),
        output_file=get(meta, "output_file", str, m, ""), environment=jsonable(environment), options=jsonable(meta.get("options") or {}),
        interrupted=get(summary, "interrupted", bool, s, False), stopped_early=get(summary, "stopped_early", bool, s, False),
        terminated=get(summary, "terminated", bool, s, False),
        not_run=get(summary, "not_run", int, s, 0), warnings=get(meta, "warnings", tuple[str, ...], m, ()),
        gates=get(summary, "gates", tuple[Gate, ...], s, ()), matrix=get(summary, "matrix", tuple[str, ...], s, ()),
        generation=get(summary, "generation", tuple[Spend, ...], s, ()), generation_calls=get(summary, "generation_calls", CallLog, s, None),
        load=_load(summary.get("load"), s + ["load"]), players=get(summary, "roles", tuple[Player, ...], s, ()),
        suites=get(summary, "suites", tuple[SuiteResult, ...], s, ()),
    )


def _result(d: Any, index: int) -> CaseResult:
    if not isinstance(d, dict):
        raise _Bad(f"result {index + 1} must be an object, not {_kind(d)}", ["results", index])
    for key in ("id", "status"):
        if key not in d:
            raise _Bad(f"result {index + 1} has no '{key}'", ["results", index])
    try:
        fields = _shape(CaseResult)(d)
    except _Bad as exc:
        exc.path[:0] = ["results", index]
        raise
    error = decode(str, d["error"], ["results", index, "error"]) if d.get("error") is not None else ""
    skipped = fields["status"] == "skipped"
    fields.update(error="" if skipped else error, skip_reason=fields.get("skip_reason") or (error if skipped else ""),
                  dynamic="checkpoints" in d, scripted="turns" in d and "checkpoints" not in d, index=index)
    return CaseResult(**fields)


def _load(d: Any, path: list[Any]) -> tuple[EndpointLoad, ...]:
    if d is None:
        return ()
    if not isinstance(d, dict) or not isinstance(d.get("connectors", {}), dict):
        raise _Bad("'load' must be an object with 'connectors'", path)
    names = {f.name: f for f in dataclasses.fields(EndpointLoad) if f.name != "connector"}
    hints = _hints(EndpointLoad)
    out = []
    for name, e in d.get("connectors", {}).items():
        if not isinstance(e, dict):
            raise _Bad(f"load of {name!r} must be an object", [*path, "connectors", name])
        out.append(EndpointLoad(connector=str(name), **{k: decode(hints[k], v, [*path, "connectors", name, k]) for k, v in e.items() if k in names}))
    return tuple(out)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


IDENTITY = ("file", "id", "connector")  # a result's and a gate's CaseKey, written as keys of their own (id always)


@cache
def _required(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls)
                     if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)


def decode(tp: Any, value: Any, path: list[Any]) -> Any:
    """``value`` read as type ``tp`` (str, int, float, bool, Any, Literal, X | None, tuple[X, ...], dict,
    or a result type by its shape); raises _Bad naming what was expected, at ``path`` and below."""
    try:
        return _decoder(tp)(value)
    except _Bad as exc:
        exc.path[:0] = path
        raise


Decoder = Callable[[Any], Any]


@cache
def _decoder(tp: Any) -> Decoder:
    """The function that reads a value as ``tp``, made once per type from its annotation: a report of 100,000
    results is read without a look at a single annotation per value (that, not the JSON, was most of the time)."""
    if tp is Any:
        return parsed
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = _decoder(next(t for t in typing.get_args(tp) if t is not type(None)))
        return lambda v: None if v is None else inner(v)
    if origin is Literal:
        return _literal(typing.get_args(tp))
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) != 2 or args[1] is not Ellipsis:  # a fixed shape: tuple[float, int]
            return _fixed(tuple(_decoder(a) for a in args))
        return _items(_decoder(args[0]))
    if origin is dict or tp is dict:
        return _object
    if tp in SHAPES:
        fields = _shape(tp)
        if tp is Gate:
            return lambda v: tp(**fields(v), **_gate_fields(v))
        return lambda v: tp(**fields(v))
    return _SCALARS[tp]


def _literal(allowed: tuple[Any, ...]) -> Decoder:
    def decode(v: Any) -> Any:
        if v not in allowed or isinstance(v, (dict, list)):
            raise _Bad(f"must be one of {', '.join(map(str, allowed))}, not {v!r}")
        return v

    return decode


def _items(inner: Decoder) -> Decoder:
    def decode(v: Any) -> tuple[Any, ...]:
        if not isinstance(v, list):
            raise _Bad(f"must be a list, not {_kind(v)}")
        try:
            return tuple(map(inner, v))
        except _Bad as exc:  # which item: found again on this rare path, not counted on the common one
            for i, item in enumerate(v):
                try:
                    inner(item)
                except _Bad:
                    exc.path.insert(0, i)
                    break
            raise

    return decode


def _fixed(inner: tuple[Decoder, ...]) -> Decoder:
    """A list of exactly ``len(inner)`` items, each read by its own decoder (``tuple[float, int]``)."""
    def decode(v: Any) -> tuple[Any, ...]:
        if not isinstance(v, list):
            raise _Bad(f"must be a list, not {_kind(v)}")
        if len(v) != len(inner):
            raise _Bad(f"must be a list of {len(inner)}, not of {len(v)}")
        out = []
        for i, (read, item) in enumerate(zip(inner, v)):
            try:
                out.append(read(item))
            except _Bad as exc:
                exc.path.insert(0, i)
                raise
        return tuple(out)

    return decode


def _object(v: Any) -> Any:
    if not isinstance(v, dict):
        raise _Bad(f"must be an object, not {_kind(v)}")
    return parsed(v)


@cache
def _shape(cls: type) -> Callable[[Any], dict[str, Any]]:
    """The fields of ``cls`` a JSON object gives, by its shape's keys (derived keys left out, and keys it does not
    know), each read as its field's type."""
    hints, required = _hints(cls), _required(cls)
    keyed = "key" in hints  # a result's or a gate's file, id and connector: made its CaseKey
    if keyed:
        required = required | {"id"}
    keys = {key.name: (key.field, key.field in required) for key in SHAPES[cls] if not key.derived}
    decoders: dict[str, Decoder] = {}

    def fields(d: Any) -> dict[str, Any]:
        if not isinstance(d, dict):
            raise _Bad(f"must be an object, not {_kind(d)}")
        out = {}
        for name, value in d.items():  # the keys written (a dozen), not every key the shape knows (forty)
            known = keys.get(name)
            if known is None or (value is None and not known[1]):
                continue
            field = known[0]
            decode = decoders.get(field) or decoders.setdefault(field, _decoder(hints.get(field, str)))  # made when first met: shapes nest
            try:
                out[field] = decode(value)
            except _Bad as exc:
                exc.path.insert(0, name)
                raise
        if keyed:
            out["key"] = CaseKey(**{name: out.pop(name) for name in IDENTITY if name in out})
        return out

    return fields


def _bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    raise _Bad(f"must be true or false, not {_kind(v)}")


def _str(v: Any) -> str:
    if type(v) is str:
        return v if v.isascii() else safe_text(v)
    if isinstance(v, str):
        return safe_text(v)
    raise _Bad(f"must be a string, not {_kind(v)}")


def _int(v: Any) -> int:
    if type(v) is int:
        return v
    if isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer():
        return int(v)
    raise _Bad(f"must be an integer, not {_kind(v)}")


def _float(v: Any) -> float:
    if type(v) is float:
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise _Bad(f"must be a number, not {_kind(v)}")


_SCALARS: dict[Any, Decoder] = {bool: _bool, str: _str, int: _int, float: _float}


def _gate_fields(d: dict[str, Any]) -> dict[str, Any]:
    """A gate's duration figures, written nested under ``duration``."""
    duration = d.get("duration")
    if duration is None:
        return {}
    if not isinstance(duration, dict):
        raise _Bad(f"must be an object, not {_kind(duration)}", ["duration"])
    return {k: decode(float, duration[k], ["duration", k]) for k in ("median_ms", "mean_ms", "min_ms", "max_ms", "std_ms")
            if duration.get(k) is not None}


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


# -- evidence (FORMATS §19): derived from the results, written and never read back ------------------


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def estimate_dict(e: Estimate) -> dict[str, Any]:
    return {"rate": _r(e.rate), "interval": [_r(e.low), _r(e.high)], "cases": e.cases, "runs": e.runs, "method": e.method}


def paired_dict(p: Paired) -> dict[str, Any]:
    """Two runs compared as a paired experiment: the verdict, the difference with its interval, the p-value, what
    this size can detect, the cases that moved (docs/statistics.md)."""
    return {
        "base": p.base, "new": p.new, "verdict": p.verdict, "regression": p.regression, "test": p.test, "cases": p.cases,
        "runs": [p.base_runs, p.new_runs], "fewest_runs": p.fewest_runs, "base_rate": _r(p.base_rate), "new_rate": _r(p.new_rate), "difference": _r(p.difference),
        "interval": [_r(p.low), _r(p.high)], "confidence": _r(1 - p.alpha), "p": p.p, "alpha": p.alpha, "worse": p.worse,
        "better": p.better, "min_detectable": _r(p.mdd), "noise": _r(p.noise),
        "runs_needed": [{"difference": d, "runs": r} for d, r in p.runs_needed],
        "moved": [{"id": m.id, **({"file": m.file} if m.file else {}), **({"connector": m.connector} if m.connector else {}),
                   "before": list(m.before), "after": list(m.after), "direction": "worse" if m.worse else "better", "p": m.p,
                   "adjusted": m.adjusted} for m in p.moved],
        "tested": p.tested, "case_floor": _r(p.case_floor),
    }


def _with_interval(gate: dict[str, Any], interval: tuple[float, float] | None) -> dict[str, Any]:
    """A gate's record with its Wilson interval after its pass rate."""
    if interval is None:
        return gate
    out: dict[str, Any] = {}
    for key, value in gate.items():
        out[key] = value
        if key == "pass_rate":
            out["interval"] = [_r(interval[0]), _r(interval[1])]
    return out


def evidence_dict(report: RunReport) -> dict[str, Any]:
    """The summary's evidence: the confidence, the pass rate's interval (and each connector's), the matrix compared."""
    known = evidence.of(report)
    out: dict[str, Any] = {"confidence": known.confidence}
    if known.pass_rate is not None:
        out["pass_rate_interval"] = estimate_dict(known.pass_rate)
    if known.by_connector:
        out["pass_rate_by_connector"] = {c: estimate_dict(e) for c, e in known.by_connector}
    if known.matrix:
        out["matrix_comparisons"] = [paired_dict(p) for p in known.matrix]
    if known.judges:
        out["judges"] = [calibration_dict(c) for c in known.judges]
    return out


def calibration_dict(c: Calibration) -> dict[str, Any]:
    """One judge against the labels (docs/statistics.md): its figures, confusion matrix, disagreements, noise and gate."""
    out: dict[str, Any] = {"validator": c.validator, "connector": c.connector, "labelled": c.labelled, "judgements": c.judgements}
    if c.labelled or c.unusable:
        out.update(confusion={"tp": c.tp, "fn": c.fn, "fp": c.fp, "tn": c.tn}, unusable=c.unusable,
                   agreement=estimate_dict(c.agreement) if c.agreement is not None else None,
                   kappa=_r(c.kappa), tpr=_r(c.tpr), tnr=_r(c.tnr), precision=_r(c.precision),
                   disagreements=[{"id": d.id, **({"file": d.file} if d.file else {}), **({"connector": d.connector} if d.connector else {}),
                                   "run": d.run, "criterion": d.criterion, "label": d.label, "verdict": d.verdict, "reason": d.reason}
                                  for d in c.disagreements])
    if c.repeated:
        out.update(repeated=c.repeated, flipped=c.flipped, flip_rate=_r(c.flip_rate))
    if c.pairwise:
        out.update(pairwise=c.pairwise, consistent=c.consistent, swap_consistency=_r(c.swap_consistency))
    if c.gated:
        out["gate"] = {"min_agreement": c.min_agreement, "min_kappa": c.min_kappa, "passed": not c.shortfalls, "below": list(c.shortfalls)}
    return out
