-- Merging into the main run: when the rows outside it pass
-- zorder.merge_threshold, an incremental call moves every row, one key
-- slice per batch, into ranges the earlier slices emptied.  No row is lost,
-- the heap does not double, a merge cut short is resumed, and skipping is
-- back near a full optimize.
SET search_path = public;
LOAD 'zorder';
-- merges are an explicit option: cubes, and a merge once they pass 2.5 %
SET zorder.placement = off;
SET zorder.merge_threshold = 0.025;
SELECT setseed(0.2);

CREATE TABLE mg (id int PRIMARY KEY, a int, b int, note text);
INSERT INTO mg SELECT g, (random() * 10000)::int, (random() * 10000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX mg_brin ON mg USING brin (a, b) WITH (pages_per_range = 4);
CREATE INDEX mg_note ON mg (note);
SELECT zorder.cluster_by('mg', 'a', 'b');
CALL zorder.optimize('mg');
VACUUM mg;
SELECT pg_relation_size('mg') AS size_full \gset
-- rows on no page of a sorted run
CREATE TEMP VIEW mg_outside AS
SELECT * FROM mg WHERE NOT EXISTS (
	SELECT FROM zorder.sorted_runs r
	WHERE (ctid::text::point)[0] >= r.first_block
	  AND (ctid::text::point)[0] < r.first_block + r.nblocks);

-- 1 % new rows stay below the default threshold (2.5 %): a cube
INSERT INTO mg SELECT g, (random() * 10000)::int, (random() * 10000)::int, md5(g::text)
FROM generate_series(20001, 20200) g;
CALL zorder.optimize('mg');
SELECT mode, rows_moved FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1;
SELECT count(DISTINCT run) AS runs FROM zorder.sorted_runs;

-- 4 % more: the call merges everything into the main run, in batches
INSERT INTO mg SELECT g, (random() * 10000)::int, (random() * 10000)::int, md5(g::text)
FROM generate_series(20201, 21000) g;
VACUUM mg;
CREATE TABLE mg_before AS SELECT * FROM mg;
SET zorder.max_batch_size = 500;
CALL zorder.optimize('mg');
SELECT mode, rows_moved >= 21000 AS moved_every_row, runs_merged, runs_after
FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1;
SELECT count(*) AS missing FROM (SELECT * FROM mg_before EXCEPT ALL SELECT * FROM mg) d;
SELECT count(*) AS extra FROM (SELECT * FROM mg EXCEPT ALL SELECT * FROM mg_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('mg', check_toast => true);
SELECT bt_index_check('mg_pkey', true), bt_index_check('mg_note', true);
-- one run again, no merge pending, every row in it, extents apart
SELECT count(DISTINCT run) AS runs, min(run) AS run FROM zorder.sorted_runs;
SELECT merge_cursor IS NULL AS merge_done FROM zorder.layouts
WHERE relid = 'mg'::regclass;
SELECT count(*) AS rows_outside_runs FROM mg_outside;
SELECT sum(rows) AS rows_in_catalog FROM zorder.sorted_runs;
SELECT count(*) AS overlapping_extents
FROM zorder.sorted_runs r1, zorder.sorted_runs r2
WHERE r1.first_block < r2.first_block
  AND r1.first_block + r1.nblocks > r2.first_block;
-- extents are made of whole BRIN ranges
SELECT count(*) AS misaligned FROM zorder.sorted_runs WHERE first_block % 4 <> 0;
-- the slices reused the ranges earlier slices emptied: the heap grew by
-- far less than the table's size (it would double without)
SELECT pg_relation_size('mg') < 1.3 * :size_full AS heap_did_not_double;
-- every BRIN range is summarized, and skipping is close to a full optimize
-- of the same rows
SELECT max(unsummarized_ranges) AS unsummarized, avg(mean_ranges_touched) AS merged
FROM zorder.clustering_information('mg') \gset m_
CREATE TABLE mg_fresh AS SELECT * FROM mg;
CREATE INDEX ON mg_fresh USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('mg_fresh', 'a', 'b');
CALL zorder.optimize('mg_fresh');
SELECT avg(mean_ranges_touched) AS fresh
FROM zorder.clustering_information('mg_fresh') \gset f_
SELECT :m_unsummarized AS unsummarized, :m_merged < 1.25 * :f_fresh AS close_to_full;
DROP TABLE mg_fresh;
-- the BRIN index finds what a sequential scan finds
SET enable_seqscan = off;
SELECT count(*) AS via_brin FROM mg WHERE a BETWEEN 4000 AND 4100;
RESET enable_seqscan;
SET enable_bitmapscan = off;
SET enable_indexscan = off;
SELECT count(*) AS via_seqscan FROM mg WHERE a BETWEEN 4000 AND 4100;
RESET enable_bitmapscan;
RESET enable_indexscan;

-- a second merge, from a table the first one laid out: every row lands in
-- a run again (pages reused twice hold dead line pointers of both, which
-- leaves odd amounts of room on them)
SELECT setseed(0.42);
CREATE TABLE mg2 (id bigserial PRIMARY KEY, a int, b int, payload text);
INSERT INTO mg2 (a, b, payload)
SELECT (random() * 1e6)::int, (random() * 1e6)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX ON mg2 USING brin (a, b) WITH (pages_per_range = 16);
SELECT zorder.cluster_by('mg2', 'a', 'b');
CALL zorder.optimize('mg2');
VACUUM mg2;
RESET zorder.max_batch_size;
INSERT INTO mg2 (a, b, payload)
SELECT (random() * 1e6)::int, (random() * 1e6)::int, md5(random()::text)
FROM generate_series(1, 800);
CALL zorder.optimize('mg2');
VACUUM mg2;
INSERT INTO mg2 (a, b, payload)
SELECT (random() * 1e6)::int, (random() * 1e6)::int, md5(random()::text)
FROM generate_series(1, 800);
CREATE TABLE mg2_before AS SELECT * FROM mg2;
CALL zorder.optimize('mg2');
SELECT mode, rows_moved FROM zorder.optimize_history
WHERE "table" = 'mg2'::regclass ORDER BY started_at;
SELECT count(*) AS rows_outside_runs FROM mg2 WHERE NOT EXISTS (
	SELECT FROM zorder.sorted_runs r
	WHERE r."table" = 'mg2'::regclass
	  AND (ctid::text::point)[0] >= r.first_block
	  AND (ctid::text::point)[0] < r.first_block + r.nblocks);
SELECT count(*) AS missing FROM (SELECT * FROM mg2_before EXCEPT ALL SELECT * FROM mg2) d;
SELECT count(*) AS extra FROM (SELECT * FROM mg2 EXCEPT ALL SELECT * FROM mg2_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('mg2');
SELECT bt_index_check('mg2_pkey', true);
DROP TABLE mg2, mg2_before;
SET zorder.max_batch_size = 500;

-- a merge cut short by an error keeps what its batches committed, and the
-- next call goes on from where it stopped
CREATE FUNCTION mg_check(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF i = nullif(current_setting('mgtest.fail_on', true), '')::int THEN
		RAISE EXCEPTION 'mg_check: row %', i;
	END IF;
	RETURN i;
END $$;
CREATE INDEX mg_fail ON mg (mg_check(id));
INSERT INTO mg SELECT g, (random() * 10000)::int, (random() * 10000)::int, md5(g::text)
FROM generate_series(21001, 22000) g;
DROP TABLE mg_before;
CREATE TABLE mg_before AS SELECT * FROM mg;
SET zorder.merge_threshold = 0;
SET zorder.max_batch_size = 300;
-- row 15000 sits in the middle of the key space, so a few batches commit
-- before the one that moves it fails
SELECT a, b FROM mg WHERE id = 15000;
SET mgtest.fail_on = 15000;
\set VERBOSITY terse
CALL zorder.optimize('mg');
\set VERBOSITY default
RESET mgtest.fail_on;
SELECT merge_cursor IS NOT NULL AS merge_pending FROM zorder.layouts
WHERE relid = 'mg'::regclass;
SELECT count(*) AS missing FROM (SELECT * FROM mg_before EXCEPT ALL SELECT * FROM mg) d;
SELECT count(*) AS extra FROM (SELECT * FROM mg EXCEPT ALL SELECT * FROM mg_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('mg', check_toast => true);
SELECT bt_index_check('mg_pkey', true), bt_index_check('mg_note', true);
-- the catalog matches the heap: what it records holds as many rows as it
-- says, and no extent overlaps another
SELECT (SELECT sum(rows) FROM zorder.sorted_runs) =
	(SELECT count(*) FROM mg WHERE EXISTS (
		SELECT FROM zorder.sorted_runs r
		WHERE (ctid::text::point)[0] >= r.first_block
		  AND (ctid::text::point)[0] < r.first_block + r.nblocks)) AS catalog_matches;
SELECT count(*) AS overlapping_extents
FROM zorder.sorted_runs r1, zorder.sorted_runs r2
WHERE r1.first_block < r2.first_block
  AND r1.first_block + r1.nblocks > r2.first_block;
SET zorder.merge_threshold = 1;
CALL zorder.optimize('mg');
SELECT mode FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1;
SELECT merge_cursor IS NULL AS merge_done FROM zorder.layouts
WHERE relid = 'mg'::regclass;
SELECT count(*) AS rows_outside_runs FROM mg_outside;
SELECT count(*) AS missing FROM (SELECT * FROM mg_before EXCEPT ALL SELECT * FROM mg) d;
SELECT count(*) AS extra FROM (SELECT * FROM mg EXCEPT ALL SELECT * FROM mg_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('mg', check_toast => true);
SELECT bt_index_check('mg_pkey', true), bt_index_check('mg_note', true),
	bt_index_check('mg_fail', true);
RESET zorder.max_batch_size;

-- inside a transaction block a merge is one transaction: a rollback undoes it
INSERT INTO mg SELECT g, 1, 1, 'tx' FROM generate_series(30001, 31000) g;
SELECT count(*) AS extents_before FROM zorder.sorted_runs \gset
BEGIN;
SET LOCAL zorder.merge_threshold = 0;
SET LOCAL zorder.max_batch_size = 200;
CALL zorder.optimize('mg');
SELECT mode FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1;
ROLLBACK;
SELECT count(*) = :extents_before AS runs_unchanged FROM zorder.sorted_runs;
SELECT count(*) AS tx_rows FROM mg WHERE note = 'tx';
SELECT count(*) AS heap_problems FROM verify_heapam('mg');

DROP VIEW mg_outside;
DROP TABLE mg, mg_before;
DROP FUNCTION mg_check(int);
