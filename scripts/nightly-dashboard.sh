#!/usr/bin/env bash
# Writes the nightly's dashboard (xrun report --html DIR), and where it
# cannot, an alert for scripts/github-alert.sh (an issue labelled
# nightly-infra, with the end of the report's log) and exit 4: a dashboard
# that stops being written is told, not silent (the nightly workflow's
# "Write the dashboard" step).
#
#   scripts/nightly-dashboard.sh DIR ALERT_DIR
#
#   XRUN   the xrun binary (default bin/xrun)
set -uo pipefail

dir=${1:?usage: scripts/nightly-dashboard.sh DIR ALERT_DIR}
alerts=${2:?usage: scripts/nightly-dashboard.sh DIR ALERT_DIR}
xrun=${XRUN:-bin/xrun}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if "$xrun" report --html "$dir" >"$log" 2>&1; then
	cat "$log"
	exit 0
fi
rc=$?
cat "$log" >&2
mkdir -p "$alerts"
jq -n --arg t "xrun: the nightly's dashboard could not be written" --rawfile log "$log" --argjson rc "$rc" '{
	title: $t,
	label: "nightly-infra",
	text: ("`xrun report --html` exited \($rc); the end of its log:\n\n```\n" + ($log | split("\n") | .[-20:] | join("\n")) + "\n```\n"),
	regressions: [],
	created: (now | todate)
}' >"$alerts/dashboard.json"
echo "nightly-dashboard: the dashboard could not be written (exit $rc); $alerts/dashboard.json opens an issue for it" >&2
exit 4
