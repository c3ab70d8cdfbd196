"""Shared fixtures: one SparkSession and one Kafka broker for the whole test run."""

pytest_plugins = ["tests.fixtures.spark", "tests.fixtures.kafka", "tests.fixtures.dagster"]
