"""Starts the commands the harness times, from a process that stays small.

Linux counts the pages of the process that forked a command in the command's peak RSS (``ru_maxrss`` keeps
the high-water mark of the memory it had before ``exec``): a harness that grew to 180 MB reading a peer's
logs would report every later command at 180 MB or more. This process is started first, never grows, and
runs each command for the harness: one JSON request a line on stdin, one JSON answer a line on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time


def main() -> None:
    for line in sys.stdin:
        ask = json.loads(line)
        with tempfile.TemporaryFile() as out:
            start = time.perf_counter()
            proc = subprocess.Popen(ask["cmd"], cwd=ask["cwd"], stdout=out, stderr=subprocess.STDOUT, env=ask["env"])
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            out.seek(0)
            tail = out.read()[-3000:].decode("utf-8", "replace")
        answer = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
                  "code": os.waitstatus_to_exitcode(status), "tail": tail}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
