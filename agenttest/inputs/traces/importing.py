"""``agent-test import FILE… -o CASES``: read the recordings, check them, make one case per conversation,
replace secrets and personal data, write the case file, and say what was done. Every problem of the input
is found before anything is written, and said together with its ``file:line:column``."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from agenttest.errors import AgentTestError, InputError, Location, Problem
from agenttest.inputs.traces import chatlogs, genai, otlp
from agenttest.inputs.traces.calls import Call, location
from agenttest.inputs.traces.cases import NoUserMessage, Options, build
from agenttest.inputs.traces.redaction import Redactor
from agenttest.inputs.traces.stitching import Conversation, conversations
from agenttest.util.files import prepare, write_atomic

SUFFIXES = (".jsonl", ".yaml", ".yml")
SEQUENCE_MODES = ("strict", "ordered", "unordered", "subset", "superset")
CONTENT_HINT = ("record message content where the app runs: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY "
                "(the latest GenAI conventions, e.g. opentelemetry-instrumentation-openai-v2 2.x) or =true (older "
                "instrumentations); docs/traces.md")
GAP_HINT = "give every file the trace was exported to, or --allow-gaps to import what there is"


@dataclass(frozen=True, kw_only=True)
class Request:
    files: tuple[str, ...]
    output: str
    judge: str | None = None
    redact: tuple[str, ...] = ()
    no_redact: tuple[str, ...] = ()
    sequence: str = "strict"
    allow_gaps: bool = False
    force: bool = False  # replace an existing case file (it may have been edited by hand)


@dataclass(frozen=True)
class Imported:
    id: str
    name: str
    tools: tuple[str, ...]
    source: str


@dataclass(kw_only=True)
class Summary:
    output: str
    files: tuple[str, ...]
    cases: list[Imported] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    redacted: list[tuple[str, str, list[str]]] = field(default_factory=list)  # placeholder, what, case ids
    spans: int = 0
    traces: int = 0
    skipped_traces: int = 0


def run(request: Request) -> Summary:
    """Import the files into ``request.output``; an AgentTestError (exit 2) for any problem of the input."""
    redactor = Redactor.of(request.redact, request.no_redact)
    _check_output(request.output, request.force)
    texts = [(file, _text(file)) for file in request.files]
    export, chat_calls = otlp.Export(), []
    for file, text in texts:
        if chatlogs.looks_like(text):
            chat_calls += chatlogs.read(file, text)
        else:
            otlp.read(file, text, export)
    found = genai.read(export)
    problems = ([] if request.allow_gaps else gaps(export, found)) + silent(found)
    calls: list[Call] = found.calls + chat_calls
    if not calls and not problems:
        raise AgentTestError(f"{', '.join(request.files)}: no model call with messages in {len(export.spans)} spans",
                             Location(request.files[0]), "a GenAI trace has spans with gen_ai.operation.name chat; docs/traces.md")
    summary = Summary(output=request.output, files=request.files, spans=len(export.spans), traces=len({s.trace_id for s in export.spans}),
                      skipped_traces=found.skipped_traces)
    cases = _cases(conversations(calls, found.tools), request, redactor, summary, problems)
    if problems:
        raise InputError(problems)
    prepare(request.output)  # its folders made only now: bad input writes nothing
    write_atomic(request.output, render(cases, request))
    summary.redacted = [(holder, redactor.kinds[holder], redactor.found_in.get(holder, [])) for holder in redactor.kinds]
    return summary


def _check_output(path: str, force: bool) -> None:
    """The output's name, before anything is read or written: a case file, and not one that exists (without --force)."""
    if os.path.splitext(path)[1].lower() not in SUFFIXES:
        raise AgentTestError(f"-o {path}: import writes a case file: .jsonl or .yaml", hint="e.g. -o tests/imported.yaml")
    if os.path.isdir(path):
        raise AgentTestError(f"-o {path}: is a folder; give a file name", hint="e.g. -o tests/imported.yaml")
    if os.path.lexists(path) and not force:
        raise AgentTestError(f"-o {path}: the file exists (import would replace it, and any edits made to it by hand)",
                             hint="give another file name, or --force to replace it")


