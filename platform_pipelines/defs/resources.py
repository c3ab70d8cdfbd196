"""Dagster resources: the SparkSession for streaming, the Kafka address and the lakehouse folder."""

from __future__ import annotations

import re

import dagster as dg
from pydantic import Field, PrivateAttr, field_validator
from pyspark.sql import SparkSession

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import get_settings
from platform_pipelines.spark.policy import run_conf_problems
from platform_pipelines.spark.session import SparkOptions, build_spark_session


class SparkStreamingResource(dg.ConfigurableResource):
    """A SparkSession set up for stateful streaming (RocksDB state store with changelog
    checkpointing, Delta Lake, the Kafka connector). Local by default; any Spark master by config.

    The session starts on first use. On teardown (run end, failure or cancellation) every active
    query is stopped gracefully, then the session.
    """

    state_partitions: int = Field(
        default_factory=lambda: get_settings().state_partitions,
        description=(
            "spark.sql.shuffle.partitions (PLATFORM_STATE_PARTITIONS). Fixed into each checkpoint "
            "when it is created: existing streams keep their count on restart; a new value "
            "applies to new checkpoints."
        ),
    )
    min_batches_to_retain: int = Field(
        default_factory=lambda: get_settings().min_batches_to_retain,
        description="Checkpoint versions kept (PLATFORM_MIN_BATCHES_TO_RETAIN).",
    )
    driver_memory: str = Field(
        default_factory=lambda: get_settings().driver_memory,
        description="Driver JVM heap, e.g. 2g (PLATFORM_DRIVER_MEMORY).",
    )
    ui_enabled: bool = Field(
        default_factory=lambda: get_settings().spark_ui_enabled,
        description="Serve the Spark UI on port 4040 (PLATFORM_SPARK_UI_ENABLED).",
    )
    spark_conf: dict[str, str] = Field(
        default_factory=dict,
        description="Spark tuning for this run, e.g. {spark.sql.streaming.stateStore.rocksdb."
        "blockCacheSizeMB: '64'}. Only tuning keys (sizes, counts, memory) are accepted: JVM "
        "options, jars, class paths, Python executables, file-system roots and network settings "
        "belong to the deployment (PLATFORM_SPARK_EXTRA_CONF, PLATFORM_SPARK_MASTER, ...).",
    )

    @field_validator("spark_conf")
    @classmethod
    def _tuning_only(cls, conf: dict[str, str]) -> dict[str, str]:
        problems = run_conf_problems(conf)
        if problems:
            raise ValueError(" ".join(problems))
        return conf

    @field_validator("driver_memory")
    @classmethod
    def _memory_size(cls, value: str) -> str:
        if not re.fullmatch(r"[1-9][0-9]*[kmgt]?", value.strip().lower()):
            raise ValueError(
                f"driver_memory: {value!r} is not a JVM memory size; use a number with k, m, g "
                "or t, e.g. 2g."
            )
        return value

    _session: SparkSession | None = PrivateAttr(default=None)
    _owns_session: bool = PrivateAttr(default=False)

    def options(self) -> SparkOptions:
        """The session's options: the deployment's settings with this run's values."""
        settings = get_settings()
        return SparkOptions.from_settings(
            settings,
            state_partitions=self.state_partitions,
            min_batches_to_retain=self.min_batches_to_retain,
            driver_memory=self.driver_memory,
            ui_enabled=self.ui_enabled,
            extra_conf={**settings.spark_extra_conf, **self.spark_conf},
        )

    def get_session(self) -> SparkSession:
        """The run's SparkSession (started on first call, shared by every stream of the run)."""
        if self._session is None:
            # A session that was already running (an embedding process, a test run) is not ours
            # to stop at teardown.
            self._owns_session = SparkSession.getActiveSession() is None
            self._session = build_spark_session(self.options())
        return self._session

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._session is None or not self._owns_session:
            return
        try:
            for query in self._session.streams.active:
                if context.log:
                    context.log.info(f"Stopping streaming query {query.name!r}")
                try:
                    query.stop()
                except Exception as error:  # stop the others and the session all the same
                    if context.log:
                        context.log.warning(f"Query {query.name!r} did not stop cleanly: {error}")
        finally:
            self._session.stop()
            self._session = None


class KafkaResource(dg.ConfigurableResource):
    """Where the Kafka broker is: PLATFORM_KAFKA_BOOTSTRAP_SERVERS, else the local broker started
    by `platform kafka start`, else localhost:9092. A deployment setting, not run config: a
    launched run cannot point the platform at another broker."""

    def servers(self) -> str:
        return get_settings().bootstrap_servers()


class LakehouseResource(dg.ConfigurableResource):
    """The folder holding every Delta table and checkpoint: PLATFORM_LAKEHOUSE_DIR, else
    PLATFORM_LOCAL_DIR/lakehouse (.local/lakehouse). A deployment setting, not run config: a
    launched run cannot write elsewhere."""

    def lakehouse(self) -> Lakehouse:
        return Lakehouse(get_settings().lakehouse_dir)
