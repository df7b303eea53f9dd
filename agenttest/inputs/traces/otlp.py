"""OTLP/JSON files read by hand, strictly and with places: ``resourceSpans → scopeSpans → spans`` and
``resourceLogs → scopeLogs → logRecords``, one document per file or one per line (JSON Lines, as the
OpenTelemetry file exporters and the Collector's file exporter write them).

The OTLP/JSON mapping (opentelemetry-proto's ``docs/specification.md``, "JSON Protobuf Encoding"): keys in
lowerCamelCase, trace and span ids as hex (base64 — the plain protobuf mapping — is read too), 64-bit integers
as decimal strings or numbers, enums as integers, ``AnyValue`` as one of ``stringValue``, ``boolValue``,
``intValue``, ``doubleValue``, ``arrayValue``, ``kvlistValue``, ``bytesValue``; unknown keys are ignored."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import AgentTestError, Location
from agenttest.util.positions import json_message, json_offset, line_col

Path = tuple[Any, ...]


class OtlpError(AgentTestError):
    """A file that is not OTLP/JSON, or a value in it of the wrong shape: exit 2 at ``file:line:column``."""


@dataclass(frozen=True)
class Doc:
    """One JSON document of a file (the whole file, or one line of a JSON Lines file) and how to place a path
    inside it. The text is kept: places are found only when something is wrong or a span is named."""

    file: str
    text: str
    line_offset: int = 0  # lines of the file before the document

    def at(self, path: Sequence[Any] = ()) -> Location:
        line, col = line_col(self.text, json_offset(self.text, list(path)))
        return Location(self.file, line + self.line_offset, col)


@dataclass(frozen=True)
class Place:
    """Where something was written: a document and the JSON path inside it (a Location on demand)."""

    doc: Doc
    path: Path

    def location(self) -> Location:
        return self.doc.at(self.path)

    def __str__(self) -> str:
        return str(self.location())


@dataclass(frozen=True)
class Event:
    """A span event, or a log record attached to a span (the GenAI per-message and details events)."""

    name: str
    time: int
    attributes: dict[str, Any]
    body: Any = None
    place: Place | None = None


@dataclass(frozen=True, kw_only=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: int  # ns since the epoch
    end: int
    attributes: dict[str, Any]
    events: tuple[Event, ...]
    error: str  # the status message (or "error") when the status code is ERROR, else ""
    place: Place
    scope: str = ""


@dataclass(frozen=True)
class LogRecord:
    trace_id: str
    span_id: str
    event: Event


@dataclass
class Export:
    """Everything read from the files: spans and log records, in file order."""

    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    documents: int = 0


def documents(file: str, text: str) -> Iterator[tuple[Doc, Any]]:
    """The JSON documents of a file: the whole text, else one per line (JSON Lines)."""
    try:
        yield Doc(file, text), json.loads(text)
        return
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            line, col = line_col(text, exc.pos)
            raise OtlpError(f"not JSON: {json_message(exc.msg)}", Location(file, line, col)) from None
    for number, line_text in enumerate(text.splitlines()):
        if not line_text.strip():
            continue
        try:
            value = json.loads(line_text)
        except json.JSONDecodeError as exc:
            raise OtlpError(f"not JSON: {json_message(exc.msg)} (a file of one OTLP/JSON document per line)",
                            Location(file, number + 1, exc.colno)) from None
        yield Doc(file, line_text, number), value


def read(file: str, text: str, export: Export) -> None:
    """Add the spans and log records of one file to ``export``."""
    for doc, value in documents(file, text):
        _document(doc, value, export)
        export.documents += 1


_NOT_OTLP_HINT = ("an OTLP/JSON export is an object with 'resourceSpans' (or 'resourceLogs'), as the OpenTelemetry file "
                  "exporters and the Collector's file exporter write it (docs/traces.md)")


def _document(doc: Doc, value: Any, export: Export) -> None:
    if not isinstance(value, dict):
        raise OtlpError(f"not an OTLP/JSON export: a JSON {_kind(value)}", doc.at(), _NOT_OTLP_HINT)
    if "resource_spans" in value or "resource_logs" in value:
        key = "resource_spans" if "resource_spans" in value else "resource_logs"
        raise OtlpError(f"'{key}' is the protobuf field name; OTLP/JSON writes keys in lowerCamelCase", doc.at([key]),
                        "export with an OTLP/JSON exporter (keys such as resourceSpans, scopeSpans, traceId)")
    if "resourceSpans" in value or "batches" in value:  # "batches": Grafana Tempo's trace download
        key = "resourceSpans" if "resourceSpans" in value else "batches"
        for i, resource in enumerate(_list(doc, value, [key])):
            for j, scope in enumerate(_list(doc, resource, [key, i, "scopeSpans"])):
                name = _scope_name(doc, scope, (key, i, "scopeSpans", j))
                for k, raw in enumerate(_list(doc, scope, [key, i, "scopeSpans", j, "spans"])):
                    export.spans.append(_span(doc, raw, (key, i, "scopeSpans", j, "spans", k), name))
    if "resourceLogs" in value:
        for i, resource in enumerate(_list(doc, value, ["resourceLogs"])):
            for j, scope in enumerate(_list(doc, resource, ["resourceLogs", i, "scopeLogs"])):
                for k, raw in enumerate(_list(doc, scope, ["resourceLogs", i, "scopeLogs", j, "logRecords"])):
                    export.logs.append(_log(doc, raw, ("resourceLogs", i, "scopeLogs", j, "logRecords", k)))
    if not {"resourceSpans", "batches", "resourceLogs"} & value.keys():
        keys = ", ".join(sorted(value)[:5]) or "none"
        hint = ("this looks like a Jaeger JSON export; export OTLP/JSON instead" if "data" in value else _NOT_OTLP_HINT)
        raise OtlpError(f"not an OTLP/JSON export: no 'resourceSpans' or 'resourceLogs' (its keys: {keys})", doc.at(), hint)


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def _list(doc: Doc, parent: Any, path: list[Any]) -> list[Any]:
    """``parent[path[-1]]``: a list (absent or null: empty) of objects."""
    value = parent.get(path[-1]) if isinstance(parent, dict) else None
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpError(f"'{path[-1]}' must be an array, not a {_kind(value)}", doc.at(path))
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise OtlpError(f"'{path[-1]}' must hold objects; item {i + 1} is a {_kind(item)}", doc.at([*path, i]))
    return value


def _scope_name(doc: Doc, scope: dict[str, Any], path: Path) -> str:
    inner = scope.get("scope")
    if isinstance(inner, dict) and isinstance(inner.get("name"), str):
        return inner["name"]
    return ""


def _string(doc: Doc, raw: dict[str, Any], path: Path, key: str, required: bool = False) -> str:
    value = raw.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        what = "is missing" if value is None else f"must be a string, not a {_kind(value)}"
        raise OtlpError(f"'{key}' {what}", doc.at([*path, key] if value is not None else list(path)))
    return value


def _id(doc: Doc, raw: dict[str, Any], path: Path, key: str, size: int, required: bool) -> str:
    """A trace or span id as lowercase hex: OTLP/JSON writes hex; base64 (the plain protobuf JSON mapping) is
    read too. Empty means none."""
    text = _string(doc, raw, path, key, required)
    if not text:
        if required:
            raise OtlpError(f"'{key}' is empty", doc.at([*path, key]))
        return ""
    if len(text) == 2 * size and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) == size:
        return decoded.hex()
    raise OtlpError(f"'{key}' must be {2 * size} hex digits (OTLP/JSON), not {text[:40]!r}", doc.at([*path, key]))


def _int(doc: Doc, raw: dict[str, Any], path: Path, key: str) -> int:
    """A 64-bit integer: a decimal string (OTLP/JSON) or a number; absent is 0."""
    value = raw.get(key)
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise OtlpError(f"'{key}' must be an integer (a decimal string in OTLP/JSON), not {json.dumps(value)[:40]}",
                    doc.at([*path, key]))


def any_value(doc: Doc, value: Any, path: Path) -> Any:
    """An ``AnyValue`` as Python: str, bool, int, float, list, dict, bytes (``bytesValue``), None (empty)."""
    if not isinstance(value, dict):
        raise OtlpError(f"an attribute value must be an object such as {{\"stringValue\": …}}, not a {_kind(value)}", doc.at(path))
    if "stringValue" in value:
        return _typed(doc, value, path, "stringValue", str)
    if "boolValue" in value:
        return _typed(doc, value, path, "boolValue", bool)
    if "intValue" in value:
        return _int(doc, value, path, "intValue")
    if "doubleValue" in value:
        number = value["doubleValue"]
        if isinstance(number, str) and number in ("NaN", "Infinity", "-Infinity"):
            return float(number)
        return float(_typed(doc, value, path, "doubleValue", (int, float)))
    if "arrayValue" in value:
        inner = value["arrayValue"] or {}
        return [any_value(doc, v, (*path, "arrayValue", "values", i)) for i, v in enumerate(_list(doc, inner, [*path, "arrayValue", "values"]))]
    if "kvlistValue" in value:
        return attributes(doc, value["kvlistValue"] or {}, (*path, "kvlistValue"), "values")
    if "bytesValue" in value:
        try:
            return base64.b64decode(_typed(doc, value, path, "bytesValue", str), validate=True)
        except (binascii.Error, ValueError):
            raise OtlpError("'bytesValue' must be base64", doc.at([*path, "bytesValue"])) from None
    return None


def _typed(doc: Doc, value: dict[str, Any], path: Path, key: str, kind: type | tuple[type, ...]) -> Any:
    found = value[key]
    if not isinstance(found, kind) or (kind is not bool and isinstance(found, bool)):
        raise OtlpError(f"'{key}' holds a {_kind(found)}", doc.at([*path, key]))
    return found


def attributes(doc: Doc, raw: dict[str, Any], path: Path, key: str = "attributes") -> dict[str, Any]:
    """A list of ``{"key", "value"}`` as a dict (a key written twice: the last wins, as OTLP says nothing more)."""
    out: dict[str, Any] = {}
    for i, item in enumerate(_list(doc, raw, [*path, key])):
        name = _string(doc, item, (*path, key, i), "key", required=True)
        out[name] = any_value(doc, item.get("value", {}), (*path, key, i, "value"))
    return out


def _span(doc: Doc, raw: dict[str, Any], path: Path, scope: str) -> Span:
    events = tuple(
        Event(_string(doc, e, (*path, "events", i), "name"), _int(doc, e, (*path, "events", i), "timeUnixNano"),
              attributes(doc, e, (*path, "events", i)), place=Place(doc, (*path, "events", i)))
        for i, e in enumerate(_list(doc, raw, [*path, "events"])))
    status: dict[str, Any] = raw["status"] if isinstance(raw.get("status"), dict) else {}
    code = status.get("code", 0)
    failed = code in (2, "STATUS_CODE_ERROR")
    return Span(
        trace_id=_id(doc, raw, path, "traceId", 16, True), span_id=_id(doc, raw, path, "spanId", 8, True),
        parent_id=_id(doc, raw, path, "parentSpanId", 8, False), name=_string(doc, raw, path, "name"),
        start=_int(doc, raw, path, "startTimeUnixNano"), end=_int(doc, raw, path, "endTimeUnixNano"),
        attributes=attributes(doc, raw, path), events=events,
        error=(str(status.get("message") or "error") if failed else ""), place=Place(doc, path), scope=scope)


def _log(doc: Doc, raw: dict[str, Any], path: Path) -> LogRecord:
    attrs = attributes(doc, raw, path)
    name = _string(doc, raw, path, "eventName") or str(attrs.get("event.name") or "")
    body = any_value(doc, raw["body"], (*path, "body")) if isinstance(raw.get("body"), dict) else None
    time = _int(doc, raw, path, "timeUnixNano") or _int(doc, raw, path, "observedTimeUnixNano")
    return LogRecord(_id(doc, raw, path, "traceId", 16, False), _id(doc, raw, path, "spanId", 8, False),
                     Event(name, time, attrs, body, Place(doc, path)))
