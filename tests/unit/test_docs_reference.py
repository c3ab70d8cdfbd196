"""The documentation's generated reference keeps up with the code, and the README's links hold.

``docs/gen_reference.py`` renders the reference pages at every ``make docs``; these tests render
them here, without mkdocs, so ``make test`` fails as soon as a setting, command or launch field
the code has is missing from them.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from types import ModuleType

import click
import pytest

from platform_pipelines.settings import REPO_ROOT, PlatformSettings


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_reference", REPO_ROOT / "docs" / "gen_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


@pytest.fixture(scope="module")
def settings_page() -> str:
    return str(gen.settings_page())


def test_every_platform_setting_the_code_reads_is_in_the_settings_reference(
    settings_page: str,
) -> None:
    assert gen.missing_from_reference(settings_page) == {}


def test_settings_reference_lists_every_field_with_its_variable_default_and_meaning(
    settings_page: str,
) -> None:
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r"^\| `(PLATFORM_[A-Z0-9_]+)` \|.*$", settings_page, re.M)
    }
    for name, info in PlatformSettings.model_fields.items():
        variable = info.alias or f"PLATFORM_{name.upper()}"
        assert variable in rows, variable
        meaning = rows[variable].rsplit("|", 2)[-2].strip()
        assert meaning, f"{variable} has no meaning: give its field a description"
    assert "| `PLATFORM_STATE_PARTITIONS` | int | `4` |" in settings_page
    assert "| `PLATFORM_LOCAL_DIR` | path | `.local` |" in settings_page


def test_a_name_only_in_a_message_is_found_and_constants_are_not() -> None:
    read = gen.names_in_strings()
    assert "PLATFORM_FAULT_DIR" in read  # handed to the JVM in an environment
    assert "PLATFORM_TABLES" not in read  # a Python constant, not a variable


def test_command_reference_lists_every_platform_command() -> None:
    from platform_pipelines.cli import main

    page = gen.cli_page()
    paths = [
        ctx.command_path for _, ctx in gen.commands(main, click.Context(main, info_name="platform"))
    ]
    assert "platform kafka cluster start" in paths
    for path in paths:
        assert f"## `{path}`" in page, path
    assert "| `--retention-hours FLOAT RANGE` |" in page


def test_launch_config_reference_lists_every_job_field() -> None:
    page = gen.launch_config_page()
    for cls in [*gen.config_classes(), *gen.resource_classes()]:
        assert f"### `{cls.__name__}`" in page
        for field in cls.model_fields:
            assert f"| `{field}` |" in page, f"{cls.__name__}.{field}"
    assert "Jobs: `all_streams`, `stream_clickstream_raw`" in page


def test_package_map_names_every_module_with_a_docstring() -> None:
    page = gen.modules_page()
    assert f"`platform_pipelines`: {gen.first_line('platform_pipelines')}" in page
    for module in gen.package_modules():
        if module != "platform_pipelines" and gen.first_line(module):
            assert f"- `{module.removeprefix('platform_pipelines.')}`:" in page, module


def test_readme_links_lead_to_files_that_exist() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links into docs/"
    missing = [t for t in local if not (REPO_ROOT / t).exists()]
    assert missing == [], missing


def test_readme_keeps_its_two_commands_in_fenced_blocks() -> None:
    blocks = re.findall(r"^```\n(.*?)\n```$", (REPO_ROOT / "README.md").read_text(), re.M | re.S)
    assert "make demo" in blocks
    assert "make test" in blocks


def test_every_page_of_the_docs_is_in_the_nav() -> None:
    nav = (REPO_ROOT / "mkdocs.yml").read_text()
    docs = REPO_ROOT / "docs"
    pages = sorted(str(p.relative_to(docs)) for p in docs.rglob("*.md"))
    assert [p for p in pages if f": {p}" not in nav] == []
    assert [p for p in gen.PAGES if f": {p}" not in nav] == []


def test_readme_stays_a_front_door() -> None:
    assert len((REPO_ROOT / "README.md").read_text().splitlines()) <= 200
