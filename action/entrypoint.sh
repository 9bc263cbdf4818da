#!/usr/bin/env bash
# The converge GitHub Action's entry script (action.yml at the repository
# root calls it; the action's inputs arrive as INPUT_* variables):
#
#   entrypoint.sh install   builds converge from the action's own checkout
#                           (its ref) and puts it, and the agent's CLI, on
#                           the job's PATH
#   entrypoint.sh run       runs converge pr on the event's pull request
#
# Pushes made with GITHUB_TOKEN start no workflows (SEC-5): with only that
# token CI never runs on converge's commits, so the script warns and tells
# converge not to wait for checks (expects_github_checks: false) unless
# the job set CONVERGE_EXPECTS_GITHUB_CHECKS itself.
set -euo pipefail

# The agent CLIs' versions converge is tested with (.ci/run pins the same).
CLAUDE_CODE_VERSION=2.1.328
CODEX_VERSION=0.169.0
GEMINI_CLI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33

die() {
	echo "::error title=converge::$*"
	exit 2
}

agent=${INPUT_AGENT:-claude}

install() {
	: "${GITHUB_ACTION_PATH:?}" "${RUNNER_TEMP:?}" "${GITHUB_PATH:?}"
	local bin="$RUNNER_TEMP/converge-bin"
	mkdir -p "$bin"
	(cd "$GITHUB_ACTION_PATH" && go build -trimpath -o "$bin/converge" ./cmd/converge)
	echo "$bin" >>"$GITHUB_PATH"
	[ "${INPUT_INSTALL_AGENT:-true}" = true ] || return 0
	local pkg
	case $agent in
	claude) pkg="@anthropic-ai/claude-code@${INPUT_AGENT_VERSION:-$CLAUDE_CODE_VERSION}" ;;
	codex) pkg="@openai/codex@${INPUT_AGENT_VERSION:-$CODEX_VERSION}" ;;
	gemini) pkg="@google/gemini-cli@${INPUT_AGENT_VERSION:-$GEMINI_CLI_VERSION}" ;;
	opencode) pkg="opencode-ai@${INPUT_AGENT_VERSION:-$OPENCODE_VERSION}" ;;
	*) return 0 ;; # suggest and command need no CLI
	esac
	if command -v "$agent" >/dev/null && [ -z "${INPUT_AGENT_VERSION:-}" ]; then
		return 0
	fi
	local prefix="$RUNNER_TEMP/converge-agent"
	npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error "$pkg" >/dev/null
	echo "$prefix/node_modules/.bin" >>"$GITHUB_PATH"
}

# pr_url is the pull request of the event: its html_url (pull_request,
# pull_request_review, issue_comment on a PR), else refs/pull/N/… of
# GITHUB_REF.
pr_url() {
	local u=""
	if [ -n "${GITHUB_EVENT_PATH:-}" ] && [ -f "$GITHUB_EVENT_PATH" ] && command -v jq >/dev/null; then
		u=$(jq -r '.pull_request.html_url // .issue.pull_request.html_url // empty' "$GITHUB_EVENT_PATH")
	fi
	if [ -z "$u" ]; then
		case ${GITHUB_REF:-} in
		refs/pull/*/*)
			local n=${GITHUB_REF#refs/pull/}
			u="${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:?}/pull/${n%%/*}"
			;;
		esac
	fi
	echo "$u"
}

run() {
	local url=${INPUT_PR_URL:-}
	[ -n "$url" ] || url=$(pr_url)
	[ -n "$url" ] || die "no pull request: the ${GITHUB_EVENT_NAME:-} event names none and GITHUB_REF (${GITHUB_REF:-}) is not refs/pull/N/…; run on pull_request events, or give the pr-url input"
	local args=(pr "$url" --agent "$agent")

	# Credentials: a push token or a GitHub App, else GITHUB_TOKEN.
	if [ -n "${INPUT_APP_ID:-}" ]; then
		[ -z "${INPUT_TOKEN:-}" ] || die "the token and app-id inputs exclude each other: converge acts either with a token or as a GitHub App"
		[ -n "${INPUT_APP_PRIVATE_KEY:-}" ] || die "app-id needs app-private-key: the App's private key (PEM), from a secret"
		local key="$RUNNER_TEMP/converge-app-key.pem"
		(umask 077 && printf '%s\n' "$INPUT_APP_PRIVATE_KEY" >"$key")
		export CONVERGE_APP_ID="$INPUT_APP_ID" CONVERGE_APP_KEY="$key"
	elif [ -n "${INPUT_TOKEN:-}" ] && [ "${INPUT_TOKEN}" != "${INPUT_GITHUB_TOKEN:-}" ]; then
		export CONVERGE_TOKEN="$INPUT_TOKEN"
	elif [ -n "${INPUT_GITHUB_TOKEN:-${INPUT_TOKEN:-}}" ]; then
		echo "::warning title=converge::only GITHUB_TOKEN: pushes made with it start no workflows, so CI never runs on converge's commits, and converge does not wait for checks (expects_github_checks: false). Give the action a personal token or a GitHub App token (the token input, or app-id and app-private-key)."
		export CONVERGE_TOKEN="${INPUT_GITHUB_TOKEN:-$INPUT_TOKEN}"
		export CONVERGE_EXPECTS_GITHUB_CHECKS="${CONVERGE_EXPECTS_GITHUB_CHECKS:-false}"
	else
		die "no token: give the token input (a personal token or a GitHub App token), or app-id and app-private-key, or leave github-token at its default"
	fi

	case $agent in
	command)
		[ -n "${INPUT_AGENT_CMD:-}" ] || die "agent: command needs agent-cmd, the program to run"
		args+=(--agent-cmd "$INPUT_AGENT_CMD")
		;;
	claude | codex | gemini | opencode)
		# The agent judges too: the recap gate and borderline comments.
		args+=(--judge-agent "${INPUT_JUDGE_AGENT:-$agent}")
		;;
	esac
	if [ -n "${INPUT_API_KEY:-}" ]; then
		local var=${INPUT_API_KEY_ENV:-}
		if [ -z "$var" ]; then
			case $agent in
			claude) var=ANTHROPIC_API_KEY ;;
			codex) var=CODEX_API_KEY ;;
			gemini) var=GEMINI_API_KEY ;;
			*) die "api-key with agent $agent: name the variable the key goes in with api-key-env (e.g. ANTHROPIC_API_KEY)" ;;
			esac
		fi
		export "$var=$INPUT_API_KEY"
	fi
	# args: words separated by blanks or newlines, no globbing.
	local w
	set -f
	for w in ${INPUT_ARGS:-}; do
		args+=("$w")
	done
	set +f
	allow_user_namespaces
	echo "converge ${args[*]}"
	exec converge "${args[@]}"
}

# allow_user_namespaces lets converge contain its agents (SEC-7) on a
# runner whose AppArmor keeps unprivileged users out of user namespaces
# (GitHub's Ubuntu 24.04 images): the runner is the action's own machine,
# and its passwordless sudo may lift that for the job. Where it cannot,
# converge says why and refuses agents (exit 2) unless args carries
# --unsafe-no-sandbox.
allow_user_namespaces() {
	local knob=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
	[ -r "$knob" ] && [ "$(cat "$knob")" = 1 ] || return 0
	if sudo -n sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0 2>/dev/null; then
		echo "converge: allowed unprivileged user namespaces for this job, to contain the agents"
	fi
}

case ${1:-run} in
install) install ;;
run) run ;;
*) die "usage: entrypoint.sh install|run" ;;
esac
