"""Folders and globs given with ``-i``: the case files they hold (reports, an agent's mock.yml and prompts left
out), and the folder or file a one-word message likely meant."""

from __future__ import annotations

import glob
import os

from agenttest.errors import Problem, typo_of
from agenttest.inputs.documents import SUFFIXES
from agenttest.inputs.sources.files import CaseFile
from agenttest.inputs.sources.shapes import claimed


def case_files_of(text: str) -> tuple[list[CaseFile], list[Problem]] | None:
    """A folder's case files (recursively), or a glob's; a folder or glob with no case file is a problem. None
    when ``text`` is neither a folder nor a glob."""
    if os.path.isdir(text):
        found = _case_files(text)
        return [CaseFile(p) for p in found], [] if found else [Problem(f"folder '{text}' holds no case files ({', '.join(SUFFIXES)})")]
    if any(ch in text for ch in "*?[") and not os.path.exists(text):
        found = sorted(p for p in glob.glob(text, recursive=True) if _is_case_file(p))
        return [CaseFile(p) for p in found], [] if found else [Problem(f"'{text}' matches no case files ({', '.join(SUFFIXES)})")]
    return None


def meant_path(text: str, folder: str = ".") -> str | None:
    """The folder or case file in ``folder`` a one-word message likely meant, by a typo or a missing suffix
    (``test`` → "the folder 'tests/'", ``cases`` → "the file 'cases.jsonl'"), for a warning; or None."""
    if len(text) < 3 or any(ch.isspace() for ch in text):
        return None
    try:
        entries = [e for e in os.scandir(folder) if not e.name.startswith((".", "__"))]
    except OSError:
        return None
    described: dict[str, str] = {}
    for entry in entries:
        if entry.is_dir():
            described[entry.name] = f"the folder '{entry.name}/'"
        elif _is_case_file(entry.path):
            described[entry.name] = described[os.path.splitext(entry.name)[0]] = f"the file '{entry.name}'"
    name = next((k for k in described if k.lower() == text.lower()), None) or typo_of(text, described)
    return described[name] if name else None



NOT_CASE_FILES = frozenset({"mock.yml", "prompts.yml", "agent.yml", "package.json", "tsconfig.json", "app.yao"})
NOT_CASE_FOLDERS = frozenset({"src", "prompts", "locales", "mcps", "connectors", "assets", "node_modules", "cassettes"})


def _is_case_file(path: str) -> bool:
    """A case file a folder or glob may hold: not a report (``output-*``), not an agent's mock.yml or prompts."""
    name = os.path.basename(path)
    return (os.path.isfile(path) and name.lower().endswith(SUFFIXES) and not name.startswith(("output-", "."))
            and name not in NOT_CASE_FILES and not claimed(path))


def _case_files(folder: str) -> list[str]:
    found = []
    for parent, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and d not in NOT_CASE_FOLDERS)
        found += [os.path.join(parent, f) for f in sorted(files) if _is_case_file(os.path.join(parent, f))]
    return found
