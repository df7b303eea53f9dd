"""Files the user wrote that are not case files: JSON with comments (``package.yao``, ``*.conn.yao``),
``$ENV.NAME`` substitution, and Python modules (tools, hooks, scripts) imported by path."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import threading
from typing import Any

from agenttest.util.positions import entries, json_message, json_offset, json_repeated, line_col, second_key
from agenttest.errors import AgentTestError, InputError, Location, Problem, did_you_mean

ENV_REFERENCE = re.compile(r"\$ENV\.([A-Za-z_][A-Za-z0-9_]*)")  # $ENV.NAME in a value


def blank_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments and trailing commas → JSON (strings left alone), every offset kept:
    comments and trailing commas become spaces (newlines kept), so a place found in the result — a JSON error's
    line and column too — is the place in ``text``."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2)
            j = n if end < 0 else end if text[i + 1] == "/" else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(ch)
            i += 1
    return re.sub(r",(\s*[}\]])", lambda m: " " + m.group(1), "".join(out))


def jsonc_location(path: str, keys: tuple[str | int, ...], key: bool = True) -> Location:
    """Where ``keys`` (of a key when ``key``) is written in the JSON-with-comments file ``path``; the file alone when
    it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return Location(path)
    return Location(path, *line_col(text, json_offset(blank_comments(text), keys, key)))


def read_jsonc(path: str) -> Any:
    """A JSON-with-comments file; problems are usage errors with the file's location."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentTestError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    plain = blank_comments(text)
    try:
        data = json.loads(plain)
    except json.JSONDecodeError as exc:
        raise AgentTestError(f"invalid JSON: {json_message(exc.msg)}", Location(path, exc.lineno, exc.colno)) from None
    except RecursionError:
        raise AgentTestError("JSON nested too deeply", Location(path)) from None
    repeated = json_repeated(plain) if plain.count(":") > entries(data) else []
    if repeated:  # JSON keeps only the last: a second "connector" or "tools" would replace the first without a word
        raise InputError([Problem(f"'{key}' is written twice in one object (JSON keeps only the last)", Location(path, *_second(text, key)),
                                  "remove one of them") for key, _, _ in repeated])
    return data


def _second(text: str, key: str) -> tuple[int, int]:
    """Line and column of the second place ``key`` is written in ``text`` (comments and all), else of its start."""
    return line_col(text, second_key(text, key))


def substitute_env(value: Any, where: str, found: dict[str, str] | None = None, required: bool = True) -> Any:
    """Replace ``$ENV.NAME`` in every string; an unset variable is an error naming it (left as written
    when not ``required``: a replay reaches no endpoint).

    Every substituted value is recorded in ``found`` (name → value) so that it can be hidden."""
    if isinstance(value, str):
        def repl(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in os.environ and not required:
                return m.group(0)
            if name not in os.environ:
                raise AgentTestError(f"{where}: environment variable {name} is not set", hint=f"export {name}=…")
            if found is not None:
                found[name] = os.environ[name]
            return os.environ[name]

        return ENV_REFERENCE.sub(repl, value)
    if isinstance(value, dict):
        return {k: substitute_env(v, where, found, required) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, where, found, required) for v in value]
    return value


_module_lock = threading.Lock()


def load_module(path: str) -> Any:
    """Import a user's Python file once; its folder goes at the end of sys.path so that sibling modules
    import, without shadowing the standard library or installed packages (a user's ``json.py``)."""
    key = "agenttest_user." + re.sub(r"\W", "_", os.path.abspath(path))
    with _module_lock:
        if key in sys.modules:
            return sys.modules[key]
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in sys.path:
            sys.path.append(folder)
        spec = importlib.util.spec_from_file_location(key, path)
        if spec is None or spec.loader is None:
            raise AgentTestError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # SystemExit or KeyboardInterrupt at import time too: a bad file, not our end
            del sys.modules[key]
            line = _import_line(exc, path)
            raise AgentTestError(f"importing failed: {type(exc).__name__}: {exc}", Location(path, line)) from None
        return module


def _import_line(exc: BaseException, path: str) -> int | None:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return exc.lineno
    tb, line = exc.__traceback__, None
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


MIGRATING = "docs/migrating-from-yao.md"


def typescript_port(path: str, what: str) -> AgentTestError | None:
    """For a Python file that does not exist beside a Yao TypeScript one (``env_test.ts``): the error that
    says which file to port to which, since agent-test runs Python and never ignores TypeScript silently."""
    stem = os.path.splitext(path)[0]
    for ext in (".ts", ".js"):
        if os.path.isfile(stem + ext):
            return AgentTestError(f"{what}: {stem + ext} is {'TypeScript' if ext == '.ts' else 'JavaScript'}, and agent-test runs Python",
                                  hint=f"port it to {path} (see {MIGRATING})")
    return None


def function(path: str, name: str, what: str) -> Any:
    """``name`` from the Python file at ``path``, or a load-time error with a did-you-mean hint."""
    if not os.path.isfile(path):
        raise typescript_port(path, what) or AgentTestError(f"{what}: {path} does not exist")
    module = load_module(path)
    fn = getattr(module, name, None)
    if not callable(fn):
        names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise AgentTestError(f"{what}: {path} has no function '{name}'", hint=did_you_mean(name, names))
    return fn
