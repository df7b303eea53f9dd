"""A big JSON report read a page at a time (``agent-test view`` of a report past ``PAGED_BYTES``): its summary,
environment and metadata decoded at once from the file's two ends, its results indexed by one scan of the file in
the background — where each begins and its status, nothing decoded — and a result decoded only when a page shows
it. A million results (a gigabyte) are indexed in about a second; the first page waits only for the results it
shows (failures first: the first failures found, or every one when the summary says there are few).

It reads the layout agent-test's writer gives a JSON report (reporting/jsonfile.py, ``indent=2``): a result
begins with a line ``    {`` and ends with a line ``    }``; JSON strings hold no raw newline and a result's own
lines are indented deeper, so no text of a result can be taken for either. A file laid out otherwise is not
paged (``NotPaged``): the viewer reads it whole."""

from __future__ import annotations

import json
import mmap
import re
import threading
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from agenttest.errors import AgentTestError, Location
from agenttest.util.files import WRITE_ERRORS

PAGED_BYTES = 32 * 2**20  # a report file past this is paged (reading 30,000 results whole takes seconds)
HEAD, RESULTS = b'{\n  "summary": ', b'\n  "results": ['
METADATA = b'\n  "metadata": '
START, END = b"\n    {\n", b"\n    }"
# a result's start and its status, the result's second key (lazily over at most 40 lines of its own, never the next result's)
_SCAN = re.compile(rb'\n    \{\n(?:      [^\n]*\n){0,40}?      "status": "([a-z_]{1,20})"')
_STATUS = re.compile(rb'\n      "status": "([a-z_]{1,20})"')
CHUNK = 4 * 2**20  # bytes scanned between two looks at the lock: progress is seen while a gigabyte is read
FAILING = ("failed", "error", "timeout")
ORDER = ("failed", "error", "timeout", "passed", "skipped")  # the buckets of a page, failures first; another status goes before passed
SUMMARY_KEYS = {"failed": "failed", "error": "errors", "timeout": "timeouts", "passed": "passed", "skipped": "skipped"}
MAX_QUERY = 200


class NotPaged(Exception):
    """The file is not laid out as agent-test writes a JSON report: read it whole."""


