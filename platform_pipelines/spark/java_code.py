"""The platform's own Java classes (``jvm/<name>/src``, compiled by ``jvm.ensure_compiled`` and put
on ``spark.jars`` by ``build_spark_session``), looked up in a session's JVM."""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass
from pyspark.sql import SparkSession


def platform_class(spark: SparkSession, name: str, instead: str) -> Any:
    """The class ``name`` (``platform.<module>.<Class>``) in ``spark``'s JVM.

    Raises:
        RuntimeError: the session was not started with the platform's jars; the message names the
            source folder, ``build_spark_session`` and ``instead`` (the pure-Python alternative).
    """
    found: Any = spark._jvm
    for part in name.split("."):
        found = None if found is None else getattr(found, part)
    if not isinstance(found, JavaClass):
        folder = "jvm/" + name.split(".")[1]
        raise RuntimeError(
            f"This SparkSession has no {name} ({folder}): start it with build_spark_session, "
            f"or {instead}."
        )
    return found
