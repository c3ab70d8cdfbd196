#!/usr/bin/env bash
# The system tools the tests need beyond Python 3.11, Java 17 and Maven: Debian's Chromium (the
# browser test of the Dagster UI; Playwright cannot download browsers here), Docker Compose
# (docker-compose.yml is validated with `docker compose config`; no Docker engine is started), and
# nginx with openssl (tests/ui/test_auth_proxy.py runs the committed login proxy as a plain
# process).
# Installs what is missing when it can (root, or sudo without a password); otherwise stops at once
# with the one command to run.
set -euo pipefail

missing=()
command -v chromium >/dev/null || missing+=(chromium)
{ docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; } \
  || missing+=(docker-compose)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v openssl >/dev/null || missing+=(openssl)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "The tests need: ${missing[*]}. Install them once, then run make test again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  [[ " ${missing[*]} " == *" nginx "* ]] && [ -d /run/systemd/system ] \
    && echo "  sudo systemctl disable --now nginx   # the tests run their own, on loopback" >&2
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
