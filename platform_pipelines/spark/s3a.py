"""Hadoop's S3A settings of the SparkSession, for a lakehouse on an S3 API, and the Delta log store
that commits there (``PLATFORM_S3_COMMIT_COORDINATION``)."""

from __future__ import annotations

from platform_pipelines.settings import PlatformSettings

S3A_PREFIX = "spark.hadoop.fs.s3a."
DELTA_S3_LOG_STORE = "spark.delta.logStore.s3a.impl"
DELTA_LOG_STORE_KEYS = (DELTA_S3_LOG_STORE, "spark.delta.logStore.class")
# jvm/logstore: Delta's S3 log store with each commit written by a conditional PUT.
CONDITIONAL_PUT_LOG_STORE = "platform.logstore.ConditionalPutLogStore"


def s3a_conf(settings: PlatformSettings) -> dict[str, str]:
    """Hadoop's S3A settings for the ``s3_*`` settings (the same store the platform reads with
    fsspec). Keys left unset fall back to S3A's default credential chain (environment variables,
    profile, instance role); the secret never reaches the Spark UI (``spark.redaction.regex``
    hides ``secret`` keys).
    """
    prefix = S3A_PREFIX
    conf = {
        f"{prefix}endpoint.region": settings.s3_region,
        f"{prefix}path.style.access": str(settings.s3_path_style_access).lower(),
    }
    if settings.s3_endpoint:
        conf[f"{prefix}endpoint"] = settings.s3_endpoint
        conf[f"{prefix}connection.ssl.enabled"] = str(
            settings.s3_endpoint.startswith("https://")
        ).lower()
        # The AWS SDK asks S3 to confirm large uploads first (`Expect: 100-continue`); some
        # S3-compatible servers (moto's among them) answer that with a bare 100 that the SDK
        # reports as a failed upload of a state store file.
        conf[f"{prefix}connection.expect.continue"] = "false"
    if settings.s3_access_key_id and settings.s3_secret_access_key:
        conf[f"{prefix}access.key"] = settings.s3_access_key_id
        conf[f"{prefix}secret.key"] = settings.s3_secret_access_key.get_secret_value()
    if settings.s3_commit_coordination == "conditional-put":
        refuse_unconditional_commits(settings.spark_extra_conf)
        conf[DELTA_S3_LOG_STORE] = CONDITIONAL_PUT_LOG_STORE
    return conf


def refuse_unconditional_commits(extra_conf: dict[str, str]) -> None:
    """Refuse Spark settings that would undo ``PLATFORM_S3_COMMIT_COORDINATION=conditional-put``:
    another Delta log store (Delta also refuses ``logStore.class`` beside a scheme's store), or
    S3A's conditional writes turned off (then S3A refuses every commit)."""
    undoing = [key for key in DELTA_LOG_STORE_KEYS if key in extra_conf]
    conditional = f"{S3A_PREFIX}create.conditional.enabled"
    undoing += [conditional] if extra_conf.get(conditional, "").lower() == "false" else []
    if undoing:
        raise ValueError(
            f"PLATFORM_SPARK_EXTRA_CONF sets {undoing[0]}, but PLATFORM_S3_COMMIT_COORDINATION="
            "conditional-put writes each Delta commit with S3A's conditional PUT through the "
            f"platform's log store ({CONDITIONAL_PUT_LOG_STORE}). Remove {undoing[0]}, or set "
            "PLATFORM_S3_COMMIT_COORDINATION=none to commit your own way "
            "(docs/deployment/object-storage.md)."
        )
