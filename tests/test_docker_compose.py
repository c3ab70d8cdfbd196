"""docker-compose.yml is valid for Docker Compose and wires Kafka to the Dagster services."""

from __future__ import annotations

import shutil
import subprocess

import yaml

from platform_pipelines.settings import REPO_ROOT

COMPOSE = REPO_ROOT / "docker-compose.yml"


def compose_command() -> list[str]:
    if (
        shutil.which("docker")
        and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    ):
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise AssertionError(
        "Neither `docker compose` nor `docker-compose` is installed: "
        "install one (Debian: apt-get install docker-compose)."
    )


def test_compose_file_passes_docker_compose_config():
    result = subprocess.run(
        [*compose_command(), "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr


def test_compose_runs_kafka_in_kraft_mode_and_points_dagster_at_it():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert set(services) == {"kafka", "dagster-webserver", "dagster-daemon"}
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    for name in ("dagster-webserver", "dagster-daemon"):
        env = services[name]["environment"]
        assert env["PLATFORM_KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"
        assert "platform_pipelines.definitions" in services[name]["command"]
    assert "3000:3000" in services["dagster-webserver"]["ports"]