def _text(file: str) -> str:
    if not os.path.isfile(file):
        what = "is a folder" if os.path.isdir(file) else "does not exist"
        raise AgentTestError(f"{file} {what}", hint="give an OTLP/JSON trace file or a chat log (.jsonl)")
    try:
        with open(file, encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        raise AgentTestError(f"{file}: not UTF-8 text (byte {exc.start + 1})", Location(file)) from None
    if not text.strip():
        raise AgentTestError(f"{file} is empty", Location(file), "export the traces again, or give another file")
    return text


def gaps(export: otlp.Export, found: genai.Read) -> list[Problem]:
    """The first span of each GenAI trace whose parent is in no file: the trace has a gap."""
    ids: dict[str, set[str]] = {}
    for span in export.spans:
        ids.setdefault(span.trace_id, set()).add(span.span_id)
    traces = {s.trace_id for s in found.spans}
    out, seen = [], set()
    for span in export.spans:
        if span.trace_id in traces and span.parent_id and span.parent_id not in ids[span.trace_id] and span.trace_id not in seen:
            seen.add(span.trace_id)
            out.append(Problem(f"span '{span.name}' names a parent span {span.parent_id} that is in no file: trace "
                               f"{span.trace_id} has a gap", span.place.doc.at([*span.place.path, "parentSpanId"]), GAP_HINT))
    return out


def silent(found: genai.Read) -> list[Problem]:
    """Model-call spans with no messages, in traces where no call has any: nothing to make a case of."""
    with_messages = {c.trace for c in found.calls}
    out, seen = [], set()
    for span in found.silent:
        if span.trace_id not in with_messages and span.trace_id not in seen:
            seen.add(span.trace_id)
            out.append(Problem(f"span '{span.name}' ({genai.operation(span)}) carries no messages: the instrumentation did "
                               "not record message content", span.place.location(), CONTENT_HINT))
    return out


def _cases(found: list[Conversation], request: Request, redactor: Redactor, summary: Summary,
           problems: list[Problem]) -> list[dict[str, Any]]:
    options = Options(judge=request.judge, sequence=request.sequence)
    cases: list[dict[str, Any]] = []
    ids: set[str] = set()
    for conv in found:
        case_id = _unique(_slug(redactor.text(conv.key if conv.explicit else _trace_id(conv))), ids)
        redactor.where = case_id
        conv = _redacted(conv, redactor)
        source = str(location(conv.where))
        try:
            case, notes = build(conv, case_id, options, source)
        except NoUserMessage:
            problems.append(Problem("this conversation has no user message: no turn to test", location(conv.where),
                                    "a case starts from what a user said"))
            continue
        cases.append(case)
        calls = case["assert"][0].get("value", []) if case["assert"][0]["type"] == "tool_sequence" else []
        summary.cases.append(Imported(case_id, case["name"], tuple(dict.fromkeys(calls)), source))
        summary.notes += [f"{case_id}: {n}" for n in notes]
    return cases


def _trace_id(conv: Conversation) -> str:
    if conv.traces:
        return "trace-" + conv.traces[0][:12]
    where = location(conv.where)
    return f"{os.path.splitext(os.path.basename(where.file))[0]}-line-{where.line}"


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text).strip("-")[:80] or "conversation"


def _unique(case_id: str, ids: set[str]) -> str:
    n, found = 1, case_id
    while found in ids:
        n += 1
        found = f"{case_id}-{n}"
    ids.add(found)
    return found


def _redacted(conv: Conversation, redactor: Redactor) -> Conversation:
    tools = [replace(t, arguments=redactor.value(t.arguments), result=redactor.value(t.result), error=redactor.text(t.error))
             for t in conv.tools]
    out = Conversation(key=conv.key, calls=conv.calls, tools=tools, explicit=conv.explicit, messages=redactor.value(conv.messages))
    return out


# ---- writing -------------------------------------------------------------------------------------


def render(cases: list[dict[str, Any]], request: Request) -> str:
    header = (f"agent-test import of {', '.join(os.path.basename(f) for f in request.files)}: {len(cases)} case"
              f"{'s' if len(cases) != 1 else ''}. Review the proposed checks (docs/traces.md).")
    if request.output.lower().endswith(".jsonl"):
        return f"// {header}\n" + "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)
    return f"# {header}\n" + _yaml(cases)


def _yaml(cases: list[dict[str, Any]]) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        style = "|" if "\n" in value and not value.startswith((" ", "\n")) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return "".join(yaml.dump([c], Dumper=Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=None) + "\n" for c in cases)


# ---- the summary ---------------------------------------------------------------------------------


def lines(summary: Summary) -> list[str]:
    """What the command prints: the cases made, what was replaced, notes, and how to run them."""
    files = ", ".join(summary.files)
    spans = f" ({summary.spans} spans in {summary.traces} traces)" if summary.spans else ""
    out = [f"Imported {len(summary.cases)} conversation{'s' if len(summary.cases) != 1 else ''} from {files}{spans} "
           f"into {summary.output}:"]
    for case in summary.cases:
        tools = f"  tools: {', '.join(case.tools)}" if case.tools else "  no tool calls"
        out.append(f"  {case.id}  \"{case.name}\"{tools}  ({case.source})")
    if summary.skipped_traces:
        out.append(f"  {summary.skipped_traces} trace{'s' if summary.skipped_traces != 1 else ''} without GenAI spans skipped")
    if summary.redacted:
        kinds: dict[str, list[str]] = {}
        for holder, what, _ in summary.redacted:
            kinds.setdefault(what, []).append(holder)
        said = "; ".join(f"{len(h)} {w if len(h) == 1 else _plural(w)} ({', '.join(h[:5])}{'…' if len(h) > 5 else ''})" for w, h in kinds.items())
        out.append(f"Replaced {said}; the originals are in no file written.")
        for holder, what, cases in summary.redacted:
            out.append(f"  {holder}  {what}, in {', '.join(cases[:5])}{' …' if len(cases) > 5 else ''}")
    else:
        out.append("Nothing to redact was found (keys, e-mail addresses, phone and card numbers).")
    out += [f"Note: {n}" for n in summary.notes]
    out.append(f"Review the proposed checks, then run them: agent-test -i {summary.output} -n AGENT")
    return out


def _plural(what: str) -> str:
    """``API key or token`` → ``API keys or tokens``; ``--redact NAME`` → ``matches of --redact NAME``."""
    if what.startswith("--redact"):
        return f"matches of {what}"
    return " or ".join(word + ("es" if word.endswith("s") else "s") for word in what.split(" or "))  # e-mail addresses
