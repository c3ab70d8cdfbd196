"""The Dagster UI in a real browser: lineage graph, an asset's Checks tab, a launchpad run.

Drives Debian's Chromium (not a Playwright-downloaded browser) through Playwright's sync API
against the `dagster dev` of the `dagster_ui` fixture. Screenshots land in test-artifacts/ui/
(git-ignored); a failing test also leaves `<test>-FAILED.png` and a Playwright trace there
(open it with `.venv/bin/playwright show-trace test-artifacts/ui/<test>-trace.zip`).

Set PLATFORM_TEST_CHROMIUM to use another Chromium binary.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import dagster as dg
import pytest
import requests
from dagster import DagsterRunStatus
from playwright.sync_api import Browser, Locator, Page, expect

from platform_pipelines.settings import REPO_ROOT
from tests.fixtures.dagster import run_story
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.dagster,
    pytest.mark.kafka,
    pytest.mark.ui,
    # DagsterGraphQLClient 1.13 calls gql with arguments gql deprecates (each get_run_status).
    pytest.mark.filterwarnings(
        "ignore:Using variable_values and operation_name:DeprecationWarning"
    ),
]

# The health checks every stream's table carries; the Checks tab must list them all.
EXPECTED_CHECKS = ("liveness", "falling_behind", "state_growth", "late_data", "checkpoint")

ARTIFACTS = REPO_ROOT / "test-artifacts" / "ui"
# The lineage screenshot the README and the docs show: every passing run refreshes it.
DOCS_SCREENSHOT = REPO_ROOT / "docs" / "images" / "asset-graph.png"
TOPIC = "ui_clickstream"  # the topic the code location under the dagster_ui fixture reads
# topic -> silver -> gold: events reads the topic itself (bronze beside it keeps the raw rows).
LINEAGE = (TOPIC, "events", "user_sessions")
GROUPS = ("kafka", "bronze", "silver", "gold")
STREAM_JOB = "stream_clickstream_raw"
CATCH_UP_CONFIG = "ops:\n  run_stream_clickstream_raw:\n    config:\n      mode: catch_up\n"

CHROMIUM_CANDIDATES = (
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
)
# Headless Chromium as root in a container: no sandbox (needs user namespaces), no GPU, and
# /tmp instead of the often tiny /dev/shm for shared memory.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]

UI_TIMEOUT_MS = 60_000  # one page or element: generous, the first loads compile GraphQL queries
RUN_TIMEOUT_S = 420  # a catch-up run: queue, run worker, JVM + SparkSession start, stop
TERMINAL = (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)
# Playwright's assertions wait 5 s by default; the context's default timeout covers actions only.
expect.set_options(timeout=UI_TIMEOUT_MS)


def chromium_path() -> str:
    """The Chromium binary: $PLATFORM_TEST_CHROMIUM, else Debian's `chromium` package.

    Debian's /usr/bin/chromium is a shell wrapper; /usr/lib/chromium/chromium is the binary.
    """
    override = os.environ.get("PLATFORM_TEST_CHROMIUM")
    candidates = [override] if override else [*CHROMIUM_CANDIDATES, shutil.which("chromium")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(
        f"No Chromium found (looked at {', '.join(c for c in candidates if c)}). Install Debian's "
        "package (`sudo apt-get install -y chromium`) or set PLATFORM_TEST_CHROMIUM to a binary."
    )


def graphql(ui: Any, query: str) -> dict[str, Any]:
    response = requests.post(f"{ui.url}/graphql", json={"query": query}, timeout=30)
    response.raise_for_status()
    body = response.json()
    assert "errors" not in body, body["errors"]
    return cast(dict[str, Any], body["data"])


def job_repo_path(ui: Any, job: str) -> str:
    """The `/locations/<repo path>` part of ``job``'s URLs, once its code location has loaded.

    `dagster dev -m platform_pipelines.definitions` names the location after the module; a bare
    Definitions object is the repository `__repository__`, which the UI leaves out of its URLs.
    """
    query = (
        "{ repositoriesOrError { ... on RepositoryConnection"
        " { nodes { name location { name } pipelines { name } } } } }"
    )

    def find() -> str | None:
        repos: list[dict[str, Any]] = graphql(ui, query)["repositoriesOrError"].get("nodes", [])
        for repo in repos:
            if any(p["name"] == job for p in repo["pipelines"]):
                location = quote(repo["location"]["name"], safe="")
                return (
                    location if repo["name"] == "__repository__" else f"{repo['name']}@{location}"
                )
        return None

    return wait_for(find, 180, f"a code location with job {job} to load", every=2)


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


class UISession:
    """A fresh browser context (own local storage) on the webserver, with failure artifacts."""

    def __init__(self, browser: Browser, base_url: str, name: str) -> None:
        self.name = name
        self.failed = False
        self.context = browser.new_context(
            base_url=base_url, viewport={"width": 1600, "height": 1000}
        )
        self.context.set_default_timeout(UI_TIMEOUT_MS)
        self.context.tracing.start(screenshots=True, snapshots=True)
        self.page = self.context.new_page()

    @contextmanager
    def screenshots_on_failure(self) -> Iterator[Page]:
        try:
            yield self.page
        except BaseException:
            self.failed = True
            try:
                screenshot(self.page, f"{self.name}-FAILED")
            except Exception as error:  # the page may be gone; keep the original failure
                print(f"could not save the failure screenshot: {error}")
            raise

    def close(self) -> None:
        trace = ARTIFACTS / f"{self.name}-trace.zip"
        if self.failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            self.context.tracing.stop(path=str(trace))
        else:
            self.context.tracing.stop()
            trace.unlink(missing_ok=True)
        self.context.close()


# --- The asset graph -----------------------------------------------------------------------

_GRAPH_JS = """() => {
  const svg = document.querySelector('svg foreignObject')?.ownerSVGElement;
  if (!svg) return {nodes: [], edges: []};
  const num = (el, a) => parseFloat(el.getAttribute(a));
  const nodes = [...svg.querySelectorAll(':scope > foreignObject:not(.group)')]
    .map(el => ({el, name: el.querySelector('[class*="assetName"]')}))
    .filter(({name}) => name)
    .map(({el, name}) => ({name: name.textContent.trim(), x: num(el, 'x'), y: num(el, 'y'),
                           w: num(el, 'width'), h: num(el, 'height')}));
  const edges = [...svg.querySelectorAll('path[marker-end]')].map(p => {
    const n = (p.getAttribute('d') || '').match(/-?[0-9.]+/g) || [];
    return n.length >= 4 ? {x1: +n[0], y1: +n[1], x2: +n[n.length - 2], y2: +n[n.length - 1]}
                         : null;
  }).filter(Boolean);
  return {nodes, edges};
}"""


def graph_edges(page: Page) -> tuple[set[str], set[tuple[str, str]]]:
    """The asset nodes drawn in the lineage graph, and its edges as (upstream, downstream).

    Dagster draws each asset as an SVG <foreignObject> and each edge as an unlabelled <path>
    from the middle of the upstream node's right side to just left of the downstream node
    (horizontal layout, the default); edges are matched to nodes by those end points.
    """
    graph = page.evaluate(_GRAPH_JS)
    nodes = graph["nodes"]

    def at(x: float, y: float, side: str) -> str | None:
        for n in nodes:
            edge_x = n["x"] + n["w"] if side == "right" else n["x"]
            if n["y"] <= y <= n["y"] + n["h"] and edge_x - 12 <= x <= edge_x + 3:
                return str(n["name"])
        return None

    edges = set()
    for e in graph["edges"]:
        upstream, downstream = at(e["x1"], e["y1"], "right"), at(e["x2"], e["y2"], "left")
        if upstream and downstream:
            edges.add((upstream, downstream))
    return {n["name"] for n in nodes}, edges


def test_asset_graph_shows_topic_to_gold_lineage(ui_session: UISession, dagster_ui: Any) -> None:
    job_repo_path(dagster_ui, STREAM_JOB)  # the code location has loaded
    with ui_session.screenshots_on_failure() as page:
        # The global lineage: one collapsed box per asset group, all groups present.
        page.goto("/asset-groups")
        groups = page.locator("svg foreignObject.group")
        for group in GROUPS:
            expect(groups.filter(has_text=re.compile(rf"^{group}")).first).to_be_visible()
        # dagster.yaml turns off the "Join the Dagster community" dialog of a first visit.
        assert graphql(dagster_ui, "{ shouldShowNux }") == {"shouldShowNux": False}
        expect(page.get_by_text("Join the Dagster community")).to_have_count(0)
        screenshot(page, "asset_graph_overview")

        # user_sessions and everything upstream of it, groups expanded to show the assets.
        selection = quote('+key:"user_sessions"', safe="")
        page.goto(f"/asset-groups~{selection}")
        expect(groups.filter(has_text=re.compile(r"^gold")).first).to_be_visible()
        names = page.locator('svg foreignObject [class*="assetName"]')
        if names.count() == 0:
            page.keyboard.press("Alt+KeyE")  # the graph's "Expand all groups" shortcut
        nodes = {a: names.filter(has_text=re.compile(rf"^{a}$")) for a in LINEAGE}
        for asset, node in nodes.items():
            expect(node, asset).to_be_visible()
        # Expanding zooms to one group; a double click on the background fits the whole graph.
        # Its bottom left corner is background (search bar on top, zoom controls bottom right).
        viewport = page.locator("[data-svg-viewport]").first
        box = viewport.bounding_box()
        assert box, "the graph viewport has no size"
        viewport.dblclick(position={"x": 10, "y": box["height"] - 10})
        for asset, node in nodes.items():
            expect(node, f"{asset} on screen").to_be_in_viewport(ratio=1)

        expected = set(itertools.pairwise(LINEAGE))  # topic -> silver -> gold
        # Edges are computed in a web worker after the nodes are drawn.
        drawn: dict[str, Any] = {}

        def all_edges_drawn() -> bool:
            drawn["nodes"], drawn["edges"] = graph_edges(page)
            return bool(expected <= drawn["edges"])

        try:
            wait_for(all_edges_drawn, 30, "the lineage edges", every=0.5)
        finally:
            shot = screenshot(page, "asset_graph")
        assert set(LINEAGE) <= drawn["nodes"]
        DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_SCREENSHOT)


# --- The Checks tab ------------------------------------------------------------------------

CHECK_STATUSES = ("Passed", "Failed", "Warning", "Not evaluated", "In progress", "Skipped")


def check_row(page: Page, check_name: str) -> Locator:
    """The row of ``check_name`` in the check list on the left of an asset's Checks tab."""
    return page.locator('[class*="checkRow"]').filter(has=page.locator(f'[title="{check_name}"]'))


