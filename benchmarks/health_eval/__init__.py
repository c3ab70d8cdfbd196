"""The health evaluation suite: labelled scenarios recorded on real Kafka and Spark, judged again.

Each scenario (``scenarios.py``) is something an operator meets: a steady dedup, a stopped stream,
a state leak, a broker down... half healthy, half faulty, each with the verdict every health check
must give. ``record.py`` runs each one once through the platform's own runner on a real broker
and SparkSession (``recipes.py``, on ``harness.py``) and keeps what the health sensor would read
as a fixture under ``tests/data/health_scenarios/<scenario>/`` (``fixture.py``): the progress
records, the checkpoint files and the facts measured at the moment of judgement (the broker's
answer, the configuration). ``evaluate.py`` replays every fixture through the sensor's own
evaluation (``replay.py``), without a JVM, and publishes a confusion matrix per check
(``matrix.py``); the unit tests (``tests/unit/health/test_scenarios.py``) assert every verdict.
"""
