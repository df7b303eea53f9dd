"""The kept code of agenttest's dataclasses (agenttest/speed/classcache.py): a class made from it behaves as
``dataclasses`` makes it; other packages' classes are left alone; the file is read and written as Python's
own bytecode is."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import types

import pytest

from agenttest.speed import classcache

pytestmark = pytest.mark.skipif(sys.version_info[:2] not in classcache.MIRRORED, reason="only on the Python versions whose dataclasses it mirrors")


@pytest.fixture(autouse=True, scope="module")
def _installed():
    """Installed for this module's tests only (the command installs it: ``agenttest.speed.install``)."""
    classcache.install(os.path.dirname(os.path.dirname(classcache.__file__)))
    yield
    classcache.uninstall()

SOURCE = '''
import dataclasses
from typing import Any

@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()

@dataclasses.dataclass(frozen=True, kw_only=True)
class Named:
    name: str
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

@dataclasses.dataclass
class Plain:
    items: list[int] = dataclasses.field(default_factory=list)
    count: int = 0
'''


def make(module_name: str) -> types.ModuleType:
    """SOURCE's classes, made in a module of that name (pickle finds them there)."""
    module = types.ModuleType(module_name)
    sys.modules[module_name] = module
    exec(compile(SOURCE, f"<{module_name}>", "exec", dont_inherit=True), module.__dict__)  # annotations evaluated
    return module


@pytest.fixture
def modules():
    made = []

    def _make(name):
        made.append(name)
        return make(name)

    yield _make
    for name in made:
        sys.modules.pop(name, None)


