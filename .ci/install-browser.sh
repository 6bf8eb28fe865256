#!/usr/bin/env bash
# Installs Debian's chromium for the docs site's browser tests (they drive it through Playwright
# with executable_path=/usr/bin/chromium; `playwright install` is never used).
# Idempotent: does nothing when /usr/bin/chromium is already there. Needs root or passwordless sudo.
#   .ci/install-browser.sh                 CI: fail when it cannot install
#   .ci/install-browser.sh --if-possible   `make setup`: say why not and go on (the browser
#                                          tests are then skipped, with that reason)
set -euo pipefail
strict=1
[[ "${1:-}" == "--if-possible" ]] && strict=0
give_up() {
    if (( strict )); then echo "install-browser: $1" >&2; exit 1; fi
    echo "install-browser: $1; the browser tests will be skipped (run .ci/install-browser.sh as root to add it)"
    exit 0
}
if [[ -x /usr/bin/chromium ]]; then
    echo "install-browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
    exit 0
fi
command -v apt-get >/dev/null || give_up "no apt-get: not a Debian/Ubuntu machine, install chromium yourself"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        give_up "installing chromium needs root or passwordless sudo"
    fi
fi
export DEBIAN_FRONTEND=noninteractive
# fonts-liberation: a real font for screenshots; the rest come in as chromium's dependencies
if ! { $SUDO apt-get update -qq && \
       $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null; }; then
    give_up "apt-get could not install chromium"
fi
[[ -x /usr/bin/chromium ]] || give_up "/usr/bin/chromium still missing after apt-get install chromium"
echo "install-browser: $(/usr/bin/chromium --version)"
