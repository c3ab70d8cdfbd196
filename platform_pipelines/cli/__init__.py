"""`platform`: set up, run the demo, start the local broker and the Dagster UI, produce events,
run a job from the terminal, show every stream's health, operate a stream, inject faults.

Each command lives in its own module; this one assembles the command group.
"""

from __future__ import annotations

from platform_pipelines.cli.chaos import chaos
from platform_pipelines.cli.cluster import cluster
from platform_pipelines.cli.demo import demo, setup
from platform_pipelines.cli.kafka import kafka, produce_cmd
from platform_pipelines.cli.main import main
from platform_pipelines.cli.postgres import postgres
from platform_pipelines.cli.reprocess import reprocess
from platform_pipelines.cli.run import run
from platform_pipelines.cli.savepoint import savepoint
from platform_pipelines.cli.state import state
from platform_pipelines.cli.status import status
from platform_pipelines.cli.stream import stream
from platform_pipelines.cli.table import table
from platform_pipelines.cli.ui import dagster_dev_command, ui

for command in (
    setup,
    demo,
    kafka,
    cluster,
    produce_cmd,
    table,
    status,
    ui,
    run,
    stream,
    reprocess,
    savepoint,
    state,
    postgres,
    chaos,
):
    main.add_command(command)

__all__ = ["dagster_dev_command", "main"]

if __name__ == "__main__":
    main()
