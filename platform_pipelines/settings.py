"""Where the platform keeps its local state, read from the environment in one place.

Every path a run creates (broker data, Delta tables, checkpoints, progress files) lives under
``local_dir`` (``.local/`` at the repo root by default, git-ignored). Override any field with an
environment variable of the same name prefixed ``PLATFORM_``, e.g. ``PLATFORM_LOCAL_DIR=/data``.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict
from upath import UPath

REPO_ROOT = Path(__file__).resolve().parent.parent
# The SparkSession's defaults, for the deployment's settings below and for
# ``spark.session.SparkOptions`` alike; each suits a 2-core laptop.
DEFAULT_SPARK_MASTER = "local[*]"
DEFAULT_STATE_PARTITIONS = 4
DEFAULT_MIN_BATCHES_TO_RETAIN = 20
DEFAULT_DRIVER_MEMORY = "2g"
DEFAULT_SPARK_UI_ENABLED = True
DEFAULT_SPARK_BIND_ADDRESS = "127.0.0.1"


class PlatformSettings(BaseSettings):
    """Paths and endpoints shared by the CLI, the Dagster definitions and the tests."""

    model_config = SettingsConfigDict(env_prefix="PLATFORM_", frozen=True, populate_by_name=True)

    local_dir: Path = REPO_ROOT / ".local"
    # A folder, or an S3 location (``s3a://bucket/prefix``: see the ``s3_*`` settings).
    lakehouse_dir_override: str | None = Field(default=None, alias="PLATFORM_LAKEHOUSE_DIR")
    jars_dir_override: Path | None = Field(default=None, alias="PLATFORM_JARS_DIR")
    kafka_bootstrap_servers: str | None = None
    spark_master: str = DEFAULT_SPARK_MASTER
    spark_log_level: str = "WARN"
    # The SparkSession (see ``spark.session.SparkOptions``); the health checks judge checkpoints
    # against these same numbers.
    state_partitions: int = DEFAULT_STATE_PARTITIONS
    min_batches_to_retain: int = DEFAULT_MIN_BATCHES_TO_RETAIN
    driver_memory: str = DEFAULT_DRIVER_MEMORY
    spark_ui_enabled: bool = DEFAULT_SPARK_UI_ENABLED
    # Where the driver listens (RPC, block manager, Spark UI): loopback unless a deployment says
    # otherwise. On a cluster, executors must reach the driver: bind 0.0.0.0 (or an interface)
    # and set the driver host to an address the workers can reach.
    spark_bind_address: str = DEFAULT_SPARK_BIND_ADDRESS
    spark_driver_host: str | None = None
    # Any other Spark setting, for the deployment only (JSON object); run config takes tuning
    # keys only (spark/policy.py).
    spark_extra_conf: dict[str, str] = Field(default_factory=dict)
    clickstream_topic: str = "clickstream"
    heartbeats_topic: str = "service_heartbeats"
    # What the built-in ``events`` reads: ``bronze`` (the clickstream_raw table) or ``kafka`` (the
    # topic itself, beside bronze: about half the end-to-end latency; README "Benchmarks").
    events_reads: Literal["bronze", "kafka"] = "bronze"
    # Modules whose STREAMS list declares user streams (comma-separated), loaded into Dagster.
    stream_modules: str = "user_streams.running_count"
    # The health layer (see README "Health"): how often the sensors look, when the deep checks run,
    # how failed streams are relaunched, and how stale a table may get.
    health_sensor_interval_seconds: int = 30
    health_check_cron: str = "*/15 * * * *"
    health_schedule_running: bool = True
    # The daily table_maintenance schedules (defs/maintenance.py) start running unless set false.
    maintenance_schedule_running: bool = True
    restart_max_attempts: int = 5
    restart_base_delay_seconds: float = 30.0
    restart_max_delay_seconds: float = 600.0
    freshness_max_age_seconds: float = 3600.0
    # A PostgreSQL database (``postgresql://user:password@host:port/db``, usually the Dagster
    # instance's) that holds the stream locks when processes on several machines share the
    # checkpoints; unset, a checkpoint is locked with a file lock on this machine.
    lock_database_url: SecretStr | None = None
    # An S3 API for an ``s3a://`` lakehouse: AWS itself when no endpoint is given, any
    # S3-compatible server otherwise. Without keys, the default AWS credential chain (environment,
    # profile, instance role) is used, by Spark and by the platform's own reads alike.
    s3_endpoint: str | None = None
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = None
    s3_secret_access_key: SecretStr | None = None
    # Most S3-compatible servers (MinIO, moto, Ceph) want ``http://host/bucket/key`` addressing.
    s3_path_style_access: bool = False

    @cached_property
    def lakehouse_dir(self) -> Path:
        """Every Delta table and checkpoint (PLATFORM_LAKEHOUSE_DIR, else .local/lakehouse).

        An ``s3a://`` location is a ``upath.UPath``: it has ``Path``'s API (``/``, ``read_text``,
        ``glob``...) over the S3 API, so the platform's own reads of logs and checkpoints work
        the same on both; Spark gets ``str(path)``, the same ``s3a://`` URI.
        """
        where = self.lakehouse_dir_override
        if where is None:
            return self.local_dir / "lakehouse"
        if not is_uri(where):
            return Path(where)
        if not where.startswith("s3a://"):
            raise ValueError(
                f"PLATFORM_LAKEHOUSE_DIR={where!r}: only local folders and s3a:// locations are "
                "supported. Use s3a://<bucket>/<prefix> for S3 or an S3-compatible server."
            )
        return cast(Path, UPath(where, **self.s3_storage_options()))

    def s3_storage_options(self) -> dict[str, Any]:
        """fsspec's S3 options for the ``s3_*`` settings. Listings are never cached: the
        exactly-once writers look for their last commit in a Delta log others append to."""
        options: dict[str, Any] = {
            "use_listings_cache": False,
            "client_kwargs": {"region_name": self.s3_region},
        }
        if self.s3_endpoint:
            options["endpoint_url"] = self.s3_endpoint
        if self.s3_access_key_id and self.s3_secret_access_key:
            options["key"] = self.s3_access_key_id
            options["secret"] = self.s3_secret_access_key.get_secret_value()
        if self.s3_path_style_access:
            options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
        return options

    @property
    def jars_dir(self) -> Path:
        """Resolved JVM jars (PLATFORM_JARS_DIR, else .local/jars)."""
        return self.jars_dir_override or self.local_dir / "jars"

    @property
    def progress_dir(self) -> Path:
        """Per-stream progress records, written by running streams, read by sensors and the CLI."""
        return self.local_dir / "progress"

    @property
    def broker_dir(self) -> Path:
        return self.local_dir / "kafka"

    def bootstrap_servers(self) -> str:
        """The Kafka address: the env override, else the running local broker, else localhost."""
        if self.kafka_bootstrap_servers:
            return self.kafka_bootstrap_servers
        state = self.broker_dir / "broker.json"
        if state.exists():
            return str(json.loads(state.read_text())["bootstrap_servers"])
        return "localhost:9092"


def is_uri(location: object) -> bool:
    """Whether ``location`` names an object store rather than a local folder.

    >>> is_uri("s3a://bucket/lake"), is_uri("/data/lake"), is_uri(Path("relative"))
    (True, False, False)
    """
    return "://" in str(location)


def get_settings() -> PlatformSettings:
    """Settings as the environment has them now (not cached: tests change the environment)."""
    return PlatformSettings()
