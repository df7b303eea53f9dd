"""``replace`` for agenttest's frozen, slotted dataclasses: what ``dataclasses.replace`` gives, without its
look at every field and the ``__init__`` it calls on each use. A case's result is replaced a few times in
every run of a case; for a ``CaseResult`` (33 fields) that was ~19 µs a time, here ~5 µs. The copy is made
by a function written once per class that sets each slot through its descriptor (which a frozen class's
``__setattr__`` would refuse), so it holds exactly the values ``dataclasses.replace`` would pass to
``__init__``. A class this cannot copy so — not slotted, a field left out of ``__init__``, a
``__post_init__`` or an ``InitVar`` — goes to ``dataclasses.replace``."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from agenttest.speed.classcache import compiled

T = TypeVar("T")

_COPIERS: dict[type, Callable[[Any, dict[str, Any]], Any] | None] = {}


def replace(obj: T, /, **changes: Any) -> T:
    """``dataclasses.replace(obj, **changes)``; a name that is not a field raises TypeError, as there."""
    cls = type(obj)
    if cls in _COPIERS:
        copier = _COPIERS[cls]
    else:
        copier = _COPIERS[cls] = _copier(cls)
    if copier is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    return copier(obj, changes)  # type: ignore[no-any-return]


def _copier(cls: type) -> Callable[[Any, dict[str, Any]], Any] | None:
    if not _copyable(cls):
        return None
    fields = dataclasses.fields(cls)
    names: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_unknown": _unknown}
    lines = ["def copy(obj, changes):", "    new = _new(_cls)", "    if not changes:"]
    for i, f in enumerate(fields):
        names[f"set{i}"] = cls.__dict__[f.name].__set__
        lines.append(f"        set{i}(new, obj.{f.name})")
    lines += ["        return new", "    pop = changes.pop"]
    for i, f in enumerate(fields):
        lines.append(f"    set{i}(new, pop({f.name!r}) if {f.name!r} in changes else obj.{f.name})")
    lines += ["    if changes:", "        _unknown(_cls, changes)", "    return new"]
    exec(compiled("\n".join(lines), f"<replace of {cls.__name__}>"), names)  # noqa: S102 — our own classes' field names
    return names["copy"]  # type: ignore[no-any-return]


def builder(cls: type, shared: Collection[str] = ()) -> Callable[[tuple[Any, ...]], Any] | None:
    """A function of a tuple of ``cls``'s field values, in field order, to the instance ``cls(*values)``
    would make — without ``__init__``, which for a frozen class sets each field through
    ``object.__setattr__`` (a ``CaseResult`` rebuilt so took ~3 × as long). None for a class ``replace``
    could not copy either. A field named in ``shared`` whose value is text keeps ``sys.intern``'s copy of it:
    the labels every result repeats ("passed", "agent", a connector's name) are then one object, not one
    per result unpickled (100,000 results held ~50 MB of such copies)."""
    if not _copyable(cls):
        return None
    fields = dataclasses.fields(cls)
    unknown = set(shared) - {f.name for f in fields}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    names: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_intern": sys.intern, "_str": str}
    lines = ["def build(values):", "    new = _new(_cls)"]
    for i, f in enumerate(fields):
        names[f"set{i}"] = cls.__dict__[f.name].__set__
        if f.name in shared:
            lines += [f"    v = values[{i}]", f"    set{i}(new, _intern(v) if v.__class__ is _str else v)"]
        else:
            lines.append(f"    set{i}(new, values[{i}])")
    lines.append("    return new")
    exec(compiled("\n".join(lines), f"<build of {cls.__name__}>"), names)  # noqa: S102 — our own classes' field names
    return names["build"]  # type: ignore[no-any-return]


_HOT: list[type] = []  # the classes ``hot`` named: given a fast __init__ once the speed machinery is installed
_fast = False


def hot(*classes: type) -> None:
    """Classes made by the million in a large run (results, usage, requests): given ``fast_init`` when the
    speed machinery is installed (``agenttest.speed.install``) — at once if it is; until then they keep the
    ``__init__`` ``dataclasses`` wrote."""
    _HOT.extend(classes)
    if _fast:
        for cls in classes:
            fast_init(cls)


def install() -> None:
    """Give every class ``hot`` named, and every one it will name, its fast ``__init__``."""
    global _fast
    _fast = True
    for cls in _HOT:
        fast_init(cls)


def fast_init(cls: type) -> bool:
    """Give a frozen dataclass an ``__init__`` that sets its slots through their descriptors (or, without slots,
    its instance ``__dict__``): the one ``dataclasses`` writes calls ``object.__setattr__`` by name for each
    field, ~2.3 × as long (a ``Case`` took 11 µs to make, most of it there). The same parameters, defaults and
    default factories, the same values set; a class with a ``__post_init__``, an InitVar or a field left out
    of ``__init__`` is left as it is. True if it was changed."""
    params_of = getattr(cls, "__dataclass_params__", None)
    slotted = "__slots__" in cls.__dict__
    if params_of is None or not params_of.frozen or not params_of.init or "__init__" not in cls.__dict__ or not _plain_fields(cls):
        return False
    fields = dataclasses.fields(cls)
    if not slotted and any(hasattr(type(getattr(cls, f.name, None)), "__set__") for f in fields):
        return False  # a field's name is also a data descriptor of the class (a property): its __dict__ is not where it goes
    if any(f.name.startswith("_at_") or f.name == "self" for f in fields):
        return False
    # the parameters dataclasses gives __init__: the fields in order, keyword-only ones after a "*"
    names: dict[str, Any] = {"_at_HDF": dataclasses._HAS_DEFAULT_FACTORY}  # type: ignore[attr-defined]
    args = ["self"]
    for kw_only in (False, True):
        chosen = [f for f in fields if bool(f.kw_only) is kw_only]
        if kw_only and chosen:
            args.append("*")
        for f in chosen:
            if f.default is not dataclasses.MISSING:
                names[f"_at_d_{f.name}"] = f.default
                args.append(f"{f.name}=_at_d_{f.name}")
            elif f.default_factory is not dataclasses.MISSING:
                args.append(f"{f.name}=_at_HDF")
            else:
                args.append(f.name)
    lines = [f"def __init__({', '.join(args)}):"]
    if not slotted:  # what object.__setattr__ does for a plain attribute of an instance with a __dict__
        lines.append("    _at_d = self.__dict__")
    for i, f in enumerate(fields):
        value = f.name
        if f.default_factory is not dataclasses.MISSING:
            names[f"_at_factory{i}"] = f.default_factory
            value = f"_at_factory{i}() if {f.name} is _at_HDF else {f.name}"
        if slotted:
            names[f"_at_set{i}"] = cls.__dict__[f.name].__set__
            lines.append(f"    _at_set{i}(self, {value})")
        else:
            lines.append(f"    _at_d[{f.name!r}] = {value}")
    exec(compiled("\n".join(lines), f"<__init__ of {cls.__name__}>"), names)  # noqa: S102 — our own classes' field names
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__dict__["__init__"].__doc__
    cls.__init__ = init  # type: ignore[misc]
    return True


def _copyable(cls: type) -> bool:
    """Slotted, every field given to ``__init__`` (no InitVar, no field left out), no ``__post_init__``."""
    return "__slots__" in cls.__dict__ and _plain_fields(cls)


def _plain_fields(cls: type) -> bool:
    """A dataclass whose every field is given to ``__init__`` (no InitVar, no field left out), no ``__post_init__``."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return False
    every = getattr(cls, dataclasses._FIELDS)  # type: ignore[attr-defined] # InitVars are there, not in fields()
    fields = dataclasses.fields(cls)
    return len(every) == len(fields) and all(f.init for f in fields)


def _unknown(cls: type, changes: dict[str, Any]) -> None:
    name = next(iter(changes))
    raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument '{name}'")
