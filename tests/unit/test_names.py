"""Hostile names never become folders or SQL: each is refused with the rule and a suggestion."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from platform_pipelines.core.names import InvalidName, check_name, quote_column
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.streams.builtin import builtin_streams
from platform_pipelines.streams.declare import KafkaSource
from platform_pipelines.streams.registry import declare_stream
from platform_pipelines.streams.validate import DeclarationError
from user_streams.running_count import STREAMS

EXAMPLE = STREAMS[0]
HOSTILE = ["../x", "a`b", "key counts", "x" * 300, "", "a/b", "..", "tables/../../etc", "é"]


def problems_of(**changes: object) -> list[str]:
    with pytest.raises(DeclarationError) as error:
        declare_stream(builtin_streams(), replace(EXAMPLE, **changes))
    return error.value.problems


@pytest.mark.parametrize("value", [v for v in HOSTILE if v])  # sink_table "" means the default
@pytest.mark.parametrize("field", ["name", "sink_table"])
def test_a_hostile_stream_or_table_name_is_refused_before_any_folder_exists(field, value):
    problems = problems_of(**{field: value})
    mine = [p for p in problems if p.startswith(f"{field}: ")]
    assert len(mine) == 1, problems
    assert "is not a valid name; use lowercase letters, digits and underscores" in mine[0]
    assert mine[0].endswith("')."), "the message ends with a suggested name"


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_key_column_never_reaches_the_merge_condition(value):
    problems = problems_of(key=value)
    assert [p for p in problems if p.startswith("key: ") and "not a valid column name" in p]


@pytest.mark.parametrize("value", ["a`b", "x y", "../x"])
def test_hostile_output_and_unique_key_columns_are_refused(value):
    problems = problems_of(output_schema={value: "string", "key": "string"}, unique_key=value)
    assert [p for p in problems if p.startswith("output_schema: ") and repr(value) in p]
    assert [p for p in problems if p.startswith("unique_key: ") and repr(value) in p]


@pytest.mark.parametrize("topic", ["9lives", "-x", "x" * 70])
def test_a_topic_whose_bronze_table_name_would_be_invalid_is_refused(topic):
    source = KafkaSource(topic=topic, schema={"key": "string", "event_time": "timestamp"})
    problems = problems_of(source=source)
    assert [p for p in problems if p.startswith("source.topic (as the bronze table name): ")]


@pytest.mark.parametrize("value", HOSTILE)
def test_the_lakehouse_refuses_a_hostile_table_or_checkpoint_name(value, tmp_path: Path):
    lake = Lakehouse(tmp_path)
    with pytest.raises(InvalidName, match="is not a valid name"):
        lake.table(value)
    with pytest.raises(InvalidName, match="is not a valid name"):
        lake.checkpoint(value)
    assert list(tmp_path.iterdir()) == []


def test_plain_names_and_columns_pass_unchanged():
    assert check_name("stream", "user_sessions") == "user_sessions"
    assert quote_column("Amount_2") == "`Amount_2`"
    with pytest.raises(InvalidName, match="not a valid column name"):
        quote_column("a` = 1 OR `b")
