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

    local_dir: Path = Field(
        default=REPO_ROOT / ".local",
        description="Everything a run creates on this machine: jars, broker data, progress "
        "records, and the lakehouse unless PLATFORM_LAKEHOUSE_DIR names another place.",
    )
    lakehouse_dir_override: str | None = Field(
        default=None,
        alias="PLATFORM_LAKEHOUSE_DIR",
        description="Every Delta table and checkpoint: a folder, or an S3 location "
        "(s3a://bucket/prefix, see the PLATFORM_S3_* settings); unset: PLATFORM_LOCAL_DIR/lakehouse.",
    )
    jars_dir_override: Path | None = Field(
        default=None,
        alias="PLATFORM_JARS_DIR",
        description="Where the JVM jars are resolved to (Delta, the Kafka connector and broker, the "
        "platform's own classes); unset: PLATFORM_LOCAL_DIR/jars.",
    )
    kafka_bootstrap_servers: str | None = Field(
        default=None,
        description="The Kafka brokers every client reads and writes (host:port, comma-separated); "
        "unset: the local broker `platform kafka start` runs, else localhost:9092.",
    )
    spark_master: str = Field(
        default=DEFAULT_SPARK_MASTER,
        description="The Spark master URL, e.g. spark://host:7077; local[*] runs the streams in the "
        "run's own JVM.",
    )
    spark_log_level: str = Field(
        default="WARN", description="The SparkContext's log level (INFO, WARN, ERROR...)."
    )
    verbose: bool = Field(
        default=False,
        description="Show Spark's and Dagster's own output (the JVM's start-up, log4j lines, the "
        "Python workers' prints, Dagster's engine events) where it is written; unset: it goes to "
        "PLATFORM_LOCAL_DIR/logs/platform.log only. `platform --verbose` sets it.",
    )
    # The SparkSession (see ``spark.session.SparkOptions``); the health checks judge checkpoints
    # against these same numbers.
    state_partitions: int = Field(
        default=DEFAULT_STATE_PARTITIONS,
        description="spark.sql.shuffle.partitions: the state partitions of a new checkpoint, fixed "
        "into it when it is created.",
    )
    min_batches_to_retain: int = Field(
        default=DEFAULT_MIN_BATCHES_TO_RETAIN,
        description="spark.sql.streaming.minBatchesToRetain: the batches (offsets, commits, state "
        "versions) a checkpoint keeps.",
    )
    driver_memory: str = Field(
        default=DEFAULT_DRIVER_MEMORY, description="The driver JVM's heap, e.g. 2g."
    )
    spark_ui_enabled: bool = Field(
        default=DEFAULT_SPARK_UI_ENABLED,
        description="Serve the Spark UI of each run (Spark's port 4040 or the next free one; its kill "
        "links are off).",
    )
    # On a cluster, executors must reach the driver: bind 0.0.0.0 (or an interface) and set the
    # driver host to an address the workers can reach.
    spark_bind_address: str = Field(
        default=DEFAULT_SPARK_BIND_ADDRESS,
        description="Where the driver listens (RPC, block manager, Spark UI): loopback unless the "
        "deployment says otherwise; 0.0.0.0 on a cluster.",
    )
    spark_driver_host: str | None = Field(
        default=None,
        description="The driver's address as the executors reach it (on a cluster); unset: "
        "PLATFORM_SPARK_BIND_ADDRESS, or this machine's name when that is 0.0.0.0.",
    )
    spark_extra_conf: dict[str, str] = Field(
        default_factory=dict,
        description="Any other Spark setting, for the deployment only, as a JSON object "
        '(\'{"spark.pyspark.python": "/opt/venv/bin/python"}\'); run config takes tuning keys only '
        "(spark/policy.py).",
    )
    clickstream_topic: str = Field(
        default="clickstream",
        description="The Kafka topic of the built-in clickstream streams (and of `platform produce`).",
    )
    heartbeats_topic: str = Field(
        default="service_heartbeats",
        description="The Kafka topic of the built-in service_status stream.",
    )
    events_reads: Literal["bronze", "kafka"] = Field(
        default="kafka",
        description="What the built-in events stream reads: kafka (the topic itself, beside "
        "bronze: a row is in events without waiting for bronze's batch, for a second parse of "
        "every record) or bronze (the clickstream_raw table: one parse, a batch more of latency).",
    )
    alerts_reads: Literal["bronze", "kafka"] = Field(
        default="kafka",
        description="What the built-in security_alerts stream reads: kafka (the topic itself: "
        "it parses, checks and deduplicates the records and raises the alerts in one query) or "
        "bronze (the events table: two queries more between a failed login and its alert).",
    )
    alerts_topic: str = Field(
        default="alerts",
        description="The Kafka topic where security_alerts publishes every alert, keyed by "
        "user_id, for pagers and SIEMs (at least once: drop copies by alert_id).",
    )
    stream_modules: str = Field(
        default="user_streams.running_count",
        description="Modules whose STREAMS list declares user streams (comma-separated), loaded "
        "into Dagster and shipped to a cluster's executors.",
    )
    health_sensor_interval_seconds: int = Field(
        default=30,
        description="How often the health sensor judges every stream (no JVM).",
    )
    health_check_cron: str = Field(
        default="*/15 * * * *",
        description="When the stream_health_check schedule runs the deep checks (cron).",
    )
    health_schedule_running: bool = Field(
        default=True,
        description="Whether stream_health_check_schedule starts running.",
    )
    maintenance_schedule_running: bool = Field(
        default=True,
        description="Whether the daily table_maintenance_* schedules (defs/table_maintenance.py) "
        "start running.",
    )
    restart_max_attempts: int = Field(
        default=5,
        description="Relaunches of one failed stream run before stream_auto_restart gives up.",
    )
    restart_base_delay_seconds: float = Field(
        default=30.0,
        description="The first relaunch's delay; each next one waits twice as long.",
    )
    restart_max_delay_seconds: float = Field(
        default=600.0, description="The longest delay between two relaunches."
    )
    freshness_max_age_seconds: float = Field(
        default=3600.0,
        description="The freshness check warns when a table was last written longer ago.",
    )
    lock_database_url: SecretStr | None = Field(
        default=None,
        description="A PostgreSQL database (postgresql://user:password@host:port/db, usually the "
        "Dagster instance's) that holds the stream locks when processes on several machines "
        "share the checkpoints; unset: a file lock on this machine.",
    )
    # AWS itself when no endpoint is given, any S3-compatible server otherwise. Without keys, the
    # default AWS credential chain is used, by Spark and by the platform's own reads alike.
    s3_endpoint: str | None = Field(
        default=None,
        description="The S3 API of an s3a:// lakehouse, for an S3-compatible server (MinIO, "
        "Ceph, moto); unset: AWS S3.",
    )
    s3_region: str = Field(default="us-east-1", description="The S3 region.")
    s3_access_key_id: str | None = Field(
        default=None,
        description="The S3 access key; unset: the default AWS credential chain (environment, "
        "profile, instance role).",
    )
    s3_secret_access_key: SecretStr | None = Field(
        default=None, description="The S3 secret key, with PLATFORM_S3_ACCESS_KEY_ID."
    )
    s3_path_style_access: bool = Field(
        default=False,
        description="http://host/bucket/key addressing, which most S3-compatible servers "
        "(MinIO, moto, Ceph) want.",
    )
    # Delta's own S3 log store checks that a commit file is absent, then writes it: two drivers
    # committing one version at once both write, and the second replaces the first commit.
    s3_commit_coordination: Literal["conditional-put", "none"] = Field(
        default="conditional-put",
        description="How drivers committing to one Delta table on S3 at once are kept apart: "
        "conditional-put writes each commit with If-None-Match: * (AWS S3, MinIO, moto), so S3 "
        "refuses the second writer of a version and Delta retries it on the next; none: Delta's "
        "default, safe within one driver only.",
    )

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
    def log_file(self) -> Path:
        """Spark's and Dagster's own output, appended to by every process (unless ``verbose``)."""
        return self.local_dir / "logs" / "platform.log"

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
