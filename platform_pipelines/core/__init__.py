"""The base layer: value types and helpers every other layer may import (and nothing above).

``verdict`` (a health judgement), ``records`` and ``progress_store`` (what a running stream
persists for the health layer), ``spark_progress`` (reading Spark's progress JSON), ``times``
(the one place timestamps are converted), ``units`` (human-readable durations, sizes and counts),
``names`` (names that become folders or SQL), ``storage`` (local disk or S3), ``state_view`` (a
stream's state as a person reads it) and ``local_server`` (a local server process: ports, pid,
start and stop).
"""
