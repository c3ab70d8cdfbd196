"""PySpark's short Java class names are resolved once, on the session's JVM view, to the classes
py4j itself finds for them; DataFrames built through them give the same rows."""

from __future__ import annotations

import pytest
from py4j.java_gateway import JavaClass, JVMView
from pyspark.sql import functions as F

from platform_pipelines.spark.short_names import PYSPARK_SHORT_NAMES, bind_short_names

pytestmark = [pytest.mark.spark]


def test_every_short_name_is_bound_to_the_class_py4j_resolves(spark):
    jvm = spark.sparkContext._jvm
    for name in PYSPARK_SHORT_NAMES:
        bound = vars(jvm)[name]  # the session bound them when it started
        assert isinstance(bound, JavaClass)
        assert bound._fqn.endswith("." + name)
        # py4j's own resolution, asked past the binding, finds the same class
        assert type(jvm).__getattr__(jvm, name)._fqn == bound._fqn


def test_binding_again_leaves_the_classes_and_reports_nothing_new(spark):
    jvm = spark.sparkContext._jvm
    before = {name: vars(jvm)[name] for name in PYSPARK_SHORT_NAMES}
    assert bind_short_names(jvm) == {}
    assert {name: vars(jvm)[name] for name in PYSPARK_SHORT_NAMES} == before
    # py4j takes a name it finds no class for as a package: not kept
    assert bind_short_names(jvm, ("NoSuchPlatformClass",)) == {}
    assert "NoSuchPlatformClass" not in vars(jvm)


def test_dataframes_are_built_without_asking_py4j_for_the_bound_names(spark, monkeypatch):
    asked: list[str] = []
    resolve = JVMView.__getattr__

    def spy(view: JVMView, name: str) -> object:
        asked.append(name)
        return resolve(view, name)

    monkeypatch.setattr(JVMView, "__getattr__", spy)
    rows = (
        spark.range(3)
        .select(F.col("id"), F.array("id", F.lit(7)).alias("pair"))
        .where(F.col("id") > 0)
        .collect()
    )

    assert [(r["id"], r["pair"]) for r in rows] == [(1, [1, 7]), (2, [2, 7])]
    assert not set(asked) & set(PYSPARK_SHORT_NAMES), asked
    # the spy sees what is not bound: the full names PySpark looks up for its functions
    assert "org.apache.spark.sql.functions" in asked
