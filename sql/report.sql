-- What a call did (report.c, issue #29): zorder.optimize_history records
-- the heap pages each call wrote and the WAL it generated; with
-- zorder.report on, each call says so at INFO (terse here: the detail
-- holds times and byte counts that vary from run to run, and the same
-- figures are checked in the history).
SET search_path = public;
LOAD 'zorder';
SELECT setseed(0.29);
CREATE VIEW report_last AS
	SELECT "table", mode, rows_moved, pages_written, wal_bytes
	FROM zorder.optimize_history h
	WHERE started_at = (SELECT max(started_at) FROM zorder.optimize_history
						WHERE "table" = h."table");

CREATE TABLE rp (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO rp SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX rp_brin ON rp USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('rp', 'a', 'b');

-- a full rewrite: every row, into every page of the new heap, and WAL for
-- at least the heap's rows (a page image leaves out the room zorder keeps
-- free on it) and at most a few times heap and indexes
SHOW zorder.report;
CALL zorder.optimize('rp', "full" => true);
SELECT mode, rows_moved = (SELECT count(*) FROM rp) AS every_row,
	   pages_written = pg_relation_size('rp') / 8192 AS every_page,
	   wal_bytes >= (SELECT sum(pg_column_size(rp.*)) FROM rp) AS wal_covers_heap,
	   wal_bytes <= 3 * pg_total_relation_size('rp') AS wal_bounded
FROM report_last WHERE "table" = 'rp'::regclass;

-- an incremental call after spread appends: the rows it moved went into
-- pages filled one after another, so at least as many as they fill and
-- never more than one a row; its WAL is far below the rewrite's
INSERT INTO rp SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(20001, 20400) g;
CREATE TEMP TABLE full_wal AS
	SELECT wal_bytes FROM report_last WHERE "table" = 'rp'::regclass;
SET zorder.report = on;
\set VERBOSITY terse
CALL zorder.optimize('rp');
\set VERBOSITY default
SELECT mode, rows_moved >= 400 AS moved_what_arrived,
	   pages_written >= rows_moved / 110 AS pages_at_least_filled,
	   pages_written <= rows_moved AS pages_at_most_rows,
	   wal_bytes > 0 AND wal_bytes < (SELECT wal_bytes FROM full_wal) / 2
		   AS wal_below_rewrite
FROM report_last WHERE "table" = 'rp'::regclass;
SELECT count(*) AS rows, count(DISTINCT (id, a, b, pad)) AS distinct_rows,
	   sum(id) = 20400::bigint * 20401 / 2 AS ids_intact
FROM rp;
SELECT * FROM verify_heapam('rp');
SELECT bt_index_check('rp_pkey', true);

-- a full rewrite reports too, and each leaf of a partitioned table on its own
\set VERBOSITY terse
CALL zorder.optimize('rp', "full" => true);
CREATE TABLE rpp (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE rpp1 PARTITION OF rpp FOR VALUES FROM (0) TO (500);
CREATE TABLE rpp2 PARTITION OF rpp FOR VALUES FROM (500) TO (1000);
INSERT INTO rpp SELECT g % 1000, g % 7 FROM generate_series(1, 3000) g;
SELECT zorder.cluster_by('rpp', 'a', 'b');
CALL zorder.optimize('rpp');
\set VERBOSITY default
SELECT "table", mode, rows_moved, pages_written = pg_relation_size("table") / 8192
	   AS every_page
FROM report_last WHERE "table"::text LIKE 'rpp%' ORDER BY 1;

-- off again: nothing said, still recorded
RESET zorder.report;
CALL zorder.optimize('rp', "full" => true);
SELECT count(*) AS calls_recorded, count(wal_bytes) AS with_wal,
	   count(pages_written) AS with_pages
FROM zorder.optimize_history WHERE "table" = 'rp'::regclass;

-- The skipping before and after each call, per key, where a BRIN minmax
-- index covers the key.  rs is filled in a random order: a full rewrite
-- makes point filters read far fewer ranges; spread appends then cost a
-- little, and the incremental call that places them wins most of it back.
CREATE TABLE rs (a int, b int, c int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO rs SELECT (random() * 100000)::int, (random() * 1000)::int,
	   (random() * 50)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX rs_brin ON rs USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('rs', 'a', 'b', 'c');
CALL zorder.optimize('rs', "full" => true);
SELECT ranges_before[1] > 2 * ranges_after[1] AS a_better,
	   ranges_before[2] > 2 * ranges_after[2] AS b_better,
	   ranges_before[3] IS NULL AND ranges_after[3] IS NULL AS c_no_brin,
	   ranges_after[1] <= (SELECT count(*) FROM rs) AS a_within_ranges
FROM zorder.optimize_history WHERE "table" = 'rs'::regclass;
INSERT INTO rs SELECT (random() * 100000)::int, (random() * 1000)::int,
	   (random() * 50)::int, md5(g::text)
FROM generate_series(1, 400) g;
SET zorder.report = on;
\set VERBOSITY terse
CALL zorder.optimize('rs');
\set VERBOSITY default
RESET zorder.report;
SELECT h.mode, h.ranges_before[1] > h.ranges_after[1] AS a_better,
	   h.ranges_after[1] < 2 * f.ranges_after[1] AS a_near_full
FROM zorder.optimize_history h,
	 (SELECT ranges_after FROM zorder.optimize_history
	  WHERE "table" = 'rs'::regclass AND mode = 'full') f
WHERE h."table" = 'rs'::regclass AND h.mode = 'incremental';
-- a BRIN index of more ranges than the report reads (4096): it reads an
-- even sample of them, and the figure is that of every range, as
-- clustering_information counts it from all of them
CREATE TABLE rsb (a int, b int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO rsb SELECT (random() * 100000)::int, (random() * 1000)::int,
	   repeat(md5(g::text), 5)
FROM generate_series(1, 250000) g;
CREATE INDEX rsb_brin ON rsb USING brin (a, b) WITH (pages_per_range = 1);
SELECT zorder.cluster_by('rsb', 'a', 'b');
CALL zorder.optimize('rsb', "full" => true);
SELECT pg_relation_size('rsb') / 8192 > 4096 AS more_ranges_than_read,
	   abs(h.ranges_after[1] - c.mean_ranges_touched) < 0.25 * c.mean_ranges_touched
		   AS a_as_counted_from_all,
	   h.ranges_before[1] > 1000 AS before_most_ranges
FROM zorder.optimize_history h,
	 zorder.clustering_information('rsb', probes => 1000) c
WHERE h."table" = 'rsb'::regclass AND c.column_name = 'a';
DROP TABLE rsb;

-- the figures are read from the rows' values: hidden where row-level
-- security applies to the reader
CREATE ROLE rs_reader;
GRANT SELECT ON rs TO rs_reader;
ALTER TABLE rs ENABLE ROW LEVEL SECURITY;
CREATE POLICY rs_all ON rs TO rs_reader USING (true);
SET ROLE rs_reader;
SELECT mode, ranges_before, ranges_after FROM zorder.optimize_history
WHERE "table" = 'rs'::regclass ORDER BY started_at;
RESET ROLE;
SELECT count(ranges_after) AS owner_sees FROM zorder.optimize_history
WHERE "table" = 'rs'::regclass;
DROP TABLE rs;
DROP ROLE rs_reader;

DROP TABLE rp, rpp;
DROP VIEW report_last;