def listed_checks(page: Page) -> list[str]:
    titles = page.locator('[class*="checkRow"] [title]').evaluate_all(
        "els => els.map(e => e.getAttribute('title'))"
    )
    return [str(t) for t in titles]


def check_row_status(page: Page, check_name: str) -> str:
    """The latest result of ``check_name`` as its row on the Checks tab shows it.

    One of "Passed", "Failed", "Warning", "Not evaluated", "In progress", "Skipped". The row's
    text says "Succeeded" for a pass and "Failed" for any failure; a failure of severity WARN
    differs only by its warning icon, reported here as "Warning". The tab refreshes every 15 s;
    reload the page (or poll this) to see a newer result.
    """
    row = check_row(page, check_name)
    expect(row, f"the row of check {check_name!r}").to_be_visible()
    icon = row.evaluate("r => r.querySelector('[role=img]')?.getAttribute('aria-label') ?? ''")
    text = row.inner_text().strip().splitlines()[-1].strip()  # name (twice), then status
    if icon == "warning_outline":  # a failed check of severity WARN; its text says "Failed"
        return "Warning"
    # CSS capitalizes it ("Not Evaluated"); the source says "Not evaluated".
    text = text.capitalize()
    return "Passed" if text == "Succeeded" else text


def open_checks_tab(page: Page, asset: str) -> None:
    page.goto(f"/assets/{asset}?view=checks")
    loaded = page.get_by_text(re.compile(r"^Checks \(\d+\)$")).or_(
        page.get_by_text("No checks defined for this asset")
    )
    expect(loaded, f"the Checks tab of {asset} to load").to_be_visible()


