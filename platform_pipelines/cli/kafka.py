"""`platform kafka start|stop|status` and `platform produce`: the broker the platform reads."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from platform_pipelines.cli.kafka_cluster import cluster
from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.units import count
from platform_pipelines.settings import PlatformSettings, get_settings

if TYPE_CHECKING:
    from platform_pipelines.kafka.tls import BrokerSecurity


def configured_broker(settings: PlatformSettings) -> str | None:
    """The broker the platform is pointed at: PLATFORM_KAFKA_BOOTSTRAP_SERVERS, else the running
    local broker; None when there is neither."""
    from platform_pipelines.kafka.broker import find_running_broker

    if settings.kafka_bootstrap_servers:
        return settings.kafka_bootstrap_servers
    running = find_running_broker(settings.broker_dir)
    return str(running["bootstrap_servers"]) if running else None


def ensure_broker(settings: PlatformSettings) -> tuple[str, bool]:
    """The configured broker, or a local one started now; (address, started_here)."""
    from platform_pipelines.kafka.broker import LocalKafkaBroker

    address = configured_broker(settings)
    if address:
        return address, False
    with console.status("Starting the local Kafka broker (KRaft)..."):
        return LocalKafkaBroker(settings.broker_dir).start(), True


@click.group(short_help="The local Kafka broker: start, stop, status; or a 3-node cluster.")
def kafka() -> None:
    """The local single-node Kafka broker (data under .local/kafka), and `kafka cluster`: three
    replicated KRaft nodes on loopback."""


@kafka.command("start", short_help="Start the local broker in the background.")
@click.option(
    "--security",
    type=click.Choice(["PLAINTEXT", "SASL_SSL"], case_sensitive=False),
    default=None,
    help="Client listener: plaintext, or sasl_ssl (TLS + SCRAM-SHA-512 users, certificates "
    "made with keytool). Default: what the broker's data was formatted for, else plaintext.",
)
@friendly_errors
def kafka_start(security: str | None) -> None:
    """Start the local broker in the background (nothing to do when one runs). With
    --security sasl_ssl it prints the PLATFORM_KAFKA_* variables its clients need."""
    from platform_pipelines.kafka.broker import LocalKafkaBroker, find_running_broker

    settings = get_settings()
    running = find_running_broker(settings.broker_dir)
    if running:
        protocol = running.get("security_protocol", "PLAINTEXT")
        console.print(
            f"The local Kafka broker already runs at {running['bootstrap_servers']} ({protocol})."
        )
        if protocol == "SASL_SSL":
            console.print('Its clients need: eval "$(platform kafka env)"')
        return
    broker = LocalKafkaBroker(settings.broker_dir, security=cast("BrokerSecurity | None", security))
    with console.status(f"Starting the local Kafka broker (KRaft, {broker.security})..."):
        address = broker.start()
    console.print(
        f"Kafka broker started at {address} ({broker.security}; stop it with "
        "`platform kafka stop`)."
    )
    if broker.security == "SASL_SSL":
        console.print('Its clients need these variables (or run: eval "$(platform kafka env)"):')
        _echo_exports(settings)


def _echo_exports(settings: PlatformSettings) -> None:
    """The shell lines for the local broker's clients; the password stays in its file."""
    from platform_pipelines.kafka.tls import BrokerSecrets, formatted_security

    if formatted_security(settings.broker_dir) != "SASL_SSL":
        for line in (
            "export PLATFORM_KAFKA_SECURITY_PROTOCOL=PLAINTEXT",
            "unset PLATFORM_KAFKA_SASL_USERNAME PLATFORM_KAFKA_SASL_PASSWORD "
            "PLATFORM_KAFKA_SSL_CAFILE",
        ):
            click.echo(line)
        return
    for line in BrokerSecrets.of(settings.broker_dir).export_lines():
        click.echo(line)  # plain, so that `eval "$(platform kafka env)"` reads it


