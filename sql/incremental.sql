-- Incremental optimize: only rows outside the sorted runs move, into a new
-- run at the end that starts on a BRIN range boundary; no row is lost.
SET search_path = public, zorder;
-- cubes only here: merges into the main run are tested in merge.sql
SET zorder.merge_threshold = 1;
-- cubes: placement into the main run's ranges is tested in incremental_placement.sql
SET zorder.placement = off;
SELECT setseed(0.7);

CREATE TABLE inc (id int PRIMARY KEY, a int, b int, note text);
INSERT INTO inc SELECT g, (random() * 10000)::int, (random() * 10000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX inc_brin ON inc USING brin (a, b) WITH (pages_per_range = 16);
CREATE INDEX inc_note ON inc (note);
SELECT zorder.cluster_by('inc', 'a', 'b');

-- the first call has no layout to work from: a full rewrite
CALL zorder.optimize('inc');
VACUUM inc;
SELECT mode, rows_moved, runs_after FROM zorder.optimize_history;
SELECT first_block, nblocks = pg_relation_size('inc') / 8192 AS whole_table, rows
FROM zorder.sorted_runs;

-- append 1 %, then an incremental call moves exactly those rows
INSERT INTO inc SELECT g, (random() * 10000)::int, (random() * 10000)::int, md5(g::text)
FROM generate_series(20001, 20200) g;
CREATE TABLE inc_before AS SELECT * FROM inc;
CALL zorder.optimize('inc');
SELECT mode, rows_moved, runs_merged, runs_after FROM zorder.optimize_history
ORDER BY started_at DESC LIMIT 1;
-- the new run starts on a multiple of pages_per_range and holds the new rows
SELECT first_block % 16 AS offset_in_range, rows FROM zorder.sorted_runs
ORDER BY first_block DESC LIMIT 1;
SELECT count(*) AS new_rows_in_new_run
FROM inc, (SELECT first_block, nblocks FROM zorder.sorted_runs
		   ORDER BY first_block DESC LIMIT 1) r
WHERE id > 20000 AND (ctid::text::point)[0] >= r.first_block
  AND (ctid::text::point)[0] < r.first_block + r.nblocks;
SELECT count(*) AS missing FROM (SELECT * FROM inc_before EXCEPT ALL SELECT * FROM inc) d;
SELECT count(*) AS extra FROM (SELECT * FROM inc EXCEPT ALL SELECT * FROM inc_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('inc');
SELECT bt_index_check('inc_pkey', true), bt_index_check('inc_note', true);
-- the indexes find the moved rows
SET enable_seqscan = off;
SELECT count(*) AS found_by_pkey FROM inc WHERE id BETWEEN 20001 AND 20200;
RESET enable_seqscan;

-- a second call with nothing new moves nothing
CALL zorder.optimize('inc');
SELECT rows_moved FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1;

-- rows that land in free space inside a run move out of it; a small run is
-- merged with the new rows; batches of 50 commit one by one
DELETE FROM inc WHERE id % 20 = 0 AND id <= 20000;
VACUUM inc;
INSERT INTO inc SELECT g, (random() * 10000)::int, (random() * 10000)::int, 'late'
FROM generate_series(30001, 30300) g;
SELECT count(*) > 0 AS some_landed_in_first_run
FROM inc WHERE note = 'late' AND (ctid::text::point)[0] < (SELECT nblocks FROM zorder.sorted_runs WHERE first_block = 0);
DROP TABLE inc_before;
CREATE TABLE inc_before AS SELECT * FROM inc;
SET zorder.max_batch_size = 50;
CALL zorder.optimize('inc');
RESET zorder.max_batch_size;
SELECT mode, rows_moved, runs_merged, runs_after FROM zorder.optimize_history
ORDER BY started_at DESC LIMIT 1;
SELECT count(*) AS rows_outside_runs
FROM inc WHERE NOT EXISTS (
	SELECT FROM zorder.sorted_runs r
	WHERE (ctid::text::point)[0] >= r.first_block
	  AND (ctid::text::point)[0] < r.first_block + r.nblocks);
SELECT count(*) AS late_rows_in_first_run
FROM inc WHERE note = 'late' AND (ctid::text::point)[0] < (SELECT nblocks FROM zorder.sorted_runs WHERE first_block = 0);
SELECT count(*) AS missing FROM (SELECT * FROM inc_before EXCEPT ALL SELECT * FROM inc) d;
SELECT count(*) AS extra FROM (SELECT * FROM inc EXCEPT ALL SELECT * FROM inc_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('inc');
SELECT bt_index_check('inc_pkey', true), bt_index_check('inc_note', true);
-- the catalog matches the heap: runs do not overlap, and every row is in
-- one (checked above)
SELECT count(*) AS overlapping_runs FROM zorder.sorted_runs r1, zorder.sorted_runs r2
WHERE r1.first_block < r2.first_block AND r1.first_block + r1.nblocks > r2.first_block;

-- changing the keys needs no rewrite: new rows follow the new keys
SELECT zorder.cluster_by('inc', 'b', 'a');
INSERT INTO inc SELECT g, (random() * 10000)::int, (random() * 10000)::int, 'newkeys'
FROM generate_series(40001, 40100) g;
SELECT pg_relation_filenode('inc') AS filenode \gset
CALL zorder.optimize('inc');
SELECT pg_relation_filenode('inc') = :filenode AS not_rewritten;
SELECT keys FROM zorder.layouts WHERE relid = 'inc'::regclass;
SELECT rows_moved, runs_after FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1;
SELECT count(*) AS heap_problems FROM verify_heapam('inc');
-- and full => true re-clusters everything under the current keys
CALL zorder.optimize('inc', full => true);
SELECT pg_relation_filenode('inc') <> :filenode AS rewritten;
SELECT count(*) AS runs FROM zorder.sorted_runs;
SELECT count(*) AS heap_problems FROM verify_heapam('inc');

-- inside a transaction block everything is one transaction
INSERT INTO inc SELECT g, 1, 1, 'tx' FROM generate_series(50001, 50100) g;
BEGIN;
SET LOCAL zorder.max_batch_size = 10;
CALL zorder.optimize('inc');
ROLLBACK;
SELECT count(*) AS runs FROM zorder.sorted_runs;
SELECT count(*) AS tx_rows FROM inc WHERE note = 'tx';

-- a layout gone stale shows in clustering_information: the share of the
-- table outside the sorted runs, and how many runs there are
INSERT INTO inc SELECT g, (random() * 10000)::int, (random() * 10000)::int, 'stale'
FROM generate_series(60001, 61000) g;
SELECT unclustered_share AS stale_share, sorted_runs
FROM zorder.clustering_information('inc') WHERE key_position = 1 \gset
SELECT :stale_share > 0.03 AS stale, :sorted_runs AS sorted_runs;
CALL zorder.optimize('inc');
-- (the pages the rows left stay outside the runs, empty, until reused)
SELECT unclustered_share < :stale_share / 2 AS fresher, sorted_runs
FROM zorder.clustering_information('inc') WHERE key_position = 1;

-- rows that landed in free space inside a run are found even after VACUUM
-- marked their pages all-visible again
CALL zorder.optimize('inc', full => true);
DELETE FROM inc WHERE id % 10 = 3;
VACUUM inc;
INSERT INTO inc SELECT g, (random() * 10000)::int, (random() * 10000)::int, 'hidden'
FROM generate_series(70001, 70500) g;
VACUUM inc;
SELECT count(*) AS hidden_in_first_run FROM inc
WHERE note = 'hidden' AND (ctid::text::point)[0] < (SELECT nblocks FROM zorder.sorted_runs WHERE first_block = 0);
CALL zorder.optimize('inc');
SELECT rows_moved FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1;
SELECT count(*) AS hidden_left_in_first_run FROM inc
WHERE note = 'hidden' AND (ctid::text::point)[0] < (SELECT nblocks FROM zorder.sorted_runs WHERE first_block = 0);

-- moves are refused where a DELETE would be, or where a publication would
-- see only half of them; nothing is moved then
CREATE TABLE nopk (a int, b int);
INSERT INTO nopk SELECT g % 97, g % 89 FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('nopk', 'a', 'b');
CALL zorder.optimize('nopk');
SET client_min_messages = error;	-- wal_level may be too low to publish
CREATE PUBLICATION zorder_pub_all FOR TABLE nopk;
RESET client_min_messages;
INSERT INTO nopk SELECT g % 97, g % 89 FROM generate_series(1, 100) g;
CALL zorder.optimize('nopk');
DROP PUBLICATION zorder_pub_all;
SET client_min_messages = error;
CREATE PUBLICATION zorder_pub_ins FOR TABLE inc WITH (publish = 'insert');
RESET client_min_messages;
INSERT INTO inc SELECT g, 1, 1, 'pub' FROM generate_series(80001, 80010) g;
CALL zorder.optimize('inc');
-- a rewrite is fine: logical replication does not see it
CALL zorder.optimize('inc', full => true);
DROP PUBLICATION zorder_pub_ins;
DROP TABLE nopk;

-- a partitioned table: each leaf incrementally
CREATE TABLE pinc (k int, a int, b int) PARTITION BY RANGE (k);
CREATE TABLE pinc_1 PARTITION OF pinc FOR VALUES FROM (0) TO (1000);
CREATE TABLE pinc_2 PARTITION OF pinc FOR VALUES FROM (1000) TO (2000);
INSERT INTO pinc SELECT g % 2000, (random() * 100)::int, (random() * 100)::int FROM generate_series(1, 4000) g;
SELECT zorder.cluster_by('pinc', 'a', 'b');
CALL zorder.optimize('pinc');
INSERT INTO pinc SELECT g % 2000, (random() * 100)::int, (random() * 100)::int FROM generate_series(1, 100) g;
CALL zorder.optimize('pinc');
SELECT "table", mode, rows_moved FROM zorder.optimize_history
WHERE "table"::text LIKE 'pinc%' ORDER BY 1::text, started_at;
SELECT count(*) FROM pinc;

DROP TABLE inc, inc_before, pinc;
SELECT count(*) AS leftover_runs FROM zorder.runs;