class PagedReport:
    """One report file, mapped, and its index; ``start_indexing`` scans it in a thread of its own."""

    def __init__(self, path: str, chunk: int = CHUNK):
        self.path, self.chunk = path, chunk
        try:
            self._file = open(path, "rb")
        except OSError as exc:
            raise AgentTestError(f"{path}: cannot be read: {exc.strerror or exc}") from None
        try:
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # empty, or a file that cannot be mapped: read whole
            self._file.close()
            raise NotPaged(path) from None
        self.summary, self.environment, self.metadata, self.begin, self.end = self._ends()
        self.starts = array("q")  # where each result's "{" is, in input order
        self.codes = bytearray()  # each result's status, as its number in self.statuses
        self.statuses: list[str] = []
        self.buckets: dict[str, array[int]] = {}  # result numbers by status, in input order
        self.scanned = self.begin  # bytes of the results read so far
        self.done = False
        self.failure: str | None = None  # what stopped the scan, said on every page
        self._changed = threading.Condition()
        self._searches: OrderedDict[tuple[str, ...], dict[str, array[int]]] = OrderedDict()
        self._search_lock = threading.Lock()

    # -- the two ends --------------------------------------------------------------------------------------

    def _ends(self) -> tuple[dict[str, Any], Any, dict[str, Any], int, int]:
        data = self._map
        if data[:len(HEAD)] != HEAD:
            raise NotPaged(self.path)
        at = data.find(RESULTS)
        tail = data.rfind(METADATA)
        if at < 0 or tail < at:
            raise NotPaged(self.path)
        head = self._json(data[:at].removesuffix(b",") + b"\n}", 1)
        meta = self._json(b"{" + data[tail + 1:], None)
        begin = at + len(RESULTS)
        if tail - begin == 2 and data[begin:tail] == b"],":
            end = begin  # no result
        elif data[tail - 5:tail] == b"\n  ],":
            end = tail - 5
        else:
            raise NotPaged(self.path)
        if not isinstance(head.get("summary"), dict) or not isinstance(meta.get("metadata"), dict):
            raise NotPaged(self.path)
        return head["summary"], head.get("environment"), meta["metadata"], begin, end

    def _json(self, text: bytes, line: int | None) -> dict[str, Any]:
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise AgentTestError(f"not valid JSON: {getattr(exc, 'msg', exc)}", Location(self.path, line)) from None
        if not isinstance(value, dict):
            raise NotPaged(self.path)
        return value

    # -- the index -------------------------------------------------------------------------------------------

    def start_indexing(self) -> threading.Thread:
        thread = threading.Thread(target=self.index, name="agent-test-index", daemon=True)
        thread.start()
        return thread

    def index(self) -> None:
        """Scan the results: each one's start and status, a chunk at a time (waiters are told after each)."""
        try:
            pos, size = self.begin, self.chunk
            while pos < self.end:
                stop = min(self.end, pos + size)
                found = [(m.start() + 5, m.group(1)) for m in _SCAN.finditer(self._map, pos, stop)]
                if stop == self.end:
                    after = stop
                elif found:  # resume past the last status found: a result the chunk's end cut is found whole in the next
                    after = self._map.find(b'"status"', found[-1][0]) + 8
                else:
                    cut = self._map.rfind(START, pos, stop)
                    after = cut if cut > pos else stop - len(START) + 1 if cut < 0 else pos
                size = self.chunk if after > pos else size * 2  # a result whose first lines outgrow a chunk: a bigger one
                with self._changed:
                    self._add(found)
                    pos = self.scanned = after
                    self._changed.notify_all()
        except Exception as exc:  # noqa: BLE001 — a file changed or truncated under us: every page says so
            self.failure = f"{type(exc).__name__}: {exc}"
        with self._changed:
            self.done = True
            self._changed.notify_all()

    def _add(self, found: list[tuple[int, bytes]]) -> None:
        for start, status in found:
            name = status.decode("ascii")
            if name not in self.buckets:
                self.statuses.append(name)
                self.buckets[name] = array("l")
            self.buckets[name].append(len(self.starts))
            self.codes.append(self.statuses.index(name))
            self.starts.append(start)

    def progress(self) -> float:
        span = self.end - self.begin
        return 1.0 if self.done or span <= 0 else (self.scanned - self.begin) / span

    def expected(self, status: str) -> int | None:
        """How many results of ``status`` the summary counts (None: it does not say)."""
        value = self.summary.get(SUMMARY_KEYS.get(status, ""))
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def order(self, statuses: Sequence[str] = ()) -> list[str]:
        """The buckets a view lists, failures first; none chosen: every status."""
        known = [s for s in ORDER if s not in ("passed", "skipped")] + [s for s in self.statuses if s not in ORDER] + ["passed", "skipped"]
        return [s for s in known if not statuses or s in statuses]

    def _known(self, order: list[str], upto: int) -> bool:
        """Whether the first ``upto`` results of the buckets ``order`` are indexed (the summary's counts say when a
        bucket is complete before the scan ends)."""
        if self.done:
            return True
        have = 0
        for status in order:
            got = len(self.buckets.get(status, ()))
            if have + got >= upto:
                return True
            if got != self.expected(status):
                return False
            have += got
        return False

    def wait(self, order: list[str], upto: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) for the rows a page shows; False: still indexing."""
        with self._changed:
            return self._changed.wait_for(lambda: self._known(order, upto), timeout)

    def wait_number(self, number: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) for result ``number`` to be indexed; False: it is not (yet)."""
        with self._changed:
            return self._changed.wait_for(lambda: number < len(self.starts) or self.done, timeout) and number < len(self.starts)

    def wait_done(self, timeout: float | None) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.done, timeout)

    def rows(self, order: list[str], first: int, count: int, buckets: dict[str, array[int]] | None = None) -> tuple[list[int], int]:
        """Result numbers ``first`` … ``first + count`` of the buckets ``order`` (of ``buckets``, a search's, when
        given), and how many there are in all (so far, while indexing)."""
        with self._changed:
            lists = [b[:] if buckets is None else b for b in ((buckets if buckets is not None else self.buckets).get(s) for s in order) if b is not None]
        out: list[int] = []
        total = 0
        for bucket in lists:
            n = len(bucket)
            if first < total + n and len(out) < count:
                lo = max(0, first - total)
                out.extend(bucket[lo:lo + count - len(out)])
            total += n
        return out, total

    # -- one result --------------------------------------------------------------------------------------------

    def text(self, number: int) -> bytes:
        start = self.starts[number]
        end = self._map.find(END, start)
        return self._map[start:end + len(END)]

    def result(self, number: int) -> dict[str, Any]:
        """Result ``number`` (from 0) decoded; one that is not an object is an AgentTestError at its line."""
        try:
            value = json.loads(self.text(number))
        except ValueError as exc:
            raise AgentTestError(f"result {number + 1} (at byte {self.starts[number]}) is not valid JSON: {getattr(exc, 'msg', exc)}",
                                 Location(self.path)) from None
        if not isinstance(value, dict):
            raise AgentTestError(f"result {number + 1} is not a JSON object", Location(self.path))
        return value

    def number_at(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    # -- search ------------------------------------------------------------------------------------------------

    def search(self, query: str) -> dict[str, array[int]]:
        """The results whose text holds every word of ``query`` (split at white space, in any order, anywhere in
        the result; any case of their ASCII letters) outside their keys' names, as the viewer's own search does, by
        status (their numbers, in input order); the whole index first (it waits for the scan)."""
        self.wait_done(None)
        words = tuple(dict.fromkeys(query.split())) or (query,)  # lower case: _search (ASCII letters only, as the file is read)
        with self._search_lock:
            if words in self._searches:
                self._searches.move_to_end(words)
                return self._searches[words]
            matched: set[int] | None = None
            for word in sorted(words, key=len, reverse=True):  # the longest word first: likely the fewest results
                numbers = self._search(word)
                matched = set(numbers) if matched is None else matched.intersection(numbers)
                if not matched:
                    break
            found: dict[str, array[int]] = {s: array("l") for s in self.statuses}
            for number in sorted(matched or ()):
                found[self.statuses[self.codes[number]]].append(number)
            self._searches[words] = found
            if len(self._searches) > 8:
                self._searches.popitem(last=False)
            return found

    def _search(self, query: str) -> array[int]:
        needle = json.dumps(query, ensure_ascii=False)[1:-1].encode("utf-8", WRITE_ERRORS).lower()  # as the file writes it
        found = array("l")
        data, overlap = self._map, len(needle) - 1
        pos = self.begin
        while pos < self.end:
            stop = min(self.end, pos + CHUNK)
            chunk = data[pos:min(self.end, stop + overlap)].lower()
            at = chunk.find(needle)
            while at >= 0 and pos + at < stop:
                where = pos + at
                number = self.number_at(where)
                result_end = data.find(END, where)
                if number >= 0 and not self._in_key(where, len(needle)) and (not found or found[-1] != number):
                    found.append(number)
                    at = chunk.find(needle, result_end - pos)  # the next result's
                else:
                    at = chunk.find(needle, at + 1)
            pos = stop
        return found

    def _in_key(self, where: int, size: int) -> bool:
        """Whether the text at ``where`` lies in a key's name (``"output": …`` matches "output" in no result)."""
        line = self._map.rfind(b"\n", self.begin, where) + 1
        head = self._map[line:where + size]
        stripped = head.lstrip(b" ")
        if not stripped.startswith(b'"'):
            return False
        rest = self._map[where + size:self._map.find(b"\n", where + size)]
        closes = re.search(rb'(?<!\\)": ', rest)
        return b'": ' not in stripped[1:] and closes is not None and b'"' not in rest[:closes.start()].replace(b'\\"', b"")

    def close(self) -> None:
        try:
            self._map.close()
        except BufferError:  # a page still holds a slice of it: the process ends soon
            pass
        self._file.close()


def valid_query(query: str) -> str | None:
    """What is wrong with a search's text (None: nothing)."""
    if len(query) > MAX_QUERY:
        return f"a search of at most {MAX_QUERY} characters"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in query):
        return "a search without control characters"
    return None
