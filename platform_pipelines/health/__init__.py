"""Stream health: persisted progress, pure judgements over it and over checkpoint files.

Nothing in this package starts a JVM: sensors and the CLI read files and the Kafka broker only.
"""
