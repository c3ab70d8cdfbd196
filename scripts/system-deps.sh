#!/usr/bin/env bash
# The system tools the tests need beyond Python 3.11, Java 17 and Maven: Debian's Chromium (the
# browser test of the Dagster UI; Playwright cannot download browsers here), Docker Compose
# (docker-compose.yml is validated with `docker compose config`; no Docker engine is started), and
# nginx with openssl (tests/ui/test_auth_proxy.py runs the committed login proxy as a plain
# process), and the PostgreSQL server (tests/dagster/test_postgres_instance.py runs Dagster on its
# own throwaway cluster; the binaries live in /usr/lib/postgresql/<version>/bin, off PATH), and
# javac when Java 17 is only a JRE (the platform compiles its sessionizer, jvm/sessions, once).
# Installs what is missing when it can (root, or sudo without a password); otherwise stops at once
# with the one command to run.
set -euo pipefail

missing=()
command -v chromium >/dev/null || missing+=(chromium)
{ docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; } \
  || missing+=(docker-compose)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v openssl >/dev/null || missing+=(openssl)
command -v pg_ctl >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null \
  || missing+=(postgresql)
{ command -v javac >/dev/null || [ -x "${JAVA_HOME:-/nonexistent}/bin/javac" ] \
  || [ -x "$(dirname "$(readlink -f "$(command -v java)")")/javac" ]; } \
  || missing+=(openjdk-17-jdk-headless)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "The tests need: ${missing[*]}. Install them once, then run make test again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  for service in nginx postgresql; do
    [[ " ${missing[*]} " == *" $service "* ]] && [ -d /run/systemd/system ] \
      && echo "  sudo systemctl disable --now $service   # the tests run their own, on loopback" >&2
  done
  exit 1
fi
echo "Installing ${missing[*]} (Debian packages, once)..."
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
# Debian starts and enables the nginx service it installs (a web server on all interfaces, port 80):
# the tests only need the binary, so a service that this script brought in is stopped again.
if [[ " ${missing[*]} " == *" nginx "* ]] && [ -d /run/systemd/system ]; then
  echo "Stopping and disabling the nginx service the package started (the tests run their own)."
  "${sudo[@]}" systemctl disable --now nginx >/dev/null 2>&1 || true
fi
# The same for PostgreSQL: the package creates a cluster "main" (port 5432) and starts it, through
# systemd or, without systemd, its init script. The tests start their own clusters (initdb).
if [[ " ${missing[*]} " == *" postgresql "* ]]; then
  echo "Stopping and disabling the PostgreSQL cluster the package started (the tests run their own)."
  if [ -d /run/systemd/system ]; then
    "${sudo[@]}" systemctl disable --now postgresql >/dev/null 2>&1 || true
  fi
  if command -v pg_lsclusters >/dev/null; then
    pg_lsclusters --no-header | awk '$4 == "online" {print $1, $2}' | while read -r version name; do
      "${sudo[@]}" pg_ctlcluster "$version" "$name" stop >/dev/null 2>&1 || true
    done
  fi
fi
