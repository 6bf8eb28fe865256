#!/usr/bin/env bash
# Installs Debian's chromium for the docs site's browser test (tests/test_docs_site.py drives it
# through Playwright with executable_path=/usr/bin/chromium; `playwright install` is never used).
# Idempotent: does nothing when /usr/bin/chromium is already there. Needs root (CI runs as root).
set -euo pipefail
if [[ -x /usr/bin/chromium ]]; then
    echo "install-browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
    exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-browser: run as root (or install sudo)" >&2; exit 1; }
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# fonts-liberation: a real font for screenshots; the rest come in as chromium's dependencies
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
[[ -x /usr/bin/chromium ]] || { echo "install-browser: /usr/bin/chromium still missing" >&2; exit 1; }
echo "install-browser: $(/usr/bin/chromium --version)"
