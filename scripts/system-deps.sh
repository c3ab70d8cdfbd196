#!/usr/bin/env bash
# The system tools the tests need beyond Python 3.11, Java 17 and Maven: Debian's Chromium (the
# browser test of the Dagster UI; Playwright cannot download browsers here) and Docker Compose
# (docker-compose.yml is validated with `docker compose config`; no Docker engine is started).
# Installs what is missing when it can (root, or sudo without a password); otherwise stops at once
# with the one command to run.
set -euo pipefail

missing=()
command -v chromium >/dev/null || missing+=(chromium)
{ docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; } \
  || missing+=(docker-compose)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "The tests need: ${missing[*]}. Install them once, then run make test again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing ${missing[*]} (Debian packages, once)..."
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
