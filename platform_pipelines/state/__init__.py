"""Pure state machines behind the stateful streams: plain Python, no Spark, driven by tests."""
