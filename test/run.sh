#!/usr/bin/env bash
# test/run.sh: run every test of the zorder extension on every supported
# PostgreSQL major.
#
# Run as root on Debian 12 with Debian's packages only.  Each target runs
# test/suite.sh (build with -Werror, install, then unit tests, pg_regress,
# isolation specs, TAP tests and, where test/checklogs.sh exists, a check of
# every server log) on a throwaway cluster:
#   15          Debian 12's server (or PGBIN), on this machine
#   15-cassert  an assert-enabled build of the same source (test/cassert.sh,
#               where present; ZORDER_CASSERT=0 leaves it out)
#   16          a source build with TAP support installed under
#               $ZORDER_CACHE/pg16 (Debian has no 16 package); skipped, and
#               said so, when it is not there
#   17, 18, 19  inside Debian chroots (test/chroot.sh): trixie, sid, sid +
#               experimental; made the first time, cached under
#               $ZORDER_CACHE (/var/cache/zorder); in 17 and 18, Citus
#               from the vendored release (test/citus.sh, where present),
#               built once in the background while the targets run
# PG_VERSIONS narrows the list ("15 18"); ZORDER_JOBS (default 3) is how many
# targets run at once (most of a TAP test's time is spent waiting).  When 18
# and 19 are both targets, test/pg_upgrade.sh 18 19 runs after them, as one
# suite more.  Ends with "N passed, N failed" over the suites of all
# targets and exits non-zero if any failed.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/test/lib.sh"
. "$repo/test/chroot.sh"
[ -f "$repo/test/cassert.sh" ] && . "$repo/test/cassert.sh"
[ -f "$repo/test/citus.sh" ] && . "$repo/test/citus.sh"

[ "$(id -u)" = 0 ] || die "run as root (packages, chroots, the test user)"

host_pgbin=$PGBIN
default_targets="15 16 17 18 19"
[ -f "$repo/test/cassert.sh" ] && [ "${ZORDER_CASSERT:-1}" != 0 ] &&
	default_targets="15 15-cassert 16 17 18 19"
targets=${PG_VERSIONS:-$default_targets}
jobs=${ZORDER_JOBS:-3}
base_port=${ZORDER_TEST_PORT:-54320}
started=$(date +%s)

out=$(mktemp -d /tmp/zorder-run.XXXXXX)
copies=()
cleanup() {
	local pids
	pids=$(jobs -p)
	[ -n "$pids" ] && kill $pids 2>/dev/null
	wait 2>/dev/null
	for c in "${copies[@]}"; do rm -rf "$c"; done
	rm -rf "$out"
}
trap cleanup EXIT

pass=0 fail=0 skipped=0

# Things every target needs made first, once: Debian's packages for the host
# targets, the chroots (in parallel: each is mostly download and unpack).
PG_VERSION=15 PGBIN=$host_pgbin ensure_packages
made=()
for t in $targets; do
	case $t in
		17 | 18 | 19)
			(ensure_chroot "$t" >"$out/chroot-$t.log" 2>&1; echo $? >"$out/chroot-$t.rc") &
			made+=("$t")
			;;
	esac
done
wait
for t in "${made[@]}"; do
	cat "$out/chroot-$t.log"
done
# Citus in the chroots of the majors it supports (test/citus.sh), built in
# the background while the targets run; its test waits for the build.
citus_made=()
if declare -F citus_start >/dev/null; then
	for t in "${made[@]}"; do
		[ "$(cat "$out/chroot-$t.rc" 2>/dev/null)" = 0 ] && citus_wanted "$t" || continue
		citus_start "$t"
		citus_made+=("$t")
	done
fi

# The bin directory of a host target's server, or nothing (and why, on
# stderr) when the target cannot run here.
host_bin() {
	case $1 in
		15) echo "$host_pgbin" ;;
		15-cassert)
			declare -F cassert_pgbin >/dev/null || { echo "no test/cassert.sh" >&2; return 1; }
			cassert_pgbin
			;;
		16)
			if [ -x "$ZORDER_CACHE/pg16/bin/pg_config" ]; then
				echo "$ZORDER_CACHE/pg16/bin"
			else
				echo "no build in $ZORDER_CACHE/pg16 (Debian has no PostgreSQL 16: install a source build with TAP support there)" >&2
				return 1
			fi
			;;
		*) echo "unknown target" >&2; return 1 ;;
	esac
}

