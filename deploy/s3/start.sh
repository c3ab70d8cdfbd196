#!/bin/sh
# The local S3 server of docker-compose.yml (profile s3): moto, with the bucket that
# PLATFORM_LAKEHOUSE_DIR (s3a://<bucket>/<prefix>) names created on every start. moto keeps its
# objects in memory only, so a new start always begins with an empty bucket.
set -eu

port="${MOTO_PORT:-5000}"
ready="${TMPDIR:-/tmp}/bucket-created" # the healthcheck's sign that the bucket exists
rm -f "$ready"

case "${PLATFORM_LAKEHOUSE_DIR:-}" in
  s3a://?*) ;;
  *)
    echo "The s3 profile keeps the tables and checkpoints in this S3 server, but" \
      "PLATFORM_LAKEHOUSE_DIR is '${PLATFORM_LAKEHOUSE_DIR:-}'. Set" \
      "PLATFORM_LAKEHOUSE_DIR=s3a://lakehouse/lakehouse (any bucket name: it is created here)" \
      "and start again (README: With Docker)." >&2
    exit 1
    ;;
esac
location="${PLATFORM_LAKEHOUSE_DIR#s3a://}"
bucket="${location%%/*}"

# moto_server, answering `Expect: 100-continue` once (see the script: S3A's uploads need it).
python /deploy/s3/moto_server.py --host 0.0.0.0 --port "$port" &
server=$!
trap 'kill "$server" 2>/dev/null' TERM INT

# moto takes a moment to listen; it accepts any access key, so the bucket is made unsigned.
tries=0
# (moto's image has Python, not curl.)
until python -c 'import sys, urllib.request as r; r.urlopen(r.Request(sys.argv[1], method="PUT"), timeout=5)' \
  "http://127.0.0.1:$port/$bucket" > /dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ] || ! kill -0 "$server" 2>/dev/null; then
    echo "Could not create the bucket '$bucket' in moto on port $port: see moto's output" \
      "above." >&2
    kill "$server" 2>/dev/null || true
    exit 1
  fi
  sleep 1
done
touch "$ready"
echo "Created the bucket '$bucket' for PLATFORM_LAKEHOUSE_DIR=$PLATFORM_LAKEHOUSE_DIR."
wait "$server"
