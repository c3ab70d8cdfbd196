"""A real single-node Apache Kafka broker (KRaft, broker + controller in one JVM) for local use.

Everything lives in ``data_dir``: ``server.properties``, ``log4j2.properties``, the topic data under
``logs/``, the broker's output in ``broker.log`` and, while it runs, ``broker.json`` (pid, port,
bootstrap servers, security protocol) so that other processes (the CLI, the settings, a second
test run) can find it. The storage is formatted once; a restart on the same ``data_dir`` keeps every
topic and record.

``security="SASL_SSL"`` serves clients over TLS with SCRAM-SHA-512 users instead of PLAINTEXT (keys,
certificates and passwords in ``security/``, see ``kafka.tls``); a data dir keeps the protocol it
was formatted with, since the SCRAM users are created at format time.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from platform_pipelines.core.local_server import (
    HOST,
    free_port,
    java_errors,
    launch,
    live_state,
    log_lines,
    pid_runs,
    port_open,
    terminate,
    write_state,
)
from platform_pipelines.jvm import require_java
from platform_pipelines.kafka.admin import wait_for_broker
from platform_pipelines.kafka.broker_config import (
    LOG4J2,
    java_command,
    new_cluster_id,
    previous_ports,
    server_properties,
)
from platform_pipelines.kafka.security import KafkaSecurity
from platform_pipelines.kafka.tls import (
    CLIENT_USER,
    BrokerSecrets,
    BrokerSecurity,
    choose_security,
    formatted_security,
    write_private,
)

STATE_FILE = "broker.json"
LOG_FILE = "broker.log"
KAFKA_MAIN = b"kafka.Kafka"  # in the command line of every broker process


class BrokerError(RuntimeError):
    """The local broker could not start or stop; the message says why and what to do."""


def find_running_broker(data_dir: Path) -> dict[str, Any] | None:
    """The ``broker.json`` of the live broker serving ``data_dir``, else None.

    A file left behind by a dead broker (pid gone or port closed) is removed.
    """
    return live_state(Path(data_dir) / STATE_FILE, _serves)


class LocalKafkaBroker:
    """One local Kafka broker process serving ``data_dir``.

    For each of ``proxied_ports`` (PLAINTEXT only) it also listens on the port of the same index
    in ``proxied_listener_ports`` (chosen at start) and advertises the proxied port there: a
    client bootstrapped through a proxy on that port which forwards to that listener makes every
    connection through the proxy.

    Usage (starts a JVM, so not a doctest)::

        with LocalKafkaBroker(Path(".local/kafka")) as bootstrap:
            create_topics(bootstrap, {"clickstream": 3})
    """

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        security: BrokerSecurity | None = None,
        proxied_ports: Sequence[int] = (),
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self._requested_port = port
        self._requested_security = security
        self.proxied_ports = list(proxied_ports)
        self.proxied_listener_ports: list[int] = []
        self.security: BrokerSecurity = security or formatted_security(self.data_dir) or "PLAINTEXT"
        self.secrets = BrokerSecrets.of(self.data_dir)
        self.port: int | None = None
        self.controller_port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>`` once started."""
        if self.port is None:
            raise BrokerError("The broker has not been started: call start() first.")
        return f"{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        """Where the broker's own output goes (appended to on every start)."""
        return self.data_dir / LOG_FILE

    @property
    def pid(self) -> int | None:
        """The broker process id while this object's process runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def start(self, timeout_s: float = 60) -> str:
        """Format the storage if new, launch the broker, wait until it serves; returns bootstrap.

        Raises:
            JvmSetupError: Java 17+ is missing.
            BrokerError: another broker serves this ``data_dir``, the process died, or it did not
                answer within ``timeout_s``.
        """
        require_java()
        running = find_running_broker(self.data_dir)
        if running is not None:
            raise BrokerError(
                f"A broker (pid {running['pid']}) already serves {self.data_dir} at "
                f"{running['bootstrap_servers']}: use it, or stop it before starting another."
            )
        self.security = choose_security(self.data_dir, self._requested_security)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._choose_ports()
        props = self._write_config()
        deadline = time.monotonic() + timeout_s
        self._format_once(props, timeout_s)
        self._launch(props)
        try:
            left = max(deadline - time.monotonic(), 1.0)
            wait_for_broker(self.bootstrap_servers, left, check=self._check, security=self.client)
        except BaseException as err:  # Ctrl-C included: never leave a broker without broker.json
            self.stop()
            if isinstance(err, TimeoutError):
                raise BrokerError(self._explain(f"did not answer in {timeout_s:.0f}s")) from err
            raise
        self._write_state()
        return self.bootstrap_servers

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM the broker (SIGKILL after ``timeout_s``), remove ``broker.json``; also stops a
        broker that another process started from the same ``data_dir``."""
        running = find_running_broker(self.data_dir) if self._proc is None else None
        pid = self._proc.pid if self._proc is not None else running and int(running["pid"])
        if pid:
            terminate([pid], self._alive, timeout_s)
        self._proc = None
        (self.data_dir / STATE_FILE).unlink(missing_ok=True)

    @property
    def client(self) -> KafkaSecurity:
        """What a client of this broker needs (for SASL_SSL: the ``platform`` user)."""
        return self.secrets.client_security(self.security)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _choose_ports(self) -> None:
        previous = previous_ports(self.data_dir / "server.properties")
        # Reusing the last ports keeps the bootstrap address stable across restarts.
        port = self._requested_port or (previous[0] if previous else None)
        if port is None or (self._requested_port is None and port_open(port)):
            port = free_port()
        controller = previous[1] if previous and not port_open(previous[1]) else None
        if controller is None or controller == port:
            controller = free_port(taken={port})
        self.port, self.controller_port = port, controller
        taken = {port, controller, *self.proxied_ports}
        self.proxied_listener_ports = []
        for _ in self.proxied_ports:
            self.proxied_listener_ports.append(free_port(taken=taken))
            taken.add(self.proxied_listener_ports[-1])

    def _write_config(self) -> Path:
        assert self.port is not None and self.controller_port is not None
        props = self.data_dir / "server.properties"
        secrets = self.secrets if self.security == "SASL_SSL" else None
        if secrets is not None:
            secrets.create()
        ports = (HOST, self.port, self.controller_port)
        proxied = list(zip(self.proxied_listener_ports, self.proxied_ports, strict=True))
        # 0600: with SASL_SSL it holds the keystore's and the broker user's passwords.
        write_private(props, server_properties(self.data_dir, *ports, secrets, proxied))
        (self.data_dir / "log4j2.properties").write_text(LOG4J2)
        return props

    def _java(self, main: str, *args: str) -> list[str]:
        return java_command(self.data_dir / "log4j2.properties", main, *args)

    def _format_once(self, props: Path, timeout_s: float) -> None:
        if (self.data_dir / "logs" / "meta.properties").exists():
            return
        tool = ("kafka.tools.StorageTool", "format", "-t", new_cluster_id())
        cmd = self._java(*tool, "-c", str(props))
        scram = self.secrets.scram_args_file() if self.security == "SASL_SSL" else None
        if scram is not None:  # read by the tool (@file), so no password is on a command line
            cmd.append(f"@{scram}")
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        finally:
            if scram is not None:
                scram.unlink(missing_ok=True)
        if done.returncode != 0:
            raise BrokerError(
                f"Formatting the Kafka storage in {self.data_dir / 'logs'} failed:\n"
                f"{done.stdout}{done.stderr}\nRemove that folder and start again."
            )

    def _launch(self, props: Path) -> None:
        self._proc = launch(self._java("kafka.Kafka", str(props)), self.log_path, self.data_dir)

    def _check(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            code = self._proc.returncode
            self._proc = None
            raise BrokerError(self._explain(f"exited early with code {code}"))

    def _explain(self, what: str) -> str:
        lines = log_lines(self.log_path)
        return (
            f"The Kafka broker in {self.data_dir} {what}. Errors in {self.log_path}:\n"
            + "\n".join(java_errors(lines))
            + "\nLast lines:\n"
            + "\n".join(lines[-30:])
            + f"\nIf port {self.port} or {self.controller_port} is taken, pass another port; if "
            f"the storage is damaged, delete {self.data_dir} (drops its topics) and start again."
        )

    def _write_state(self) -> None:
        assert self._proc is not None
        ports: dict[str, Any] = {"port": self.port, "controller_port": self.controller_port}
        state = {"pid": self._proc.pid, **ports, "bootstrap_servers": self.bootstrap_servers}
        state["data_dir"] = str(self.data_dir)
        state["security_protocol"] = self.security
        if self.security == "SASL_SSL":  # where the secrets are, never their values
            state["sasl_username"], state["ssl_cafile"] = CLIENT_USER, str(self.secrets.ca_pem)
            state["sasl_password_file"] = str(self.secrets.password_file(CLIENT_USER))
        write_state(self.data_dir / STATE_FILE, state)

    def _alive(self, pid: int) -> bool:
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll() is None
        return pid_runs(pid, KAFKA_MAIN)


def _serves(state: dict[str, Any]) -> bool:
    """The broker of ``broker.json`` still runs: its process lives and its port answers."""
    return pid_runs(int(state["pid"]), KAFKA_MAIN) and port_open(int(state["port"]))
