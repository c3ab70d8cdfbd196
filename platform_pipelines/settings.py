"""Where the platform keeps its local state, read from the environment in one place.

Every path a run creates (broker data, Delta tables, checkpoints, progress files) lives under
``local_dir`` (``.local/`` at the repo root by default, git-ignored). Override any field with an
environment variable of the same name prefixed ``PLATFORM_``, e.g. ``PLATFORM_LOCAL_DIR=/data``.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class PlatformSettings(BaseSettings):
    """Paths and endpoints shared by the CLI, the Dagster definitions and the tests."""

    model_config = SettingsConfigDict(env_prefix="PLATFORM_", frozen=True, populate_by_name=True)

    local_dir: Path = REPO_ROOT / ".local"
    lakehouse_dir_override: Path | None = Field(default=None, alias="PLATFORM_LAKEHOUSE_DIR")
    jars_dir_override: Path | None = Field(default=None, alias="PLATFORM_JARS_DIR")
    kafka_bootstrap_servers: str | None = None
    spark_master: str = "local[*]"
    spark_log_level: str = "WARN"
    # The SparkSession (see ``spark.session.SparkOptions``); the health checks judge checkpoints
    # against these same numbers.
    state_partitions: int = 4
    min_batches_to_retain: int = 20
    driver_memory: str = "2g"
    spark_ui_enabled: bool = True
    # Where the driver listens (RPC, block manager, Spark UI): loopback unless a deployment says
    # otherwise. On a cluster, executors must reach the driver: bind 0.0.0.0 (or an interface)
    # and set the driver host to an address the workers can reach.
    spark_bind_address: str = "127.0.0.1"
    spark_driver_host: str | None = None
    # Any other Spark setting, for the deployment only (JSON object); run config takes tuning
    # keys only (spark/policy.py).
    spark_extra_conf: dict[str, str] = Field(default_factory=dict)
    clickstream_topic: str = "clickstream"
    heartbeats_topic: str = "service_heartbeats"
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

    @cached_property
    def lakehouse_dir(self) -> Path:
        """Every Delta table and checkpoint (PLATFORM_LAKEHOUSE_DIR, else .local/lakehouse)."""
        return self.lakehouse_dir_override or self.local_dir / "lakehouse"

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


def get_settings() -> PlatformSettings:
    """Settings as the environment has them now (not cached: tests change the environment)."""
    return PlatformSettings()
