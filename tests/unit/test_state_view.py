"""core/state_view: a key's state decoded, counted in bytes, ranked and formatted, without a JVM."""

from __future__ import annotations

import json

import pytest

from platform_pipelines.core.state_view import (
    KeyState,
    Part,
    StateReport,
    StateTotals,
    assemble,
    biggest,
    decode_document,
    decode_part,
    keys_text,
    missing_key_text,
    report_json,
    table_rows,
    title,
    value_text,
)
from platform_pipelines.streams.keyed import encode

T_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z


def keyed(state: dict, timer_ms: int | None) -> Part:
    """The ``state`` variable of a keyed-logic stream as Spark's reader returns it."""
    return Part("state", json.dumps({"json": encode(state, timer_ms)}))


def report(*shown: KeyState, time_mode: str | None = "EventTime") -> StateReport:
    totals = StateTotals(keys=3, total_bytes=600, biggest_key_bytes=300)
    return StateReport("security_alerts", 7, ("state",), time_mode, totals, shown)


def test_a_keyed_logic_document_shows_its_state_as_the_adapter_wrote_it():
    document = encode({"failures_ms": [T_MS]}, T_MS + 600_000)

    assert decode_document(document) == {"failures_ms": [T_MS]}


def test_a_string_that_is_not_a_document_is_shown_parsed_or_as_it_is():
    assert decode_document('{"open": null, "pending": []}') == {"open": None, "pending": []}
    assert decode_document("plain text") == "plain text"


def test_a_keyed_value_counts_the_bytes_of_its_document_not_of_the_readers_wrapping():
    document = encode({"count": 2, "last_seen_ms": T_MS}, None)

    value, size = decode_part(Part("state", json.dumps({"json": document})))

    assert (value, size) == ({"count": 2, "last_seen_ms": T_MS}, len(document))


def test_a_struct_value_is_shown_as_read_and_counts_its_json():
    text = '{"expiresAtMicros":1795342200000000}'

    assert decode_part(Part("dedupeWithinWatermark", text)) == (
        {"expiresAtMicros": 1795342200000000},
        len(text),
    )


def test_a_one_field_string_that_is_not_json_keeps_its_field_name():
    assert decode_part(Part("name", '{"name":"bob"}')) == ({"name": "bob"}, 14)


def test_a_key_with_one_part_shows_that_value_its_timers_and_counts_key_values_and_timers():
    part = keyed({"failures_ms": [T_MS]}, T_MS + 600_000)
    document = json.loads(part.value_json)["json"]

    state = assemble("u5", [part], [T_MS + 600_000], ("state",))

    assert state == KeyState(
        "u5", {"failures_ms": [T_MS]}, (T_MS + 600_000,), 2 + len(document) + 8
    )
    assert state.timer_ms == T_MS + 600_000


def test_a_key_with_several_variables_shows_each_by_name_and_omits_those_it_lacks():
    pending = Part("pending", '[{"event_time_ms":1,"event_id":"e2"}]')

    state = assemble("u2", [pending], [5, 1], ("session", "pending"))

    assert state.value == {"pending": [{"event_time_ms": 1, "event_id": "e2"}]}
    assert state.timers_ms == (1, 5)
    assert state.bytes == 2 + len(pending.value_json) + 16


def test_a_key_with_only_a_timer_has_no_value():
    assert assemble("svc", [], [T_MS], ("state",)) == KeyState("svc", None, (T_MS,), 3 + 8)


def test_the_biggest_keys_come_first_and_equal_sizes_by_key():
    states = [KeyState(k, None, (), n) for k, n in [("b", 10), ("a", 10), ("c", 30), ("d", 1)]]

    assert [s.key for s in biggest(states, 3)] == ["c", "a", "b"]


def test_rows_show_key_exact_bytes_timers_in_utc_and_the_value_cut_to_the_width():
    state = KeyState("u5", {"failures_ms": [T_MS, T_MS]}, (T_MS + 600_000,), 1234)

    assert table_rows(report(state), width=20) == [
        ["u5", "1,234", "2026-11-22T10:10:00.000Z", '{"failures_ms": [17…']
    ]
    assert value_text({"a": 1}) == '{"a": 1}'
    assert table_rows(report(KeyState("k", 3, (), 9)))[0][2] == "-"


def test_keys_are_counted_in_words():
    assert (keys_text(1), keys_text(0), keys_text(12345)) == ("1 key", "0 keys", "12,345 keys")


def test_the_title_names_stream_batch_totals_and_the_kind_of_timers():
    assert title(report()) == (
        "security_alerts at batch 7: 3 keys, 600 B (biggest 300 B); event-time timers"
    )
    assert title(report(time_mode=None)).endswith("(biggest 300 B)")


def test_the_json_report_carries_totals_and_each_shown_key_with_its_timers_both_ways():
    state = KeyState("u5", {"n": 1}, (T_MS,), 40)

    assert report_json(report(state)) == {
        "stream": "security_alerts",
        "batch_id": 7,
        "parts": ["state"],
        "time_mode": "EventTime",
        "keys": 3,
        "total_bytes": 600,
        "biggest_key_bytes": 300,
        "shown": [
            {
                "key": "u5",
                "bytes": 40,
                "timers_ms": [T_MS],
                "timers": ["2026-11-22T10:00:00.000Z"],
                "value": {"n": 1},
            }
        ],
    }


@pytest.mark.parametrize("key", ["u9", "späť"])
def test_a_missing_key_is_explained_with_what_to_do(key):
    text = missing_key_text(report(), key)

    assert text == (
        f"security_alerts holds no state for key {key!r} at batch 7 (3 keys): it never had "
        "state, or its state was removed (a closed session, an expired timer). Leave out --key "
        "to see the biggest keys."
    )
