#!/usr/bin/env bash
# Takes a label off a pull request (the pull-request workflow's unlabel job:
# a push after a maintainer's gpu-run label brings code nobody has read).
#
#   scripts/github-pr-label.sh remove LABEL
#
#   GITHUB_TOKEN       a token that may write pull requests
#   GITHUB_REPOSITORY  owner/name
#   PR_NUMBER          the pull request's number
#   GITHUB_API_URL     default https://api.github.com
#
# A label the pull request does not have is no error.
set -euo pipefail

[ "${1:-}" = remove ] && [ -n "${2:-}" ] || { echo "usage: scripts/github-pr-label.sh remove LABEL" >&2; exit 2; }
label=$2
: "${GITHUB_TOKEN:?GITHUB_TOKEN is not set}"
: "${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"
: "${PR_NUMBER:?PR_NUMBER is not set}"
# shellcheck source=scripts/github-api.sh
. "$(dirname "$0")/github-api.sh"

labels=$(gh_api GET "/issues/$PR_NUMBER/labels")
if ! jq -e --arg l "$label" 'any(.[]; .name == $l)' <<<"$labels" >/dev/null; then
	echo "github-pr-label: #$PR_NUMBER has no label $label" >&2
	exit 0
fi
gh_api DELETE "/issues/$PR_NUMBER/labels/$(jq -rn --arg l "$label" '$l | @uri')" >/dev/null
echo "github-pr-label: took $label off #$PR_NUMBER" >&2
