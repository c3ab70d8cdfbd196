"""The local broker's ``SASL_SSL`` material: a private CA, the broker's key pair signed by it, the
SCRAM users and their generated passwords, all made once with the JDK's ``keytool`` and kept in
``<data_dir>/security/`` (mode 0700; every secret file 0600, never echoed or put on a command line).

``ca.pem`` is the CA certificate that clients trust (``PLATFORM_KAFKA_SSL_CAFILE``); the
broker's certificate names ``IP:127.0.0.1`` and ``DNS:localhost``, so host names are verified.
Two SCRAM-SHA-512 users exist from the storage format on: ``platform`` for the platform's clients
and ``platform-broker`` for the broker itself (its inter-broker listener is the SASL_SSL one).
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import SecretStr

from platform_pipelines.kafka.security import KafkaSecurity, SaslMechanism

BrokerSecurity = Literal["PLAINTEXT", "SASL_SSL"]
FOLDER = "security"
CLIENT_USER = "platform"
BROKER_USER = "platform-broker"
MECHANISM: SaslMechanism = "SCRAM-SHA-512"
_SAN = "SAN=IP:127.0.0.1,DNS:localhost"
_DAYS = "3650"
_SCRAM_USERS_ADDED = "scram-users-added"  # the storage was formatted with the SCRAM users


class TlsSetupError(RuntimeError):
    """The broker's security cannot be set up as asked; the message says why and what to do."""


def formatted_security(data_dir: Path) -> BrokerSecurity | None:
    """The protocol ``data_dir``'s storage was formatted for; None when it is not formatted."""
    if not (Path(data_dir) / "logs" / "meta.properties").exists():
        return None
    scram = (BrokerSecrets.of(data_dir).folder / _SCRAM_USERS_ADDED).exists()
    return "SASL_SSL" if scram else "PLAINTEXT"


def choose_security(data_dir: Path, requested: BrokerSecurity | None) -> BrokerSecurity:
    """``requested``, else what ``data_dir`` was formatted for, else PLAINTEXT; a formatted data
    dir cannot change its protocol (its SCRAM users exist from the format on, or never)."""
    formatted = formatted_security(data_dir)
    chosen = requested or formatted or "PLAINTEXT"
    if formatted not in (None, chosen):
        raise TlsSetupError(
            f"The broker data in {data_dir} was formatted for {formatted}; it cannot serve "
            f"{chosen} (SCRAM users are created when the storage is formatted). Start it with "
            f"--security {formatted.lower()}, or delete {data_dir} (drops its topics) to start "
            "afresh."
        )
    return chosen


def _keytool() -> str:
    found = shutil.which("keytool")
    java = shutil.which("java")
    beside_java = Path(os.path.realpath(java)).parent / "keytool" if java else None
    if found is None and beside_java is not None and beside_java.exists():
        found = str(beside_java)
    if found is None:
        raise TlsSetupError(
            "keytool (part of the JDK) was not found on PATH or beside java: it makes the local "
            "broker's certificates. Install a JDK 17+ (Debian: openjdk-17-jdk-headless)."
        )
    return found


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600 from the first byte)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(path, 0o600)  # also when the file existed with a wider mode


