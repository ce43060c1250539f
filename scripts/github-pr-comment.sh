#!/usr/bin/env bash
# Comments FILE (markdown) on a pull request, or updates the comment this
# script made there before, so that a pull request has one xrun comment
# that each push rewrites. The pull-request workflow's last step
# (.github/workflows/pr.yml).
#
#   scripts/github-pr-comment.sh FILE
#
#   GITHUB_TOKEN       a token that may write pull requests' comments (the
#                      workflow's own, with permissions: pull-requests: write)
#   GITHUB_REPOSITORY  owner/name
#   PR_NUMBER          the pull request's number
#   GITHUB_API_URL     default https://api.github.com
#
#   COMMENT_AUTHOR     whose comment is this script's (default
#                      github-actions[bot], the workflow token's user)
#   RUN_URL            the workflow run, named where the comment is cut
#
# The comment is found again by a marker on its first line, among the
# comments of COMMENT_AUTHOR alone: anyone may write a comment that starts
# with the marker, and it is not rewritten. GitHub takes 65,536 characters
# in a comment: a longer report is cut at a line, with a note saying where
# the rest is (the run's artifact).
set -euo pipefail

file=${1:?usage: scripts/github-pr-comment.sh FILE}
: "${GITHUB_TOKEN:?GITHUB_TOKEN is not set}"
: "${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"
: "${PR_NUMBER:?PR_NUMBER is not set}"
author=${COMMENT_AUTHOR:-github-actions[bot]}
marker='<!-- xrun pull-request report -->'
# shellcheck source=scripts/github-api.sh
. "$(dirname "$0")/github-api.sh"

limit=65000
more="_The report is longer than a comment can be; the rest is in the workflow run's artifact${RUN_URL:+: $RUN_URL}._"
body=$(jq -n --arg m "$marker" --rawfile f "$file" --argjson limit "$limit" --arg more "$more" '
	($m + "\n" + $f) as $all
	| if ($all | length) <= $limit then {body: $all}
	  else {body: (($all[0:($limit - ($more | length) - 2)] | sub("\n[^\n]*$"; "")) + "\n\n" + $more)} end')
id=""
page=1
while :; do
	comments=$(gh_api GET "/issues/$PR_NUMBER/comments?per_page=100&page=$page")
	id=$(jq -r --arg m "$marker" --arg a "$author" 'map(select(.user.login == $a and (.body | startswith($m)))) | first | .id // empty' <<<"$comments")
	[ -n "$id" ] && break
	[ "$(jq length <<<"$comments")" -lt 100 ] && break
	page=$((page + 1))
done
if [ -n "$id" ]; then
	gh_api PATCH "/issues/comments/$id" "$body" >/dev/null
	echo "github-pr-comment: updated comment $id on #$PR_NUMBER" >&2
else
	id=$(gh_api POST "/issues/$PR_NUMBER/comments" "$body" | jq -r .id)
	echo "github-pr-comment: commented on #$PR_NUMBER (comment $id)" >&2
fi
