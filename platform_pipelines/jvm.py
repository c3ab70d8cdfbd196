"""JVM prerequisites: a Java 17+ runtime, the jars resolved once from Maven Central, and the
platform's own JVM code compiled once.

The jar sets are declared as Maven POMs under ``jvm/<name>/pom.xml``. The first call resolves a set
with ``mvn dependency:copy-dependencies`` into ``.local/jars/<name>/`` and writes a stamp; later calls
reuse the folder without touching the network. Spark's jar set drops every artifact that the pyspark
wheel already ships, so Spark's own classes are never loaded twice.

The platform's own Java sources (``jvm/<name>/src``, e.g. the built-in sessionization) are compiled
with ``javac`` against the pyspark wheel's jars (and the jar sets ``COMPILE_AGAINST`` names) into
``.local/jars/<name>/<name>-<hash>.jar``; the hash covers the sources, the pyspark version and those
jars' names, so an edit or an upgrade compiles again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from platform_pipelines.settings import REPO_ROOT, get_settings

JVM_DIR = REPO_ROOT / "jvm"
# The platform's own Java code (jvm/<name>/src): the built-in sessions, alerts and status, the
# checkpoint crash points of fault injection (used only when a run asks for them), and Delta's
# commit log store for a local disk.
COMPILED = ("sessions", "alerts", "status", "faults", "locallog")
# Compiled sets that need more than the pyspark wheel's jars: Delta's commit log stores extend
# Delta's: on a local disk (jvm/locallog), and on S3 (jvm/logstore, loaded only with an s3a://
# lakehouse), which also reads the AWS SDK's errors.
COMPILE_AGAINST = {"locallog": ("spark",), "logstore": ("spark", "s3")}
MIN_JAVA = 17
_JAR_VERSION = re.compile(r"-\d[\w.\-]*\.jar$")


class JvmSetupError(RuntimeError):
    """Java or the JVM artifacts are missing; the message says what to install or run."""


def java_major_version(java: str = "java") -> int:
    """The major version of the ``java`` on PATH, or a JvmSetupError saying how to get one."""
    if shutil.which(java) is None:
        raise JvmSetupError(
            f"Java was not found on PATH. Spark and the Kafka broker need Java {MIN_JAVA} or newer: "
            "install it (Debian: `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME/PATH."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if match is None:
        raise JvmSetupError(f"Could not read the Java version from `java -version`: {out.strip()}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def require_java() -> int:
    """Refuse to go on without Java 17+; returns the major version found."""
    major = java_major_version()
    if major < MIN_JAVA:
        raise JvmSetupError(
            f"Java {major} was found, but Spark 4 and Kafka 4 need Java {MIN_JAVA} or newer. "
            "Install a newer JDK and put it first on PATH (or set JAVA_HOME)."
        )
    return major


def _artifact_name(jar: str) -> str:
    return _JAR_VERSION.sub("", jar)


def _pyspark_jar_names() -> set[str]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    return {_artifact_name(p.name) for p in jars.glob("*.jar")}


def ensure_jars(name: str, *, quiet: bool = True) -> list[Path]:
    """Resolve the jar set ``jvm/<name>/pom.xml`` once and return its jars (cached afterwards)."""
    pom = JVM_DIR / name / "pom.xml"
    target = get_settings().jars_dir / name
    # The stamp covers the POM and how it is resolved, so a change to either resolves again.
    digest = hashlib.sha256(pom.read_bytes() + " ".join(_maven_args(name)).encode()).hexdigest()[
        :16
    ]
    stamp = target / ".resolved"
    if not (stamp.exists() and stamp.read_text() == digest):
        # Runs that start at once (several stream runs on a fresh container) resolve one at a
        # time: the others wait, then find the stamp.
        target.parent.mkdir(parents=True, exist_ok=True)
        with (target.parent / f".{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (stamp.exists() and stamp.read_text() == digest):
                _resolve(pom, target, _maven_args(name), quiet=quiet)
                if name == "spark":
                    shipped = _pyspark_jar_names()
                    for jar in target.glob("*.jar"):
                        if _artifact_name(jar.name) in shipped:
                            jar.unlink()
                stamp.write_text(digest)
    return sorted(target.glob("*.jar"))


def ensure_compiled(name: str) -> Path:
    """Compile ``jvm/<name>/src/**/*.java`` once into a jar and return it (cached afterwards)."""
    import pyspark

    sources = sorted((JVM_DIR / name / "src").rglob("*.java"))
    against = [jar for jars in COMPILE_AGAINST.get(name, ()) for jar in ensure_jars(jars)]
    # The jar names carry their versions: a new Delta or Hadoop compiles again.
    digest = hashlib.sha256(" ".join([pyspark.__version__, *(j.name for j in against)]).encode())
    for source in sources:
        digest.update(source.read_bytes())
    target = get_settings().jars_dir / name
    jar = target / f"{name}-{digest.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    classpath = [Path(pyspark.__file__).parent / "jars", *sorted({j.parent for j in against})]
    target.mkdir(parents=True, exist_ok=True)
    with (target.parent / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not jar.exists():
            _compile(sources, jar, classpath)
            for old in target.glob(f"{name}-*.jar"):
                if old != jar:
                    old.unlink()
    return jar


def _javac() -> str | None:
    """``javac`` from PATH, JAVA_HOME, or beside the ``java`` on PATH."""
    java = shutil.which("java")
    beside = [Path(java).resolve().parent / "javac"] if java else []
    home = [Path(os.environ["JAVA_HOME"]) / "bin" / "javac"] if os.environ.get("JAVA_HOME") else []
    found = [str(p) for p in (*home, *beside) if p.is_file()]
    return shutil.which("javac") or (found[0] if found else None)


def _compile(sources: list[Path], jar: Path, classpath: list[Path]) -> None:
    javac = _javac()
    if javac is None:
        raise JvmSetupError(
            "The Java compiler (`javac`) was not found: the platform compiles its JVM code once "
            "(jvm/*/src). Install a JDK, not only a JRE (Debian: `apt-get install "
            "openjdk-17-jdk-headless`), or put its bin/ first on PATH."
        )
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        cmd = [
            javac,
            "--release",
            str(MIN_JAVA),
            "-nowarn",
            "-cp",
            os.pathsep.join(f"{folder}/*" for folder in classpath),
            "-d",
            str(classes),
            *map(str, sources),
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise JvmSetupError(f"javac failed on {sources[0].parent}:\n{result.stderr[-3000:]}")
        partial = jar.with_suffix(".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        partial.replace(jar)


def _maven_args(name: str) -> list[str]:
    args = ["dependency:copy-dependencies", "-DincludeScope=runtime"]
    if name == "spark":  # Scala comes with the pyspark wheel; the broker needs its own
        args.append("-DexcludeGroupIds=org.scala-lang")
    return args


def _resolve(pom: Path, target: Path, args: list[str], *, quiet: bool) -> None:
    if shutil.which("mvn") is None:
        raise JvmSetupError(
            "Maven (`mvn`) is needed once to fetch the JVM artifacts from Maven Central. "
            "Install it (Debian: `apt-get install maven`) and run the command again."
        )
    if target.exists():
        shutil.rmtree(target)
    cmd = [
        "mvn",
        "-B",
        "-gs",
        str(JVM_DIR / "maven-settings.xml"),
        "-f",
        str(pom),
        *args,
        f"-DoutputDirectory={target}",
    ]
    if quiet:
        cmd.insert(1, "-q")
    result = subprocess.run(cmd, capture_output=quiet, text=True, check=False)
    if result.returncode != 0:
        detail = (result.stdout or "")[-2000:] if quiet else ""
        raise JvmSetupError(
            f"Maven could not resolve {pom.relative_to(REPO_ROOT)} from Maven Central.\n{detail}\n"
            "Check the network (or your ~/.m2/settings.xml mirror) and run the command again."
        )
