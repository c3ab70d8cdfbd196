"""Kafka over SASL_SSL end to end: the local broker started with `platform kafka start --security
sasl_ssl`, clients without TLS or with a wrong password refused with what to fix, a stream run by
Dagster reading over TLS + SCRAM-SHA-512, and its password nowhere in what the run leaves behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pytest
from dagster._serdes import serialize_value
from pydantic import SecretStr

from platform_pipelines.defs.jobs import make_stream_job
from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.kafka.admin import create_topics, probe
from platform_pipelines.kafka.broker import LocalKafkaBroker, find_running_broker
from platform_pipelines.kafka.clients import KafkaAccessError
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.kafka.tls import BrokerSecrets
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.watch import BrokerWatch
from platform_pipelines.settings import get_settings
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from tests.integration.events import U1_SHOPPING

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.dagster]

PLATFORM = str(Path(sys.executable).with_name("platform"))
TOPIC = "secure_clickstream"


@dataclass(frozen=True)
class SecureBroker:
    """The SASL_SSL broker of ``local_dir`` (PLATFORM_LOCAL_DIR) and what its start printed."""

    local_dir: Path
    bootstrap: str
    start_output: str

    @property
    def secrets(self) -> BrokerSecrets:
        return BrokerSecrets.of(self.local_dir / "kafka")

    @property
    def password(self) -> str:
        return self.secrets.password("platform")


def cli_env(local_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a user whose PLATFORM_LOCAL_DIR is ``local_dir`` (jars reused)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLATFORM_KAFKA_")}
    env.pop("PLATFORM_LAKEHOUSE_DIR", None)
    return {
        **env,
        "PLATFORM_LOCAL_DIR": str(local_dir),
        "COLUMNS": "200",
        "PLATFORM_JARS_DIR": str(get_settings().jars_dir),
        **extra,
    }


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """`platform kafka start --security sasl_ssl` in a fresh PLATFORM_LOCAL_DIR, as a user would."""
    local_dir = tmp_path_factory.mktemp("secure")
    started = subprocess.run(
        [PLATFORM, "kafka", "start", "--security", "sasl_ssl"],
        env=cli_env(local_dir),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        running = find_running_broker(local_dir / "kafka")
        assert running is not None
        yield SecureBroker(local_dir, running["bootstrap_servers"], started.stdout)
    finally:
        LocalKafkaBroker(local_dir / "kafka").stop()


def exported_env(broker: SecureBroker) -> dict[str, str]:
    """The PLATFORM_KAFKA_* variables a shell has after `eval "$(platform kafka env)"`."""
    script = f'eval "$({PLATFORM} kafka env)" && env -0'
    done = subprocess.run(
        ["bash", "-c", script],
        env=cli_env(broker.local_dir),
        capture_output=True,
        check=True,
        timeout=120,
    )
    pairs = (item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    return {k: v for k, v in pairs if k.startswith("PLATFORM_KAFKA_")}


def test_the_broker_starts_in_sasl_ssl_mode_and_says_what_to_export(
    secure_broker: SecureBroker,
) -> None:
    secrets, out = secure_broker.secrets, secure_broker.start_output
    info = json.loads((secure_broker.local_dir / "kafka" / "broker.json").read_text())

    assert info["security_protocol"] == "SASL_SSL"
    assert info["ssl_cafile"] == str(secrets.ca_pem)
    assert out.splitlines()[-5:] == secrets.export_lines()
    assert f'export PLATFORM_KAFKA_SASL_PASSWORD="$(cat {secrets.folder}/platform.password)"' in out
    assert secure_broker.password not in out
    assert oct(secrets.password_file("platform").stat().st_mode & 0o777) == "0o600"
    assert oct(secrets.folder.stat().st_mode & 0o777) == "0o700"
    assert exported_env(secure_broker) == {
        "PLATFORM_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "PLATFORM_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "PLATFORM_KAFKA_SASL_USERNAME": "platform",
        "PLATFORM_KAFKA_SASL_PASSWORD": secure_broker.password,
        "PLATFORM_KAFKA_SSL_CAFILE": str(secrets.ca_pem),
    }


def test_a_plaintext_client_and_a_wrong_password_are_refused_saying_what_to_fix(
    secure_broker: SecureBroker,
) -> None:
    client = secure_broker.secrets.client_security()
    plaintext = secure_broker.secrets.client_security("PLAINTEXT")
    wrong = client.model_copy(update={"sasl_password": SecretStr("not-the-password")})

    assert probe(secure_broker.bootstrap, 60, security=client) == 1
    with pytest.raises(KafkaAccessError) as no_tls:
        probe(secure_broker.bootstrap, 10, security=plaintext)
    with pytest.raises(KafkaAccessError) as bad_password:
        produce_events(secure_broker.bootstrap, TOPIC, [{"user_id": "u"}], security=wrong)

    assert (
        f"The Kafka broker at {secure_broker.bootstrap} expects TLS, but "
        "PLATFORM_KAFKA_SECURITY_PROTOCOL is PLAINTEXT: set it to SASL_SSL"
    ) in str(no_tls.value)
    refused = str(bad_password.value)
    assert f"The Kafka broker at {secure_broker.bootstrap} " in refused
    assert "user 'platform' (SCRAM-SHA-512)" in refused  # refused, or closed while refusing
    assert (
        "check PLATFORM_KAFKA_SASL_USERNAME, PLATFORM_KAFKA_SASL_PASSWORD and "
        "PLATFORM_KAFKA_SASL_MECHANISM"
    ) in refused
    assert "not-the-password" not in refused


def test_a_stream_whose_kafka_client_is_refused_says_so_in_its_run_log(
    secure_broker: SecureBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark's Kafka source without TLS retries a TLS listener forever in silence."""
    for name in [n for n in os.environ if n.startswith("PLATFORM_KAFKA_")]:
        monkeypatch.delenv(name)
    stream = builtin_streams(BuiltinSettings(clickstream_topic=TOPIC)).get("clickstream_raw")
    warnings: list[str] = []
    log = SimpleNamespace(warning=warnings.append, info=warnings.append)

    BrokerWatch(secure_broker.bootstrap, [stream], log).check()

    assert warnings == [
        f"clickstream_raw cannot read from Kafka: The Kafka broker at {secure_broker.bootstrap} "
        "expects TLS, but PLATFORM_KAFKA_SECURITY_PROTOCOL is PLAINTEXT: set it to SASL_SSL (or "
        'SSL) with the credentials and PLATFORM_KAFKA_SSL_CAFILE (for the local broker: eval "$('
        'platform kafka env)").'
    ]


