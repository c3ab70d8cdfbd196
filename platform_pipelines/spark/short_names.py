"""PySpark's short Java class names, resolved once per JVM instead of on every use.

PySpark reaches some of its Java helpers by short name through the gateway's view of the JVM
(``sc._jvm.PythonUtils.toSeq(...)`` in every ``select`` of several columns, ``PythonSQLUtils`` in
every internal function). py4j resolves such a name anew at each use: it tries the name alone,
then under each imported package in turn, and each wrong guess is a ``Class.forName`` that fails
only after looking for the class in every jar on the class path (about 300 with Delta and Kafka).
``PythonSQLUtils`` is found at the eighth guess. On a loaded 2-core machine these lookups were 3%
of the driver JVM's CPU samples (Java Flight Recorder, a 10,000 events/s run), and a ``select``
with an array of two columns took 7.1 ms instead of 5.6 ms (``benchmarks/bench_short_names.py``).

``bind_short_names`` resolves each name once and keeps the class on the view itself, where
Python finds it before py4j is asked. A py4j class reference holds only the class's full name,
so it stays valid for the JVM's whole life; a new JVM comes with a new view, bound again when
``build_spark_session`` makes its session.
"""

from __future__ import annotations

from typing import Final

from py4j.java_gateway import JavaClass, JVMView

# The short names PySpark's Python code (pyspark/core, pyspark/sql; not ML) uses that resolve
# under the imports its gateway starts with. Those it imports later, when a module first needs
# them (``PythonForeachBatchHelper``, ``PythonStreamingQueryListenerWrapper``), are resolved once
# per stream or listener anyway.
PYSPARK_SHORT_NAMES: Final = (
    "PythonUtils",
    "PythonSQLUtils",
    "PythonRDD",
    "SerDeUtil",
    "BytesToString",
    "SimplePythonFunction",
    "PythonAccumulatorV2",
    "PythonPartitioner",
    "PythonParallelizeServer",
    "ArrowIteratorServer",
    "PairwiseRDD",
    "JavaSparkContext",
    "JavaDoubleRDD",
    "Encoders",
)


def bind_short_names(jvm: JVMView, names: tuple[str, ...] = PYSPARK_SHORT_NAMES) -> dict[str, str]:
    """Resolve each of ``names`` once and keep it on ``jvm``; returns name -> full class name of
    those bound. A name already bound is left as it is; one that is not a class under the view's
    imports (py4j takes an unknown name for a package) is not kept and resolves as before."""
    bound = {}
    for name in names:
        if name in vars(jvm):
            continue
        found = getattr(jvm, name)
        if isinstance(found, JavaClass):
            vars(jvm)[name] = found
            bound[name] = found._fqn
    return bound
