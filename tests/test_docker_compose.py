"""docker-compose.yml is valid for Docker Compose, wires Kafka to the Dagster services, publishes
nothing beyond 127.0.0.1 and puts the webserver behind the authenticating nginx."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from typing import Any

import pytest
import yaml

from platform_pipelines.settings import REPO_ROOT

COMPOSE = REPO_ROOT / "docker-compose.yml"
BROKER_POM = REPO_ROOT / "jvm" / "kafka-broker" / "pom.xml"
NGINX_TEMPLATE = "deploy/nginx/dagster.conf.template"
WEBSERVER_PORT = 3000


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


def compose_config(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*compose_command(), "-f", str(COMPOSE), "config", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    """The services as Docker Compose resolves them (anchors merged, ports normalized)."""
    result = compose_config()
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["services"]


def published_ports(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(host address, host port, container port) of each published port, from Compose v1
    ("ip:host:container/tcp") or v2 (a mapping) output; the address is "" when none is given."""
    ports = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            ports.append(
                (port.get("host_ip", ""), str(port.get("published", "")), str(port["target"]))
            )
        else:
            *host, container = str(port).split("/")[0].split(":")
            ports.append((host[0] if len(host) == 2 else "", host[-1] if host else "", container))
    return ports


def mounts(service: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Container path -> (source, read-only) of each volume, from Compose v1 or v2 output."""
    found = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            found[volume["target"]] = (volume["source"], bool(volume.get("read_only")))
        else:
            source, target, *mode = str(volume).split(":")
            found[target] = (source, mode == ["ro"])
    return found


def local_broker_kafka_version() -> str:
    """The Kafka version the local broker runs: the kafka_2.13 dependency of its Maven POM."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    for dependency in ET.parse(BROKER_POM).getroot().iterfind("m:dependencies/m:dependency", ns):
        if dependency.findtext("m:artifactId", namespaces=ns) == "kafka_2.13":
            return dependency.findtext("m:version", namespaces=ns) or ""
    raise AssertionError(f"{BROKER_POM} declares no org.apache.kafka:kafka_2.13")


def test_compose_file_passes_docker_compose_config():
    result = compose_config("-q")
    assert result.returncode == 0, result.stderr


def test_compose_runs_kafka_in_kraft_mode_and_points_dagster_at_it(services):
    assert set(services) == {"kafka", "dagster-webserver", "dagster-daemon", "nginx"}
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    for name in ("dagster-webserver", "dagster-daemon"):
        env = services[name]["environment"]
        assert env["PLATFORM_KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"
        assert "platform_pipelines.definitions" in services[name]["command"]


def test_every_published_port_is_bound_to_loopback(services):
    published = {name: published_ports(service) for name, service in services.items()}
    assert {name: ports for name, ports in published.items() if ports} == {
        "kafka": [("127.0.0.1", "29092", "29092")],
        "nginx": [
            ("127.0.0.1", str(WEBSERVER_PORT), services["nginx"]["environment"]["NGINX_LISTEN"])
        ],
    }
    # The broker advertises the address its port is published on.
    listeners = services["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    assert "EXTERNAL://127.0.0.1:29092" in listeners.split(",")


def test_compose_broker_is_the_local_brokers_kafka_version(services):
    assert services["kafka"]["image"] == f"apache/kafka:{local_broker_kafka_version()}"


def test_webserver_is_reached_only_through_the_authenticating_proxy(services):
    webserver, nginx = services["dagster-webserver"], services["nginx"]
    assert "ports" not in webserver
    assert webserver["command"][webserver["command"].index("-p") + 1] == str(WEBSERVER_PORT)
    assert re.fullmatch(r"nginx:\d+\.\d+\.\d+(-\w+)?", nginx["image"]), "pin the nginx image"
    assert "dagster-webserver" in nginx["depends_on"]
    env = nginx["environment"]
    assert env["DAGSTER_UPSTREAM"] == f"dagster-webserver:{WEBSERVER_PORT}"
    # The image renders the committed config; the user file comes from the git-ignored folder
    # the README tells users to fill.
    assert mounts(nginx) == {
        "/etc/nginx/templates/default.conf.template": (str(REPO_ROOT / NGINX_TEMPLATE), True),
        "/etc/nginx/auth": (str(REPO_ROOT / "deploy" / "nginx" / "auth"), True),
    }
    assert env["NGINX_HTPASSWD"].startswith("/etc/nginx/auth/")
    placeholders = re.findall(r"\$\{(\w+)\}", (REPO_ROOT / NGINX_TEMPLATE).read_text())
    assert set(placeholders) <= set(env), (
        "the nginx service leaves a placeholder of its config unset"
    )
