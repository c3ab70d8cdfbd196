"""A local Spark standalone cluster (one master, N workers), run from the pyspark installation:
starting its daemons, waiting until every worker is ALIVE, and stopping them.

Point the platform at it with ``PLATFORM_SPARK_MASTER=spark://127.0.0.1:<port>``. Everything lives
in ``base_dir`` (``.local/cluster`` for the CLI): ``spark-defaults.conf``, ``master/master.log``,
``worker-<n>/worker.log`` and the workers' work dirs (``worker-<n>/work/<app>/<executor>/stderr``:
what each executor did), and, while the cluster runs, ``cluster.json`` (``cluster_state``) so that
another process can find and stop it. A restart reuses the last ports when they are free
(``cluster_config``): the master URL stays valid.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from pathlib import Path

from platform_pipelines.core.local_server import (
    HOST,
    java_errors,
    launch,
    log_lines,
    terminate,
    write_state,
)
from platform_pipelines.jvm import require_java
from platform_pipelines.spark.cluster_config import (
    MASTER_CLASS,
    WORKER_CLASS,
    ClusterSpec,
    daemon_command,
    daemon_env,
    master_args,
    master_ports,
    remember_ports,
    worker_args,
    write_defaults,
)
from platform_pipelines.spark.cluster_state import (
    STATE_FILE,
    find_running_cluster,
    is_daemon,
    master_state,
)

_STARTED = re.compile(r"Successfully started service '(sparkMaster|MasterUI)' on port (\d+)")


class ClusterError(RuntimeError):
    """The local cluster could not start or stop; the message says why and what to do."""


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
        conf = write_defaults(self.base_dir)
        try:
            self._start_master(conf, deadline)
            assert self.master_url is not None
            for n in range(1, self.spec.workers + 1):
                args = worker_args(self.spec, self.master_url, self.work_dir(n), conf)
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
            # Each daemon leads a process group: signal it to reach the worker's executors too.
            terminate([p for p in group if p], self._alive, timeout_s, group=True)
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
        port, webui = master_ports(self.base_dir)
        log = self.log("master")
        since = log.stat().st_size if log.exists() else 0  # the log keeps earlier starts
        self._launch("master", MASTER_CLASS, master_args(port, webui, conf), log.parent)
        while True:
            # Spark moves to the next port when one is taken: read where it really listens.
            with log.open("rb") as out:
                out.seek(since)
                ports = dict(_STARTED.findall(out.read().decode(errors="replace")))
            if len(ports) == 2:
                self.master_url = f"spark://{HOST}:{ports['sparkMaster']}"
                self.webui_url = f"http://{HOST}:{ports['MasterUI']}"
                remember_ports(self.base_dir, ports)
                return
            self._check_alive(deadline, "the master did not open its ports")
            time.sleep(0.2)

    def _launch(self, name: str, main: str, args: list[str], folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        env = daemon_env(self.base_dir, folder, self.spec)
        self._procs[name] = launch(daemon_command(main, args), self.log(name), folder, env)

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
        lines = log_lines(log)
        causes = java_errors(lines)
        found = "Errors:\n" + "\n".join(causes) + "\n" if causes else ""
        return (
            f"The Spark {name} of the local cluster in {self.base_dir} {what}. {found}"
            f"Last lines of {log}:\n"
            + "\n".join(lines[-20:])
            + "\nIf a port is taken or the machine is short of memory, free it (or start fewer "
            "workers, `--workers`) and start the cluster again."
        )

    def _alive(self, pid: int) -> bool:
        for proc in self._procs.values():
            if proc.pid == pid:
                return proc.poll() is None
        return is_daemon(pid, self.base_dir)

    def _write_state(self) -> None:
        state = {
            "master_url": self.master_url,
            "webui_url": self.webui_url,
            "master_pid": self._procs["master"].pid,
            "pids": self.pids,
            "workers": self.spec.workers,
            "base_dir": str(self.base_dir),
        }
        write_state(self.base_dir / STATE_FILE, state)
