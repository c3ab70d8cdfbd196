"""The committed nginx config (deploy/nginx/dagster.conf.template) puts a login in front of a real
Dagster webserver: no or wrong credentials get 401, the right ones get the UI, its GraphQL API and
its GraphQL subscriptions (websocket). Both listen on 127.0.0.1 only.

nginx is Debian's package (`scripts/system-deps.sh` installs it), run as a plain process with
`-p <tmp> -c <conf>`: no root, no system config. The user file is made the way the README says.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster
import psutil
import pytest
import requests
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from platform_pipelines.settings import REPO_ROOT
from tests.fixtures.dagster import DagsterUI, free_port
from tests.waiting import wait_for

pytestmark = [pytest.mark.dagster, pytest.mark.kafka]

TEMPLATE = REPO_ROOT / "deploy" / "nginx" / "dagster.conf.template"
USER, PASSWORD = "operator", "correct horse battery staple"
NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/bin/nginx")


def nginx_binary() -> str:
    """Debian's nginx (in /usr/sbin, often not on a user's PATH), or a clear failure."""
    for candidate in (shutil.which("nginx"), *NGINX_CANDIDATES):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(
        "nginx is not installed, and this test runs the committed nginx config in front of the "
        "webserver: `sudo apt-get install -y nginx` (`make test` does it via scripts/system-deps.sh)."
    )


def render(template: str, **values: str) -> str:
    """Fill in ``${NAME}`` as the nginx image's envsubst does; every placeholder must be given."""
    assert set(re.findall(r"\$\{(\w+)\}", template)) == set(values), "placeholders changed"
    for name, value in values.items():
        template = template.replace(f"${{{name}}}", value)
    return template


def make_htpasswd(path: Path, user: str, password: str) -> None:
    """The README's command: a SHA-512 crypt hash made by openssl, one `user:hash` line."""
    if shutil.which("openssl") is None:
        pytest.fail(
            "openssl is not installed: `sudo apt-get install -y openssl` (`make test` does it)."
        )
    hashed = subprocess.run(
        ["openssl", "passwd", "-6", "-stdin"],
        input=password,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    path.write_text(f"{user}:{hashed}\n")


def nginx_conf(prefix: Path, server_conf: Path) -> str:
    """A whole nginx.conf around the committed server block, everything under ``prefix``."""
    # Run as root, nginx would hand requests to `nobody`, who cannot read pytest's folders.
    user = "user root;\n" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"  {kind}_temp_path {prefix / 'temp' / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}daemon off;\nworker_processes 1;\npid {prefix / 'nginx.pid'};\n"
        "events { worker_connections 64; }\n"
        f"http {{\n  access_log {prefix / 'access.log'};\n{temp}\n  include {server_conf};\n}}\n"
    )


@dataclass
class AuthProxy:
    url: str
    port: int
    log: Path


@pytest.fixture(scope="module")
def auth_proxy(
    dagster_ui: DagsterUI, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AuthProxy]:
    """nginx with the committed config on a free loopback port, in front of ``dagster_ui``."""
    nginx = nginx_binary()
    prefix = tmp_path_factory.mktemp("nginx")
    (prefix / "temp").mkdir()
    make_htpasswd(prefix / "htpasswd", USER, PASSWORD)
    port = free_port()
    server_conf = prefix / "dagster.conf"
    server_conf.write_text(
        render(
            TEMPLATE.read_text(),
            NGINX_LISTEN=f"127.0.0.1:{port}",
            NGINX_HTPASSWD=str(prefix / "htpasswd"),
            DAGSTER_UPSTREAM=f"127.0.0.1:{dagster_ui.port}",
        )
    )
    conf = prefix / "nginx.conf"
    conf.write_text(nginx_conf(prefix, server_conf))
    log = prefix / "nginx.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [nginx, "-p", str(prefix), "-c", str(conf), "-e", "stderr"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"nginx exited with {proc.returncode}:\n{log.read_text()}")
        try:
            requests.get(url, timeout=2)
            return True
        except (requests.ConnectionError, requests.Timeout):  # not yet, or a busy machine
            return False

    try:
        wait_for(answers, 30, f"nginx to answer on {url}", show=log.read_text)
        yield AuthProxy(url, port, log)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def graphql(url: str, query: str, auth: tuple[str, str]) -> requests.Response:
    return requests.post(f"{url}/graphql", json={"query": query}, auth=auth, timeout=60)


@pytest.mark.parametrize("path", ["/", "/graphql", "/server_info", "/logs/x"])
def test_without_credentials_every_path_is_refused(auth_proxy: AuthProxy, path: str):
    response = requests.get(f"{auth_proxy.url}{path}", timeout=10)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Basic realm="Dagster"'


@pytest.mark.parametrize(
    "auth", [(USER, "wrong password"), ("someone", PASSWORD), (USER, "")], ids=str
)
def test_wrong_credentials_are_refused(auth_proxy: AuthProxy, auth: tuple[str, str]):
    assert requests.get(auth_proxy.url, auth=auth, timeout=10).status_code == 401
    assert graphql(auth_proxy.url, "{ version }", auth).status_code == 401


def test_right_credentials_get_the_ui_page_and_its_assets(auth_proxy: AuthProxy):
    page = requests.get(auth_proxy.url, auth=(USER, PASSWORD), timeout=30)
    assert page.status_code == 200
    assert re.search(r"<title[^>]*>Dagster</title>", page.text)
    script = re.search(r'src="(/_next/static/chunks/[^"]+\.js)"', page.text)
    assert script, page.text[:2000]
    asset = requests.get(f"{auth_proxy.url}{script.group(1)}", auth=(USER, PASSWORD), timeout=30)
    assert asset.status_code == 200 and asset.content


def test_right_credentials_get_graphql_answers(auth_proxy: AuthProxy):
    query = "{ version repositoriesOrError { ... on RepositoryConnection { nodes { name } } } }"
    response = graphql(auth_proxy.url, query, (USER, PASSWORD))
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["version"] == dagster.__version__
    assert data["repositoriesOrError"]["nodes"] == [{"name": "__repository__"}]


def test_graphql_subscriptions_pass_the_websocket_upgrade(auth_proxy: AuthProxy):
    ws_url = f"ws://127.0.0.1:{auth_proxy.port}/graphql"
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    with connect(
        ws_url, subprotocols=["graphql-ws"], additional_headers={"Authorization": basic}
    ) as ws:
        ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(ws.recv(timeout=30)) == {"type": "connection_ack"}
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url, subprotocols=["graphql-ws"]).close()
    assert refused.value.response.status_code == 401


def listening_addresses(port: int) -> set[str]:
    return {
        conn.laddr.ip
        for conn in psutil.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port
    }


def test_webserver_and_proxy_listen_on_loopback_only(auth_proxy: AuthProxy, dagster_ui: DagsterUI):
    assert listening_addresses(dagster_ui.port) == {"127.0.0.1"}
    assert listening_addresses(auth_proxy.port) == {"127.0.0.1"}
