"""``jvm.ensure_compiled``: the platform's Java sources become a jar once, again after an edit."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from platform_pipelines import jvm

pytestmark = pytest.mark.spark


def test_the_sessionizer_compiles_once_and_again_when_a_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLATFORM_JARS_DIR", str(tmp_path / "jars"))
    sources = tmp_path / "jvm"
    shutil.copytree(jvm.JVM_DIR / "sessions", sources / "sessions")
    monkeypatch.setattr(jvm, "JVM_DIR", sources)

    jar = jvm.ensure_compiled("sessions")
    with zipfile.ZipFile(jar) as archive:
        classes = set(archive.namelist())
    assert "platform/sessions/Sessionizer.class" in classes
    assert "platform/sessions/Sessionizer$Step.class" in classes
    built = jar.stat().st_mtime_ns
    assert jvm.ensure_compiled("sessions") == jar and jar.stat().st_mtime_ns == built  # cached

    source = sources / "sessions" / "src" / "platform" / "sessions" / "Sessionizer.java"
    source.write_text(source.read_text() + "\n// edited\n")
    rebuilt = jvm.ensure_compiled("sessions")
    assert rebuilt != jar and rebuilt.exists() and not jar.exists()  # the old jar is removed


def test_a_compile_error_names_the_folder_and_javacs_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLATFORM_JARS_DIR", str(tmp_path / "jars"))
    broken = tmp_path / "jvm" / "broken" / "src" / "x"
    broken.mkdir(parents=True)
    (broken / "Broken.java").write_text('package x; class Broken { int f() { return "s"; } }\n')
    monkeypatch.setattr(jvm, "JVM_DIR", tmp_path / "jvm")

    with pytest.raises(jvm.JvmSetupError, match=r"javac failed on .*broken/src/x:\n.*incompatible"):
        jvm.ensure_compiled("broken")
    assert not list((tmp_path / "jars" / "broken").glob("*.jar"))
