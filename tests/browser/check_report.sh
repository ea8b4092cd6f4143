#!/usr/bin/env bash
# Check a sweep folder's report.html as a person sees it, in headless Chromium:
# no console error, no network request, every chart drawn, the hostile
# fixture's <script>/onerror payload shown as text and not run; saves
# DIR/report.png (1400x3000) to look at.
# Usage: tests/browser/check_report.sh DIR     (needs node and chromium;
# Debian: apt-get install -y chromium)
set -euo pipefail
dir="${1:?usage: check_report.sh DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
if [[ -z "$chromium" ]]; then
  echo "check_report.sh: no chromium found (apt-get install -y chromium, or set CHROMIUM)" >&2
  exit 2
fi
command -v node >/dev/null || { echo "check_report.sh: node not found" >&2; exit 2; }
[[ -f "$dir/report.html" ]] || { echo "check_report.sh: $dir/report.html does not exist" >&2; exit 1; }
exec node "$here/check_report.mjs" "$dir" "$chromium"
