"""The package's shape, enforced: layers only point down, modules stay readable, one time module.

The layers themselves are declared in ``pyproject.toml`` (``[tool.importlinter]``); this test runs
import-linter on them, so CI fails when an import runs back up a layer.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "platform_pipelines"
MAX_LINES = 320  # "under ~300": a module a newcomer reads in one sitting


def test_import_layers_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def test_modules_stay_small() -> None:
    sizes = {p.relative_to(ROOT): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    too_big = {str(p): n for p, n in sizes.items() if n > MAX_LINES}
    assert too_big == {}, f"split these modules: {too_big}"


def test_epoch_millis_are_converted_in_one_module() -> None:
    """``dt.timestamp() * 1000`` is 1 ms off for some timestamps; ``core.times`` does it exactly."""
    pattern = re.compile(r"\.timestamp\(\)\s*\*\s*1000")
    offenders = [
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*.py")
        if p.name != "times.py" and pattern.search(p.read_text())
    ]
    assert offenders == []
