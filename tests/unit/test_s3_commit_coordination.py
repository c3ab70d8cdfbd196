"""Which Delta log store commits on S3 (``PLATFORM_S3_COMMIT_COORDINATION``), and the Spark
settings that would undo it, refused before any session starts."""

from __future__ import annotations

import json

import pytest

from platform_pipelines.settings import PlatformSettings
from platform_pipelines.spark.s3a import CONDITIONAL_PUT_LOG_STORE, DELTA_S3_LOG_STORE
from platform_pipelines.spark.session import SparkOptions


def s3_settings(monkeypatch, **env: str) -> PlatformSettings:
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", "s3a://bucket/lakehouse")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return PlatformSettings()


def test_commits_on_s3_are_conditional_puts_by_default(monkeypatch):
    options = SparkOptions.from_settings(s3_settings(monkeypatch))
    assert options.s3a_conf[DELTA_S3_LOG_STORE] == CONDITIONAL_PUT_LOG_STORE


def test_none_leaves_delta_its_own_s3_log_store(monkeypatch):
    settings = s3_settings(monkeypatch, PLATFORM_S3_COMMIT_COORDINATION="none")
    assert DELTA_S3_LOG_STORE not in SparkOptions.from_settings(settings).s3a_conf


def test_a_local_lakehouse_gets_no_s3_settings(monkeypatch):
    monkeypatch.delenv("PLATFORM_LAKEHOUSE_DIR", raising=False)
    assert SparkOptions.from_settings(PlatformSettings()).s3a_conf == {}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.delta.logStore.s3a.impl", "io.delta.storage.S3SingleDriverLogStore"),
        ("spark.delta.logStore.class", "io.delta.storage.S3SingleDriverLogStore"),
        ("spark.hadoop.fs.s3a.create.conditional.enabled", "false"),
    ],
)
def test_spark_settings_that_undo_conditional_commits_are_refused(monkeypatch, key, value):
    extra = json.dumps({key: value})
    settings = s3_settings(monkeypatch, PLATFORM_SPARK_EXTRA_CONF=extra)
    with pytest.raises(ValueError, match=f"{key}.*PLATFORM_S3_COMMIT_COORDINATION=none"):
        SparkOptions.from_settings(settings)


def test_with_none_a_deployment_may_bring_its_own_log_store(monkeypatch):
    extra = json.dumps({"spark.delta.logStore.s3a.impl": "io.delta.storage.S3DynamoDBLogStore"})
    settings = s3_settings(
        monkeypatch, PLATFORM_S3_COMMIT_COORDINATION="none", PLATFORM_SPARK_EXTRA_CONF=extra
    )
    assert DELTA_S3_LOG_STORE not in SparkOptions.from_settings(settings).s3a_conf
