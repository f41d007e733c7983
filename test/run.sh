#!/usr/bin/env bash
# test/run.sh: run every test of the zorder extension on a throwaway cluster.
#
# Run as root on Debian 12: installs the Debian packages it needs, builds and
# installs the extension, then, as the unprivileged "postgres" user, runs the
# unit tests of the pure algorithms, pg_regress, the isolation specs and the
# TAP tests.  Exits non-zero if anything fails.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/test/lib.sh"

ensure_packages

# Work in a copy owned by the test user: pg_regress and prove write their
# results next to the sources, and the checkout may belong to root.
work=$(mktemp -d /tmp/zorder-test.XXXXXX)
trap 'stop_cluster "$work/cluster"; rm -rf "$work"' EXIT
(cd "$repo" && cp -r Makefile zorder.control src sql expected test "$work/")
build_install "$work"
[ "$(id -u)" = 0 ] && chown -R postgres: "$work"

start_cluster "$work/cluster" 54320 "
wal_level = logical
max_replication_slots = 4
max_prepared_transactions = 4
"

pass=0 fail=0
run_suite() {
	local name=$1; shift
	echo "== $name"
	if as_pg env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		PATH="$PGBIN:$PATH" make -C "$work" -s PG_CONFIG=$PGBIN/pg_config "$@"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "!! $name failed"
		for f in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
			[ -s "$f" ] && head -c 20000 "$f"
		done
		ls "$work"/tmp_check/log/regress_log_* >/dev/null 2>&1 &&
			tail -n 60 "$work"/tmp_check/log/regress_log_*
	fi
}

run_suite "unit tests" unittest
run_suite "pg_regress" installcheck-regress
run_suite "isolation" installcheck-isolation
run_suite "TAP" installcheck-tap

echo
echo "suites: $pass passed, $fail failed"
[ "$fail" = 0 ]
