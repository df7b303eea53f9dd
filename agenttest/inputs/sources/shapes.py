"""Files in a seed format recognised by their shape (FORMATS §18): a registered source whose factory has
``recognises(path)`` reads such a file given as a plain ``-i FILE`` or found in a folder, and one with
``ignores(path)`` keeps the files it keeps beside them (packs, fixtures) out of a folder's case files."""

from __future__ import annotations

from agenttest.inputs.sources.base import Source
from agenttest.inputs.sources.files import CaseFile
from agenttest.plugins import SOURCES


def by_shape(path: str) -> Source:
    """The registered source that recognises the file, else a case file."""
    for prefix in SOURCES:
        factory = SOURCES.get(prefix)
        recognises = getattr(factory, "recognises", None)
        if recognises is not None and recognises(path):
            return factory(path)  # type: ignore[no-any-return, misc]
    return CaseFile(path)


def claimed(path: str) -> bool:
    """A file a seed format keeps beside its files: not a case file of a folder or glob."""
    return any(getattr(SOURCES.get(prefix), "ignores", lambda p: False)(path) for prefix in SOURCES)
