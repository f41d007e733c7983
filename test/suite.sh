#!/usr/bin/env bash
# test/suite.sh: the whole suite against one PostgreSQL server, on this
# machine or inside a chroot (test/run.sh runs it once per version).
#
# Uses PGBIN (or PG_VERSION, see test/lib.sh) for the server.  Builds the
# extension with -Werror and installs it, then, as the unprivileged
# "postgres" user and on a throwaway cluster on port ZORDER_TEST_PORT
# (default 54320), runs the unit tests of the pure algorithms, the check
# that src/ has no cycle between modules (test/layers.pl), pg_regress,
# the isolation specs and the TAP tests, and checks the server logs where
# test/checklogs.sh is present.  Writes "PASSED FAILED" (counts of suites) to
# ZORDER_RESULT (if set) and exits non-zero if a suite failed.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/test/lib.sh"
[ -f "$repo/test/checklogs.sh" ] && . "$repo/test/checklogs.sh"

label=${ZORDER_LABEL:-$PG_VERSION}
port=${ZORDER_TEST_PORT:-54320}
result=${ZORDER_RESULT:-}
pass=0 fail=0

[ -x "$PGBIN/pg_config" ] || die "no PostgreSQL server in $PGBIN"
# One version number (Makefile, zorder.control, META.json, debian/changelog):
# cheap, and before the build, so that the README's test command catches it.
"$repo/test/check_version.sh" || die "the version numbers disagree"
ensure_packages

# Work in a copy owned by the test user: pg_regress and prove write their
# results next to the sources, and the checkout may belong to root.
work=$(mktemp -d /tmp/zorder-test.XXXXXX)
cleanup() {
	stop_cluster "$work/cluster"
	[ -n "${ZORDER_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
(cd "$repo" && cp -r Makefile zorder.control src sql expected test "$work/")
# TAP nodes (PostgreSQL::Test::Cluster) append TEMP_CONFIG to their
# postgresql.conf: SQLSTATEs in their logs too, for the log check.
# zorder preloaded, as the README's installation says: the planner support
# is a hook that must be in every session.
printf '%s\n' "${CHECKLOGS_CONF:-}" "shared_preload_libraries = 'zorder'" >"$work/temp.conf"
build_install "$work"
[ "$(id -u)" = 0 ] && chown -R postgres: "$work"

start_cluster "$work/cluster" "$port" "
shared_preload_libraries = 'zorder'
wal_level = logical
max_replication_slots = 4
max_prepared_transactions = 4
"

run_suite() {
	local name=$1 t0
	shift
	t0=$(date +%s)
	echo "== $label: $name"
	if as_pg env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		TEMP_CONFIG="$work/temp.conf" PATH="$PGBIN:$PATH" \
		make -C "$work" -s PG_CONFIG=$PGBIN/pg_config "$@"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "!! $label: $name failed"
		for f in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
			[ -s "$f" ] && head -c 20000 "$f"
		done
		ls "$work"/tmp_check/log/regress_log_* >/dev/null 2>&1 &&
			tail -n 60 "$work"/tmp_check/log/regress_log_*
	fi
	echo "== $label: $name: $(($(date +%s) - t0)) s"
}

run_suite "unit tests" unittest
run_suite "layers" layercheck
run_suite "pg_regress" installcheck-regress
run_suite "isolation" installcheck-isolation
run_suite "TAP" installcheck-tap
stop_cluster "$work/cluster"

if declare -F check_server_logs >/dev/null; then
	echo "== $label: server logs"
	if check_server_logs "$work/cluster" "$work/tmp_check/log"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "!! $label: server logs failed"
	fi
fi

echo "== $label: $pass passed, $fail failed"
[ -n "$result" ] && echo "$pass $fail" >"$result"
[ "$fail" = 0 ]
