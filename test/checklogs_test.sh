#!/usr/bin/env bash
# test/checklogs_test.sh: check_server_logs catches what it must, and only
# that, on fabricated server logs.
set -u
. "$(dirname "$0")/checklogs.sh"

dir=$(mktemp -d /tmp/zorder-checklogs.XXXXXX)
trap 'rm -rf "$dir"' EXIT
allow=$dir/allow
cat >"$allow" <<'ALLOW'
# a test that kills a backend on purpose
009_kill terminated by signal 9: Killed
ALLOW
export CHECKLOGS_ALLOW=$allow
fail=0

# expect NAME STATUS LOG-LINES...: a log made of LOG-LINES in a file named
# NAME passes (STATUS 0) or fails (1).
expect() {
	local name=$1 want=$2 got out
	shift 2
	mkdir -p "$dir/logs"
	rm -f "$dir/logs"/*
	printf '%s\n' "$@" >"$dir/logs/$name"
	out=$(check_server_logs "$dir/logs")
	got=$?
	[ $got != 0 ] && got=1
	if [ "$got" = "$want" ]; then
		echo "ok: $name: $*"
	else
		echo "not ok: $name (status $got, want $want): $*"
		echo "$out"
		fail=1
	fi
}

ts='2026-01-01 00:00:00.000 UTC'
expect clean.log 0 \
	"$ts [10] 00000 LOG:  database system is ready to accept connections" \
	"$ts [11] 42501 psql ERROR:  permission denied for table t" \
	"$ts [11] 42501 psql STATEMENT:  select * from t -- PANICKY is fine"
expect segv.log 1 \
	"$ts [10] 00000 LOG:  server process (PID 12) was terminated by signal 11: Segmentation fault"
expect trap.log 1 \
	"TRAP: FailedAssertion(\"!IsTransactionState()\", File: \"xact.c\", Line: 1, PID: 12)"
expect panic.log 1 "$ts [12] XX000 PANIC:  could not write to file"
expect xx000.log 1 "$ts [12] XX000 psql ERROR:  cache lookup failed for relation 1"
expect xx001.log 1 "$ts [12] XX001 psql ERROR:  could not read block 3 in file \"base/5/16384\""
expect verbose.log 1 "$ts [12] ERROR:  XX000: unexpected chunk number"
expect leak.log 1 "$ts [12] 01000 psql WARNING:  relcache reference leak: relation \"t\" not closed"
expect lock.log 1 "$ts [12] 01000 psql WARNING:  you don't own a lock of type ExclusiveLock"
expect 009_kill_node.log 0 \
	"$ts [10] 00000 LOG:  server process (PID 12) was terminated by signal 9: Killed"
expect 008_other_node.log 1 \
	"$ts [10] 00000 LOG:  server process (PID 12) was terminated by signal 9: Killed"
# a TAP script's own transcript is no server log
expect regress_log_001 0 "TRAP: only in a transcript"
expect regress_log_x.log 0 "TRAP: only in a transcript"
exit $fail
