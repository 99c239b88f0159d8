#!/usr/bin/env bash
# Run by `npm test` before anything else (the "pretest" script), so that the test command alone
# sets up what the tests need on a fresh machine: a PostgreSQL server for the shared-store tests
# Chromium for the web UI tests, and bubblewrap for the sandbox tests. Each check is quick when things are already in place.
set -euo pipefail

# PostgreSQL on 127.0.0.1 (trust auth, user postgres, database test), unless STET_TEST_POSTGRES
# names another server or STET_SKIP_POSTGRES=1 skips those tests.
if [ -z "${STET_TEST_POSTGRES:-}" ] && [ "${STET_SKIP_POSTGRES:-}" != "1" ]; then
  if ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
    if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
      echo "starting PostgreSQL"
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
      for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 && break; sleep 1; done
    fi
  fi
  if ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
    echo "The PostgreSQL tests need a server on 127.0.0.1:5432 (or STET_TEST_POSTGRES=<url>," >&2
    echo "or STET_SKIP_POSTGRES=1 to skip them)." >&2
    exit 1
  fi
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 ||
    createdb -h 127.0.0.1 -U postgres test
fi

# Chromium for playwright-core (which downloads no browser): Debian's package, or $STET_CHROMIUM,
# unless STET_SKIP_BROWSER=1 skips the web UI tests.
if [ -z "${STET_CHROMIUM:-}" ] && [ "${STET_SKIP_BROWSER:-}" != "1" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "installing Chromium from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "The web UI tests need Chromium: apt-get install chromium, STET_CHROMIUM=<binary>," >&2
    echo "or STET_SKIP_BROWSER=1 to skip them." >&2
    exit 1
  fi
fi

# bubblewrap for the sandbox (scorers.code, EvalPort code graders): Debian's package, unless
# STET_SKIP_SANDBOX=1 skips those tests.
if [ "${STET_SKIP_SANDBOX:-}" != "1" ] && ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "installing bubblewrap from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
  else
    echo "The sandbox tests need bubblewrap: apt-get install bubblewrap," >&2
    echo "or STET_SKIP_SANDBOX=1 to skip them." >&2
    exit 1
  fi
fi
