"""Run config may only tune Spark; the session listens on loopback unless the deployment says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_pipelines.defs.coordinator import config_problems
from platform_pipelines.defs.resources import SparkStreamingResource
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.spark.policy import run_conf_problems
from platform_pipelines.spark.session import SparkOptions, spark_conf

# Each forbidden key, and the setting its refusal names instead.
FORBIDDEN = {
    "spark.driver.extraJavaOptions": "PLATFORM_SPARK_EXTRA_CONF",
    "spark.executor.extraJavaOptions": "PLATFORM_SPARK_EXTRA_CONF",
    "spark.driver.extraClassPath": "PLATFORM_SPARK_EXTRA_CONF",
    "spark.jars": "platform setup",
    "spark.jars.packages": "platform setup",
    "spark.sql.extensions": "platform setup",
    "spark.pyspark.python": ".venv interpreter",
    "spark.executorEnv.PYTHONPATH": ".venv interpreter",
    "spark.master": "PLATFORM_SPARK_MASTER",
    "spark.sql.warehouse.dir": "PLATFORM_LAKEHOUSE_DIR",
    "spark.local.dir": "PLATFORM_LAKEHOUSE_DIR",
    "spark.hadoop.fs.defaultFS": "PLATFORM_LAKEHOUSE_DIR",
    "spark.driver.bindAddress": "PLATFORM_SPARK_BIND_ADDRESS",
    "spark.ui.killEnabled": "PLATFORM_SPARK_BIND_ADDRESS",
    "spark.sql.streaming.stateStore.providerClass": "PLATFORM_SPARK_EXTRA_CONF",
    "spark.made.up": "PLATFORM_SPARK_EXTRA_CONF",
}


@pytest.mark.parametrize(("key", "instead"), FORBIDDEN.items())
def test_a_forbidden_key_is_refused_naming_the_setting_to_use_instead(key, instead):
    first, allowed = run_conf_problems({key: "x"})
    assert first.startswith(f"spark_conf: {key!r} is refused: ")
    assert instead in first
    assert allowed.startswith("spark_conf: a run may set only these tuning keys: ")


def test_tuning_keys_pass():
    tuning = {
        "spark.sql.shuffle.partitions": "8",
        "spark.executor.memory": "4g",
        "spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB": "64",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "5000",
    }
    assert run_conf_problems(tuning) == []


def test_the_resource_refuses_a_forbidden_key_before_any_session_exists():
    with pytest.raises(ValueError, match=r"'spark\.jars' is refused: it loads code"):
        SparkStreamingResource(spark_conf={"spark.jars": "http://example.com/evil.jar"})
    with pytest.raises(ValueError, match="driver_memory: '2 gigs' is not a JVM memory size"):
        SparkStreamingResource(driver_memory="2 gigs")


def test_the_coordinator_reads_the_spark_conf_of_a_submitted_run_config():
    config = {"resources": {"spark": {"config": {"spark_conf": {"spark.jars": "/tmp/x.jar"}}}}}
    (problem, _) = config_problems(config)
    assert problem.startswith("resources.spark.config.spark_conf: 'spark.jars' is refused")
    assert config_problems({"ops": {}}) == []


def test_the_driver_listens_on_loopback_and_the_ui_cannot_kill_jobs_by_default():
    conf = spark_conf(SparkOptions.from_settings(PlatformSettings()), [Path("/j/a.jar")])
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.ui.killEnabled"] == "false"
    assert conf["spark.databricks.delta.properties.defaults.checkpointInterval"] == "100"


def test_checkpoints_on_a_disk_are_written_without_a_readlink_process_per_rename(monkeypatch):
    key = "spark.sql.streaming.checkpointFileManagerClass"
    conf = spark_conf(SparkOptions.from_settings(PlatformSettings()), [])
    assert conf[key].endswith(".checkpointing.FileSystemBasedCheckpointFileManager")

    # On S3 Spark's default stays: its FileContext rename may overwrite a replayed batch's file.
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", "s3a://bucket/lake")
    assert key not in spark_conf(SparkOptions.from_settings(PlatformSettings()), [])

    # A deployment may set Spark's default back on a disk too.
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", "/srv/lake")
    other = "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
    monkeypatch.setenv("PLATFORM_SPARK_EXTRA_CONF", f'{{"{key}": "{other}"}}')
    assert spark_conf(SparkOptions.from_settings(PlatformSettings()), [])[key] == other


def test_a_cluster_deployment_binds_everywhere_and_advertises_its_host(monkeypatch):
    monkeypatch.setenv("PLATFORM_SPARK_BIND_ADDRESS", "0.0.0.0")
    monkeypatch.setenv("PLATFORM_SPARK_DRIVER_HOST", "driver.internal")
    monkeypatch.setenv("PLATFORM_SPARK_EXTRA_CONF", '{"spark.driver.extraJavaOptions": "-Dx=1"}')
    conf = spark_conf(SparkOptions.from_settings(PlatformSettings()), [])
    assert conf["spark.driver.bindAddress"] == "0.0.0.0"
    assert conf["spark.driver.host"] == "driver.internal"
    # The deployment, unlike a run, may set anything; the platform's JIT option stays first.
    assert conf["spark.driver.extraJavaOptions"] == "-XX:-DontCompileHugeMethods -Dx=1"
    assert conf["spark.executor.extraJavaOptions"] == "-XX:-DontCompileHugeMethods"


def test_delta_commits_on_a_disk_are_published_by_a_hard_link(monkeypatch):
    key = "spark.delta.logStore.file.impl"
    conf = spark_conf(SparkOptions.from_settings(PlatformSettings()), [])
    assert conf[key] == "platform.locallog.LinkLogStore"

    # On S3 the S3 settings choose the log store (object-storage.md).
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", "s3a://bucket/lake")
    assert key not in spark_conf(SparkOptions.from_settings(PlatformSettings()), [])

    # A deployment's own log store wins, however it names it: Delta reads each key with and
    # without `spark.`, and refuses a scheme's store beside logStore.class or a second one.
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", "/srv/lake")
    for own in ("spark.delta.logStore.class", "delta.logStore.class", "delta.logStore.file.impl"):
        monkeypatch.setenv("PLATFORM_SPARK_EXTRA_CONF", f'{{"{own}": "my.LogStore"}}')
        conf = spark_conf(SparkOptions.from_settings(PlatformSettings()), [])
        assert (key not in conf, conf[own]) == (True, "my.LogStore"), own
    monkeypatch.setenv("PLATFORM_SPARK_EXTRA_CONF", f'{{"{key}": "my.LogStore"}}')
    assert spark_conf(SparkOptions.from_settings(PlatformSettings()), [])[key] == "my.LogStore"
