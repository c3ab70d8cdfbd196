"""The parts of ``benchmarks/suite.py``: pure statistics and the results document (``stats``,
``results``, no JVM), the run environment (``env``), one module per section (``throughput``,
``latency``, ``scaling``), and the output (``report``, ``chart``)."""
