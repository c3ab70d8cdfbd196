"""The `platform` commands do what they say: full help, no silent broker, no second UI."""

from __future__ import annotations

import socket

import click
import pytest
from click.testing import CliRunner

from platform_pipelines.cli import main


def every_command(group: click.Group, path: tuple[str, ...] = ()) -> list[list[str]]:
    """Every command and subcommand of ``group``, as the words that call it."""
    found = []
    for name, command in group.commands.items():
        found.append([*path, name])
        if isinstance(command, click.Group):
            found += every_command(command, (*path, name))
    return found


COMMANDS = every_command(main)


def test_the_known_commands_are_all_there():
    for command in (
        ["kafka", "start"],
        ["stream", "reset-watermark"],
        ["reprocess"],
        ["savepoint", "create"],
        ["savepoint", "list"],
        ["savepoint", "restore"],
    ):
        assert command in COMMANDS, command


@pytest.fixture(autouse=True)
def own_local_dir(tmp_path, monkeypatch):
    """Never touch the user's .local: every test gets its own."""
    monkeypatch.setenv("PLATFORM_LOCAL_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")


def test_the_top_level_help_lists_every_command_with_its_whole_summary():
    result = CliRunner().invoke(main, ["--help"])

    assert result.exit_code == 0
    for command in main.commands.values():
        summary = command.get_short_help_str(limit=1000)
        assert summary in result.output, f"{command.name}: {summary!r} is cut off"
        assert not summary.endswith("...")


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help(command):
    result = CliRunner().invoke(main, [*command, "--help"], prog_name="platform")

    assert result.exit_code == 0 and "Usage: platform" in result.output


def test_ui_on_a_taken_port_exits_at_once_without_starting_anything(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        result = CliRunner().invoke(main, ["ui", "--port", str(port)])

    assert result.exit_code == 1
    assert f"Port {port} on 127.0.0.1 is taken" in result.output and "--port" in result.output
    assert not (tmp_path / "kafka").exists()  # no broker was started


def test_produce_uses_the_configured_broker_and_never_starts_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATFORM_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")

    result = CliRunner().invoke(main, ["produce", "--events", "5"])

    assert result.exit_code == 1
    assert (
        "No Kafka broker answers at 127.0.0.1:1 (PLATFORM_KAFKA_BOOTSTRAP_SERVERS)" in result.output
    )
    assert "Started the local Kafka broker" not in result.output
    assert not (tmp_path / "kafka").exists()


def test_kafka_stop_with_no_local_broker_says_so():
    result = CliRunner().invoke(main, ["kafka", "stop"])

    assert (result.exit_code, result.output.strip()) == (0, "No local Kafka broker is running.")


def test_create_topic_without_a_broker_that_answers_says_how_to_get_one(monkeypatch):
    monkeypatch.setenv("PLATFORM_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")

    result = CliRunner().invoke(main, ["kafka", "create-topic", "service_heartbeats"])

    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: No Kafka broker answers at 127.0.0.1:1: start it (`platform kafka start`), or "
        "point PLATFORM_KAFKA_BOOTSTRAP_SERVERS at a running one."
    )
