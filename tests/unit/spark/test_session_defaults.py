"""The SparkSession's defaults are the settings' defaults: one place says what a session gets."""

from __future__ import annotations

from platform_pipelines.settings import PlatformSettings
from platform_pipelines.spark.session import SparkOptions

# SparkOptions field -> the PlatformSettings field that a deployment sets it with.
SETTING_OF = {
    "master": "spark_master",
    "state_partitions": "state_partitions",
    "min_batches_to_retain": "min_batches_to_retain",
    "driver_memory": "driver_memory",
    "ui_enabled": "spark_ui_enabled",
    "bind_address": "spark_bind_address",
    "driver_host": "spark_driver_host",
}


def test_options_made_without_a_deployment_have_the_settings_defaults():
    options = SparkOptions()
    fields = PlatformSettings.model_fields
    assert {name: getattr(options, name) for name in SETTING_OF} == {
        name: fields[setting].default for name, setting in SETTING_OF.items()
    }


def test_the_deployment_settings_reach_the_options():
    settings = PlatformSettings(spark_master="local[2]", state_partitions=7, driver_memory="3g")
    options = SparkOptions.from_settings(settings, ui_enabled=False)
    assert (options.master, options.state_partitions, options.driver_memory) == (
        "local[2]",
        7,
        "3g",
    )
    assert options.ui_enabled is False