# run_target LABEL PORT: the whole suite on one target; writes its output to
# $out/LABEL.log and "PASSED FAILED" to $out/LABEL.result.
run_target() {
	local t=$1 port=$2 bin dir copy rc
	case $t in
		17 | 18 | 19)
			if [ "$(cat "$out/chroot-$t.rc" 2>/dev/null)" != 0 ]; then
				echo "!! $t: no chroot (see above)"
				echo "0 1" >"$out/$t.result"
				return
			fi
			dir=$(chroot_dir "$t")
			copy=/tmp/zorder-run-$t-$$
			rm -rf "$dir$copy"
			mkdir -p "$dir$copy"
			# META.json and debian/: for test/check_version.sh
			(cd "$repo" && cp -r Makefile zorder.control META.json debian src sql expected test "$dir$copy/")
			chroot_run "$t" env PG_VERSION="$t" ZORDER_LABEL="$t" \
				ZORDER_TEST_PORT="$port" ZORDER_RESULT="$copy/result" \
				bash "$copy/test/suite.sh"
			cp "$dir$copy/result" "$out/$t.result" 2>/dev/null || echo "0 1" >"$out/$t.result"
			rm -rf "$dir$copy"
			;;
		*)
			bin=$(host_bin "$t") || { echo "0 1" >"$out/$t.result"; return; }
			PGBIN=$bin ZORDER_LABEL="$t" ZORDER_TEST_PORT="$port" \
				ZORDER_RESULT="$out/$t.result" bash "$repo/test/suite.sh"
			[ -s "$out/$t.result" ] || echo "0 1" >"$out/$t.result"
			;;
	esac
}

# Which targets run; 16 without its build is skipped, not failed.
runnable=()
for t in $targets; do
	if [ "$t" = 16 ] && ! host_bin 16 >/dev/null 2>"$out/16.why"; then
		echo "== skipped PostgreSQL 16: $(cat "$out/16.why")"
		skipped=$((skipped + 1))
		continue
	fi
	runnable+=("$t")
done

# Run them, at most $jobs at a time; each target's output is shown whole
# when it ends.
report() {
	local t=$1 p f
	cat "$out/$t.log"
	read -r p f <"$out/$t.result" || { p=0; f=1; }
	pass=$((pass + p))
	fail=$((fail + f))
	echo "=== $t: $p passed, $f failed, $(cat "$out/$t.time") s"
}
i=0
running=()
for t in "${runnable[@]}"; do
	while [ "${#running[@]}" -ge "$jobs" ]; do
		wait -n 2>/dev/null
		still=()
		for r in "${running[@]}"; do
			if [ -f "$out/$r.time" ]; then report "$r"; else still+=("$r"); fi
		done
		running=("${still[@]}")
	done
	(
		t0=$(date +%s)
		run_target "$t" $((base_port + i)) >"$out/$t.log" 2>&1
		echo $(($(date +%s) - t0)) >"$out/$t.time"
	) &
	running+=("$t")
	i=$((i + 1))
done
wait
for r in "${running[@]}"; do report "$r"; done
for t in "${citus_made[@]}"; do
	cat "$out/citus-$t.log"
done

# pg_upgrade from 18 to 19 (test/pg_upgrade.sh, in the chroot of 19), when
# both were targets: one suite more in the count.
has18= has19=
for t in "${runnable[@]}"; do
	[ "$t" = 18 ] && has18=1
	[ "$t" = 19 ] && has19=1
done
if [ -n "$has18" ] && [ -n "$has19" ]; then
	echo "== pg_upgrade 18 -> 19"
	t0=$(date +%s)
	if ZORDER_TEST_PORT=$((base_port + i)) bash "$repo/test/pg_upgrade.sh" 18 19 \
		>"$out/pg_upgrade.log" 2>&1; then
		pass=$((pass + 1))
		grep -E '^(ok|not ok|==) ' "$out/pg_upgrade.log"
	else
		fail=$((fail + 1))
		tail -n 80 "$out/pg_upgrade.log"
		echo "!! pg_upgrade 18 -> 19 failed"
	fi
	echo "=== pg_upgrade 18 -> 19: $(($(date +%s) - t0)) s"
fi

if [ -x "$repo/test/checklogs_test.sh" ]; then
	echo "== checklogs self-test"
	if "$repo/test/checklogs_test.sh" >/dev/null; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "!! checklogs self-test failed"
	fi
fi

echo
echo "=== targets: ${runnable[*]}; total $(($(date +%s) - started)) s"
if [ "$skipped" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skipped skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" = 0 ]
