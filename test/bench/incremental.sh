#!/usr/bin/env bash
# incremental.sh - what an incremental zorder.optimize costs and keeps.
#
# A table of ROWS rows (default 1,000,000) with two random keys and a text
# payload, a BRIN index with 16 pages per range, fully optimized once.
#   1. Append 1 % new random rows, then an incremental optimize: rows moved
#      as a share of the table, time against the full optimize, and the mean
#      ranges a point filter reads against the fully optimized table.
#   2. ROUNDS rounds (default 30) of (append 1 %, incremental optimize,
#      VACUUM), each compared with a fresh full optimize of the same rows:
#      mean ranges read and table size per row against it, after the last
#      round and in the worst one, and rows moved in all the rounds against
#      ROUNDS full rewrites.
# Connection settings come from the environment; test/bench/run.sh sets up
# a throwaway cluster.
set -eu

ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-30}
APPEND=$((ROWS / 100))
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# wall-clock milliseconds of one statement
timed() {
	q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}

# mean ranges read by a point filter, over the key columns
ranges() {
	q -c "SELECT round(avg(mean_ranges_touched)::numeric, 2)
		  FROM zorder.clustering_information('$1', probes => 1000)"
}

append() {
	q -c "INSERT INTO $1 (a, b, payload)
		  SELECT (random() * 1e6)::int, (random() * 1e6)::int, md5(random()::text)
		  FROM generate_series(1, $APPEND)"
}

q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS zorder;
DROP TABLE IF EXISTS ib_t, ib_full;
SELECT setseed(0.4);
CREATE TABLE ib_t (id bigserial PRIMARY KEY, a int, b int, payload text);
INSERT INTO ib_t (a, b, payload)
SELECT (random() * 1e6)::int, (random() * 1e6)::int, md5(g::text)
FROM generate_series(1, $ROWS) g;
CREATE INDEX ib_t_brin ON ib_t USING brin (a, b) WITH (pages_per_range = 16);
SELECT zorder.cluster_by('ib_t', 'a', 'b');
SQL

full_ms=$(timed "CALL zorder.optimize('ib_t')")
q -c "VACUUM ib_t"
full_ranges=$(ranges ib_t)

echo "== 1. one round: append 1 % ($APPEND rows) to $ROWS, then incremental"
append ib_t
inc_ms=$(timed "CALL zorder.optimize('ib_t')")
moved=$(q -c "SELECT rows_moved FROM zorder.optimize_history
			  WHERE \"table\" = 'ib_t'::regclass ORDER BY started_at DESC LIMIT 1")
inc_ranges=$(ranges ib_t)
awk -v m="$moved" -v r="$ROWS" -v a="$APPEND" -v fi="$full_ms" -v ii="$inc_ms" \
	-v fr="$full_ranges" -v ir="$inc_ranges" 'BEGIN {
	printf "rows moved            %d = %.2f %% of the table (goal <= 3 %%)\n", m, 100 * m / (r + a)
	printf "time                  %.0f ms = %.2f %% of the full optimize (%.0f ms; goal <= 5 %%)\n", ii, 100 * ii / fi, fi
	printf "mean ranges read      %.2f vs %.2f after the full optimize = %.2fx (goal <= 1.2x)\n", ir, fr, ir / fr
}'

echo
echo "== 2. $ROUNDS rounds of (append 1 %, incremental optimize, VACUUM)"
total_moved=$moved
q -c "VACUUM ib_t"
# a fresh full optimize of the rows of ib_t, as ib_full
fresh_copy() {
	q >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS ib_full;
CREATE TABLE ib_full AS SELECT * FROM ib_t;
ALTER TABLE ib_full ADD PRIMARY KEY (id);
CREATE INDEX ib_full_brin ON ib_full USING brin (a, b) WITH (pages_per_range = 16);
SELECT zorder.cluster_by('ib_full', 'a', 'b');
CALL zorder.optimize('ib_full');
VACUUM ib_full;
SQL
}

# after each round: mean ranges read and bytes per row, for the table and
# for a fresh full optimize of the same rows
: >"$trace"
for i in $(seq 2 "$ROUNDS"); do
	append ib_t
	q -c "CALL zorder.optimize('ib_t')"
	q -c "VACUUM ib_t"
	fresh_copy
	echo "$i $(ranges ib_t) $(ranges ib_full) \
		$(q -c "SELECT pg_relation_size('ib_t')::float8 / count(*) FROM ib_t") \
		$(q -c "SELECT pg_relation_size('ib_full')::float8 / count(*) FROM ib_full")" >>"$trace"
done
total_moved=$(q -c "SELECT sum(rows_moved) FROM zorder.optimize_history
					 WHERE \"table\" = 'ib_t'::regclass AND mode <> 'full'")
merges=$(q -c "SELECT count(*) FROM zorder.optimize_history
			   WHERE \"table\" = 'ib_t'::regclass AND mode = 'merge'")
runs=$(q -c "SELECT count(DISTINCT run) FROM zorder.sorted_runs WHERE \"table\" = 'ib_t'::regclass")
inc_ranges=$(ranges ib_t)
inc_size=$(q -c "SELECT pg_relation_size('ib_t')::float8 / count(*) FROM ib_t")
nrows=$(q -c "SELECT count(*) FROM ib_t")

# the fresh full optimize of the last round
[ "$ROUNDS" -ge 2 ] || fresh_copy
fresh_ranges=$(ranges ib_full)
fresh_size=$(q -c "SELECT pg_relation_size('ib_full')::float8 / count(*) FROM ib_full")

awk -v ir="$inc_ranges" -v fr="$fresh_ranges" -v is="$inc_size" -v fs="$fresh_size" \
	-v tm="$total_moved" -v n="$nrows" -v rounds="$ROUNDS" -v runs="$runs" -v r0="$ROWS" \
	-v merges="$merges" -v trace="$trace" 'BEGIN {
	# the worst round, each against a fresh full optimize of its rows
	while ((getline line < trace) > 0) {
		split(line, f, " ")
		rr = f[2] / f[3]; sr = f[4] / f[5]
		if (rr > wr) { wr = rr; wri = f[1] }
		if (sr > ws) { ws = sr; wsi = f[1] }
	}
	printf "sorted runs           %d (merges into the main run: %d)\n", runs, merges
	printf "mean ranges read      %.2f vs %.2f for a fresh full optimize = %.2fx (goal <= 1.3x)\n", ir, fr, ir / fr
	printf "table bytes per row   %.1f vs %.1f = %.2fx (goal <= 1.2x)\n", is, fs, is / fs
	printf "worst round           ranges %.2fx (round %d), bytes per row %.2fx (round %d), each against a fresh full optimize\n", wr, wri, ws, wsi
	printf "rows moved in %d rounds  %d, against %d for %d full rewrites = %.3f\n", rounds, tm, rounds * (r0 + n) / 2, rounds, tm / (rounds * (r0 + n) / 2)
}'
q -c "DROP TABLE ib_t, ib_full"
