#!/usr/bin/env bash
# test/run.sh: run every test of the zorder extension on a throwaway cluster.
#
# Run as root on Debian 12: installs the Debian packages it needs, builds and
# installs the extension, then, as the unprivileged "postgres" user, runs the
# unit tests of the pure algorithms, pg_regress, the isolation specs and the
# TAP tests.  The whole suite runs twice: on the release server ($PGBIN,
# Debian's by default) and on an assert-enabled build of the same source
# (test/cassert.sh; built once, cached; ZORDER_CASSERT=0 skips it,
# ZORDER_BUILDS=cassert runs only that one).  After each run every server
# log is checked for crashes, failed assertions and internal errors
# (test/checklogs.sh).  Exits non-zero if anything fails.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/test/lib.sh"
. "$repo/test/cassert.sh"
. "$repo/test/checklogs.sh"

ensure_packages

pass=0 fail=0
works=""
trap 'for w in $works; do stop_cluster "$w/cluster"; rm -rf "$w"; done' EXIT

run_suite() {
	local name=$1; shift
	echo "== $name"
	if as_pg env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		TEMP_CONFIG="$work/temp.conf" PATH="$PGBIN:$PATH" \
		make -C "$work" -s PG_CONFIG=$PGBIN/pg_config "$@"; then
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

# run_all LABEL: the whole suite against the server in $PGBIN.
run_all() {
	local label=$1 t0=$(date +%s)
	echo "=== $label build: $PGBIN"
	# Work in a copy owned by the test user: pg_regress and prove write their
	# results next to the sources, and the checkout may belong to root.
	work=$(mktemp -d /tmp/zorder-test.XXXXXX)
	works="$works $work"
	(cd "$repo" && cp -r Makefile zorder.control src sql expected test "$work/")
	# objects built against another server must not be linked into this one
	make -s -C "$work" PG_CONFIG=$PGBIN/pg_config clean >/dev/null
	# TAP nodes (PostgreSQL::Test::Cluster) append TEMP_CONFIG to their
	# postgresql.conf: SQLSTATEs in their logs too
	echo "$CHECKLOGS_CONF" >"$work/temp.conf"
	build_install "$work"
	[ "$(id -u)" = 0 ] && chown -R postgres: "$work"

	start_cluster "$work/cluster" 54320 "
wal_level = logical
max_replication_slots = 4
max_prepared_transactions = 4
"
	run_suite "$label: unit tests" unittest
	run_suite "$label: pg_regress" installcheck-regress
	run_suite "$label: isolation" installcheck-isolation
	run_suite "$label: TAP" installcheck-tap
	stop_cluster "$work/cluster"

	echo "== $label: server logs"
	if check_server_logs "$work/cluster" "$work/tmp_check/log"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
	echo "=== $label build: $(($(date +%s) - t0)) s"
}

echo "== checklogs self-test"
if "$repo/test/checklogs_test.sh" >/dev/null; then
	pass=$((pass + 1))
else
	fail=$((fail + 1)); echo "!! checklogs self-test failed"
fi

# ZORDER_BUILDS: which servers to run the suite on
for build in ${ZORDER_BUILDS:-release cassert}; do
	case $build in
	release) run_all release ;;
	cassert)
		[ "${ZORDER_CASSERT:-1}" = 0 ] && continue
		PGBIN=$(cassert_pgbin) || die "no assert-enabled build"
		run_all cassert
		;;
	*) die "unknown build $build (release, cassert)" ;;
	esac
done

echo
echo "suites: $pass passed, $fail failed"
[ "$fail" = 0 ]
