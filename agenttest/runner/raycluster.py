"""The Ray a run uses: a cluster joined by its address, or a local Ray the run starts and stops for itself.

A local Ray is nobody else's: every service of it (GCS, raylet, agents, actors, this driver) listens on
loopback only — checked in /proc once it is up, and refused otherwise — it keeps its session (sockets, logs,
spilled objects) in a folder of the run's own that only this user can read, removed with it, and its actors
read the app where it is (no copy). So do the actors of a cluster joined by its address whose every node is on
loopback (``AGENTTEST_RAY_SHIP=1`` ships it all the same: nodes in containers of their own); a cluster with a
node elsewhere gets the app folder as the actors' working directory, without what is not the app's code and cases
(``excludes``). Keys travel in the cluster's environment, never as files."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agenttest.config import RAY_SHIP, RunConfig
from agenttest.errors import AgentTestError
from agenttest.runner import processes

LOOPBACK = "127.0.0.1"
# not the app: tools, VCS and caches; what runs write (reports, --lf memory, cassettes); and what holds keys
EXCLUDES = [".git", ".venv", "venv", "node_modules", "__pycache__", ".agent-test", "output-*.json", "reports/", "cassettes/",
            ".env", ".env.*", "*.pem", "*.key"]
# a unix socket's path is at most 107 bytes: Ray's deepest is <folder>/session_<date>_<time>_<µs>_<pid>/sockets/plasma_store
_ROOM = 107 - len("/session_2026-12-06_11-52-50_219481_4194304/sockets/plasma_store")


@dataclass
class Cluster:
    """The Ray this run joined: ``started`` by it (and stopped by ``leave``); ``shipped``: the app folder is
    the actors' working directory; ``folder``: a local Ray's own folder (removed by ``leave``)."""

    address: str | None
    started: bool
    shipped: bool
    folder: str | None = None


def excludes(app_root: str, config: RunConfig) -> list[str]:
    """What of the app folder a cluster joined by its address does not get: ``EXCLUDES``, this run's reports (``-o``)
    and its ``--record`` folder when they are inside the app. The ``--replay`` folder goes (the actors replay from it)."""
    out = list(EXCLUDES)
    for output in config.outputs:  # written by the controller: an earlier run's report would be shipped each time
        inside = os.path.relpath(os.path.abspath(output), app_root)
        if not inside.startswith(os.pardir) and inside != os.curdir:
            out.append("/" + re.sub(r"([\\*?\[\]])", r"\\\1", inside.replace(os.sep, "/")))
    for folder, keep in ((config.record, False), (config.replay, True)):
        if not folder:
            continue
        inside = os.path.relpath(os.path.abspath(folder), app_root)
        if inside.startswith(os.pardir) or inside == os.curdir:
            continue
        if keep:
            out = [x for x in out if x.rstrip("/") != inside.split(os.sep)[0]] + [f"!{inside}/"]
        else:
            out.append(f"/{inside}/")
    return out


def join(config: RunConfig, app_root: str) -> Cluster:
    """Join the cluster the run names (``--ray-address``, ``RAY_ADDRESS``), or start a local Ray; a Ray this
    process joined before (a test's, a notebook's) is used as it is. Raises AgentTestError."""
    import ray

    logging.getLogger("ray").setLevel(logging.ERROR)  # its notices are not the run's console
    address = config.ray_address or os.environ.get("RAY_ADDRESS") or None
    if ray.is_initialized():  # it cannot ship folders: the app is where it is
        _quiet()
        return Cluster(address, started=False, shipped=False)
    if address is None:
        return _start_local()
    refused = _probe(address)  # Ray tries an address that does not answer for minutes, its C++ logs on stderr
    if refused is not None:
        raise AgentTestError(f"--executor ray: cannot connect to Ray at {address}: {refused}",
                             hint="check RAY_ADDRESS / --ray-address, or unset both to start a local Ray")
    here = _on_loopback(address)  # a Ray of this machine's: joined at the address given
    try:
        with _loopback_node() if here else contextlib.nullcontext():
            if here and not shipping():  # its nodes may all be on this machine: the actors read the app where it is
                ray.init(address=address, log_to_driver=False, configure_logging=False)
                if _nodes_here():
                    _quiet()
                    return Cluster(address, started=True, shipped=False)
                ray.shutdown()  # a node elsewhere (joined through a tunnel): the app goes to the cluster
            env = {"working_dir": app_root, "excludes": excludes(app_root, config)}
            ray.init(address=address, runtime_env=env, log_to_driver=False, configure_logging=False)
    except Exception as exc:  # noqa: BLE001 — whatever Ray raises, the run cannot start: a usage error
        raise AgentTestError(f"--executor ray: cannot connect to Ray at {address}: {_first_line(exc)}",
                             hint="check RAY_ADDRESS / --ray-address, or unset both to start a local Ray") from None
    _quiet()
    return Cluster(address, started=True, shipped=True)


def shipping() -> bool:
    """``AGENTTEST_RAY_SHIP=1`` (checked by ``config.check_environment``): ship the app folder to a cluster joined by
    its address even when every node of it is on this machine (nodes in containers with a filesystem of their own)."""
    return os.environ.get(RAY_SHIP, "").strip() == "1"


def _nodes_here() -> bool:
    """Every node of the cluster joined is on this machine: its address is loopback."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return bool(nodes) and all(_loopback_host(str(n.get("NodeManagerAddress", ""))) for n in nodes)


