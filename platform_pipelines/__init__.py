"""Stateful Spark Structured Streaming queries (Kafka -> Delta), operated as Dagster assets."""
