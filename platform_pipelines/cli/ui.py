"""`platform ui`: the local broker and the Dagster UI (webserver + daemon) on dagster_home."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import click

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.settings import REPO_ROOT, get_settings


def dagster_dev_command(host: str, port: int) -> list[str]:
    """`dagster dev` (webserver + daemon + code server) on this project's code location."""
    return [
        sys.executable,
        "-m",
        "dagster",
        "dev",
        "-m",
        "platform_pipelines.definitions",
        "--host",
        host,
        "--port",
        str(port),
    ]


def port_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


@click.command(short_help="Start the local broker and the Dagster UI (webserver + daemon).")
@click.option("--port", default=3000, show_default=True, help="Port of the Dagster webserver.")
@click.option("--host", default="127.0.0.1", show_default=True)
@friendly_errors
def ui(port: int, host: str) -> None:
    """Start the local Kafka broker (unless one is configured) and the Dagster UI (webserver +
    daemon) on dagster_home. Ctrl-C stops both. Refuses at once when the port is taken."""
    from platform_pipelines.cli.demo_steps import use_project_instance
    from platform_pipelines.cli.kafka import ensure_broker
    from platform_pipelines.kafka.broker import LocalKafkaBroker

    if not port_free(host, port):
        raise click.ClickException(
            f"Port {port} on {host} is taken (another `platform ui` or Dagster runs there): stop "
            "it, or use --port to pick another."
        )
    settings = get_settings()
    home = use_project_instance()
    bootstrap, started = ensure_broker(settings)
    env = {**os.environ, "PLATFORM_KAFKA_BOOTSTRAP_SERVERS": bootstrap, "DAGSTER_HOME": str(home)}
    console.print(f"Kafka at {bootstrap}; Dagster UI at http://{host}:{port} (Ctrl-C stops both)")
    try:
        subprocess.run(dagster_dev_command(host, port), env=env, cwd=REPO_ROOT, check=False)
    except KeyboardInterrupt:
        pass
    finally:
        if started:
            LocalKafkaBroker(settings.broker_dir).stop()
            console.print("Kafka broker stopped.")
