#!/usr/bin/env bash
# Opens a GitHub issue for each confirmed-regression alert that xrun regress
# wrote (scripts/nightly.sh puts them in OUT_DIR/alerts/), or comments on
# the open issue of the same title, so that a regression that lasts is one
# issue with a comment per night. The nightly workflow's last step.
#
#   scripts/github-alert.sh ALERT_DIR
#
#   GITHUB_TOKEN       a token that may write issues (the workflow's own, with
#                      permissions: issues: write)
#   GITHUB_REPOSITORY  owner/name
#   GITHUB_API_URL     default https://api.github.com
#   GITHUB_SERVER_URL, GITHUB_RUN_ID  link the workflow run when set
#
# Issues carry the label nightly-regression, or the alert's own (its
# "label": nightly-infra for a dashboard that could not be written); GitHub
# makes a label that does not exist.
set -euo pipefail

dir=${1:?usage: scripts/github-alert.sh ALERT_DIR}
: "${GITHUB_TOKEN:?GITHUB_TOKEN is not set}"
: "${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"
label=nightly-regression
# shellcheck source=scripts/github-api.sh
. "$(dirname "$0")/github-api.sh"

run=""
if [ -n "${GITHUB_SERVER_URL:-}" ] && [ -n "${GITHUB_RUN_ID:-}" ]; then
	run="$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID"
fi

shopt -s nullglob
alerts=("$dir"/*.json)
if [ ${#alerts[@]} -eq 0 ]; then
	echo "github-alert: no alerts in $dir" >&2
	exit 0
fi
declare -A open
for a in "${alerts[@]}"; do
	title=$(jq -r .title "$a")
	# An alert may name its own label (nightly-infra: the dashboard could
	# not be written); a regression's is nightly-regression.
	lab=$(jq -r --arg l "$label" '.label // $l' "$a")
	[ -n "${open[$lab]:-}" ] || open[$lab]=$(gh_api GET "/issues?state=open&labels=$lab&per_page=100")
	body=$(jq -r --arg run "$run" '.text + (if $run != "" then "\nWorkflow run: " + $run + "\n" else "" end) +
		(if (.regressions // []) | length > 0 then "\nThe figures and tables are in the run'"'"'s artifact; `xrun history accept JOB` accepts a change that is meant (docs/regressions.md)." else "" end)' "$a")
	number=$(jq -r --arg t "$title" 'map(select(.title == $t and (.pull_request | not))) | first | .number // empty' <<<"${open[$lab]}")
	if [ -n "$number" ]; then
		gh_api POST "/issues/$number/comments" "$(jq -n --arg b "$body" '{body: $b}')" >/dev/null
		echo "github-alert: commented on issue #$number: $title" >&2
	else
		number=$(gh_api POST "/issues" "$(jq -n --arg t "$title" --arg b "$body" --arg l "$lab" '{title: $t, body: $b, labels: [$l]}')" | jq -r .number)
		echo "github-alert: opened issue #$number: $title" >&2
		open[$lab]=$(jq --arg t "$title" --argjson n "$number" '. + [{title: $t, number: $n}]' <<<"${open[$lab]}")
	fi
done
