#!/usr/bin/env bash
# upkeep_large.sh - a month of incremental upkeep against full rewrites.
#
# Issue #15's claim, measured side by side in one run: on a large table
# (ROWS rows, default 20,000,000, of the shape upkeep.sh uses: a 0 to
# 1,000,000, b 0 to 1,000, an md5 payload, a primary key and a BRIN index
# on (a, b) with 16 pages per range), ROUNDS rounds (default 30) of 1 %
# appends, each followed by an incremental CALL zorder.optimize, cost less
# time and WAL in all than three full rewrites of the table.
#
# ul_t is filled at fillfactor BENCH_FILLFACTOR (default 75: room for
# 30 % growth, as README advises; set empty, BENCH_FILLFACTOR=, for none,
# so that zorder chooses the room and may rewrite the table by itself when
# it is used up: such a call is marked and counted with the calls, its rows
# apart), fully optimized once and vacuumed.
# Each round is
#     CHECKPOINT; append 1 % of ROWS random rows; CHECKPOINT;
#     CALL zorder.optimize('ul_t') (timed, its WAL measured);
#     VACUUM ul_t (timed and measured apart: a user runs it anyway, but the
#     claim compares the calls)
# The full rewrites go to ul_copy: the same ROWS rows as ul_t before the
# rounds (same seed), at fillfactor 100, with the same primary key, BRIN
# index and keys, fully optimized once beforehand (untimed, so that every
# timed rewrite starts, as in practice, from a laid-out table).  Three
# times, spread over the rounds (after rounds ROUNDS/3, 2*ROUNDS/3 and
# ROUNDS, so that the shared machine's load falls on both sides alike):
#     CHECKPOINT; CALL zorder.optimize('ul_copy', full => true)
# timed, its WAL measured.  The rewrites are of the table at its original
# size, which favours them: the table they stand for grows by the same
# 30 %.  For reference, at the end, one full rewrite of ul_t as it has
# grown (ROWS * (1 + ROUNDS / 100) rows, fillfactor BENCH_FILLFACTOR).
#
# Per round: rows the call moved (zorder.optimize_history), per appended
# row; the heap pages it wrote rows into (zorder.history); the call's time
# and WAL; the append's WAL; VACUUM's time and WAL;
# the table's size.  Then the totals and their ratios.  MWM sets
# maintenance_work_mem (the server's default if unset), which the full
# rewrites sort in; BENCH_WAL_COMPRESSION sets wal_compression (off by
# default: full-page images, which a full rewrite writes for every page and
# a call for every page it touches first after the CHECKPOINT, at their
# full size).  Connection settings come from the environment;
# test/bench/run.sh sets up a throwaway cluster.
set -eu

ROWS=${ROWS:-20000000}
ROUNDS=${ROUNDS:-30}
FF=${BENCH_FILLFACTOR-75}
APPEND=$((ROWS / 100))
PPR=16
[ -n "${MWM:-}" ] && export PGOPTIONS="${PGOPTIONS:-} -c maintenance_work_mem=$MWM"
[ -n "${BENCH_WAL_COMPRESSION:-}" ] &&
	export PGOPTIONS="${PGOPTIONS:-} -c wal_compression=$BENCH_WAL_COMPRESSION"

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

lsn() { q -c "SELECT pg_current_wal_insert_lsn()"; }
walbytes() { q -c "SELECT pg_wal_lsn_diff('$2', '$1')::bigint"; }
now_ns() { date +%s%N; }
mb() { awk -v x="$1" 'BEGIN { printf "%.1f", x / 1048576 }'; }

# rows_moved of the newest call on table $1
last_moved() {
	q -c "SELECT rows_moved FROM zorder.optimize_history
		  WHERE \"table\" = '$1'::regclass ORDER BY started_at DESC LIMIT 1"
}

# timed CALL on a freshly checkpointed cluster: sets call_ms, call_wal
timed_call() {
	local l0 l1 t0 t1
	q -c "CHECKPOINT"
	l0=$(lsn)
	t0=$(now_ns)
	q -c "$1"
	t1=$(now_ns)
	l1=$(lsn)
	call_ms=$(((t1 - t0) / 1000000))
	call_wal=$(walbytes "$l0" "$l1")
}

