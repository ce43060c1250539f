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
# The comment is found again by a marker on its first line.
set -euo pipefail

file=${1:?usage: scripts/github-pr-comment.sh FILE}
: "${GITHUB_TOKEN:?GITHUB_TOKEN is not set}"
: "${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"
: "${PR_NUMBER:?PR_NUMBER is not set}"
api=${GITHUB_API_URL:-https://api.github.com}
marker='<!-- xrun pull-request report -->'

gh_api() { # METHOD PATH [BODY]
	curl -fsS -X "$1" -H "Authorization: Bearer $GITHUB_TOKEN" -H "Accept: application/vnd.github+json" \
		-H "X-GitHub-Api-Version: 2022-11-28" "$api/repos/$GITHUB_REPOSITORY$2" ${3:+--data-binary "$3"}
}

body=$(jq -n --arg m "$marker" --rawfile f "$file" '{body: ($m + "\n" + $f)}')
id=""
page=1
while :; do
	comments=$(gh_api GET "/issues/$PR_NUMBER/comments?per_page=100&page=$page")
	id=$(jq -r --arg m "$marker" 'map(select(.body | startswith($m))) | first | .id // empty' <<<"$comments")
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
