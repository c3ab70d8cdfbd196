"""Kafka security settings: read from PLATFORM_KAFKA_*, turned into exact client kwargs and Spark
options, refused with a message naming the variable and the fix, and never showing the password.
No JVM, no broker."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from kafka.errors import KafkaConnectionError, KafkaTimeoutError, SaslAuthenticationFailedError

from platform_pipelines.kafka.clients import KafkaAccessError, explain
from platform_pipelines.kafka.security import (
    KafkaSecurity,
    KafkaSecurityError,
    client_kwargs,
    jaas_config,
    kafka_security,
)
from platform_pipelines.kafka.tls import BrokerSecrets, TlsSetupError, choose_security

PASSWORD = 'pa55-Wörd"with\\quotes'
PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("PLATFORM_KAFKA_"):
            monkeypatch.delenv(name)


@pytest.fixture
def cafile(tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    path.write_bytes(PEM)
    return path


@pytest.fixture
def sasl_env(monkeypatch: pytest.MonkeyPatch, cafile: Path) -> Path:
    monkeypatch.setenv("PLATFORM_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("PLATFORM_KAFKA_SASL_USERNAME", "platform")
    monkeypatch.setenv("PLATFORM_KAFKA_SASL_PASSWORD", PASSWORD)
    monkeypatch.setenv("PLATFORM_KAFKA_SSL_CAFILE", str(cafile))
    return cafile


def test_an_empty_environment_means_plaintext_and_the_clients_defaults() -> None:
    security = kafka_security()

    assert security.security_protocol == "PLAINTEXT"
    assert security.kafka_python_kwargs() == {}
    assert security.spark_options() == {}
    assert client_kwargs() == {}


def test_sasl_ssl_from_the_environment_gives_the_exact_kafka_python_kwargs(sasl_env: Path) -> None:
    assert kafka_security().kafka_python_kwargs() == {
        "security_protocol": "SASL_SSL",
        "ssl_check_hostname": True,
        "ssl_cafile": str(sasl_env),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "platform",
        "sasl_plain_password": PASSWORD,
    }


def test_sasl_ssl_from_the_environment_gives_the_exact_spark_kafka_options(sasl_env: Path) -> None:
    assert kafka_security().spark_options() == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.ssl.endpoint.identification.algorithm": "https",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(sasl_env),
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="platform" password="pa55-Wörd\\"with\\\\quotes";',
    }


def test_plain_mechanism_uses_the_plain_login_module(
    sasl_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLATFORM_KAFKA_SASL_MECHANISM", "plain")

    security = kafka_security()

    assert security.kafka_python_kwargs()["sasl_mechanism"] == "PLAIN"
    assert security.spark_options()["kafka.sasl.mechanism"] == "PLAIN"
    assert security.spark_options()["kafka.sasl.jaas.config"] == jaas_config(
        "PLAIN", "platform", PASSWORD
    )
    assert jaas_config("PLAIN", "u", "p") == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
    )


def test_ssl_without_a_ca_file_trusts_the_system_cas_and_still_checks_host_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLATFORM_KAFKA_SECURITY_PROTOCOL", "ssl")

    security = kafka_security()

    assert security.kafka_python_kwargs() == {
        "security_protocol": "SSL",
        "ssl_check_hostname": True,
    }
    assert security.spark_options() == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.endpoint.identification.algorithm": "https",
    }


def test_ssl_with_a_ca_file_reads_it_as_a_pem_trust_store(
    monkeypatch: pytest.MonkeyPatch, cafile: Path
) -> None:
    monkeypatch.setenv("PLATFORM_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("PLATFORM_KAFKA_SSL_CAFILE", str(cafile))

    assert kafka_security().spark_options() == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.endpoint.identification.algorithm": "https",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(cafile),
    }


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"PLATFORM_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"},
            "PLATFORM_KAFKA_SECURITY_PROTOCOL=SASL_SSL needs PLATFORM_KAFKA_SASL_USERNAME and "
            'PLATFORM_KAFKA_SASL_PASSWORD: set them (for the local broker: eval "$(platform kafka '
            'env)").',
        ),
        (
            {"PLATFORM_KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "PLATFORM_KAFKA_SASL_USERNAME": "u"},
            "PLATFORM_KAFKA_SECURITY_PROTOCOL=SASL_SSL needs PLATFORM_KAFKA_SASL_PASSWORD: set them",
        ),
        (
            {"PLATFORM_KAFKA_SASL_USERNAME": "u", "PLATFORM_KAFKA_SASL_PASSWORD": PASSWORD},
            "PLATFORM_KAFKA_SASL_USERNAME and PLATFORM_KAFKA_SASL_PASSWORD set, but "
            "PLATFORM_KAFKA_SECURITY_PROTOCOL is PLAINTEXT, which sends no credentials: set "
            "PLATFORM_KAFKA_SECURITY_PROTOCOL=SASL_SSL, or unset PLATFORM_KAFKA_SASL_USERNAME and "
            "PLATFORM_KAFKA_SASL_PASSWORD.",
        ),
        (
            {"PLATFORM_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT"},
            "PLATFORM_KAFKA_SECURITY_PROTOCOL: Input should be 'PLAINTEXT', 'SSL' or 'SASL_SSL'",
        ),
        (
            {"PLATFORM_KAFKA_SECURITY_PROTOCOL": "SSL", "PLATFORM_KAFKA_SASL_MECHANISM": "GSSAPI"},
            "PLATFORM_KAFKA_SASL_MECHANISM: Input should be 'SCRAM-SHA-512' or 'PLAIN'",
        ),
        (
            {
                "PLATFORM_KAFKA_SECURITY_PROTOCOL": "SSL",
                "PLATFORM_KAFKA_SSL_CAFILE": "/nope/ca.pem",
            },
            "PLATFORM_KAFKA_SSL_CAFILE=/nope/ca.pem: no such file: point it at the PEM file of the "
            "CA that signed the broker's certificate.",
        ),
    ],
)
def test_incomplete_or_inconsistent_settings_are_refused_naming_the_variable_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    with pytest.raises(KafkaSecurityError) as refused:
        kafka_security()

    assert message in str(refused.value)
    assert PASSWORD not in str(refused.value)


def test_a_ca_file_that_holds_no_pem_certificate_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keystore = tmp_path / "broker.p12"
    keystore.write_bytes(b"\x30\x82binary")
    monkeypatch.setenv("PLATFORM_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("PLATFORM_KAFKA_SSL_CAFILE", str(keystore))

    with pytest.raises(KafkaSecurityError, match="holds no PEM certificate"):
        kafka_security()


def test_the_password_never_shows_in_repr_str_or_the_option_dicts_reprs(sasl_env: Path) -> None:
    security = kafka_security()

    shown = [
        repr(security),
        str(security),
        repr(security.kafka_python_kwargs()),
        str(security.spark_options()),
        f"{security.kafka_python_kwargs()}",
    ]

    assert str(security) == f"SASL_SSL, SCRAM-SHA-512 as 'platform', CA {sasl_env}"
    assert all(PASSWORD not in text and "quotes" not in text for text in shown)
    assert security.password == PASSWORD


def test_broker_secrets_export_lines_read_the_password_from_its_file(tmp_path: Path) -> None:
    secrets = BrokerSecrets.of(tmp_path / "my kafka")
    secrets.folder.mkdir(parents=True)
    secrets.password_file("platform").write_text("generated-secret\n")

    assert secrets.export_lines() == [
        "export PLATFORM_KAFKA_SECURITY_PROTOCOL=SASL_SSL",
        "export PLATFORM_KAFKA_SASL_MECHANISM=SCRAM-SHA-512",
        "export PLATFORM_KAFKA_SASL_USERNAME=platform",
        f"export PLATFORM_KAFKA_SASL_PASSWORD=\"$(cat '{secrets.folder}/platform.password')\"",
        f"export PLATFORM_KAFKA_SSL_CAFILE='{secrets.folder}/ca.pem'",
    ]


def test_scram_users_go_to_the_storage_tool_through_a_private_file(tmp_path: Path) -> None:
    secrets = BrokerSecrets.of(tmp_path)
    secrets.folder.mkdir()
    secrets.password_file("platform").write_text("p1\n")
    secrets.password_file("platform-broker").write_text("p2\n")

    args = secrets.scram_args_file()

    assert stat.S_IMODE(args.stat().st_mode) == 0o600
    assert args.read_text().splitlines() == [
        "--add-scram",
        "SCRAM-SHA-512=[name=platform,password=p1]",
        "--add-scram",
        "SCRAM-SHA-512=[name=platform-broker,password=p2]",
    ]


def test_a_formatted_data_dir_keeps_its_protocol(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "meta.properties").write_text("node.id=1\n")

    assert choose_security(tmp_path, None) == "PLAINTEXT"
    with pytest.raises(TlsSetupError) as refused:
        choose_security(tmp_path, "SASL_SSL")
    assert str(refused.value) == (
        f"The broker data in {tmp_path} was formatted for PLAINTEXT; it cannot serve SASL_SSL "
        "(SCRAM users are created when the storage is formatted). Start it with --security "
        f"plaintext, or delete {tmp_path} (drops its topics) to start afresh."
    )
    assert choose_security(tmp_path / "fresh", "SASL_SSL") == "SASL_SSL"


def test_a_refused_password_is_explained_naming_the_credential_variables(sasl_env: Path) -> None:
    seen: list[BaseException] = [
        KafkaConnectionError("socket disconnected"),
        SaslAuthenticationFailedError("invalid credentials with SASL mechanism SCRAM-SHA-512"),
    ]

    error = explain(KafkaTimeoutError("Unable to bootstrap"), "h:1", kafka_security(), seen)

    assert isinstance(error, KafkaAccessError)
    assert "refused the credentials of user 'platform' (SCRAM-SHA-512)" in str(error)
    assert "PLATFORM_KAFKA_SASL_USERNAME, PLATFORM_KAFKA_SASL_PASSWORD" in str(error)


def test_a_connection_closed_during_authentication_is_explained_as_refused_credentials(
    sasl_env: Path,
) -> None:
    """The broker closes right after refusing; kafka-python often reports only the close."""
    seen: list[BaseException] = [KafkaConnectionError("socket disconnected")] * 3

    error = explain(KafkaTimeoutError("Unable to bootstrap"), "h:1", kafka_security(), seen)

    assert isinstance(error, KafkaAccessError)
    assert str(error).endswith(
        "The Kafka broker at h:1 accepted TLS but closed the connection while authenticating "
        "user 'platform' (SCRAM-SHA-512), as it does when it refuses the credentials: check "
        "PLATFORM_KAFKA_SASL_USERNAME, PLATFORM_KAFKA_SASL_PASSWORD and "
        'PLATFORM_KAFKA_SASL_MECHANISM (for the local broker: eval "$(platform kafka env)").'
    )


def test_an_untrusted_certificate_is_explained_naming_the_ca_file_variable(sasl_env: Path) -> None:
    seen: list[BaseException] = [
        KafkaConnectionError("Handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] self-signed")
    ]

    error = explain(KafkaTimeoutError("Unable to bootstrap"), "h:1", kafka_security(), seen)

    assert isinstance(error, KafkaAccessError)
    assert str(error).endswith(
        "The TLS handshake with the Kafka broker at h:1 failed ([SSL: CERTIFICATE_VERIFY_FAILED] "
        f"self-signed); its certificate is not signed by {sasl_env}: set PLATFORM_KAFKA_SSL_CAFILE "
        'to the PEM file of the CA that signed it (for the local broker: eval "$(platform kafka '
        'env)").'
    )


def test_an_unreachable_broker_keeps_its_own_error() -> None:
    timeout = KafkaTimeoutError("Unable to bootstrap from 127.0.0.1:1")

    assert explain(timeout, "127.0.0.1:1", KafkaSecurity(), []) is timeout