def files_holding(root: Path, secret: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_stream_runs_end_to_end_over_sasl_ssl_and_its_password_shows_nowhere(
    spark, secure_broker: SecureBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        **cli_env(secure_broker.local_dir),
        **exported_env(secure_broker),
        "PLATFORM_KAFKA_BOOTSTRAP_SERVERS": secure_broker.bootstrap,
        "PLATFORM_CLICKSTREAM_TOPIC": TOPIC,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PLATFORM_LAKEHOUSE_DIR", raising=False)
    create_topics(secure_broker.bootstrap, {TOPIC: 1})
    produce_events(secure_broker.bootstrap, TOPIC, U1_SHOPPING)
    stream = builtin_streams(BuiltinSettings(clickstream_topic=TOPIC)).get("clickstream_raw")
    job = make_stream_job("stream_clickstream_raw", [stream], "test")
    dagster_dir = tmp_path / "dagster"
    dagster_dir.mkdir()
    instance = dg.DagsterInstance.local_temp(tempdir=str(dagster_dir))

    result = job.execute_in_process(
        instance=instance,
        run_config={"ops": {"run_stream_clickstream_raw": {"config": {"mode": "catch_up"}}}},
        resources={
            "spark": SparkStreamingResource(state_partitions=2),
            "kafka": KafkaResource(),
            "lakehouse": LakehouseResource(),
        },
    )

    assert result.success
    table = Lakehouse(secure_broker.local_dir / "lakehouse").table("clickstream_raw")
    rows = spark.read.format("delta").load(str(table)).orderBy("kafka_offset")
    columns = ("kafka_offset", "event_id", "user_id", "event_type", "page", "amount")
    assert [tuple(r) for r in rows.select(*columns).collect()] == [
        (0, "e1", "u1", "page_view", "/home", None),
        (1, "e2", "u1", "page_view", "/product/1", None),
        (2, "e3", "u1", "add_to_cart", "/product/1", None),
        (3, "e4", "u1", "checkout", "/checkout", None),
        (4, "e5", "u1", "purchase", "/checkout", 25.5),
        (5, "e6", "u1", "logout", None, None),
    ]

    password = secure_broker.password
    run = instance.get_run_by_id(result.run_id)
    assert run is not None
    events = instance.all_logs(result.run_id)
    compute_logs = [p for p in (dagster_dir / "storage").rglob("*") if p.suffix in (".out", ".err")]
    status = subprocess.run(
        [PLATFORM, "status"], env=env, capture_output=True, text=True, timeout=300, check=False
    )

    assert len(events) > 10 and compute_logs
    assert password not in serialize_value(events)
    assert password not in json.dumps(run.run_config) + json.dumps(run.tags)
    assert files_holding(dagster_dir, password) == []
    assert status.returncode == 0, status.stdout + status.stderr
    assert password not in status.stdout + status.stderr
    row = next(line for line in status.stdout.splitlines() if "clickstream_raw" in line)
    stream, _, _, _, lag = (cell.strip() for cell in row.split("│")[1:6])
    assert (stream, lag) == ("clickstream_raw", "0"), status.stdout  # read over SASL_SSL
