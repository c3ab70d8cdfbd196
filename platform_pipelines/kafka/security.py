"""How every Kafka client of the platform authenticates and encrypts: one settings object, read
from the environment only (these are secrets: never from Dagster run config), turned into the
keyword arguments of kafka-python's clients and into the Spark Kafka source's options.

- ``PLATFORM_KAFKA_SECURITY_PROTOCOL``: ``PLAINTEXT`` (default), ``SSL`` or ``SASL_SSL``;
- ``PLATFORM_KAFKA_SASL_MECHANISM``: ``SCRAM-SHA-512`` (default) or ``PLAIN``;
- ``PLATFORM_KAFKA_SASL_USERNAME`` and ``PLATFORM_KAFKA_SASL_PASSWORD`` (``SASL_SSL`` only; the
  password is a ``SecretStr``, never shown by ``repr``, ``str`` or an error message);
- ``PLATFORM_KAFKA_SSL_CAFILE``: the PEM file of the CA that signed the broker's certificate
  (unset: the system's trusted CAs).

The broker's host name is always verified against its certificate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_SSL"]
SaslMechanism = Literal["SCRAM-SHA-512", "PLAIN"]

ENV_PREFIX = "PLATFORM_KAFKA_"
_LOGIN_MODULES = {
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
}
_SECRET_KEYS = frozenset({"sasl_plain_password", "kafka.sasl.jaas.config"})
_PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"


class KafkaSecurityError(ValueError):
    """The Kafka security settings are incomplete or inconsistent; the message names the
    variable and the fix (and never holds the password)."""


class RedactedDict(dict[str, Any]):
    """A plain dict whose repr masks the secret values, should it ever be logged."""

    def __repr__(self) -> str:
        shown = {k: "***" if k in _SECRET_KEYS else v for k, v in self.items()}
        return repr(shown)

    __str__ = __repr__


def _env(field: str) -> str:
    return ENV_PREFIX + field.upper()


class KafkaSecurity(BaseSettings):
    """Authentication and encryption towards the Kafka broker, from ``PLATFORM_KAFKA_*``.

    Example:
        >>> plain = KafkaSecurity(security_protocol="PLAINTEXT")
        >>> plain.kafka_python_kwargs(), plain.spark_options()
        ({}, {})
        >>> print(KafkaSecurity(security_protocol="SASL_SSL", sasl_username="app",
        ...                     sasl_password="s3cret"))
        SASL_SSL, SCRAM-SHA-512 as 'app', system CAs
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, frozen=True, extra="ignore", hide_input_in_errors=True
    )

    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism = "SCRAM-SHA-512"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: Path | None = None

    @field_validator("security_protocol", "sasl_mechanism", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("sasl_username", "sasl_password", "ssl_cafile", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _consistent(self) -> KafkaSecurity:
        protocol = self.security_protocol
        given = [f for f in ("sasl_username", "sasl_password") if getattr(self, f) is not None]
        if protocol != "SASL_SSL" and given:
            names = " and ".join(_env(f) for f in given)
            raise ValueError(
                f"{names} set, but {_env('security_protocol')} is {protocol}, which sends no "
                f"credentials: set {_env('security_protocol')}=SASL_SSL, or unset {names}."
            )
        missing = [_env(f) for f in ("sasl_username", "sasl_password") if f not in given]
        if protocol == "SASL_SSL" and missing:
            raise ValueError(
                f"{_env('security_protocol')}=SASL_SSL needs {' and '.join(missing)}: set "
                'them (for the local broker: eval "$(platform kafka env)").'
            )
        if protocol == "PLAINTEXT" and self.ssl_cafile is not None:
            raise ValueError(
                f"{_env('ssl_cafile')} is set, but {_env('security_protocol')} is PLAINTEXT: "
                f"set {_env('security_protocol')}=SSL or SASL_SSL, or unset {_env('ssl_cafile')}."
            )
        if self.ssl_cafile is not None:
            _check_cafile(self.ssl_cafile)
        return self

    def __str__(self) -> str:
        if self.security_protocol == "PLAINTEXT":
            return "PLAINTEXT (no TLS, no authentication)"
        ca = f"CA {self.ssl_cafile}" if self.ssl_cafile else "system CAs"
        if self.security_protocol == "SSL":
            return f"SSL, {ca}"
        return f"SASL_SSL, {self.sasl_mechanism} as {self.sasl_username!r}, {ca}"

    @property
    def password(self) -> str:
        """The SASL password in clear: only for handing it to a client, never to print."""
        return self.sasl_password.get_secret_value() if self.sasl_password else ""

    def kafka_python_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python's ``KafkaAdminClient``, ``KafkaProducer`` and
        ``KafkaConsumer`` (empty for PLAINTEXT: the clients' defaults)."""
        if self.security_protocol == "PLAINTEXT":
            return RedactedDict()
        kwargs: dict[str, Any] = {
            "security_protocol": self.security_protocol,
            "ssl_check_hostname": True,
        }
        if self.ssl_cafile is not None:
            kwargs["ssl_cafile"] = str(self.ssl_cafile)
        if self.security_protocol == "SASL_SSL":
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = self.password
        return RedactedDict(kwargs)

    def spark_options(self) -> dict[str, str]:
        """Options of Spark's Kafka source (``kafka.``-prefixed Java client settings; empty for
        PLAINTEXT). The Java client reads the PEM CA file as a trust store."""
        if self.security_protocol == "PLAINTEXT":
            return RedactedDict()
        options = {
            "kafka.security.protocol": self.security_protocol,
            "kafka.ssl.endpoint.identification.algorithm": "https",
        }
        if self.ssl_cafile is not None:
            options["kafka.ssl.truststore.type"] = "PEM"
            options["kafka.ssl.truststore.location"] = str(self.ssl_cafile)
        if self.security_protocol == "SASL_SSL":
            options["kafka.sasl.mechanism"] = self.sasl_mechanism
            options["kafka.sasl.jaas.config"] = jaas_config(
                self.sasl_mechanism, self.sasl_username or "", self.password
            )
        return RedactedDict(options)


def jaas_config(mechanism: SaslMechanism, username: str, password: str) -> str:
    """The Java client's ``sasl.jaas.config`` line (quotes and backslashes escaped).

    Example:
        >>> jaas_config("PLAIN", "app", 'pa"ss')
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="app" password="pa\\\\"ss";'
    """
    return (
        f'{_LOGIN_MODULES[mechanism]} required username="{_jaas_quote(username)}" '
        f'password="{_jaas_quote(password)}";'
    )


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _check_cafile(path: Path) -> None:
    var = _env("ssl_cafile")
    fix = "point it at the PEM file of the CA that signed the broker's certificate"
    if not path.is_file():
        raise ValueError(f"{var}={path}: no such file: {fix}.")
    try:
        head = path.read_bytes()
    except OSError as err:
        raise ValueError(f"{var}={path} cannot be read ({err.strerror}): {fix}.") from None
    if _PEM_CERTIFICATE not in head:
        raise ValueError(
            f"{var}={path} holds no PEM certificate (-----BEGIN CERTIFICATE-----): {fix}."
        )


def kafka_security(**overrides: Any) -> KafkaSecurity:
    """The security settings the environment has now (not cached: tests change it).

    Raises:
        KafkaSecurityError: a variable is invalid or missing; the message names it and the fix.
    """
    try:
        return KafkaSecurity(**overrides)
    except ValidationError as err:
        raise KafkaSecurityError(_describe(err)) from None


def _describe(err: ValidationError) -> str:
    lines = []
    for error in err.errors(include_input=False, include_url=False):
        message = str(error["msg"]).removeprefix("Value error, ")
        field = str(error["loc"][0]) if error["loc"] else ""
        lines.append(message if not field else f"{_env(field)}: {message}")
    return "Kafka security settings: " + "; ".join(lines)


def client_kwargs(security: KafkaSecurity | None = None) -> dict[str, Any]:
    """kafka-python client keyword arguments: of ``security``, else of the environment."""
    return (security or kafka_security()).kafka_python_kwargs()
