"""The zip a driver ships to a cluster's executors: the packages' sources, named by content."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from platform_pipelines.spark.session import code_archive, is_local


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An importable package ``shipme`` with a subpackage and a stale bytecode file."""
    root = tmp_path / "src" / "shipme"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "logic.py").write_text("ANSWER = 42\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"stale")
    monkeypatch.syspath_prepend(str(root.parent))
    monkeypatch.delitem(sys.modules, "shipme", raising=False)
    return root


def test_the_archive_holds_the_package_sources_under_their_import_names(tmp_path, package):
    archive = code_archive(tmp_path / "pyfiles", ["shipme"])

    assert sorted(zipfile.ZipFile(archive).namelist()) == [
        "shipme/__init__.py",
        "shipme/sub/__init__.py",
        "shipme/sub/logic.py",
    ]
    assert archive.name.startswith("code-") and archive.suffix == ".zip"


def test_the_same_sources_reuse_one_archive_and_a_change_makes_a_new_one(tmp_path, package):
    first = code_archive(tmp_path / "pyfiles", ["shipme"])
    again = code_archive(tmp_path / "pyfiles", ["shipme"])
    (package / "sub" / "logic.py").write_text("ANSWER = 43\n")
    changed = code_archive(tmp_path / "pyfiles", ["shipme"])

    assert again == first
    assert changed != first
    assert zipfile.ZipFile(changed).read("shipme/sub/logic.py") == b"ANSWER = 43\n"


def test_a_package_that_is_not_importable_is_refused_by_name(tmp_path):
    with pytest.raises(
        ModuleNotFoundError, match=r"Cannot ship 'no_such_package' .* PLATFORM_STREAM_MODULES"
    ):
        code_archive(tmp_path, ["no_such_package"])


def test_only_local_masters_run_without_shipping():
    assert [is_local(m) for m in ("local", "local[2]", "local[*]")] == [True, True, True]
    assert not is_local("spark://127.0.0.1:7077") and not is_local("yarn")