def test_checks_tab_lists_stream_health_checks(ui_session: UISession, dagster_ui: Any) -> None:
    """The health checks are listed, and the health sensor's results show on them."""
    job_repo_path(dagster_ui, STREAM_JOB)
    with ui_session.screenshots_on_failure() as page:
        open_checks_tab(page, "user_sessions")
        screenshot(page, "asset_checks")
        listed = listed_checks(page)
        missing = [c for c in EXPECTED_CHECKS if c not in listed]
        assert not missing, (
            f"the Checks tab of user_sessions lists {listed or 'no checks'}; missing {missing}"
        )
        statuses = {check: check_row_status(page, check) for check in EXPECTED_CHECKS}
        assert set(statuses.values()) <= set(CHECK_STATUSES), statuses

        # The health sensor (every 5 s under the fixture) reports a runless result for each
        # cheap check of a stream that never ran: all pass ("not running" is not unhealthy).
        def sensor_reported() -> bool:
            open_checks_tab(page, "user_sessions")
            return all(check_row_status(page, c) == "Passed" for c in EXPECTED_CHECKS)

        wait_for(sensor_reported, 120, "the health sensor's results on the Checks tab", every=5)
        check_row(page, "liveness").click()
        expect(page.get_by_text(re.compile("pass liveness")).first).to_be_visible()
        screenshot(page, "asset_checks")


