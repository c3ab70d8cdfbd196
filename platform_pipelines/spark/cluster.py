"""A local Spark standalone cluster (one master, N workers), run from the pyspark installation.

Spark's own launcher, ``bin/spark-class`` of the pyspark package (``SPARK_HOME`` = the package
folder), runs ``org.apache.spark.deploy.master.Master`` and ``...worker.Worker``: nothing else is
installed. Every process binds to 127.0.0.1 only (RPC, web UIs; the master's REST submission
server is off), on free ports. Point the platform at it with
``PLATFORM_SPARK_MASTER=spark://127.0.0.1:<port>``.

Everything lives in ``base_dir`` (``.local/cluster`` for the CLI): ``spark-defaults.conf``,
``master/master.log``, ``worker-<n>/worker.log`` and the workers' work dirs
(``worker-<n>/work/<app>/<executor>/stderr``: what each executor did), and, while the cluster
runs, ``cluster.json`` (master URL, web UI, pids) so that another process can find and stop it.
A restart reuses the last ports (``ports.json``) when they are free: the master URL stays valid.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platform_pipelines.jvm import require_java

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
STATE_FILE = "cluster.json"
PORTS_FILE = "ports.json"  # the last start's ports, kept after a stop
# The daemons' own settings (applications bring theirs from the driver).
DAEMON_DEFAULTS = {
    "spark.master.rest.enabled": "false",  # a second listener, on a fixed port (6066)
    "spark.ui.killEnabled": "false",  # as the platform's own UI: no kill links
}
_STARTED = re.compile(r"Successfully started service '(sparkMaster|MasterUI)' on port (\d+)")


class ClusterError(RuntimeError):
    """The local cluster could not start or stop; the message says why and what to do."""


@dataclass(frozen=True)
class ClusterSpec:
    """The cluster's shape. Defaults fit a 2-core laptop beside the driver.

    Attributes:
        workers: worker processes; each runs one executor per application.
        cores: cores each worker offers (one task at a time per core).
        memory: memory each worker offers; an executor takes ``spark.executor.memory`` (1g).
        daemon_memory: heap of the master and worker daemons themselves.
    """

    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    daemon_memory: str = "512m"


def spark_home() -> Path:
    """The pyspark package folder: it holds ``bin/spark-class`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM binds
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def _ours(pid: int, base_dir: Path) -> bool:
    """The pid runs a Spark daemon of ``base_dir`` (not a process that reused the pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"org.apache.spark.deploy." in cmdline and str(base_dir).encode() in cmdline


def master_state(webui_url: str, timeout_s: float = 5) -> dict[str, Any]:
    """The master's own account of the cluster (``<web UI>/json/``): workers with their state,
    cores and memory, active and completed applications."""
    with urllib.request.urlopen(f"{webui_url}/json/", timeout=timeout_s) as answer:
        state: dict[str, Any] = json.load(answer)
    return state


def find_running_cluster(base_dir: Path) -> dict[str, Any] | None:
    """The ``cluster.json`` of the live cluster in ``base_dir``, else None (a file left behind
    by a dead master is removed)."""
    state_file = Path(base_dir).resolve() / STATE_FILE
    try:
        info: dict[str, Any] = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return None
    if _ours(int(info["master_pid"]), state_file.parent):
        return info
    state_file.unlink(missing_ok=True)
    return None


class LocalSparkCluster:
    """A standalone master and ``spec.workers`` workers on loopback, with files in ``base_dir``.

    Usage (starts JVMs, so not a doctest)::

        with LocalSparkCluster(Path(".local/cluster")) as master_url:
            ...  # PLATFORM_SPARK_MASTER=master_url
    """

    def __init__(self, base_dir: Path, spec: ClusterSpec | None = None) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.spec = spec or ClusterSpec()
        self.master_url: str | None = None
        self.webui_url: str | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, timeout_s: float = 120) -> str:
        """Launch the master, then the workers; return the master URL once every worker is
        ALIVE in the master's view.

        Raises:
            JvmSetupError: Java 17+ is missing.
            ClusterError: a cluster already runs in ``base_dir``, a process died (its log's last
                lines are in the message), or the workers did not register within ``timeout_s``.
        """
        require_java()
        running = find_running_cluster(self.base_dir)
        if running is not None:
            raise ClusterError(
                f"A Spark cluster (master pid {running['master_pid']}) already runs from "
                f"{self.base_dir} at {running['master_url']}: use it, or stop it first "
                "(`platform cluster stop`)."
            )
        deadline = time.monotonic() + timeout_s
        self.base_dir.mkdir(parents=True, exist_ok=True)
        conf = self.base_dir / "spark-defaults.conf"
        conf.write_text("".join(f"{k} {v}\n" for k, v in DAEMON_DEFAULTS.items()))
        try:
            self._start_master(conf, deadline)
            assert self.master_url is not None
            for n in range(1, self.spec.workers + 1):
                args = [
                    "--host",
                    HOST,
                    "--port",
                    "0",
                    "--webui-port",
                    "0",
                    "--cores",
                    str(self.spec.cores),
                    "--memory",
                    self.spec.memory,
                    "--work-dir",
                    str(self.work_dir(n)),
                    "--properties-file",
                    str(conf),
                    self.master_url,
                ]
                self._launch(f"worker-{n}", WORKER_CLASS, args, self.work_dir(n).parent)
            self._wait_for_workers(deadline)
        except BaseException:  # Ctrl-C included: never leave daemons without cluster.json
            self.stop()
            raise
        self._write_state()
        return self.master_url

    def stop(self, timeout_s: float = 30) -> None:
        """Stop the workers (they end their executors), then the master: SIGTERM, SIGKILL after
        ``timeout_s``. Also stops a cluster that another process started from ``base_dir``."""
        pids = self.pids
        if not pids:
            running = find_running_cluster(self.base_dir) or {}
            pids = {name: int(pid) for name, pid in running.get("pids", {}).items()}
        for group in ([p for n, p in pids.items() if n != "master"], [pids.get("master")]):
            self._signal_all([p for p in group if p], timeout_s)
        for proc in self._procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1)
        self._procs.clear()
        (self.base_dir / STATE_FILE).unlink(missing_ok=True)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def pids(self) -> dict[str, int]:
        """The daemons this object started, by name (``master``, ``worker-<n>``)."""
        return {name: proc.pid for name, proc in self._procs.items()}

    def log(self, name: str) -> Path:
        """The output of ``master`` or ``worker-<n>``."""
        kind = "master" if name == "master" else "worker"
        return self.base_dir / name / f"{kind}.log"

    def work_dir(self, n: int) -> Path:
        """Worker ``n``'s work dir: ``<application id>/<executor id>/`` with each executor's
        ``stdout`` and ``stderr`` (1-based, as the worker folders)."""
        return self.base_dir / f"worker-{n}" / "work"

    def _start_master(self, conf: Path, deadline: float) -> None:
        port, webui = self._ports()
        args = [
            "--host",
            HOST,
            "--port",
            str(port),
            "--webui-port",
            str(webui),
            "--properties-file",
            str(conf),
        ]
        log = self.log("master")
        since = log.stat().st_size if log.exists() else 0  # the log keeps earlier starts
        self._launch("master", MASTER_CLASS, args, self.base_dir / "master")
        while True:
            # Spark moves to the next port when one is taken: read where it really listens.
            with log.open("rb") as out:
                out.seek(since)
                ports = dict(_STARTED.findall(out.read().decode(errors="replace")))
            if len(ports) == 2:
                self.master_url = f"spark://{HOST}:{ports['sparkMaster']}"
                self.webui_url = f"http://{HOST}:{ports['MasterUI']}"
                (self.base_dir / PORTS_FILE).write_text(json.dumps(ports) + "\n")
                return
            self._check_alive(deadline, "the master did not open its ports")
            time.sleep(0.2)

    def _ports(self) -> tuple[int, int]:
        """The last start's ports when free (the master URL survives a restart), else new ones."""
        try:
            last = json.loads((self.base_dir / PORTS_FILE).read_text())
            wanted = [int(last["sparkMaster"]), int(last["MasterUI"])]
        except (OSError, ValueError, KeyError):
            wanted = []
        if len(wanted) == 2 and all(_port_free(p) for p in wanted):
            return wanted[0], wanted[1]
        port, webui = _free_port(), _free_port()
        return (port, webui) if webui != port else self._ports()

    def _launch(self, name: str, main: str, args: list[str], folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": HOST,  # the web UIs bind to it (else to every interface)
            "SPARK_LOCAL_DIRS": str(folder / "tmp"),  # executors' shuffle and block files
            "SPARK_DAEMON_MEMORY": self.spec.daemon_memory,
            "SPARK_CONF_DIR": str(self.base_dir),  # no stray spark-env.sh from elsewhere
        }
        with self.log(name).open("ab") as log:
            self._procs[name] = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main, *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=folder,
                env=env,
                start_new_session=True,  # its own process group: the worker's executors too
            )

    def _wait_for_workers(self, deadline: float) -> None:
        assert self.webui_url is not None
        while True:
            with contextlib.suppress(OSError, ValueError):
                alive = master_state(self.webui_url).get("aliveworkers", 0)
                if alive >= self.spec.workers:
                    return
            self._check_alive(deadline, f"{self.spec.workers} workers did not register as ALIVE")
            time.sleep(0.5)

    def _check_alive(self, deadline: float, late: str) -> None:
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                raise ClusterError(self._explain(name, f"exited with code {proc.returncode}"))
        if time.monotonic() > deadline:
            raise ClusterError(self._explain("master", f"did not get ready in time: {late}"))

    def _explain(self, name: str, what: str) -> str:
        log = self.log(name)
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        causes = [line for line in lines if " ERROR " in line or line.startswith("Caused by")]
        found = "Errors:\n" + "\n".join(causes[:8]) + "\n" if causes else ""
        return (
            f"The Spark {name} of the local cluster in {self.base_dir} {what}. {found}"
            f"Last lines of {log}:\n"
            + "\n".join(lines[-20:])
            + "\nIf a port is taken or the machine is short of memory, free it (or start fewer "
            "workers, `--workers`) and start the cluster again."
        )

    def _signal_all(self, pids: list[int], timeout_s: float) -> None:
        for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
            alive = [pid for pid in pids if self._alive(pid)]
            for pid in alive:  # the process group it leads: the daemon and its executors
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, sig)
            end = time.monotonic() + wait_s
            while alive and time.monotonic() < end:
                alive = [pid for pid in alive if self._alive(pid)]
                time.sleep(0.1)
            if not alive:
                return

    def _alive(self, pid: int) -> bool:
        for proc in self._procs.values():
            if proc.pid == pid:
                return proc.poll() is None
        return _ours(pid, self.base_dir)

    def _write_state(self) -> None:
        state = {
            "master_url": self.master_url,
            "webui_url": self.webui_url,
            "master_pid": self._procs["master"].pid,
            "pids": self.pids,
            "workers": self.spec.workers,
            "base_dir": str(self.base_dir),
        }
        (self.base_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
