"""Values kept on disk instead of in memory (a streamed run's results and gates): each pickled into one temporary
file as it comes, read back one at a time in the order of its index. The file has no name (it is gone when closed,
or when the process ends however it ends)."""

from __future__ import annotations

import dataclasses
import io
import pickle
import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Any, Generic, TypeVar, overload

from agenttest.speed.records import builder

T = TypeVar("T")


# agenttest's frozen dataclasses are pickled as their class's number and field values, and rebuilt by a function that
# sets their slots (speed.records.builder). Pickle's own way names each class in every value (found again by an
# import each time) and calls its __setstate__, which sets each field in Python: a result read back so took ~35 µs,
# and a streamed run's reports read each result a dozen times. Values are read back by the process that wrote them.
_TYPES: list[tuple[Callable[[tuple[Any, ...]], Any], Callable[[Any], Any]]] = []
_NUMBERS: dict[type, int | None] = {}


def _number(cls: type) -> int | None:
    """``cls``'s place in ``_TYPES``, or None for a class pickled as pickle does."""
    if cls not in _NUMBERS:
        build = builder(cls) if dataclasses.is_dataclass(cls) and cls.__module__.startswith("agenttest.") else None
        names = [f.name for f in dataclasses.fields(cls)] if build is not None else []
        if build is None or not names:
            _NUMBERS[cls] = None
        else:
            get = attrgetter(*names) if len(names) > 1 else (lambda obj, n=names[0]: (getattr(obj, n),))
            _NUMBERS[cls] = len(_TYPES)
            _TYPES.append((build, get))
    return _NUMBERS[cls]


def _rebuilt(number: int, values: tuple[Any, ...]) -> Any:
    return _TYPES[number][0](values)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        number = _number(type(obj))
        return NotImplemented if number is None else (_rebuilt, (number, _TYPES[number][1](obj)))


class Spooled(Sequence[T], Generic[T]):
    """A sequence of values by index (holes allowed: a unit not run), kept in a temporary file. ``spooled[i] = v``
    writes ``v`` at index ``i``; reading gives the values present in the order of their indexes."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._end = 0
        self._places = array("q")  # offset + 1 (0: no value at this index), length, …
        self._count = 0
        self._present: array[int] | None = None  # the indexes present, in order (made when first read by position)
        self._buffer = io.BytesIO()
        self._pickler = _Pickler(self._buffer, pickle.HIGHEST_PROTOCOL)

    # -- writing (by index, as results land) --
    def __setitem__(self, index: int, value: T) -> None:  # type: ignore[override]
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        self._pickler.dump(value)
        self._pickler.clear_memo()  # each value read back alone
        data = buffer.getvalue()
        self._file.seek(self._end)
        self._file.write(data)
        places = self._places
        if 2 * index >= len(places):
            places.extend([0, 0] * (index + 1 - len(places) // 2))
        if not places[2 * index]:
            self._count += 1
        places[2 * index], places[2 * index + 1] = self._end + 1, len(data)
        self._end += len(data)
        self._present = None

    def append(self, value: T) -> None:
        self[len(self._places) // 2] = value

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and 0 <= index < len(self._places) // 2 and self._places[2 * index] != 0

    def at(self, index: int) -> T:
        """The value at ``index`` (KeyError when there is none)."""
        if index not in self:
            raise KeyError(index)
        return self._read(index)

    def ordered(self) -> Spooled[T]:
        """The values in the order of their indexes: this sequence itself (``runner.scheduling.Landed``'s)."""
        return self

    # -- reading (by position among the values present) --
    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[T]:
        places = self._places
        for index in range(len(places) // 2):
            if places[2 * index]:
                yield self._read(index)

    @overload
    def __getitem__(self, position: int) -> T: ...

    @overload
    def __getitem__(self, position: slice) -> list[T]: ...

    def __getitem__(self, position: int | slice) -> T | list[T]:
        present = self._indexes()
        if isinstance(position, slice):
            return [self._read(i) for i in present[position]]
        return self._read(present[position])

    def __bool__(self) -> bool:
        return self._count > 0

    def mapped(self, change: Callable[[T], Any]) -> Mapped:
        """A view of the values, each passed through ``change`` as it is read (secrets hidden, for a report)."""
        return Mapped(self, change)

    def close(self) -> None:
        self._file.close()

    def _indexes(self) -> array[int]:
        if self._present is None:
            places = self._places
            self._present = array("q", (i for i in range(len(places) // 2) if places[2 * i]))
        return self._present

    def _read(self, index: int) -> T:
        self._file.seek(self._places[2 * index] - 1)
        return pickle.loads(self._file.read(self._places[2 * index + 1]))  # type: ignore[no-any-return]


class Mapped(Sequence[Any]):
    """A spooled sequence seen through a function (``Spooled.mapped``)."""

    def __init__(self, spooled: Spooled[Any], change: Callable[[Any], Any]):
        self.spooled, self.change = spooled, change

    def __len__(self) -> int:
        return len(self.spooled)

    def __iter__(self) -> Iterator[Any]:
        return (self.change(v) for v in self.spooled)

    def __getitem__(self, position: Any) -> Any:
        got = self.spooled[position]
        return [self.change(v) for v in got] if isinstance(position, slice) else self.change(got)

    def __bool__(self) -> bool:
        return bool(self.spooled)

    def mapped(self, change: Callable[[Any], Any]) -> Mapped:
        return Mapped(self.spooled, lambda v: change(self.change(v)))

    def close(self) -> None:
        self.spooled.close()


def is_spooled(value: object) -> bool:
    return isinstance(value, (Spooled, Mapped))