def test_a_class_made_from_the_kept_code_behaves_as_dataclasses_makes_it(modules):
    ours = modules("agenttest._probe_ours")
    original = dataclasses._create_fn
    try:  # the same source through the standard library's own _create_fn
        dataclasses._create_fn = classcache._original
        theirs = modules("agenttest._probe_theirs")
    finally:
        dataclasses._create_fn = original
    for name in ("Point", "Named", "Plain"):
        a, b = getattr(ours, name), getattr(theirs, name)
        for method in ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__", "__hash__"):
            fa, fb = getattr(a, method), getattr(b, method)
            if isinstance(fa, types.FunctionType):
                assert fa.__code__.co_code == fb.__code__.co_code, (name, method)
                assert {k: str(v) for k, v in fa.__annotations__.items()} == {k: str(v) for k, v in fb.__annotations__.items()}
                assert fa.__defaults__ == fb.__defaults__ and fa.__kwdefaults__ == fb.__kwdefaults__
    p = ours.Point(1, tags=("a",))
    assert repr(p) == "Point(x=1, y=0, tags=('a',))" and p == ours.Point(1, 0, ("a",)) and hash(p) == hash(ours.Point(1, 0, ("a",)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    assert dataclasses.replace(p, y=5) == ours.Point(1, 5, ("a",)) and pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(TypeError):
        ours.Named("positional")  # kw_only
    n = ours.Named(name="n")
    assert n.extra == {} and n.extra is not ours.Named(name="m").extra  # default_factory: a new dict each time
    assert ours.Point.__init__.__annotations__["x"] is int  # evaluated, not strings: no __future__ flag leaked in
    plain = ours.Plain()
    plain.count = 3
    assert plain == ours.Plain([], 3) and ours.Plain.__hash__ is None


def test_the_same_text_is_compiled_once(modules):
    modules("agenttest._probe_once_a")
    before = classcache._added
    modules("agenttest._probe_once_b")  # the same classes again: every method's text is already kept
    assert classcache._added == before


def test_code_agenttest_writes_itself_is_kept_under_its_file_name():
    """``compiled``: what speed/records writes for our classes (their fast __init__, builders) is compiled once
    and kept with the rest; the same text under another file name is a code object of its own."""
    text = "def f(x):\n    return x + 1"
    before = classcache._added
    first = classcache.compiled(text, "<probe one>")
    assert classcache._added == before + 1 and first.co_filename == "<probe one>"
    assert classcache.compiled(text, "<probe one>") is first and classcache._added == before + 1
    other = classcache.compiled(text, "<probe two>")
    assert other is not first and other.co_filename == "<probe two>"
    names: dict = {}
    exec(first, names)
    assert names["f"](1) == 2


def test_other_packages_classes_are_left_to_dataclasses(modules):
    kept = len(classcache._codes)
    module = modules("someone_else._probe")
    assert len(classcache._codes) == kept
    assert module.Point(2) == module.Point(2, 0)


def test_kept_code_is_written_and_read_back(tmp_path, monkeypatch, modules):
    path = tmp_path / "__pycache__" / "dataclasses.test.bin"
    monkeypatch.setattr(classcache, "_path", str(path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    modules("agenttest._probe_saved")
    monkeypatch.setattr(classcache, "_added", 1)
    classcache.save()
    assert classcache._added == 0 and not list(path.parent.glob("*.tmp"))
    loaded = classcache._load(str(path))
    assert loaded.keys() == classcache._codes.keys()
    assert all(loaded[t].co_code == c.co_code for t, c in classcache._codes.items())


def test_nothing_is_written_when_bytecode_is_not(tmp_path, monkeypatch):
    path = tmp_path / "dataclasses.test.bin"
    monkeypatch.setattr(classcache, "_path", str(path))
    monkeypatch.setattr(classcache, "_added", 1)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    classcache.save()
    assert not path.exists()


@pytest.mark.parametrize("content", [b"", b"not marshal at all", b"\x00\x00\x00\x00" + b"x" * 40])
def test_a_missing_damaged_or_foreign_file_is_ignored(tmp_path, content):
    path = tmp_path / "dataclasses.test.bin"
    assert classcache._load(str(path)) == {}
    path.write_bytes(content)
    assert classcache._load(str(path)) == {}
    path.write_bytes(classcache._magic() + b"\xff\xfe garbage")
    assert classcache._load(str(path)) == {}


def test_a_folder_it_cannot_write_is_not_an_error(tmp_path, monkeypatch):
    """A read-only install: the next run compiles, as Python would (a file where __pycache__ should be makes
    the folder unwritable even for root)."""
    (tmp_path / "pkg").write_text("not a folder")
    monkeypatch.setattr(classcache, "_path", str(tmp_path / "pkg" / "__pycache__" / "x.bin"))
    monkeypatch.setattr(classcache, "_added", 1)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    classcache.save()  # no exception
    assert classcache._added == 1 and list(tmp_path.iterdir()) == [tmp_path / "pkg"]  # nothing written, no temp file left


def test_a_fresh_interpreter_uses_the_kept_file(tmp_path):
    """A run writes the file at exit; the next one compiles nothing anew."""
    probe = ("from agenttest import speed; speed.install(); import agenttest.cli, agenttest.session; from agenttest.speed import classcache as c; "
             "print(c._added, len(c._codes), any(key.startswith('# <__init__ of Case>') for key in c._codes))")
    if not os.access(os.path.dirname(os.path.dirname(classcache._path or "")), os.W_OK):
        pytest.skip("agenttest is installed read-only here: nothing can be kept")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    first = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    second = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    added, kept, fast = second.stdout.split()
    assert int(added) == 0 and int(kept) >= 300 and fast == "True", (first.stdout, second.stdout)  # the model's fast __init__ kept too


def test_uninstall_gives_the_standard_library_its_own_back():
    ours = dataclasses._create_fn
    classcache.uninstall()
    try:
        assert dataclasses._create_fn is classcache._original and not classcache._installed
    finally:
        classcache.install(os.path.dirname(os.path.dirname(classcache.__file__)))
    assert dataclasses._create_fn is not classcache._original and dataclasses._create_fn is not ours  # made again