# --- The launchpad -------------------------------------------------------------------------


def set_launchpad_config(page: Page, yaml_text: str) -> None:
    """Replace the launchpad's YAML (a CodeMirror 5 editor) as if pasted."""
    editor = page.locator(".CodeMirror").first
    expect(editor).to_contain_text("run_stream_clickstream_raw")  # the scaffolded defaults
    editor.click()
    page.keyboard.press("ControlOrMeta+KeyA")
    page.keyboard.insert_text(yaml_text)  # one input event: no auto-indent of each line
    written = page.evaluate("document.querySelector('.CodeMirror').CodeMirror.getValue()")
    assert written.strip() == yaml_text.strip(), f"the editor holds {written!r}"


def test_launchpad_launches_a_catch_up_run_that_succeeds(
    ui_session: UISession, dagster_ui: Any, kafka_broker: str
) -> None:
    from platform_pipelines.kafka.admin import create_topics

    # The stream subscribes to the topic; make sure it exists (left empty: other tests on this
    # dagster_ui instance count exactly the events they produce into it).
    create_topics(kafka_broker, {TOPIC: 1})
    repo_path = job_repo_path(dagster_ui, STREAM_JOB)
    run_id = None
    with ui_session.screenshots_on_failure() as page:
        page.goto(f"/locations/{repo_path}/jobs/{STREAM_JOB}/playground")
        set_launchpad_config(page, CATCH_UP_CONFIG)
        expect(page.get_by_text("No errors")).to_be_visible()
        screenshot(page, "launchpad")
        launch = page.get_by_role("button", name="Launch Run")
        expect(launch).to_be_enabled()
        launch.click()

        page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}$"))
        run_id = page.url.rsplit("/", 1)[-1]
        expect(page.get_by_text(f"Run of {STREAM_JOB}").first).to_be_visible()
        seen: list[DagsterRunStatus] = []

        def ended() -> DagsterRunStatus | None:
            seen.append(dagster_ui.client.get_run_status(run_id))
            return seen[-1] if seen[-1] in TERMINAL else None

        try:
            status = wait_for(ended, RUN_TIMEOUT_S, f"run {run_id} to end", every=3)
        except AssertionError:
            dagster_ui.client.terminate_run(run_id)  # don't leave a stream holding the checkpoint
            raise AssertionError(f"run {run_id} still {seen[-1]} after {RUN_TIMEOUT_S}s") from None
        finally:
            screenshot(page, "run")
        if status != DagsterRunStatus.SUCCESS:
            instance = dg.DagsterInstance.from_config(str(dagster_ui.home))
            raise AssertionError(f"run {run_id} ended {status}:\n{run_story(instance, run_id)}")
        # The run page follows the run live: status tag and the final event.
        expect(page.get_by_text("Success", exact=True).first).to_be_visible()
        expect(page.get_by_text("RUN_SUCCESS", exact=True).first).to_be_visible()
        screenshot(page, "run")

    run = dg.DagsterInstance.from_config(str(dagster_ui.home)).get_run_by_id(run_id)
    assert run is not None and run.job_name == STREAM_JOB
    run_config: dict[str, Any] = dict(run.run_config)
    assert run_config["ops"]["run_stream_clickstream_raw"]["config"]["mode"] == "catch_up"
