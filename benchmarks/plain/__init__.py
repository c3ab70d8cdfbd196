"""Plain PySpark references: the built-in streams' queries written the way a Spark user would
write them by hand, without the platform (no ledger, no late-row capture, no watermark cap, no
declarations). ``benchmarks/suite.py`` runs them in its SparkSession beside the platform's
streams; ``benchmarks/plain/run.py`` runs one alone."""
