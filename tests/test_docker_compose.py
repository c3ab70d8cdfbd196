"""docker-compose.yml is valid for Docker Compose with and without each profile, runs the services
each profile promises, wires the platform to them, publishes nothing beyond 127.0.0.1 and puts the
webserver behind the authenticating nginx. Static: `config` resolves the file, nothing starts."""

from __future__ import annotations

import atexit
import importlib.metadata
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from platform_pipelines.settings import REPO_ROOT

pytestmark = pytest.mark.compose

COMPOSE = REPO_ROOT / "docker-compose.yml"
BROKER_POM = REPO_ROOT / "jvm" / "kafka-broker" / "pom.xml"
NGINX_TEMPLATE = "deploy/nginx/dagster.conf.template"
WORKSPACE = REPO_ROOT / "deploy" / "dagster" / "workspace.yaml"
INSTANCE = REPO_ROOT / "dagster_home" / "dagster-postgres.yaml"
WEBSERVER_PORT = 3000
PASSWORD = "compose-test-password"  # what the test exports as DAGSTER_PG_PASSWORD

DEFAULT = {
    "kafka",
    "postgres",
    "dagster-code-server",
    "dagster-webserver",
    "dagster-daemon",
    "nginx",
}
PROFILES = {
    "kafka-cluster": {"kafka-1", "kafka-2", "kafka-3"},
    "spark": {"spark-master", "spark-worker"},
    "s3": {"s3"},
}
# What README "With Docker" (and the file's header) tells users to export with each profile.
PROFILE_ENV = {
    "kafka-cluster": {"PLATFORM_KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9092,kafka-2:9092,kafka-3:9092"},
    "spark": {"PLATFORM_SPARK_MASTER": "spark://spark-master:7077"},
    "s3": {"PLATFORM_LAKEHOUSE_DIR": "s3a://lakehouse/lakehouse"},
}
DAGSTER = ("dagster-code-server", "dagster-webserver", "dagster-daemon")
INTERPOLATED = re.compile(r"(PLATFORM|DAGSTER|COMPOSE)_\w+|PGPASSWORD")


@cache
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


@cache
def empty_env_file() -> str:
    """An empty file for --env-file (Compose v1 takes no /dev/null): no .env file applies."""
    fd, path = tempfile.mkstemp(suffix=".env")
    os.close(fd)
    atexit.register(os.remove, path)
    return path


def compose_config(
    *profiles: str, env: dict[str, str] | None = None, quiet: bool = False
) -> subprocess.CompletedProcess[str]:
    """`config` of docker-compose.yml with ``profiles`` on, interpolated from ``env`` only: the
    caller's PLATFORM_*/DAGSTER_* variables and any .env file are kept out."""
    clean = {k: v for k, v in os.environ.items() if not INTERPOLATED.fullmatch(k)}
    options = ["--env-file", empty_env_file(), "-f", str(COMPOSE)]
    options += [arg for profile in profiles for arg in ("--profile", profile)]
    return subprocess.run(
        [*compose_command(), *options, "config", *(["-q"] if quiet else [])],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**clean, "DAGSTER_PG_PASSWORD": PASSWORD, **(env or {})},
    )


