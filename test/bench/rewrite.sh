#!/usr/bin/env bash
# rewrite.sh - cost of a full zorder.optimize against VACUUM FULL and CLUSTER.
#
# One table of ROWS rows (default 3,000,000, about 400 MB) with three random
# key columns and a text payload.  Each method rewrites its own fresh copy of
# it, REPS times (default 3), the methods taking turns so that the noise of
# a shared machine hits them alike; the median is reported, with temp bytes
# (pg_stat_database) and WAL bytes, as ratios to zorder.optimize.
#
#   VACUUM FULL               copy without indexes
#   CLUSTER btree(a, b, c)    the btree is built before and not counted;
#                             the planner chooses index scan or sort
#   CLUSTER ... (sort)        the same, with enable_indexscan off so that
#                             CLUSTER takes its seq scan + sort path
#   CLUSTER zorder_key expr   btree on zorder.zorder_key(a, b, c), pre-built;
#                             run once (REPS_EXPR, default 1): it is slow
#   zorder.optimize           copy without indexes, keys (a, b, c)
#
# maintenance_work_mem is MWM (default 64MB).  Connection settings come from
# the environment; test/bench/run.sh sets up a throwaway cluster.
set -eu

ROWS=${ROWS:-3000000}
REPS=${REPS:-3}
REPS_EXPR=${REPS_EXPR:-1}
MWM=${MWM:-64MB}

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

q <<SQL
CREATE EXTENSION IF NOT EXISTS zorder;
DROP TABLE IF EXISTS rw_base;
SELECT setseed(0.3);
CREATE TABLE rw_base AS
SELECT g AS id, (random() * 1e6)::int AS a, (random() * 1e6)::int AS b,
	   (random() * 1e9)::bigint AS c,
	   '2026-01-01'::timestamptz + random() * interval '365 days' AS ts,
	   md5(g::text) || md5((g * 7)::text) AS payload
FROM generate_series(1, $ROWS) g;
SQL
echo "table: $ROWS rows, $(q -c "SELECT pg_size_pretty(pg_relation_size('rw_base'))"), maintenance_work_mem = $MWM"

# prepare METHOD: a fresh copy, with what the method needs (not timed)
prepare() {
	q <<SQL
DROP TABLE IF EXISTS rw_t;
CREATE TABLE rw_t AS SELECT * FROM rw_base;
$(case $1 in
	cluster|clsort) echo "CREATE INDEX rw_t_abc ON rw_t (a, b, c);" ;;
	expr) echo "CREATE INDEX rw_t_z ON rw_t (zorder.zorder_key(a, b, c));" ;;
	optimize) echo "SELECT zorder.cluster_by('rw_t', 'a', 'b', 'c');" ;;
esac)
ANALYZE rw_t;
CHECKPOINT;
SQL
}

statement() {
	case $1 in
		vacuum) echo "VACUUM FULL rw_t" ;;
		cluster) echo "CLUSTER rw_t USING rw_t_abc" ;;
		clsort) echo "SET enable_indexscan = off; CLUSTER rw_t USING rw_t_abc" ;;
		expr) echo "CLUSTER rw_t USING rw_t_z" ;;
		optimize) echo "CALL zorder.optimize('rw_t')" ;;
	esac
}

# run METHOD: prints "ms temp_bytes wal_bytes"
run() {
	local before after ms
	before=$(q -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()" \
		-c "SELECT pg_current_wal_lsn()")
	ms=$(q -c "SET maintenance_work_mem = '$MWM'" -c '\timing on' -c "$(statement "$1")" |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
	sleep 1	# the backend's statistics reach shared memory as it exits
	after=$(q -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()" \
		-c "SELECT pg_current_wal_lsn()")
	q -c "SELECT $ms, $(echo "$after" | sed -n 1p) - $(echo "$before" | sed -n 1p),
		pg_wal_lsn_diff('$(echo "$after" | sed -n 2p)', '$(echo "$before" | sed -n 2p)')" |
		tr '|' ' '
}

results=$(mktemp)
for rep in $(seq 1 "$REPS"); do
	for m in vacuum cluster clsort optimize; do
		prepare $m
		echo "$m $(run $m)" | tee -a "$results" >&2
	done
	if [ "$rep" -le "$REPS_EXPR" ]; then
		prepare expr
		echo "expr $(run expr)" | tee -a "$results" >&2
	fi
done
q -c "DROP TABLE rw_t, rw_base"

echo
printf '%-28s %10s %8s %12s %12s\n' method "median s" "x opt" "temp MB" "WAL MB"
for m in optimize vacuum cluster clsort expr; do
	awk -v m=$m '$1 == m { print $2, $3, $4 }' "$results" | sort -n |
		awk '{ t[NR] = $1; tb[NR] = $2; w[NR] = $3 }
			 END { k = int((NR + 1) / 2); print t[k], tb[k], w[k] }'
done | {
	read -r ot otb ow
	label() { case $1 in optimize) echo "zorder.optimize";; vacuum) echo "VACUUM FULL";;
		cluster) echo "CLUSTER btree(a,b,c)";; clsort) echo "CLUSTER btree(a,b,c), sort";; expr) echo "CLUSTER btree(zorder_key)";; esac; }
	line() { awk -v n="$(label $1)" -v t="$2" -v tb="$3" -v w="$4" -v ot="$ot" \
		'BEGIN { printf "%-28s %10.2f %8.2f %12.1f %12.1f\n", n, t / 1000, t / ot, tb / 1048576, w / 1048576 }'; }
	line optimize "$ot" "$otb" "$ow"
	for m in vacuum cluster clsort expr; do
		read -r t tb w
		[ -n "$t" ] && line $m "$t" "$tb" "$w"
	done
}
rm -f "$results"
