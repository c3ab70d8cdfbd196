"""Every kafka-python client of the platform is made by ``connect``: with the security settings of
the environment (``kafka.security``), and with an error that says what to change when TLS or
authentication fails.

kafka-python raises only ``Unable to bootstrap`` when a broker refuses a client; the cause (a
certificate it does not trust, wrong credentials) goes to its log. ``connect`` listens to that
log while the client connects, and for a PLAINTEXT client also tries a TLS handshake, so that the
error names the variable to fix.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from kafka.errors import KafkaError, SaslAuthenticationFailedError

from platform_pipelines.kafka.security import KafkaSecurity, kafka_security

T = TypeVar("T")
_LOCAL_HINT = 'for the local broker: eval "$(platform kafka env)"'


class KafkaAccessError(KafkaError):  # type: ignore[misc]  # kafka-python has no type hints
    """The broker refused the TLS handshake or the credentials: retrying will not help; the
    message names the setting to change."""

    retriable = False

    def __str__(self) -> str:  # the message only: it is written for people
        return Exception.__str__(self)


def connect(
    make: Callable[..., T], bootstrap: str, security: KafkaSecurity | None = None, **kwargs: Any
) -> T:
    """``make(bootstrap_servers=bootstrap, **kwargs)`` (``KafkaAdminClient``, ``KafkaProducer``,
    ``KafkaConsumer``) with ``security``'s settings, else the environment's.

    Raises:
        KafkaSecurityError: the ``PLATFORM_KAFKA_*`` settings are invalid.
        KafkaAccessError: TLS or authentication failed; the message says what to change.
        KafkaError: anything else kafka-python raises (e.g. no broker answers).
    """
    security = security or kafka_security()
    with _logged_errors() as seen:
        try:
            return make(bootstrap_servers=bootstrap, **kwargs, **security.kafka_python_kwargs())
        except KafkaError as err:
            raise explain(err, bootstrap, security, seen) from err


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        self.seen += [arg for arg in args if isinstance(arg, BaseException)]
        if record.exc_info and record.exc_info[1] is not None:
            self.seen.append(record.exc_info[1])


@contextlib.contextmanager
def _logged_errors() -> Iterator[list[BaseException]]:
    recorder, logger = _Recorder(), logging.getLogger("kafka")
    logger.addHandler(recorder)
    try:
        yield recorder.seen
    finally:
        logger.removeHandler(recorder)


def explain(
    err: KafkaError, bootstrap: str, security: KafkaSecurity, seen: list[BaseException]
) -> KafkaError:
    """``err`` as a ``KafkaAccessError`` naming the fix when the cause is TLS or credentials
    (``seen``: what kafka-python logged meanwhile); else ``err`` itself."""
    protocol = security.security_protocol
    handshake = next((str(e) for e in seen if "Handshake failed" in str(e)), None)
    disconnected = any("socket disconnected" in str(e) for e in seen)
    user = f"user {security.sasl_username!r} ({security.sasl_mechanism})"
    check = (
        "check PLATFORM_KAFKA_SASL_USERNAME, PLATFORM_KAFKA_SASL_PASSWORD and "
        f"PLATFORM_KAFKA_SASL_MECHANISM ({_LOCAL_HINT})."
    )
    if any(isinstance(e, SaslAuthenticationFailedError) for e in seen):
        return KafkaAccessError(
            f"The Kafka broker at {bootstrap} refused the credentials of {user}: {check}"
        )
    if protocol != "PLAINTEXT" and handshake is not None:
        return KafkaAccessError(_tls_failure(bootstrap, security, handshake))
    if protocol == "SASL_SSL" and disconnected:
        # The broker answers refused credentials and closes at once; kafka-python often reads
        # the close before the answer and reports only the disconnection.
        return KafkaAccessError(
            f"The Kafka broker at {bootstrap} accepted TLS but closed the connection while "
            f"authenticating {user}, as it does when it refuses the credentials: {check}"
        )
    if protocol == "SSL" and disconnected:
        return KafkaAccessError(
            f"The Kafka broker at {bootstrap} accepted TLS but then closed the connection: it "
            "probably requires SASL authentication: set PLATFORM_KAFKA_SECURITY_PROTOCOL=SASL_SSL "
            f"with PLATFORM_KAFKA_SASL_USERNAME and PLATFORM_KAFKA_SASL_PASSWORD ({_LOCAL_HINT})."
        )
    if protocol == "PLAINTEXT" and _speaks_tls(bootstrap):
        return KafkaAccessError(
            f"The Kafka broker at {bootstrap} expects TLS, but PLATFORM_KAFKA_SECURITY_PROTOCOL "
            "is PLAINTEXT: set it to SASL_SSL (or SSL) with the credentials and "
            f"PLATFORM_KAFKA_SSL_CAFILE ({_LOCAL_HINT})."
        )
    return err


def _tls_failure(bootstrap: str, security: KafkaSecurity, handshake: str) -> str:
    reason = handshake.removeprefix("KafkaConnectionError: ").removeprefix("Handshake failed: ")
    ca = security.ssl_cafile or "the system's trusted CAs (PLATFORM_KAFKA_SSL_CAFILE is unset)"
    if "WRONG_VERSION_NUMBER" in reason or "record layer" in reason:
        fix = (
            "the broker does not speak TLS on this port: set PLATFORM_KAFKA_SECURITY_PROTOCOL to "
            "the broker's protocol (PLAINTEXT for a broker without TLS)"
        )
    elif "mismatch" in reason:
        fix = (
            f"its certificate does not name the host in {bootstrap}: connect with a name the "
            "certificate holds (the local broker's: 127.0.0.1 or localhost)"
        )
    else:
        fix = (
            f"its certificate is not signed by {ca}: set PLATFORM_KAFKA_SSL_CAFILE to the PEM "
            f"file of the CA that signed it ({_LOCAL_HINT})"
        )
    return f"The TLS handshake with the Kafka broker at {bootstrap} failed ({reason}); {fix}."


def _speaks_tls(bootstrap: str, timeout_s: float = 5.0) -> bool:
    """Whether the first bootstrap server completes a TLS handshake (nothing is verified: this
    only tells a TLS listener from a PLAINTEXT one)."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with (
            socket.create_connection((host or "localhost", int(port)), timeout_s) as sock,
            context.wrap_socket(sock, server_hostname=host or None),
        ):
            return True
    except (OSError, ValueError):
        return False
