#!/usr/bin/env bash
# System packages the test suite needs: Debian's Chromium (browser tests, driven by Playwright's
# Python API with executable_path=/usr/bin/chromium; never `playwright install`) and a PostgreSQL
# server (the Label Studio-on-PostgreSQL tests). Installs only what is missing; needs root for apt.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    echo "system-deps: missing ${need[*]}; install them with apt-get as root" >&2
    exit 1
  fi
  SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
  echo "system-deps: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
