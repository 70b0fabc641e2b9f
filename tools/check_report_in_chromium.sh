#!/usr/bin/env bash
# Renders a quantize report.html in headless Chromium (Debian's package, installed when
# missing), saves a screenshot and checks that the rendered DOM holds the summary table.
#   tools/check_report_in_chromium.sh out/quantize-resnet_small/report.html [screenshot.png]
# The screenshot defaults to the report's path with .png. Exits non-zero when Chromium
# fails, the screenshot is missing or empty, or the DOM lacks the summary table.
set -euo pipefail

die() {
  echo "error: $*" >&2
  exit 1
}

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 REPORT.html [SCREENSHOT.png]"
html=$(realpath -e -- "$1" 2>/dev/null) || die "$1: no such file"
png=$(realpath -m -- "${2:-${html%.html}.png}")
mkdir -p -- "$(dirname -- "$png")"

find_chromium() { command -v chromium || command -v chromium-browser || true; }

chromium=$(find_chromium)
if [[ -z $chromium ]]; then
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  # Refresh the package lists only when they do not know the package yet.
  if ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    "${sudo[@]}" apt-get update -q || die "apt-get update failed"
  fi
  echo "installing Debian's chromium..." >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium >&2 ||
    die "apt-get install chromium failed"
  chromium=$(find_chromium)
  [[ -n $chromium ]] || die "chromium is installed but not on PATH"
fi

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# Headless, offline: no background fetches, no first-run or sync traffic, a throw-away profile.
run_chromium() {
  local profile
  profile=$(mktemp -d -p "$work" profile.XXXXXX)
  timeout 180 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$profile" "$@" "file://$html"
}

rm -f -- "$png"
if ! run_chromium --screenshot="$png" --window-size=1280,2400 >"$work/screenshot.log" 2>&1; then
  tail -n 20 "$work/screenshot.log" >&2
  die "chromium failed to render $html"
fi
[[ -s $png ]] || { tail -n 20 "$work/screenshot.log" >&2; die "no screenshot written to $png"; }
[[ $(head -c 8 -- "$png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || die "$png is not a PNG file"

if ! run_chromium --dump-dom >"$work/dom.html" 2>"$work/dom.log"; then
  tail -n 20 "$work/dom.log" >&2
  die "chromium failed to dump the DOM of $html"
fi
grep -q '<table class="summary" id="summary">' "$work/dom.html" || die "the rendered DOM of $html has no summary table"
rows=$(grep -c '<tr>' "$work/dom.html" || true)
charts=$(grep -o '<svg' "$work/dom.html" | wc -l)

echo "ok: $html renders in $("$chromium" --version 2>/dev/null | head -n 1)"
echo "  screenshot $png ($(stat -c %s -- "$png") bytes, 1280x2400 window)"
echo "  DOM: summary table present, $charts SVG charts, $rows table rows"
