"""A checkpoint's stateful operators read from its metadata files: v1 and v2 formats, the v2 file
Spark would pick for a batch, and None (ask Spark) wherever the files do not say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from platform_pipelines.lakehouse.state_operators import Operator, operators_from_files

DATA = Path(__file__).parents[1] / "data" / "checkpoints" / "service_status"
SERVICE_STATUS = Operator(
    0, "transformWithStateInPySparkExec", ("default",), "ProcessingTime", ("state",)
)


def v1(operator_id: int, name: str, stores: tuple[str, ...] = ("default",)) -> str:
    info = [{"storeName": s, "numColsPrefixKey": 0, "numPartitions": 4} for s in stores]
    body = {
        "operatorInfo": {"operatorId": operator_id, "operatorName": name},
        "stateStoreInfo": info,
    }
    return "v1\n" + json.dumps(body)


def v2(variables: list[str], mode: str = "EventTime") -> str:
    props = {
        "timeMode": mode,
        "outputMode": "Append",
        "stateVariables": [{"stateName": v, "stateVariableType": "ValueState"} for v in variables],
    }
    body = {
        "operatorInfo": {"operatorId": 0, "operatorName": "transformWithStateInPySparkExec"},
        "stateStoreInfo": [{"storeName": "default", "numPartitions": 4}],
        "operatorPropertiesJson": json.dumps(props),
    }
    return "v2\n" + json.dumps(body)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    copy = tmp_path / "service_status"
    shutil.copytree(DATA, copy)
    return copy


def test_a_transform_with_state_operator_is_read_from_its_v2_file(checkpoint):
    """The time mode and the user's state variables; the timers' own variable ($procTimers_...)
    is left out, as the state reader reads timers apart."""
    assert operators_from_files(checkpoint, 4) == [SERVICE_STATUS]


def test_a_batch_gets_the_newest_v2_file_at_or_before_it(checkpoint):
    """v2/0 and v2/2 exist: batch 1 reads v2/0, batches 2 and later v2/2."""
    folder = checkpoint / "state" / "0" / "_metadata" / "v2"
    write(folder / "0", v2(["old"]))
    write(folder / "2", v2(["new", "$eventTimers_keyToTimestamp"]))

    assert operators_from_files(checkpoint, 1)[0].variables == ("old",)
    assert operators_from_files(checkpoint, 2)[0].variables == ("new",)
    assert operators_from_files(checkpoint, 9)[0].time_mode == "EventTime"


def test_spark_operators_are_read_from_v1_files_in_operator_order(tmp_path):
    write(tmp_path / "state" / "1" / "_metadata" / "metadata", v1(1, "dedupeWithinWatermark"))
    write(tmp_path / "state" / "0" / "_metadata" / "metadata", v1(0, "flatMapGroupsWithState"))
    joined = ("right-keyToNumValues", "left-keyToNumValues")
    write(tmp_path / "state" / "2" / "_metadata" / "metadata", v1(2, "symmetricHashJoin", joined))

    assert operators_from_files(tmp_path, 5) == [
        Operator(0, "flatMapGroupsWithState", ("default",)),
        Operator(1, "dedupeWithinWatermark", ("default",)),
        Operator(2, "symmetricHashJoin", tuple(sorted(joined))),
    ]


def test_a_checkpoint_without_state_has_no_operators(tmp_path):
    assert operators_from_files(tmp_path, 0) == []


@pytest.mark.parametrize(
    "damage",
    [
        "v2/0 and v2/2 removed (no metadata at all)",
        "only v2/2 left, batch 1 asked (no file at or before it)",
        "v2/2 cut short",
        "v2/2 of another operator id",
    ],
)
def test_whatever_the_files_do_not_say_leaves_it_to_spark(checkpoint, damage):
    """None: the reader asks Spark's state-metadata source, which reads the same files and
    reports what is wrong with them in its own words."""
    folder = checkpoint / "state" / "0" / "_metadata" / "v2"
    batch = 4
    if damage.startswith("v2/0 and"):
        shutil.rmtree(folder.parent)
    elif damage.startswith("only v2/2"):
        (folder / "0").unlink()
        batch = 1
    elif damage.endswith("cut short"):
        (folder / "2").write_text((folder / "2").read_text()[:40])
    else:
        (folder / "2").write_text(
            (folder / "2").read_text().replace('"operatorId":0', '"operatorId":3')
        )

    assert operators_from_files(checkpoint, batch) is None