# timed full rewrite of ul_copy after round $1, added to the totals
full_ms=0 full_wal=0 full_n=0 full_lines=""
rewrite_copy() {
	local line
	timed_call "CALL zorder.optimize('ul_copy', full => true)"
	full_n=$((full_n + 1))
	full_ms=$((full_ms + call_ms))
	full_wal=$((full_wal + call_wal))
	line="full rewrite $full_n of ul_copy (after round $1): $call_ms ms, $(mb "$call_wal") MB WAL, $(last_moved ul_copy) rows"
	echo "$line"
	full_lines="$full_lines$line
"
}

t_start=$(now_ns)
q >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS zorder;
DROP TABLE IF EXISTS ul_t, ul_copy;
CREATE TABLE ul_t (id bigserial PRIMARY KEY, a int, b int, payload text)
	${FF:+WITH (fillfactor = $FF)};
CREATE TABLE ul_copy (id bigserial PRIMARY KEY, a int, b int, payload text)
	WITH (fillfactor = 100);
SELECT setseed(0.3);
INSERT INTO ul_t (a, b, payload)
SELECT (random() * 1e6)::int, (random() * 1e3)::int, md5(g::text)
FROM generate_series(1, $ROWS) g;
SELECT setseed(0.3);
INSERT INTO ul_copy (a, b, payload)
SELECT (random() * 1e6)::int, (random() * 1e3)::int, md5(g::text)
FROM generate_series(1, $ROWS) g;
CREATE INDEX ul_t_brin ON ul_t USING brin (a, b) WITH (pages_per_range = $PPR);
CREATE INDEX ul_copy_brin ON ul_copy USING brin (a, b) WITH (pages_per_range = $PPR);
SELECT zorder.cluster_by('ul_t', 'a', 'b');
SELECT zorder.cluster_by('ul_copy', 'a', 'b');
CALL zorder.optimize('ul_t');
CALL zorder.optimize('ul_copy');
VACUUM ul_t;
VACUUM ul_copy;
SQL
same=$(q -c "SELECT (SELECT sum(hashtext(a || ',' || b || payload)::bigint) FROM ul_t) =
				  (SELECT sum(hashtext(a || ',' || b || payload)::bigint) FROM ul_copy)")
[ "$same" = t ] || { echo "ul_copy does not hold ul_t's rows" >&2; exit 1; }

echo "rows $ROWS, $ROUNDS rounds of 1 % ($APPEND rows); ul_t fillfactor ${FF:-chosen by zorder}," \
	"$(q -c "SELECT pg_size_pretty(pg_table_size('ul_t'))");" \
	"ul_copy fillfactor 100, $(q -c "SELECT pg_size_pretty(pg_table_size('ul_copy'))");" \
	"maintenance_work_mem $(q -c 'SHOW maintenance_work_mem')," \
	"wal_compression $(q -c 'SHOW wal_compression');" \
	"set-up $((($(now_ns) - t_start) / 1000000000)) s"
printf '%5s %9s %6s %8s %9s %8s %8s %8s %8s %8s\n' round moved mv/app pages "call ms" \
	"call MB" "app MB" "vac ms" "vac MB" "table MB"
tot_moved=0 tot_ms=0 tot_wal=0 tot_app=0 tot_vac_ms=0 tot_vac_wal=0 auto_n=0 auto_rows=0
min_ms= max_ms=0 min_wal= max_wal=0 max_ms_r=0 max_wal_r=0
for i in $(seq 1 "$ROUNDS"); do
	q -c "CHECKPOINT"
	l0=$(lsn)
	q -c "INSERT INTO ul_t (a, b, payload)
		  SELECT (random() * 1e6)::int, (random() * 1e3)::int, md5(random()::text)
		  FROM generate_series(1, $APPEND)"
	l1=$(lsn)
	app=$(walbytes "$l0" "$l1")
	timed_call "CALL zorder.optimize('ul_t')"
	moved=$(last_moved ul_t)
	mode=$(q -c "SELECT mode FROM zorder.optimize_history
				 WHERE \"table\" = 'ul_t'::regclass ORDER BY started_at DESC LIMIT 1")
	pages=$(q -c "SELECT coalesce(pages_written, -1) FROM zorder.history
				  WHERE relid = 'ul_t'::regclass ORDER BY started_at DESC LIMIT 1")
	if [ "$mode" = full ]; then
		auto_n=$((auto_n + 1))
		auto_rows=$((auto_rows + moved))
		echo "  (round $i: an automatic full rewrite, $moved rows)"
		moved=0
	fi
	l2=$(lsn)
	t0=$(now_ns)
	q -c "VACUUM ul_t"
	t1=$(now_ns)
	l3=$(lsn)
	vac_ms=$(((t1 - t0) / 1000000))
	vac_wal=$(walbytes "$l2" "$l3")
	size=$(q -c "SELECT pg_table_size('ul_t')")
	tot_moved=$((tot_moved + moved))
	tot_ms=$((tot_ms + call_ms))
	tot_wal=$((tot_wal + call_wal))
	tot_app=$((tot_app + app))
	tot_vac_ms=$((tot_vac_ms + vac_ms))
	tot_vac_wal=$((tot_vac_wal + vac_wal))
	[ -z "$min_ms" ] || [ "$call_ms" -lt "$min_ms" ] && min_ms=$call_ms
	[ -z "$min_wal" ] || [ "$call_wal" -lt "$min_wal" ] && min_wal=$call_wal
	[ "$call_ms" -gt "$max_ms" ] && max_ms=$call_ms max_ms_r=$i
	[ "$call_wal" -gt "$max_wal" ] && max_wal=$call_wal max_wal_r=$i
	awk -v i="$i" -v m="$moved" -v n="$APPEND" -v p="$pages" -v ms="$call_ms" -v c="$call_wal" \
		-v a="$app" -v vms="$vac_ms" -v v="$vac_wal" -v s="$size" 'BEGIN {
		printf "%5d %9d %6.2f %8d %9d %8.1f %8.1f %8d %8.1f %8.0f\n", i, m, m / n, p, ms,
			c / 1048576, a / 1048576, vms, v / 1048576, s / 1048576
	}'
	# a full rewrite of ul_copy after each third of the rounds
	if [ $((i * 3)) -ge $(((full_n + 1) * ROUNDS)) ]; then
		rewrite_copy "$i"
	fi
done
# (fewer than three rounds)
while [ "$full_n" -lt 3 ]; do rewrite_copy "$ROUNDS"; done

timed_call "CALL zorder.optimize('ul_t', full => true)"
grown="$call_ms ms, $(mb "$call_wal") MB WAL, $(last_moved ul_t) rows"

echo
printf '%s' "$full_lines"
echo "calls per round: $min_ms to $max_ms ms (slowest: round $max_ms_r)," \
	"$(mb "$min_wal") to $(mb "$max_wal") MB WAL (most: round $max_wal_r)"
echo "reference, one full rewrite of ul_t as grown: $grown"
echo "automatic full rewrites among the calls: $auto_n ($auto_rows rows; not in rows moved)"
awk -v r="$ROUNDS" -v n="$full_n" -v m="$tot_moved" -v app="$((APPEND * ROUNDS))" -v iapp="$((APPEND * (ROUNDS - auto_n)))" \
	-v ms="$tot_ms" -v w="$tot_wal" -v aw="$tot_app" -v vms="$tot_vac_ms" -v vw="$tot_vac_wal" \
	-v fms="$full_ms" -v fw="$full_wal" 'BEGIN {
	printf "%-34s %10s %10s %12s\n", "total", "time s", "WAL MB", "rows moved"
	printf "%-34s %10.1f %10.0f %12d\n", r " calls", ms / 1000, w / 1048576, m
	printf "%-34s %10.1f %10.0f %12s\n", r " VACUUMs after them", vms / 1000, vw / 1048576, "-"
	printf "%-34s %10s %10.0f %12s\n", r " appends", "-", aw / 1048576, app
	printf "%-34s %10.1f %10.0f %12s\n", n " full rewrites (original size)", fms / 1000, fw / 1048576, "-"
	printf "calls / rewrites: time %.2f, WAL %.2f (goal: both < 1)\n", ms / fms, w / fw
	printf "calls + VACUUMs / rewrites: time %.2f, WAL %.2f\n", (ms + vms) / fms, (w + vw) / fw
	printf "rows moved per appended row, incremental calls: %.2f\n", m / iapp
}'
q -c "DROP TABLE ul_t, ul_copy"
