# The platform's image for docker-compose.yml: Python 3.11, a Java 17 JDK (javac compiles the
# built-in sessions and alerts, jvm/sessions and jvm/alerts, at build time), the project and its JVM jars.
# The Dagster services and the Spark master and workers all run it (one Spark, one Python).
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY platform_pipelines ./platform_pipelines
COPY user_streams ./user_streams
COPY jvm ./jvm
# The jars are resolved at build time into /app/jars (PLATFORM_JARS_DIR), outside the data volume.
ENV PLATFORM_JARS_DIR=/app/jars
RUN python -m venv /app/.venv && /app/.venv/bin/pip install --no-cache-dir setuptools==80.9.0 \
 && /app/.venv/bin/pip install --no-cache-dir -e . \
 && /app/.venv/bin/platform setup
# DAGSTER_HOME is a volume (run history survives restarts); the instance config is copied into it
# at start, so /app/dagster.yaml always wins (docker-compose.yml mounts the PostgreSQL one there).
# Several containers share the volume, and run workers open the instance at any time: the copy
# replaces the file with a rename, so no reader ever sees it half written.
COPY dagster_home/dagster.yaml /app/dagster.yaml
RUN printf '%s\n' '#!/bin/sh' 'set -e' 'mkdir -p "$DAGSTER_HOME"' \
      'cp /app/dagster.yaml "$DAGSTER_HOME/.dagster.yaml.$$"' \
      'mv -f "$DAGSTER_HOME/.dagster.yaml.$$" "$DAGSTER_HOME/dagster.yaml"' 'exec "$@"' \
      > /usr/local/bin/with-dagster-home && chmod +x /usr/local/bin/with-dagster-home

ENV PATH=/app/.venv/bin:$PATH \
    DAGSTER_HOME=/app/dagster_home \
    PLATFORM_LOCAL_DIR=/data