@dataclass(frozen=True)
class BrokerSecrets:
    """The ``security/`` folder of one local broker's ``data_dir``."""

    folder: Path

    @classmethod
    def of(cls, data_dir: Path) -> BrokerSecrets:
        return cls(Path(data_dir) / FOLDER)

    @property
    def ca_pem(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.folder / "broker.p12"

    def password_file(self, user: str) -> Path:
        """Where ``user``'s password lives (``platform``, ``platform-broker``, ``keystore``,
        ``ca``)."""
        return self.folder / f"{user}.password"

    def password(self, user: str) -> str:
        return self.password_file(user).read_text().strip()

    def ready(self) -> bool:
        return self.keystore.exists() and self.ca_pem.exists()

    def create(self, timeout_s: float = 60) -> None:
        """Make the passwords, the CA and the broker's keystore (nothing that exists already)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        for user in ("ca", "keystore", CLIENT_USER, BROKER_USER):
            if not self.password_file(user).exists():
                write_private(self.password_file(user), secrets.token_urlsafe(24) + "\n")
        if self.ready():
            return
        for path in (self.keystore, self.folder / "ca.p12", self.ca_pem):
            path.unlink(missing_ok=True)
        for step in self._keytool_steps():
            self._run(step, timeout_s)
        for path in (self.keystore, self.folder / "ca.p12"):  # private keys
            os.chmod(path, 0o600)
        for path in (self.folder / "broker.csr", self.folder / "broker.crt"):
            path.unlink()

    def _keytool_steps(self) -> list[list[str]]:
        ca_store = [
            "-keystore",
            str(self.folder / "ca.p12"),
            "-storetype",
            "PKCS12",
            "-storepass:file",
            str(self.password_file("ca")),
        ]
        store = [
            "-keystore",
            str(self.keystore),
            "-storetype",
            "PKCS12",
            "-storepass:file",
            str(self.password_file("keystore")),
        ]
        csr, crt = str(self.folder / "broker.csr"), str(self.folder / "broker.crt")
        new_key = ["-genkeypair", "-keyalg", "RSA", "-keysize", "2048", "-validity", _DAYS]
        return [
            [
                *new_key,
                "-alias",
                "ca",
                "-dname",
                "CN=platform local Kafka CA",
                "-ext",
                "bc:c",
                "-ext",
                "KU=keyCertSign,cRLSign",
                *ca_store,
            ],
            ["-exportcert", "-rfc", "-alias", "ca", "-file", str(self.ca_pem), *ca_store],
            [*new_key, "-alias", "broker", "-dname", "CN=localhost", "-ext", _SAN, *store],
            ["-certreq", "-alias", "broker", "-file", csr, *store],
            [
                "-gencert",
                "-rfc",
                "-alias",
                "ca",
                "-infile",
                csr,
                "-outfile",
                crt,
                "-validity",
                _DAYS,
                "-ext",
                _SAN,
                "-ext",
                "KU=digitalSignature,keyEncipherment",
                "-ext",
                "EKU=serverAuth",
                *ca_store,
            ],
            ["-importcert", "-noprompt", "-alias", "ca", "-file", str(self.ca_pem), *store],
            ["-importcert", "-noprompt", "-alias", "broker", "-file", crt, *store],
        ]

    def _run(self, args: list[str], timeout_s: float) -> None:
        done = subprocess.run(
            [_keytool(), *args], capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if done.returncode != 0:
            raise TlsSetupError(
                f"keytool {args[0]} failed in {self.folder}:\n{done.stdout}{done.stderr}\n"
                f"Delete {self.folder} (and the broker's logs/ folder next to it, whose SCRAM "
                "users were made with these passwords) and start again."
            )

    def scram_args_file(self) -> Path:
        """A 0600 file of StorageTool arguments (``@file``) adding both SCRAM users, so that no
        password is on a command line; delete it after formatting. Marks the data dir as
        formatted for SASL_SSL (``formatted_security`` trusts it only once the format is done)."""
        path = self.folder / "format.args"
        lines = []
        for user in (CLIENT_USER, BROKER_USER):
            lines += ["--add-scram", f"{MECHANISM}=[name={user},password={self.password(user)}]"]
        write_private(path, "\n".join(lines) + "\n")
        (self.folder / _SCRAM_USERS_ADDED).touch()
        return path

    def listener_properties(self, host: str, port: int, controller_port: int) -> str:
        """The ``server.properties`` lines of a SASL_SSL client listener (the controller stays
        PLAINTEXT on loopback). They hold the keystore and broker passwords: write them 0600."""
        jaas = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{BROKER_USER}" password="{self.password(BROKER_USER)}";'
        )
        return f"""\
listeners=SASL_SSL://{host}:{port},CONTROLLER://{host}:{controller_port}
advertised.listeners=SASL_SSL://{host}:{port}
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
inter.broker.listener.name=SASL_SSL
sasl.enabled.mechanisms={MECHANISM}
sasl.mechanism.inter.broker.protocol={MECHANISM}
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={jaas}
ssl.keystore.type=PKCS12
ssl.keystore.location={self.keystore}
ssl.keystore.password={self.password("keystore")}
ssl.truststore.type=PEM
ssl.truststore.location={self.ca_pem}
ssl.endpoint.identification.algorithm=https
"""

    def client_security(self, security: BrokerSecurity = "SASL_SSL") -> KafkaSecurity:
        """What a client of the broker needs, whatever the environment says: for SASL_SSL the
        ``platform`` user (what ``export_lines`` tells a shell)."""
        if security == "PLAINTEXT":
            return KafkaSecurity(
                security_protocol="PLAINTEXT",
                sasl_username=None,
                sasl_password=None,
                ssl_cafile=None,
            )
        return KafkaSecurity(
            security_protocol="SASL_SSL",
            sasl_mechanism=MECHANISM,
            sasl_username=CLIENT_USER,
            sasl_password=SecretStr(self.password(CLIENT_USER)),
            ssl_cafile=self.ca_pem,
        )

    def export_lines(self) -> list[str]:
        """Shell lines that point the platform's clients at this broker; the password is read
        from its file when the shell runs them, never printed."""
        password = shlex.quote(str(self.password_file(CLIENT_USER)))
        return [
            "export PLATFORM_KAFKA_SECURITY_PROTOCOL=SASL_SSL",
            f"export PLATFORM_KAFKA_SASL_MECHANISM={MECHANISM}",
            f"export PLATFORM_KAFKA_SASL_USERNAME={CLIENT_USER}",
            f'export PLATFORM_KAFKA_SASL_PASSWORD="$(cat {password})"',
            f"export PLATFORM_KAFKA_SSL_CAFILE={shlex.quote(str(self.ca_pem))}",
        ]
