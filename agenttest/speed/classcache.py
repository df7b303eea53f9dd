"""The compiled methods of agenttest's dataclasses, kept between runs.

On Python 3.11 ``@dataclass`` writes each method it adds (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, and ``__setattr__``/``__delattr__`` for a frozen class) as source text and compiles it as
the class is made: for agenttest's ~70 dataclasses that is ~400 compilations, ~80 ms of every start-up —
a third of the time agenttest's own modules take to import. Here the code compiled from each text is kept
in ``__pycache__`` beside agenttest's bytecode, keyed by the text itself (a class that changes compiles
anew), under the rules Python keeps its own bytecode by: nothing is written when ``sys.dont_write_bytecode``
is set (``PYTHONDONTWRITEBYTECODE``, ``-B``) or where the folder is read-only, and the file names the
interpreter's bytecode version. A class is made exactly as ``dataclasses`` makes it — the same text, run the
same way — only not compiled again; classes of any other package are left to ``dataclasses`` untouched.

Installed (``install``) by ``agenttest.speed.install`` — the command's entry point, before agenttest's other
modules import — on the Python versions whose ``dataclasses._create_fn`` this mirrors (3.11; 3.13 writes a
class's methods in one pass of its own); on any other version, nothing changes. ``uninstall`` gives the
standard library its own back."""

from __future__ import annotations

import dataclasses
import marshal
import os
import sys
from types import CodeType
from typing import Any

MIRRORED = ((3, 11),)  # the versions whose dataclasses._create_fn reads as ``_create_fn`` below
_OURS = "agenttest"
MAX_ENTRIES = 4000  # beyond this the file is written again with only what this process used

_codes: dict[str, CodeType] = {}
_used: set[str] = set()
_added = 0
_path: str | None = None
_installed = False
_original: Any = None  # the standard library's _create_fn


def install(package_dir: str) -> None:
    """Make agenttest's dataclasses from the kept code (once per process)."""
    global _installed, _path, _original
    original = getattr(dataclasses, "_create_fn", None)
    if _installed or sys.version_info[:2] not in MIRRORED or original is None or not _mirrors(original):
        return
    _installed, _original = True, original
    _path = os.path.join(package_dir, "__pycache__", f"dataclasses.{sys.implementation.cache_tag}.bin")
    _codes.update(_load(_path))

    def _create_fn(name: str, args: Any, body: Any, *, globals: Any = None, locals: Any = None,
                   return_type: Any = dataclasses.MISSING) -> Any:
        if not _is_ours(globals):
            return original(name, args, body, globals=globals, locals=locals, return_type=return_type)
        # from here to the end, dataclasses._create_fn (3.11) line for line, but for the compile
        if locals is None:
            locals = {}
        return_annotation = ""
        if return_type is not dataclasses.MISSING:
            locals["_return_type"] = return_type
            return_annotation = "->_return_type"
        args = ",".join(args)
        body = "\n".join(f"  {b}" for b in body)
        txt = f" def {name}({args}){return_annotation}:\n{body}"
        local_vars = ", ".join(locals.keys())
        txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
        ns: dict[str, Any] = {}
        exec(_compiled(txt), globals, ns)
        return ns["__create_fn__"](**locals)

    dataclasses._create_fn = _create_fn  # type: ignore[attr-defined]
    import atexit

    atexit.register(save)


def uninstall() -> None:
    """The standard library's ``_create_fn`` back, what was compiled anew kept (as at exit)."""
    global _installed
    if not _installed:
        return
    import atexit

    save()
    atexit.unregister(save)
    dataclasses._create_fn = _original  # type: ignore[attr-defined]
    _installed = False


def _mirrors(fn: Any) -> bool:
    """Whether ``fn`` is the ``_create_fn`` this module was written against (its parameters and the names it uses)."""
    code = getattr(fn, "__code__", None)
    return (code is not None and code.co_varnames[:6] == ("name", "args", "body", "globals", "locals", "return_type")
            and code.co_kwonlyargcount == 3 and "exec" in code.co_names and "MISSING" in code.co_names)


def _is_ours(globals: Any) -> bool:
    name = globals.get("__name__", "") if isinstance(globals, dict) else ""
    return isinstance(name, str) and (name == _OURS or name.startswith(_OURS + "."))


def compiled(txt: str, filename: str) -> CodeType:
    """``compile(txt, filename, "exec")`` for code agenttest writes itself at import (``speed/records``), kept as
    the dataclasses' code is: compiled once, then read from ``__pycache__``."""
    global _added
    if not _installed:
        return compile(txt, filename, "exec", dont_inherit=True)
    key = f"# {filename}\n{txt}"  # a text of its own: never one of dataclasses' (which start "def __create_fn__")
    _used.add(key)
    code = _codes.get(key)
    if code is None:
        code = _codes[key] = compile(txt, filename, "exec", dont_inherit=True)
        _added += 1
    return code


def _compiled(txt: str) -> CodeType:
    global _added
    _used.add(txt)
    code = _codes.get(txt)
    if code is None:
        # dont_inherit: compiled as dataclasses' own exec(txt) compiles it, without this module's __future__ flags
        code = _codes[txt] = compile(txt, "<string>", "exec", dont_inherit=True)
        _added += 1
    return code


def _magic() -> bytes:
    from importlib.util import MAGIC_NUMBER

    return MAGIC_NUMBER


def _load(path: str) -> dict[str, CodeType]:
    """What an earlier run kept; nothing if the file is missing, of another bytecode version, or damaged."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        magic = _magic()
        if not data.startswith(magic):
            return {}
        codes = marshal.loads(data[len(magic):])
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if not isinstance(codes, dict):
        return {}
    return {k: v for k, v in codes.items() if isinstance(k, str) and isinstance(v, CodeType)}


def save() -> None:
    """Keep what was compiled anew (at exit; atomically, so a run reading it meanwhile sees the old or the new)."""
    global _added
    if not _added or _path is None or sys.dont_write_bytecode:
        return
    kept = _codes if len(_codes) <= MAX_ENTRIES else {t: c for t, c in _codes.items() if t in _used}
    temp = f"{_path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(_path), exist_ok=True)
        with open(temp, "wb") as fh:
            fh.write(_magic() + marshal.dumps(kept))
        os.replace(temp, _path)
        _added = 0
    except (OSError, ValueError):  # a read-only install, a full disk: the next run compiles, as Python would
        try:
            os.remove(temp)
        except OSError:
            pass
