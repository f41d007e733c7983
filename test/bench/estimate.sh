#!/usr/bin/env bash
# estimate.sh - zorder.estimate against what the call then does.
#
# A table of ROWS rows (default 1,000,000): an id, a time, two keys a and
# b drawn at random, a 40-byte payload; a btree on id and one on a;
# maintenance_work_mem 64MB, so that the full rewrite's sort spills.  With
# the default settings otherwise (zorder chooses the room), each call is
# estimated, the server checkpointed (the estimate counts a full page
# image for every page a call changes, as after a checkpoint), then run:
#   1. the first call, a full rewrite (time from the stated model);
#   2. 1 % new rows drawn at random, an incremental call (time from the
#      stated model: the table has no incremental call yet);
#   3. another 1 %, an incremental call (time scaled from the first one);
#   4. full => true (time scaled from the first full rewrite).
# Each figure is reported as estimate / measurement: rows moved and heap
# pages written (zorder.history), index bytes (pg_indexes_size, full
# rewrites), temporary bytes (pg_stat_database), WAL (zorder.history),
# seconds (zorder.history's duration), and the mean block ranges a point
# filter reads on each key afterwards (zorder.clustering_information).
# Connection settings come from the environment; test/bench/run.sh sets up
# a throwaway cluster.
set -eu

ROWS=${ROWS:-1000000}
NEW=$((ROWS / 100))

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

q -c "SET client_min_messages = warning;
DROP TABLE IF EXISTS est;
CREATE EXTENSION IF NOT EXISTS zorder;
CREATE TABLE est (id bigint PRIMARY KEY, ts timestamptz NOT NULL,
	a int NOT NULL, b int NOT NULL, pad text);
SELECT setseed(0.25);
INSERT INTO est SELECT g, '2026-01-01'::timestamptz + g * interval '1 s',
	(random() * 999999)::int, (random() * 9999)::int, repeat('x', 40)
FROM generate_series(1, $ROWS) g;
CREATE INDEX est_a ON est (a);
SELECT zorder.cluster_by('est', 'a', 'b');" -c "VACUUM ANALYZE est" >/dev/null

# one call: estimate, checkpoint, run; prints the ratios
call() {
	local label=$1 full=$2
	q -c "SET maintenance_work_mem = '64MB';
SET client_min_messages = warning;
DROP TABLE IF EXISTS e;
CREATE TABLE e AS SELECT * FROM zorder.estimate('est', $full);
CREATE TABLE IF NOT EXISTS m (temp_before bigint);
TRUNCATE m;
CHECKPOINT;
SELECT pg_stat_force_next_flush();
INSERT INTO m SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database();" >/dev/null
	q -c "SET maintenance_work_mem = '64MB'" -c "CALL zorder.optimize('est', full => $full)"
	q -c "SELECT pg_stat_force_next_flush()" >/dev/null
	q -F '|' -c "
SELECT '$label', e.mode, e.time_from = 'model',
	round(e.rows_to_move::numeric / nullif(h.rows_moved, 0), 2),
	round(e.heap_bytes::numeric / nullif(CASE WHEN h.mode = 'full'
		THEN pg_relation_size('est') ELSE h.pages_written * 8192 END, 0), 2),
	CASE WHEN h.mode = 'full'
		THEN round(e.index_bytes::numeric / pg_indexes_size('est'), 2)::text
		ELSE '-' END,
	CASE WHEN e.temp_bytes + (SELECT temp_bytes FROM pg_stat_database
							  WHERE datname = current_database()) - m.temp_before = 0
		THEN 'both 0'
		ELSE round(e.temp_bytes::numeric / nullif((SELECT temp_bytes
			FROM pg_stat_database WHERE datname = current_database())
			- m.temp_before, 0), 2)::text END,
	round(e.wal_bytes::numeric / nullif(h.wal_bytes, 0), 2),
	round((e.seconds / extract(epoch FROM h.duration))::numeric, 2),
	(SELECT string_agg(round((e.ranges_read_after[c.key_position]
							  / c.mean_ranges_touched)::numeric, 2)::text, '/'
					   ORDER BY c.key_position)
	 FROM zorder.clustering_information('est', probes => 0) c)
FROM e, m, zorder.history h
WHERE h.relid = 'est'::regclass
ORDER BY h.started_at DESC LIMIT 1"
}

add_rows() {
	q -c "INSERT INTO est SELECT g, now(), (random() * 999999)::int,
	(random() * 9999)::int, repeat('x', 40)
FROM generate_series((SELECT max(id) + 1 FROM est),
					 (SELECT max(id) + $NEW FROM est)) g" >/dev/null
}

echo "estimate / measured, $ROWS rows (1: exact; the goal: time within 2x, the rest within 25 %)"
{
	echo "call|mode|model|rows|heap|index|temp|WAL|time|ranges a/b"
	call "first call" false
	add_rows
	call "1 % new rows" false
	add_rows
	call "1 % more" false
	call "full => true" true
} | awk -F'|' '{ printf "%-13s %-22s %-5s %5s %5s %5s %6s %5s %5s %s\n",
	$1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