def app_identity(root: str) -> tuple[int, int] | None:
    """The app folder as the filesystem knows it (device, inode; None when it cannot be read): an actor that reads
    the app in place checks that it sees the controller's folder, not another at the same path (``sees``)."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def sees(root: str, identity: tuple[int, int] | None) -> bool:
    """This process sees the app folder ``identity`` names at ``root`` (None: nothing to compare)."""
    return identity is None or app_identity(root) == tuple(identity)


def leave(cluster: Cluster) -> None:
    """Stop the Ray the run started (its processes end with it) and remove its folder."""
    import ray

    if cluster.started:
        ray.shutdown()
    if cluster.folder is not None:
        shutil.rmtree(cluster.folder, ignore_errors=True)


def _start_local() -> Cluster:
    import ray

    folder = tempfile.mkdtemp(prefix="agt-ray-", dir=_temp_base())  # 0700: the session, its sockets and logs are ours
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a run's Ray reports nothing to anyone
    cluster = Cluster(None, started=True, shipped=False, folder=folder)
    try:
        with _loopback_node():
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, _node_ip_address=LOOPBACK,
                     _temp_dir=os.path.join(folder, "r"))  # Ray makes its folder open to all (0777): the one above is not
    except Exception as exc:  # noqa: BLE001 — whatever Ray raises, the run cannot start: a usage error
        leave(cluster)
        raise AgentTestError(f"--executor ray: cannot start a local Ray: {_first_line(exc)}",
                             hint="check the Ray installation, or give a cluster with --ray-address") from None
    _quiet()
    open_to_all = exposed(os.getpid())
    if open_to_all:
        leave(cluster)
        raise AgentTestError(f"--executor ray: the local Ray listened beyond loopback ({', '.join(open_to_all[:3])}); it was stopped",
                             hint="this Ray version cannot be kept on loopback: give a cluster you secured with --ray-address")
    return cluster


def _probe(address: str, wait: float = 5.0) -> str | None:
    """Why nothing answers at ``address`` (``host:port``, ``ray://host:port``), or None (it answers, or it is
    not an address to try: ``auto``)."""
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=wait):
            return None
    except OSError as exc:
        return (exc.strerror or str(exc) or type(exc).__name__).lower()


def _on_loopback(address: str) -> bool:
    """``host:port`` names a host on loopback (``ray://`` is Ray's client: never)."""
    return "://" not in address and _loopback_host(address.rsplit(":", 1)[0].strip("[]"))


def _loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _temp_base() -> str:
    base = tempfile.gettempdir()
    return base if len(base) + len("/agt-ray-xxxxxxxx/r") <= _ROOM else "/tmp"


@contextlib.contextmanager
def _loopback_node() -> Iterator[None]:
    """Ray turns a loopback address into this machine's network address, so that other machines can join;
    a local Ray for one run is to be joined by none. Its node address stays loopback while it starts (every
    service binds the node address), and a Ray of this machine's on loopback is joined at the address given.
    A Ray without that step is left as it is: ``exposed`` checks."""
    try:
        from ray._private import services
    except ImportError:
        yield
        return
    real = getattr(services, "resolve_ip_for_localhost", None)
    if real is None:
        yield
        return
    services.resolve_ip_for_localhost = lambda host: host
    try:
        yield
    finally:
        services.resolve_ip_for_localhost = real


def _quiet() -> None:
    """Ray's driver prints what its raylet reports (``(raylet) A worker died …``) on this process's stdout,
    which is the console or the ``--json`` stream: a lost worker is said by the run itself."""
    try:
        from ray._private import worker
    except ImportError:
        return
    if hasattr(worker, "print_to_stdstream"):
        worker.print_to_stdstream = _dropped


def _dropped(data: Any, ignore_prefix: bool = False) -> None:
    """Ray's lines for the driver's console: not shown (they are in Ray's own logs while it runs)."""


def exposed(root: int) -> list[str]:
    """``address:port`` of every TCP socket listening beyond loopback, and UDP socket bound beyond it, in the
    process tree of ``root`` (read from /proc; nothing where there is none)."""
    inodes = _bound()
    found = []
    for pid in [root, *processes.tree(root)]:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1].isdigit() and int(target[8:-1]) in inodes:
                found.append(inodes[int(target[8:-1])])
    return sorted(set(found))


def _bound() -> dict[int, str]:
    """socket inode → ``address:port``, for the sockets listening (TCP) or bound (UDP) beyond loopback."""
    out = {}
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/net/{name}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != ("0A" if name.startswith("tcp") else "07"):
                continue
            ip, port = fields[1].split(":")
            address = _address(ip)
            if not address.is_loopback:
                out[int(fields[9])] = f"{address}:{int(port, 16)}" if address.version == 4 else f"[{address}]:{int(port, 16)}"
    return out


def _address(hex_ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net writes it: each 32-bit word in the host's byte order."""
    raw = bytes.fromhex(hex_ip)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)) if sys.byteorder == "little" else raw
    if len(raw) == 4:
        return ipaddress.IPv4Address(words)
    address = ipaddress.IPv6Address(words)
    return address.ipv4_mapped or address


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