@kafka.command("env", short_help="Print the PLATFORM_KAFKA_* exports for the local broker.")
@friendly_errors
def kafka_env() -> None:
    """Print shell `export` lines that point the platform's Kafka clients at the local broker's
    security (SASL_SSL: user, CA file, and the password read from its 0600 file, never printed).
    Use: eval "$(platform kafka env)"."""
    _echo_exports(get_settings())


@kafka.command("stop", short_help="Stop the local broker (refuses while streams read it).")
@click.option("--force", is_flag=True, help="Stop it even while streams read from it.")
@friendly_errors
def kafka_stop(force: bool) -> None:
    """Stop the local broker. Streams that read from it would stall, so while any runs the
    broker is stopped only with --force."""
    from platform_pipelines.kafka.broker import LocalKafkaBroker, find_running_broker
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.runtime.lock import locked_streams
    from platform_pipelines.streams.catalog import load_registry

    settings = get_settings()
    if find_running_broker(settings.broker_dir) is None:
        console.print("No local Kafka broker is running.")
        return
    lake = Lakehouse(settings.lakehouse_dir)
    running = locked_streams([(s.name, lake.checkpoint(s.name)) for s in load_registry(settings)])
    if running and not force:
        raise click.ClickException(
            f"Streams read from this broker right now: {', '.join(running)}. Stopping it would "
            "stall them; stop their runs first, or pass --force."
        )
    if running:
        console.print(f"[yellow]Stopping the broker under running streams: {', '.join(running)}[/]")
    LocalKafkaBroker(settings.broker_dir).stop()
    console.print("Kafka broker stopped.")


@kafka.command("status", short_help="Show whether the local broker runs, and where.")
@friendly_errors
def kafka_status() -> None:
    """Show whether the local broker runs, and where; and which broker the platform uses."""
    from platform_pipelines.kafka.broker import find_running_broker
    from platform_pipelines.kafka.security import KafkaSecurityError, kafka_security

    settings = get_settings()
    info = find_running_broker(settings.broker_dir)
    console.print(
        f"local broker: running at {info['bootstrap_servers']} (pid {info['pid']}, "
        f"{info.get('security_protocol', 'PLAINTEXT')})"
        if info
        else "local broker: not running"
    )
    if settings.kafka_bootstrap_servers:
        console.print(
            f"the platform uses: {settings.kafka_bootstrap_servers} "
            "(PLATFORM_KAFKA_BOOTSTRAP_SERVERS)"
        )
    try:
        console.print(f"its clients connect with: {kafka_security()}", markup=False)
    except KafkaSecurityError as error:
        console.print(f"its clients cannot connect: {error}", markup=False)


@kafka.command("create-topic", short_help="Create a Kafka topic on the broker the platform uses.")
@click.argument("topic")
@click.option(
    "--partitions",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Partitions of a new topic.",
)
@friendly_errors
def kafka_create_topic(topic: str, partitions: int) -> None:
    """Create TOPIC on the broker the platform uses (PLATFORM_KAFKA_BOOTSTRAP_SERVERS, else the
    running local broker); an existing topic is left as it is. A running stream that waits for
    the topic starts by itself within seconds."""
    from platform_pipelines.kafka.admin import create_topics
    from platform_pipelines.kafka.reachability import reachable

    bootstrap = configured_broker(get_settings())
    if bootstrap is None or not reachable(bootstrap):
        raise click.ClickException(
            f"No Kafka broker answers at {bootstrap or 'the local broker'}: start it (`platform "
            "kafka start`), or point PLATFORM_KAFKA_BOOTSTRAP_SERVERS at a running one."
        )
    created = create_topics(bootstrap, {topic: partitions})
    if created:
        console.print(f"Created topic {topic} ({partitions} partitions) at {bootstrap}.")
    else:
        console.print(f"Topic {topic} already exists at {bootstrap}; left as it is.")


