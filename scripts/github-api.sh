# shellcheck shell=bash
# gh_api METHOD PATH [BODY]: one call of the GitHub REST API for
# $GITHUB_REPOSITORY, with $GITHUB_TOKEN sent in a header that curl reads
# from its standard input, never on its command line (where any user of the
# machine reads it in ps). Sourced by the workflows' scripts.
gh_api() {
	local api=${GITHUB_API_URL:-https://api.github.com}
	printf 'header = "Authorization: Bearer %s"\n' "$GITHUB_TOKEN" |
		curl -fsS -K - -X "$1" -H "Accept: application/vnd.github+json" -H "X-GitHub-Api-Version: 2022-11-28" \
			"$api/repos/$GITHUB_REPOSITORY$2" ${3:+--data-binary "$3"}
}