@cache
def _resolved(profiles: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    result = compose_config(*profiles, env=dict(env))
    assert result.returncode == 0, result.stderr
    services: dict[str, Any] = yaml.safe_load(result.stdout)["services"]
    # Compose v2 prints only the enabled services; v1 prints all, with their profiles.
    return {
        name: service
        for name, service in services.items()
        if not service.get("profiles") or set(service["profiles"]) & set(profiles)
    }


def resolve(*profiles: str, **env: str) -> dict[str, Any]:
    """The enabled services as Compose resolves them (anchors merged, variables interpolated)."""
    return _resolved(profiles, tuple(sorted(env.items())))


def every_profile() -> dict[str, Any]:
    """All services, with every profile on and its variables exported as the README says."""
    env = {k: v for values in PROFILE_ENV.values() for k, v in values.items()}
    return resolve(*PROFILES, **env)


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


def env(service: dict[str, Any]) -> dict[str, str]:
    """The environment as strings (Compose v1 keeps YAML numbers, v2 prints strings)."""
    return {key: str(value) for key, value in (service.get("environment") or {}).items()}


def dependencies(service: dict[str, Any]) -> dict[str, str]:
    """Service -> condition of each dependency."""
    return {name: dep["condition"] for name, dep in service.get("depends_on", {}).items()}


def option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def listener(advertised: str, name: str) -> str:
    """host:port of the listener ``name`` in KAFKA_ADVERTISED_LISTENERS."""
    found = dict(entry.split("://") for entry in advertised.split(","))
    return found[name]


def local_broker_kafka_version() -> str:
    """The Kafka version the local broker runs: the kafka_2.13 dependency of its Maven POM."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    for dependency in ET.parse(BROKER_POM).getroot().iterfind("m:dependencies/m:dependency", ns):
        if dependency.findtext("m:artifactId", namespaces=ns) == "kafka_2.13":
            return dependency.findtext("m:version", namespaces=ns) or ""
    raise AssertionError(f"{BROKER_POM} declares no org.apache.kafka:kafka_2.13")


def pinned_pyspark() -> str:
    return pinned("pyspark")


def pinned(package: str) -> str:
    """The version pyproject.toml pins ``package`` to (``package==X.Y.Z``, runtime or dev)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    deps = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    pins = [
        m.group(1)
        for d in deps
        if (m := re.fullmatch(re.escape(package) + r"==(\d+\.\d+\.\d+)", d))
    ]
    assert len(pins) == 1, f"pyproject.toml must pin {package} exactly ({package}==X.Y.Z): {deps}"
    return pins[0]


@pytest.mark.parametrize("profile", [None, *PROFILES])
def test_config_is_valid_and_each_profile_adds_exactly_its_services(profile):
    # resolve() asserts that `config` succeeds.
    profiles = [profile] if profile else []
    assert set(resolve(*profiles)) == DEFAULT | PROFILES.get(profile or "", set())


def test_profile_variables_are_the_ones_the_file_documents():
    header = COMPOSE.read_text()
    for profile, variables in PROFILE_ENV.items():
        for name, value in variables.items():
            assert f"{name}={value}" in header, f"docker-compose.yml does not document {profile}"


def test_every_published_port_is_bound_to_loopback():
    services = every_profile()
    published = {name: published_ports(service) for name, service in services.items()}
    nginx_port = env(services["nginx"])["NGINX_LISTEN"]
    assert {name: ports for name, ports in published.items() if ports} == {
        "kafka": [("127.0.0.1", "29092", "29092")],
        "kafka-1": [("127.0.0.1", "29192", "29192")],
        "kafka-2": [("127.0.0.1", "29292", "29292")],
        "kafka-3": [("127.0.0.1", "29392", "29392")],
        "nginx": [("127.0.0.1", str(WEBSERVER_PORT), nginx_port)],
        "spark-master": [("127.0.0.1", "8080", "8080")],
    }
    # Each broker advertises, for clients on this machine, the address its port is published on.
    for name in ("kafka", "kafka-1", "kafka-2", "kafka-3"):
        _, port, _ = published[name][0]
        advertised = env(services[name])["KAFKA_ADVERTISED_LISTENERS"]
        assert listener(advertised, "EXTERNAL") == f"127.0.0.1:{port}"


def test_every_broker_is_the_local_brokers_kafka_version():
    brokers = {n: s for n, s in every_profile().items() if n.startswith("kafka")}
    assert set(brokers) == {"kafka", "kafka-1", "kafka-2", "kafka-3"}
    version = local_broker_kafka_version()
    assert {s["image"] for s in brokers.values()} == {f"apache/kafka:{version}"}


def test_single_broker_is_the_default_kafka_of_the_platform():
    services = resolve()
    kafka = env(services["kafka"])
    assert kafka["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert kafka["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093"
    replication = {k: v for k, v in kafka.items() if "REPLICATION_FACTOR" in k or "MIN_ISR" in k}
    assert set(replication.values()) == {"1"}
    # Its log folder is the volume (the image's default is inside the container).
    assert mounts(services["kafka"])[kafka["KAFKA_LOG_DIRS"]] == ("kafka-data", False)
    for name in DAGSTER:
        platform = env(services[name])
        assert platform["PLATFORM_KAFKA_BOOTSTRAP_SERVERS"] == listener(
            kafka["KAFKA_ADVERTISED_LISTENERS"], "PLAINTEXT"
        )
        assert dependencies(services[name])["kafka"] == "service_healthy"


def test_kafka_cluster_is_a_three_voter_quorum_that_keeps_three_replicas():
    services = every_profile()
    nodes = {name: env(services[name]) for name in ("kafka-1", "kafka-2", "kafka-3")}
    quorum = {node["KAFKA_CONTROLLER_QUORUM_VOTERS"] for node in nodes.values()}
    assert quorum == {"1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"}
    voters = dict(voter.split("@") for voter in quorum.pop().split(","))
    replicas = len(voters)
    for name, node in nodes.items():
        assert node["KAFKA_PROCESS_ROLES"] == "broker,controller"
        # Each voter is a node, at its controller listener.
        controller = listener(node["KAFKA_LISTENERS"], "CONTROLLER")
        assert voters[node["KAFKA_NODE_ID"]] == f"{name}{controller}"
        assert mounts(services[name])[node["KAFKA_LOG_DIRS"]] == (f"{name}-data", False)
        # New topics and the offsets, transaction and share-state topics get a replica on every
        # node, and a write needs all but one in sync: any one node may be down.
        assert node["KAFKA_DEFAULT_REPLICATION_FACTOR"] == str(replicas)
        assert node["KAFKA_MIN_INSYNC_REPLICAS"] == str(replicas - 1)
        for topic in ("OFFSETS_TOPIC", "TRANSACTION_STATE_LOG", "SHARE_COORDINATOR_STATE_TOPIC"):
            assert node[f"KAFKA_{topic}_REPLICATION_FACTOR"] == str(replicas)
        for topic in ("TRANSACTION_STATE_LOG", "SHARE_COORDINATOR_STATE_TOPIC"):
            assert node[f"KAFKA_{topic}_MIN_ISR"] == str(replicas - 1)
    assert replicas == 3
    # One cluster, formatted with one id (not the single broker's).
    assert len({node["CLUSTER_ID"] for node in nodes.values()}) == 1
    assert nodes["kafka-1"]["CLUSTER_ID"] != env(services["kafka"])["CLUSTER_ID"]
    # The platform bootstraps from every node's PLAINTEXT listener on the compose network.
    bootstrap = ",".join(
        listener(node["KAFKA_ADVERTISED_LISTENERS"], "PLAINTEXT") for node in nodes.values()
    )
    assert bootstrap == "kafka-1:9092,kafka-2:9092,kafka-3:9092"
    for name in DAGSTER:
        assert env(services[name])["PLATFORM_KAFKA_BOOTSTRAP_SERVERS"] == bootstrap


def test_dagster_instance_is_the_postgres_service_and_its_password_is_not_in_the_file():
    services = resolve()
    postgres = services["postgres"]
    assert re.fullmatch(r"postgres:\d+\.\d+-\w+", postgres["image"]), "pin the postgres image"
    assert "ports" not in postgres
    assert "pg_isready" in postgres["healthcheck"]["test"]
    db = env(postgres)
    assert db["POSTGRES_PASSWORD"] == PASSWORD
    storage = yaml.safe_load(INSTANCE.read_text())["storage"]["postgres"]["postgres_db"]
    instance_vars = {field["env"] for field in storage.values() if isinstance(field, dict)}
    for name in DAGSTER:
        service = services[name]
        platform = env(service)
        assert instance_vars <= set(platform)
        assert (platform["DAGSTER_PG_HOST"], platform["DAGSTER_PG_PORT"]) == ("postgres", "5432")
        assert platform["DAGSTER_PG_USERNAME"] == db["POSTGRES_USER"]
        assert platform["DAGSTER_PG_DB"] == db["POSTGRES_DB"]
        assert platform["DAGSTER_PG_PASSWORD"] == PASSWORD
        # The stream locks: the same database; libpq reads the password from PGPASSWORD.
        assert platform["PLATFORM_LOCK_DATABASE_URL"] == (
            f"postgresql://{db['POSTGRES_USER']}@postgres:5432/{db['POSTGRES_DB']}"
        )
        assert platform["PGPASSWORD"] == PASSWORD
        # with-dagster-home copies /app/dagster.yaml into DAGSTER_HOME (Dockerfile).
        assert mounts(service)["/app/dagster.yaml"] == (str(INSTANCE), True)
        assert service["command"][0] == "with-dagster-home"
        assert dependencies(service)["postgres"] == "service_healthy"
    # No default in the file: without the variable, Compose refuses and says what to set.
    raw = yaml.safe_load(COMPOSE.read_text())
    assert raw["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith(
        "${DAGSTER_PG_PASSWORD:?"
    )
    missing = compose_config(env={"DAGSTER_PG_PASSWORD": ""}, quiet=True)
    assert missing.returncode != 0
    assert "Set DAGSTER_PG_PASSWORD" in missing.stderr


def test_webserver_and_daemon_load_the_code_from_the_grpc_code_server():
    services = resolve()
    server = services["dagster-code-server"]
    command = server["command"]
    assert command[1:4] == ["dagster", "code-server", "start"]
    assert option(command, "-h") == "0.0.0.0"
    assert option(command, "-m") == "platform_pipelines.definitions"
    port = option(command, "-p")
    health = ["CMD", "dagster", "api", "grpc-health-check", "-p", port]
    assert server["healthcheck"]["test"] == health
    assert yaml.safe_load(WORKSPACE.read_text())["load_from"] == [
        {
            "grpc_server": {
                "host": server["hostname"],
                "port": int(port),
                "location_name": option(command, "--location-name"),
            }
        }
    ]
    assert server["hostname"] == "dagster-code-server"
    for name in ("dagster-webserver", "dagster-daemon"):
        service = services[name]
        workspace = option(service["command"], "-w")
        assert mounts(service)[workspace] == (str(WORKSPACE), True)
        assert "-m" not in service["command"]
        assert dependencies(service)["dagster-code-server"] == "service_healthy"


def test_spark_cluster_runs_the_drivers_spark_and_python():
    services = every_profile()
    server = services["dagster-code-server"]
    master, worker = services["spark-master"], services["spark-worker"]
    # The driver's image (built from this repo, pyspark pinned in pyproject.toml) runs the
    # cluster: the executors get the driver's Spark and Python by construction, and that Spark
    # is the one the tests run here.
    assert importlib.metadata.version("pyspark") == pinned_pyspark()
    assert "pip install --no-cache-dir -e ." in (REPO_ROOT / "Dockerfile").read_text()
    for service in (master, worker):
        assert service["image"] == server["image"]
        assert Path(service["build"]["context"]) == REPO_ROOT
    assert master["command"][:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert worker["command"][:2] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
    url = f"spark://{option(master['command'], '--host')}:{option(master['command'], '--port')}"
    assert worker["command"][-1] == url
    assert dependencies(worker) == {"spark-master": "service_healthy"}
    for name in DAGSTER:
        platform = env(services[name])
        assert platform["PLATFORM_SPARK_MASTER"] == url
        # The executors connect back to the driver in the code server.
        assert platform["PLATFORM_SPARK_DRIVER_HOST"] == server["hostname"]
        assert platform["PLATFORM_SPARK_BIND_ADDRESS"] == "0.0.0.0"
    # A lakehouse folder is the same volume, at the same path, for the driver and the executors.
    local_dir = env(server)["PLATFORM_LOCAL_DIR"]
    assert mounts(worker)[local_dir] == mounts(server)[local_dir] == ("lakehouse", False)
    # Without the variable, every run stays in its own process (local[*]) as before.
    assert env(resolve("spark")["dagster-code-server"])["PLATFORM_SPARK_MASTER"] == "local[*]"


def test_s3_server_creates_the_bucket_of_the_lakehouse(tmp_path):
    services = every_profile()
    s3 = services["s3"]
    # The moto the tests run (pyproject.toml's dev pin), with the tests' launcher.
    assert s3["image"] == f"motoserver/moto:{pinned('moto[server]')}"
    assert mounts(s3)["/deploy/s3/moto_server.py"] == (
        str(REPO_ROOT / "deploy" / "s3" / "moto_server.py"),
        True,
    )
    assert "ports" not in s3
    lakehouse = PROFILE_ENV["s3"]["PLATFORM_LAKEHOUSE_DIR"]
    port = env(s3)["MOTO_PORT"]
    for name in DAGSTER:
        platform = env(services[name])
        assert platform["PLATFORM_LAKEHOUSE_DIR"] == env(s3)["PLATFORM_LAKEHOUSE_DIR"] == lakehouse
        assert platform["PLATFORM_S3_ENDPOINT"] == f"http://s3:{port}"
        assert platform["PLATFORM_S3_PATH_STYLE_ACCESS"] == "true"
    # Run the service's start script with a stand-in for python that logs its arguments.
    shell, script = s3["entrypoint"]
    source, _ = mounts(s3)[script]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/python.log"\n')
    (bin_dir / "python").chmod(0o755)
    run_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    result = subprocess.run(
        [shell, source], env={**run_env, **env(s3)}, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    # The server starts in the background, so the two calls may be logged in either order.
    bucket, server = sorted((tmp_path / "python.log").read_text().splitlines())
    assert server == f"/deploy/s3/moto_server.py --host 0.0.0.0 --port {port}"
    assert bucket.startswith("-c import sys, urllib.request") and bucket.endswith(
        f" http://127.0.0.1:{port}/lakehouse"
    )
    assert (tmp_path / "bucket-created").exists()
    assert s3["healthcheck"]["test"] == ["CMD", "test", "-f", "/tmp/bucket-created"]
    # Without an s3a:// lakehouse, the server refuses to start and says what to set.
    (tmp_path / "python.log").unlink()
    unset = env(resolve("s3")["s3"])
    refused = subprocess.run(
        [shell, source], env={**run_env, **unset}, capture_output=True, text=True, timeout=30
    )
    assert refused.returncode == 1
    assert "Set PLATFORM_LAKEHOUSE_DIR=s3a://lakehouse/lakehouse" in " ".join(
        refused.stderr.split()
    )
    assert not (tmp_path / "python.log").exists()


def test_webserver_is_reached_only_through_the_authenticating_proxy():
    services = resolve()
    webserver, nginx = services["dagster-webserver"], services["nginx"]
    assert "ports" not in webserver
    assert option(webserver["command"], "-p") == str(WEBSERVER_PORT)
    assert re.fullmatch(r"nginx:\d+\.\d+\.\d+(-\w+)?", nginx["image"]), "pin the nginx image"
    assert "dagster-webserver" in nginx["depends_on"]
    nginx_env = env(nginx)
    assert nginx_env["DAGSTER_UPSTREAM"] == f"dagster-webserver:{WEBSERVER_PORT}"
    # The image renders the committed config; the user file comes from the git-ignored folder
    # the README tells users to fill.
    assert mounts(nginx) == {
        "/etc/nginx/templates/default.conf.template": (str(REPO_ROOT / NGINX_TEMPLATE), True),
        "/etc/nginx/auth": (str(REPO_ROOT / "deploy" / "nginx" / "auth"), True),
    }
    assert nginx_env["NGINX_HTPASSWD"].startswith("/etc/nginx/auth/")
    placeholders = re.findall(r"\$\{(\w+)\}", (REPO_ROOT / NGINX_TEMPLATE).read_text())
    assert set(placeholders) <= set(nginx_env), (
        "the nginx service leaves a placeholder of its config unset"
    )