def producer_options(func: Any) -> Any:
    """The synthetic producer's knobs, shared by `produce` and `demo`."""
    options = [
        click.option("--events", default=20_000, show_default=True, help="Records to produce."),
        click.option("--users", default=300, show_default=True, help="Distinct users (keys)."),
        click.option(
            "--duplicate-rate",
            default=0.02,
            show_default=True,
            help="Share of records re-sent with the same event_id.",
        ),
        click.option(
            "--late-rate",
            default=0.05,
            show_default=True,
            help="Share of records up to 10 min behind the event clock.",
        ),
        click.option(
            "--malformed-rate",
            default=0.01,
            show_default=True,
            help="Share of records that are not valid events.",
        ),
        click.option(
            "--rate",
            "rate_per_sec",
            default=0.0,
            show_default=True,
            help="Records per second (0: as fast as possible).",
        ),
        click.option("--seed", default=42, show_default=True, help="Seeds every random choice."),
        click.option(
            "--fixed-day",
            is_flag=True,
            help="Date the events on the seeds' fixed day (from 2026-11-22 08:00 UTC), for "
            "reproducible runs. By default they are dated up to now, as a live source would.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def clickstream_config(fixed_day: bool = False, end: datetime | None = None, **kw: Any) -> Any:
    """The producer's config from its options: with ``fixed_day`` dated on the seeds' day, else
    moved so that its newest event is at ``end`` (default: now)."""
    from platform_pipelines.kafka.event_clock import clickstream_ending_at
    from platform_pipelines.kafka.producer import ClickstreamConfig

    try:
        cfg = ClickstreamConfig(**kw)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    return cfg if fixed_day else clickstream_ending_at(cfg, end or datetime.now(UTC))


def event_times(cfg: Any, fixed_day: bool) -> str:
    """One line saying when the produced events are dated."""
    start = f"{cfg.start_time:%Y-%m-%d %H:%M} UTC"
    if fixed_day:
        return f"Events dated from {start} (the fixed day of --fixed-day)."
    return f"Events dated from {start} up to now (--fixed-day dates them on a fixed day)."


def produce_with_progress(cfg: Any, bootstrap: str, topic: str) -> Any:
    """The synthetic clickstream into ``topic`` (3 partitions if new), with a progress bar."""
    from platform_pipelines.kafka.admin import create_topics
    from platform_pipelines.kafka.producer import generate_clickstream, produce

    create_topics(bootstrap, {topic: 3})
    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(f"Producing to {topic}", total=cfg.events)
        return produce(
            bootstrap,
            topic,
            generate_clickstream(cfg),
            cfg.rate_per_sec,
            progress=lambda n: bar.update(task, completed=n),
        )


def print_counts(title: str, counts: dict[str, int], caption: str = "") -> None:
    table = Table("kind", "records", title=title, caption=caption)
    for kind, n in counts.items():
        table.add_row(kind, count(n))
    console.print(table)


@click.command("produce", short_help="Produce a synthetic clickstream into the configured broker.")
@producer_options
@click.option("--topic", default=None, help="Topic (default: PLATFORM_CLICKSTREAM_TOPIC).")
@friendly_errors
def produce_cmd(topic: str | None, **kw: Any) -> None:
    """Produce a synthetic clickstream (duplicates, late and malformed records included) into the
    broker the platform uses: PLATFORM_KAFKA_BOOTSTRAP_SERVERS, else the running local broker.
    Only when there is neither is the local broker started, and then it is said so."""
    from platform_pipelines.kafka.reachability import reachable

    settings = get_settings()
    cfg = clickstream_config(**kw)
    bootstrap, started = ensure_broker(settings)
    if not reachable(bootstrap):
        raise click.ClickException(
            f"No Kafka broker answers at {bootstrap} (PLATFORM_KAFKA_BOOTSTRAP_SERVERS): start "
            "it, or unset the variable to use the local broker."
        )
    if started:
        console.print(
            f"Started the local Kafka broker at {bootstrap}; it keeps running (stop it "
            "with `platform kafka stop`)."
        )
    summary = produce_with_progress(cfg, bootstrap, topic or settings.clickstream_topic)
    print_counts(
        f"Produced to {topic or settings.clickstream_topic} at {bootstrap}",
        summary.counts,
        f"{summary.rate_per_sec:,.0f} records/s",
    )
    console.print(event_times(cfg, kw["fixed_day"]))


kafka.add_command(cluster)
