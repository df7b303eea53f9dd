"""A streamed run: case files too large to hold (past ``AGENTTEST_STREAM_OVER`` lines, 200,000 by default) are read
a part at a time — once to check every case (every problem still said in one round, before the first case runs),
then again as the cases run; their results are spooled to disk (``util.spool``) and every report is written from
there. Only ``.jsonl`` files stream, and only in a run that needs no case list as a whole (see ``why_not``)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agenttest.agents.catalog import Catalog
from agenttest.config import RunConfig
from agenttest.errors import AgentTestError, InputError, Location, Problem
from agenttest.inputs.documents import KeyPolicy, Loaded
from agenttest.inputs.reading import _not_utf8, parse_lines
from agenttest.inputs.sources import Inputs
from agenttest.inputs.sources.files import CaseFile
from agenttest.model import Plan, ResolvedCase, Streamed
from agenttest.resolution import planning
from agenttest.resolution.resolve import resolve

OVER = "AGENTTEST_STREAM_OVER"
DEFAULT_OVER = 200_000  # lines: 100,000 cases held in memory peak near 270 MB; a million would pass 2.5 GB
BLOCK = 4 * 2**20  # bytes read at a time (whole lines): ~10,000 cases of a few hundred bytes


NOTE = "cases read from the file as they run, in this process; results kept on disk for the reports; not added to the history"


def threshold() -> int:
    """``AGENTTEST_STREAM_OVER``: a run streams when its case files hold more lines than this. Raises AgentTestError."""
    text = os.environ.get(OVER, "").strip()
    if not text:
        return DEFAULT_OVER
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise AgentTestError(f"{OVER}={text!r}: give the number of case-file lines past which a run streams its cases, a whole number",
                             hint=f"e.g. {OVER}=200000 (the default), 0 to stream every run that can")
    return value


def why_not(config: RunConfig, inputs: Inputs) -> str | None:
    """What keeps a run from streaming (it then holds its cases, as any run below the threshold), or None."""
    if not inputs.sources or not all(isinstance(s, CaseFile) and s.path.lower().endswith(".jsonl") for s in inputs.sources):
        return "only .jsonl case files stream"
    needs = [name for name, given in (("--dry-run", config.dry_run), ("--list", config.list_only), ("-k", config.keyword),
                                      ("--run", config.run_filter), ("--lf", config.last_failed), ("--shard", config.shard is not None),
                                      ("--early-stop", config.early_stop), ("--before", config.before), ("--after", config.after),
                                      ("--baseline", config.baseline), ("--executor ray", config.executor == "ray"))
             if given]
    if needs:
        return f"{', '.join(needs)} {'takes' if len(needs) == 1 else 'take'} the cases as a whole"
    big = [o for o in config.outputs if os.path.splitext(o)[1].lower() in (".html", ".htm", ".md")]
    if big:
        return f"-o {big[0]} is written from the whole report in memory"
    if config.workers != 0:  # a streamed run's cases run in this process: a crash in user code would end the run itself
        return "its cases run in worker processes, which keep a crash in user code to its case; --workers 0 streams them in this process, without that protection"
    return None


def engaged(config: RunConfig, inputs: Inputs) -> tuple[bool, str | None]:
    """Whether the run streams — its .jsonl files hold more lines than the threshold and nothing needs them whole —
    and, for such files held all the same, the warning that says why."""
    over = threshold()
    if config.dry_run or config.list_only:
        return False, None
    paths = [p for p in inputs.files if p.lower().endswith(".jsonl") and os.path.isfile(p)]
    if not paths or sum(os.path.getsize(p) for p in paths) // 2 < over:  # a case line is 2 bytes at least
        return False, None
    count = lines(paths)
    if count <= over:
        return False, None
    why = why_not(config, inputs)
    if why is None:
        return True, None
    return False, f"{count:,} lines of cases are held in memory, not streamed: {why} (docs/scale.md)"


def lines(paths: list[str]) -> int:
    """The lines of the files (a last line without its newline counted)."""
    count = 0
    for path in paths:
        try:
            with open(path, "rb") as fh:
                last = b"\n"
                while block := fh.read(BLOCK):
                    count += block.count(b"\n")
                    last = block[-1:]
                count += last != b"\n"
        except OSError:
            pass
    return count


def parts(path: str, simulator: str | None, policy: KeyPolicy, digests: list[tuple[bytes, int]] | None = None) -> Iterator[Loaded]:
    """The file's cases, a block of whole lines at a time, each problem at its place in the whole file; each block's
    digest and first line appended to ``digests`` (when given) before its cases are yielded."""
    first = 0
    with open(path, "rb", buffering=0) as fh:  # a block read when its cases are taken, not read ahead
        rest = b""
        start = True
        while True:
            block = fh.read(BLOCK)
            data = rest + block
            if start:
                data, start = data.removeprefix(b"\xef\xbb\xbf"), False
            cut = data.rfind(b"\n") + 1 if block else len(data)
            whole, rest = data[:cut], data[cut:]
            if whole:
                if digests is not None:
                    digests.append((hashlib.blake2b(whole, digest_size=16).digest(), first + 1))
                try:
                    text = whole.decode("utf-8")
                except UnicodeDecodeError:
                    yield Loaded(problems=[_not_utf8(path)])
                    return
                yield parse_lines(text, path, first, simulator, policy)
                first += whole.count(b"\n")
            if not block:
                return


@dataclass(kw_only=True)
class Check:
    """What the checking pass found, a part at a time."""

    problems: list[Problem] = field(default_factory=list)
    warnings: dict[str, str] = field(default_factory=dict)  # said once per what it says (a part says its own)
    cases: int = 0
    total: int = 0
    unchecked: int = 0
    first_unchecked: list[str] = field(default_factory=list)
    kept: dict[Any, ResolvedCase] = field(default_factory=dict)  # one item of each kind the header tells apart

    def warn(self, warning: str) -> None:
        said = warning.split(": ", 1)[1] if warning.count(":") >= 3 and warning.split(":", 1)[0].endswith(".jsonl") else warning
        self.warnings.setdefault(said, warning)


async def check(inputs: Inputs, catalog: Catalog, agent_id: str | None, config: RunConfig, facts: Any) -> tuple[Plan, Plan, list[str]]:
    """Every case of every file checked, a part at a time (nothing kept but counts); every problem raised together
    (InputError). Returns the streamed plan, a small plan of one case of each kind for the header (``facts``: an
    item's kind), and the warnings."""
    found = Check()
    policy = KeyPolicy(strict=config.strict, max_cases=config.max_cases)
    digests: dict[str, list[tuple[bytes, int]]] = {}
    for path in inputs.files:
        seen: dict[str, int] = {}  # id → its line: an id used twice in the file, whichever parts hold it
        built = 0
        for part in parts(path, config.simulator, policy, digests.setdefault(path, [])):
            built += len(part.cases) + len(part.unbuilt)
            found.problems += [*part.problems, *_twice(part, seen),
                               *planning.unbuilt_problems(part.unbuilt, catalog, agent_id, config)]
            for w in part.warnings:
                found.warn(w)
            if not part.cases:
                continue
            plan, problems, resolved = planning.checked(part.cases, catalog, agent_id, config)
            found.problems += problems
            found.problems += await planning.mcp_tools(part.cases, catalog, agent_id) if agent_id else []
            for w in resolved.warnings:
                found.warn(w)
            _count(found, plan, facts)
        if not built and not found.problems:
            found.problems.append(Problem("holds no test cases: it has only blank lines and // comments", Location(path),
                                          "add cases, or point -i at the file that has them"))
    if found.problems:
        raise InputError(found.problems)
    settings = planning.settings_of(config)
    plan = Plan(agent=agent_id or "", items=Items(inputs, catalog, agent_id, config, digests), settings=settings,  # type: ignore[arg-type]
                streamed=Streamed(cases=found.cases, total=found.total))
    sample = Plan(agent=agent_id or "", items=tuple(found.kept.values()), settings=settings)
    said = [*found.warnings.values(), *planning.unchecked_said(found.unchecked, found.first_unchecked, config.strict)]
    return plan, sample, said


def _twice(part: Loaded, seen: dict[str, int]) -> list[Problem]:
    """An id some earlier part of the file used already (a part says its own twice itself)."""
    problems = []
    here: dict[str, int] = {}
    for case in [*part.cases, *part.unbuilt]:
        line = case.location.line or 0 if case.location is not None else 0
        if case.id in seen:
            problems.append(Problem(f"duplicate id '{case.id}' (first used at line {seen[case.id]})", case.locate(("id",)), "ids must be unique in a file"))
        else:
            here.setdefault(case.id, line)
    seen.update(here)
    return problems


def _count(found: Check, plan: Plan, facts: Any) -> None:
    last = None
    for item in plan.items:
        found.total += item.runs
        if item.case is not last:
            found.cases += 1
            last = item.case
            if item.checks_nothing and not item.case.skip:
                found.unchecked += 1
                if len(found.first_unchecked) < 5:
                    found.first_unchecked.append(item.case.id)
        found.kept.setdefault(facts(item), item)


class Items:
    """A streamed plan's items: read again from the case files, part by part, each time they are taken — the
    same items, checked already, made as the run takes them (a part at a time is held). A part whose bytes are not
    those checked (the file changed since) is not run, nor anything after it: ``changed`` says where."""

    def __init__(self, inputs: Inputs, catalog: Catalog, agent_id: str | None, config: RunConfig,
                 digests: dict[str, list[tuple[bytes, int]]] | None = None):
        self.inputs, self.catalog, self.agent_id, self.config = inputs, catalog, agent_id, config
        self.digests = digests or {}
        self.changed: str | None = None  # "file:line": where the file was found changed since it was checked

    def __iter__(self) -> Iterator[ResolvedCase]:
        config, catalog = self.config, self.catalog
        policy = KeyPolicy(strict=config.strict, max_cases=config.max_cases)
        first = config.matrix[0] if config.matrix else config.connector
        for path in self.inputs.files:
            checked = self.digests.get(path)
            read: list[tuple[bytes, int]] = []
            for part in parts(path, config.simulator, policy, read):
                at = len(read) - 1
                if checked is not None and (at >= len(checked) or read[at][0] != checked[at][0]):
                    self.changed = f"{path}:{read[at][1]}"
                    return
                if part.cases:
                    resolved = resolve(part.cases, catalog, self.agent_id, first)
                    yield from planning.plan_of(part.cases, self.agent_id, config, catalog, resolved).items
            if checked is not None and len(read) < len(checked):  # cut short: its last cases are gone
                self.changed = f"{path}:{checked[len(read)][1]}"
                return


def changed_said(where: str, after: bool = False) -> str:
    """What a streamed run says when a case file changed while it read it (exit 2, after the reports): as its cases
    ran, or after (read again for the gates)."""
    if after:
        return (f"{where}: the case file changed after its cases ran (it is read again for the gates) — the results from "
                "this line on are gated by their own runs, not by the cases that were checked. Leave the file alone while "
                "it runs (or copy it), and run again")
    return (f"{where}: the case file changed while the run read it — its cases from this line on are not those checked "
            "before the run, and were not run; the reports hold the cases before it. Leave the file alone while it runs "
            "(or copy it), and run again")
