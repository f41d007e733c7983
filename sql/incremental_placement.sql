-- Placement: an incremental call moves each new row into the range of the
-- main run whose keys hold it, into the room the table's fillfactor keeps
-- free there; a range without room for its new rows splits into ranges
-- with room, and the range it leaves is reused.  No row is lost, no range
-- widens, and no call moves more than a few times what arrived.
SET search_path = public, zorder;
SET client_min_messages = warning;
-- the defaults: placement on, no call merges the whole table
LOAD 'zorder';
SHOW zorder.placement;
SHOW zorder.merge_threshold;
SHOW zorder.band_regions;
SELECT setseed(0.5);
-- Until the last section: new rows crowded into a few values split the
-- ranges that hold them, as those sections test, rather than get a region
-- of their own (zorder.band_regions, tested last).
SET zorder.band_regions = off;

CREATE TABLE pl (id int PRIMARY KEY, a int, b int, note text)
	WITH (fillfactor = 70, autovacuum_enabled = off);
INSERT INTO pl SELECT g, (random() * 10000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX pl_brin ON pl USING brin (a, b) WITH (pages_per_range = 4);
CREATE INDEX pl_note ON pl (note);
SELECT zorder.cluster_by('pl', 'a', 'b');
CALL zorder.optimize('pl');
VACUUM pl;
SELECT pg_relation_size('pl') AS size_full \gset
-- rows on no page of a sorted run
CREATE TEMP VIEW pl_outside AS
SELECT * FROM pl WHERE NOT EXISTS (
	SELECT FROM zorder.sorted_runs r
	WHERE (ctid::text::point)[0] >= r.first_block
	  AND (ctid::text::point)[0] < r.first_block + r.nblocks);
-- a fresh full optimize of the same rows, to compare skipping with
-- (mean ranges a point filter reads on each key column, every value)
CREATE FUNCTION pl_skipping() RETURNS TABLE (column_name name, within_1_2_of_fresh boolean)
LANGUAGE plpgsql AS $$
BEGIN
	DROP TABLE IF EXISTS pl_fresh;
	CREATE TABLE pl_fresh WITH (fillfactor = 70) AS SELECT * FROM pl;
	CREATE INDEX pl_fresh_brin ON pl_fresh USING brin (a, b) WITH (pages_per_range = 4);
	PERFORM zorder.cluster_by('pl_fresh', 'a', 'b');
	CALL zorder.optimize('pl_fresh');
	RETURN QUERY
	SELECT i.column_name::name,
		   i.mean_ranges_touched / f.mean_ranges_touched < 1.2
	FROM zorder.clustering_information('pl', probes => 0) i
	JOIN zorder.clustering_information('pl_fresh', probes => 0) f USING (key_position)
	ORDER BY i.key_position;
END
$$;

-- 1 % new rows: each moves once, into the range that holds its key; no
-- new run, and nothing is left on pages after the optimized heap
INSERT INTO pl SELECT g, (random() * 10000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(20001, 20200) g;
CREATE TABLE pl_before AS SELECT * FROM pl;
CALL zorder.optimize('pl');
SELECT mode, rows_moved, runs_after FROM zorder.optimize_history
WHERE "table" = 'pl'::regclass ORDER BY started_at DESC LIMIT 1;
-- the main run is recorded range by range, each on a range boundary
SELECT count(DISTINCT run) AS runs, min(run) AS run, max(nblocks) AS max_blocks,
	   count(*) FILTER (WHERE first_block % 4 <> 0) AS misaligned
FROM zorder.sorted_runs WHERE "table" = 'pl'::regclass;
SELECT count(*) AS rows_outside_runs FROM pl_outside;
SELECT count(*) AS rows_after_optimized_heap FROM pl
WHERE (ctid::text::point)[0] >= :size_full / 8192;
SELECT count(*) AS missing FROM (SELECT * FROM pl_before EXCEPT ALL SELECT * FROM pl) d;
SELECT count(*) AS extra FROM (SELECT * FROM pl EXCEPT ALL SELECT * FROM pl_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('pl');
SELECT bt_index_check('pl_pkey', true), bt_index_check('pl_note', true);
SELECT * FROM pl_skipping();

-- a call with nothing new moves nothing
CALL zorder.optimize('pl');
SELECT rows_moved FROM zorder.optimize_history
WHERE "table" = 'pl'::regclass ORDER BY started_at DESC LIMIT 1;

-- many rows in a narrow band of a: the ranges that hold it fill and split,
-- and the new ranges are whole BRIN ranges with room
SELECT count(*) AS ranges_before FROM zorder.sorted_runs WHERE "table" = 'pl'::regclass \gset
INSERT INTO pl SELECT g, 5000 + (random() * 20)::int, (random() * 1000)::int, 'hot'
FROM generate_series(30001, 31500) g;
DROP TABLE pl_before;
CREATE TABLE pl_before AS SELECT * FROM pl;
CALL zorder.optimize('pl');
SELECT rows_moved > 1500 AS ranges_split,
	   rows_moved <= 4 * 1500 + 2 * 4 * 8192 / 60 + 1500 AS within_budget
FROM zorder.optimize_history
WHERE "table" = 'pl'::regclass ORDER BY started_at DESC LIMIT 1;
SELECT count(*) > :ranges_before AS more_ranges, count(DISTINCT run) AS runs,
	   max(nblocks) AS max_blocks,
	   count(*) FILTER (WHERE first_block % 4 <> 0) AS misaligned
FROM zorder.sorted_runs WHERE "table" = 'pl'::regclass;
SELECT count(*) AS overlapping_extents
FROM zorder.sorted_runs r1, zorder.sorted_runs r2
WHERE r1."table" = 'pl'::regclass AND r2."table" = 'pl'::regclass
  AND r1.first_block < r2.first_block
  AND r1.first_block + r1.nblocks > r2.first_block;
SELECT count(*) AS rows_outside_runs FROM pl_outside;
SELECT count(*) AS missing FROM (SELECT * FROM pl_before EXCEPT ALL SELECT * FROM pl) d;
SELECT count(*) AS extra FROM (SELECT * FROM pl EXCEPT ALL SELECT * FROM pl_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('pl');
SELECT bt_index_check('pl_pkey', true), bt_index_check('pl_note', true);
SET enable_seqscan = off;
SELECT count(*) AS found_by_pkey FROM pl WHERE id BETWEEN 30001 AND 31500;
RESET enable_seqscan;

-- the ranges the splits left are reused by the next splits: after another
-- band, the heap grew by less than the rows the splits moved
VACUUM pl;
SELECT pg_relation_size('pl') AS size_before \gset
INSERT INTO pl SELECT g, 2000 + (random() * 20)::int, (random() * 1000)::int, 'hot2'
FROM generate_series(40001, 41500) g;
CALL zorder.optimize('pl');
VACUUM pl;
SELECT (pg_relation_size('pl') - :size_before) / 8192 <
	   (SELECT rows_moved FROM zorder.optimize_history
		WHERE "table" = 'pl'::regclass ORDER BY started_at DESC LIMIT 1) / 60
	   AS reused_ranges;
SELECT count(*) AS rows_outside_runs FROM pl_outside;
SELECT count(*) AS heap_problems FROM verify_heapam('pl');
SELECT bt_index_check('pl_pkey', true), bt_index_check('pl_note', true);

-- small batches: a split is one batch, the rest commit one by one
SET zorder.max_batch_size = 20;
INSERT INTO pl SELECT g, (random() * 10000)::int, (random() * 1000)::int, 'batched'
FROM generate_series(50001, 50400) g;
DROP TABLE pl_before;
CREATE TABLE pl_before AS SELECT * FROM pl;
CALL zorder.optimize('pl');
RESET zorder.max_batch_size;
SELECT count(*) AS missing FROM (SELECT * FROM pl_before EXCEPT ALL SELECT * FROM pl) d;
SELECT count(*) AS extra FROM (SELECT * FROM pl EXCEPT ALL SELECT * FROM pl_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('pl');
SELECT bt_index_check('pl_pkey', true), bt_index_check('pl_note', true);

-- the old way stays available: cubes (zorder.placement = off)
SET zorder.placement = off;
INSERT INTO pl SELECT g, (random() * 10000)::int, (random() * 1000)::int, 'cube'
FROM generate_series(70001, 70100) g;
CALL zorder.optimize('pl');
SELECT count(DISTINCT run) AS runs FROM zorder.sorted_runs WHERE "table" = 'pl'::regclass;
-- and the next call with placement places the cube's rows too
RESET zorder.placement;
CALL zorder.optimize('pl');
SELECT count(DISTINCT run) AS runs FROM zorder.sorted_runs WHERE "table" = 'pl'::regclass;
SELECT count(*) AS rows_outside_runs FROM pl_outside;
SELECT count(*) AS heap_problems FROM verify_heapam('pl');
SELECT bt_index_check('pl_pkey', true), bt_index_check('pl_note', true);

-- without reserved room (fillfactor 100) the first call splits the ranges
-- its rows go to, within the budget; later calls place into their room
ALTER TABLE pl SET (fillfactor = 100);
CALL zorder.optimize('pl', full => true);
INSERT INTO pl SELECT g, (random() * 10000)::int, (random() * 1000)::int, 'ff100'
FROM generate_series(60001, 60100) g;
CALL zorder.optimize('pl');
SELECT rows_moved >= 100 AS moved, rows_moved <= 4 * 100 + 2 * 4 * 8192 / 60 + 100 AS within_budget
FROM zorder.optimize_history
WHERE "table" = 'pl'::regclass ORDER BY started_at DESC LIMIT 1;
SELECT count(*) AS heap_problems FROM verify_heapam('pl');
SELECT bt_index_check('pl_pkey', true), bt_index_check('pl_note', true);

-- A range without room shares its neighbour's: the rows at the edge of
-- its keys move there, and nothing else.  After a full optimize a range's
-- rows lie in key order, so its last two rows hold its two highest keys;
-- copies of them fill more than its room.
CREATE TABLE sh (id int PRIMARY KEY, a int, b int, note text)
	WITH (fillfactor = 70, autovacuum_enabled = off);
INSERT INTO sh SELECT g, (random() * 10000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX sh_brin ON sh USING brin (a, b) WITH (pages_per_range = 4);
CREATE INDEX sh_note ON sh (note);
SELECT zorder.cluster_by('sh', 'a', 'b');
CALL zorder.optimize('sh');
VACUUM sh;
INSERT INTO sh VALUES (100000, 1, 1, 'one');
CALL zorder.optimize('sh');
VACUUM sh;
SELECT count(*) AS ranges_before FROM zorder.sorted_runs WHERE "table" = 'sh'::regclass \gset
CREATE TEMP VIEW sh_outside AS
SELECT * FROM sh WHERE NOT EXISTS (
	SELECT FROM zorder.sorted_runs r
	WHERE r."table" = 'sh'::regclass
	  AND (ctid::text::point)[0] >= r.first_block
	  AND (ctid::text::point)[0] < r.first_block + r.nblocks);
CREATE TEMP TABLE sh_top AS
SELECT a, b FROM sh WHERE (ctid::text::point)[0] BETWEEN 40 AND 43
ORDER BY (ctid::text::point)[0] DESC, (ctid::text::point)[1] DESC LIMIT 2;
INSERT INTO sh SELECT 300000 + row_number() OVER (), t.a, t.b, md5(g::text)
FROM sh_top t, generate_series(1, 80) g;
CREATE TABLE sh_before AS SELECT * FROM sh;
CALL zorder.optimize('sh');
SELECT rows_moved - 160 AS old_rows_moved FROM zorder.optimize_history
WHERE "table" = 'sh'::regclass ORDER BY started_at DESC LIMIT 1;
SELECT count(*) - :ranges_before AS ranges_added
FROM zorder.sorted_runs WHERE "table" = 'sh'::regclass;
-- the new rows are on the range and on the next one
SELECT array_agg(DISTINCT (ctid::text::point)[0]::int / 4 * 4) AS ranges
FROM sh WHERE id > 300000;
SELECT count(*) AS rows_outside_runs FROM sh_outside;
SELECT count(*) AS missing FROM (SELECT * FROM sh_before EXCEPT ALL SELECT * FROM sh) d;
SELECT count(*) AS extra FROM (SELECT * FROM sh EXCEPT ALL SELECT * FROM sh_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('sh');
SELECT bt_index_check('sh_pkey', true), bt_index_check('sh_note', true);

-- A range whose neighbours have no room for its new rows splits in two:
-- its upper part goes to a new range, the rest stays.  200 copies of one
-- key fit neither the range nor a neighbour.
VACUUM sh;
CREATE TEMP TABLE sh_top2 AS
SELECT a, b FROM sh WHERE (ctid::text::point)[0] BETWEEN 80 AND 83
ORDER BY (ctid::text::point)[0] DESC, (ctid::text::point)[1] DESC LIMIT 1;
SELECT count(*) AS rows_in_range FROM sh WHERE (ctid::text::point)[0] BETWEEN 80 AND 83 \gset
INSERT INTO sh SELECT 400000 + g, t.a, t.b, md5(g::text)
FROM sh_top2 t, generate_series(1, 200) g;
DROP TABLE sh_before;
CREATE TABLE sh_before AS SELECT * FROM sh;
CALL zorder.optimize('sh');
SELECT rows_moved - 200 BETWEEN 1 AND :rows_in_range / 2 AS at_most_half_the_range_moved
FROM zorder.optimize_history
WHERE "table" = 'sh'::regclass ORDER BY started_at DESC LIMIT 1;
SELECT count(*) - :ranges_before AS ranges_added
FROM zorder.sorted_runs WHERE "table" = 'sh'::regclass;
-- (how many stay depends on the range's tilt: see zp_split_tilt)
SELECT count(*) BETWEEN 1 AND :rows_in_range AS the_rest_stays FROM sh
WHERE (ctid::text::point)[0] BETWEEN 80 AND 83;
SELECT count(DISTINCT (ctid::text::point)[0]::int / 4) AS ranges_of_new_rows
FROM sh WHERE id > 400000;
SELECT count(*) AS rows_outside_runs FROM sh_outside;
SELECT count(*) AS missing FROM (SELECT * FROM sh_before EXCEPT ALL SELECT * FROM sh) d;
SELECT count(*) AS extra FROM (SELECT * FROM sh EXCEPT ALL SELECT * FROM sh_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('sh');
SELECT bt_index_check('sh_pkey', true), bt_index_check('sh_note', true);
DROP TABLE sh, sh_before CASCADE;

-- Without reserved room every range a new row goes to splits, and the
-- budget leaves some new rows where they are; those on a range the call
-- wrote into are listed as misplaced (zorder.layouts.misplaced) for the
-- next call, not taken for rows of that range: each range's rows, by the
-- catalog, are the rows on its pages older than it, less those listed.
CREATE TABLE lo (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO lo SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 10009, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX lo_brin ON lo USING brin (a, b) WITH (pages_per_range = 4);
-- the owner's fillfactor: no room, so that the first call splits past its
-- budget (zorder leaves a fillfactor set by the owner alone)
ALTER TABLE lo SET (fillfactor = 100);
SELECT zorder.cluster_by('lo', 'a', 'b');
CALL zorder.optimize('lo');
VACUUM lo;
INSERT INTO lo SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 10009, md5(g::text)
FROM generate_series(20001, 21000) g;
CREATE TABLE lo_before AS SELECT * FROM lo;
CREATE TEMP VIEW lo_strangers AS
SELECT count(*) AS ranges_counting_strangers FROM (
	SELECT r.first_block
	FROM zorder.runs r
	JOIN lo ON (lo.ctid::text::point)[0] >= r.first_block
		   AND (lo.ctid::text::point)[0] < r.first_block + r.nblocks
		   AND lo.xmin::text::bigint <= r.created_xid::text::bigint
	WHERE r.relid = 'lo'::regclass
	  AND lo.ctid <> ALL (coalesce((SELECT misplaced FROM zorder.layouts
									WHERE relid = 'lo'::regclass), '{}'))
	GROUP BY r.first_block, r.rows HAVING r.rows <> count(*)) x;
-- seven calls, each followed by VACUUM and the check; the first one's
-- budget leaves rows listed
CALL zorder.optimize('lo');
VACUUM lo;
SELECT * FROM lo_strangers;
SELECT array_length(misplaced, 1) > 0 AS some_listed
FROM zorder.layouts WHERE relid = 'lo'::regclass;
SELECT q FROM generate_series(2, 7) c,
	unnest(ARRAY['CALL zorder.optimize(''lo'')', 'VACUUM lo',
				 'SELECT * FROM lo_strangers']) WITH ORDINALITY AS s(q, o)
ORDER BY c, o \gexec
SELECT count(*) AS missing FROM (SELECT * FROM lo_before EXCEPT ALL SELECT * FROM lo) d;
SELECT count(*) AS extra FROM (SELECT * FROM lo EXCEPT ALL SELECT * FROM lo_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('lo');
SELECT bt_index_check('lo_pkey', true);
DROP TABLE lo, lo_before CASCADE;

-- Ranges that new rows fill at one pace would all split in one call, more
-- than its budget moves.  Each round here copies every sixteenth row, so
-- every range gets its sixteenth of a quarter's room: the third round
-- finds the room left too small for a fourth and splits ranges ahead of
-- need, no more than a call may move, and no round leaves a new row
-- outside the ranges.
CREATE TABLE ah (id int PRIMARY KEY, a int, b int, pad text)
	WITH (fillfactor = 80, autovacuum_enabled = off);
INSERT INTO ah SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 1009, md5(g::text)
FROM generate_series(1, 8000) g;
CREATE INDEX ah_brin ON ah USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('ah', 'a', 'b');
CALL zorder.optimize('ah');
VACUUM ah;
CREATE TEMP VIEW ah_outside AS
SELECT * FROM ah WHERE NOT EXISTS (
	SELECT FROM zorder.sorted_runs r
	WHERE r."table" = 'ah'::regclass
	  AND (ah.ctid::text::point)[0] >= r.first_block
	  AND (ah.ctid::text::point)[0] < r.first_block + r.nblocks);
CREATE TEMP TABLE ah_log (round int, arrived bigint, moved bigint,
						  outside bigint, ranges bigint);
INSERT INTO ah_log SELECT 0, 0, 0, 0, count(*)
FROM zorder.sorted_runs WHERE "table" = 'ah'::regclass;
SELECT q FROM generate_series(1, 8) r, unnest(ARRAY[
	format('INSERT INTO ah SELECT 100000 * %s + id, a, b, md5(id::text) FROM ah
			WHERE id <= 8000 AND id %% 16 = %s', r, r),
	'CALL zorder.optimize(''ah'')',
	format('INSERT INTO ah_log SELECT %s, 500,
			(SELECT rows_moved FROM zorder.optimize_history
			 WHERE "table" = ''ah''::regclass ORDER BY started_at DESC LIMIT 1),
			(SELECT count(*) FROM ah_outside),
			(SELECT count(*) FROM zorder.sorted_runs WHERE "table" = ''ah''::regclass)', r),
	'VACUUM ah']) WITH ORDINALITY AS s(q, o) ORDER BY r, o \gexec
-- (five times what arrived, and the bounded constant: two ranges' rows)
SELECT bool_and(moved <= 5 * arrived + 2 * 8000 / 24) AS within_budget,
	   bool_and(outside = 0) AS none_outside,
	   (SELECT ranges FROM ah_log WHERE round = 3) >
	   (SELECT ranges FROM ah_log WHERE round = 2) AS split_ahead_in_round_3
FROM ah_log WHERE round > 0;
SELECT count(*) AS rows_now, count(*) FILTER (WHERE id > 100000) AS copies
FROM ah;
SELECT count(*) AS wrong_copies FROM ah c JOIN ah o ON o.id = c.id % 100000
WHERE c.id > 100000 AND (c.a, c.b, c.pad) IS DISTINCT FROM (o.a, o.b, md5(o.id::text));
SELECT count(*) AS heap_problems FROM verify_heapam('ah');
SELECT bt_index_check('ah_pkey', true);
DROP TABLE ah CASCADE;

-- Time-ordered keys: new rows whose t lies beyond every value the table
-- had.  The first call finds most of its new rows beyond the highest t,
-- and opens a region for the rows beyond it before it places them: they
-- go there, after every other key, in bands of b, each band's rows in the
-- order of t, so that later rows go to the end of their band and nothing
-- else moves.
CREATE TABLE tm (id int PRIMARY KEY, t timestamp, b int, note text)
	WITH (fillfactor = 75, autovacuum_enabled = off);
INSERT INTO tm SELECT g, '2026-01-01'::timestamp + g * interval '1 minute',
	(random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX tm_brin ON tm USING brin (t, b) WITH (pages_per_range = 4);
CREATE INDEX tm_note ON tm (note);
SELECT zorder.cluster_by('tm', 't', 'b');
CALL zorder.optimize('tm');
VACUUM tm;
-- the full optimize knows the highest t and b; no region yet
SELECT key_tops[1] = (extract(epoch FROM max(t) - '2000-01-01') * 1000000)::bigint
	   AS top_is_highest_t, region_keys
FROM zorder.layouts, tm WHERE relid = 'tm'::regclass GROUP BY key_tops, region_keys;
CREATE PROCEDURE tm_round(r int) LANGUAGE sql AS $$
	INSERT INTO tm SELECT g, '2026-01-01'::timestamp + g * interval '1 minute',
		(random() * 1000)::int, md5(g::text)
	FROM generate_series(20001 + (r - 1) * 500, 20000 + r * 500) g;
$$;
SELECT max(t) AS t_top FROM tm \gset
CALL tm_round(1);
CREATE TABLE tm_before AS SELECT * FROM tm;
CALL zorder.optimize('tm');
VACUUM tm;
-- a region for t, starting at the highest t before the new rows, which
-- moved once each
SELECT region_keys,
	   region_starts[1] = (extract(epoch FROM :'t_top'::timestamp - '2000-01-01') * 1000000)::bigint
	   AS starts_at_highest_t
FROM zorder.layouts WHERE relid = 'tm'::regclass;
SELECT rows_moved FROM zorder.optimize_history
WHERE "table" = 'tm'::regclass ORDER BY started_at DESC LIMIT 1;
-- the first round's rows went alone into new ranges (a range per band),
-- the next rounds' go to the end of their band: each moves once, no row
-- before them moves
SELECT q FROM generate_series(2, 20) r,
	unnest(ARRAY[format('CALL tm_round(%s)', r), 'INSERT INTO tm_before SELECT * FROM tm WHERE id > (SELECT max(id) FROM tm_before)',
				 'CALL zorder.optimize(''tm'')', 'VACUUM tm']) WITH ORDINALITY AS s(q, o)
ORDER BY r, o \gexec
SELECT sum(rows_moved) <= 1.05 * 19 * 500 AS each_moved_once,
	   max(rows_moved) <= 5 * 500 AS no_call_moves_much
FROM (SELECT rows_moved FROM zorder.optimize_history
	  WHERE "table" = 'tm'::regclass ORDER BY started_at DESC LIMIT 19) h;
-- still one region: the table has not grown enough for more bands
SELECT region_keys, cardinality(region_bands) AS regions
FROM zorder.layouts WHERE relid = 'tm'::regclass;
SELECT count(*) AS missing FROM (SELECT * FROM tm_before EXCEPT ALL SELECT * FROM tm) d;
SELECT count(*) AS extra FROM (SELECT * FROM tm EXCEPT ALL SELECT * FROM tm_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('tm');
SELECT bt_index_check('tm_pkey', true), bt_index_check('tm_note', true);
-- every row on a range of the main run
SELECT count(*) AS rows_outside_runs FROM tm WHERE NOT EXISTS (
	SELECT FROM zorder.sorted_runs r
	WHERE (ctid::text::point)[0] >= r.first_block
	  AND (ctid::text::point)[0] < r.first_block + r.nblocks);
-- every row on a range of the region its t gives (the range's keys start
-- in it): the first region shifted the old ranges' keys into region 0, no
-- range spans two regions, and every region has ranges
WITH r AS (
	SELECT first_block, nblocks,
		   floor((key_lo::numeric + 9223372036854775808) / 72057594037927936)::int AS region
	FROM zorder.runs WHERE relid = 'tm'::regclass AND run = 0),
s AS (SELECT region_starts FROM zorder.layouts WHERE relid = 'tm'::regclass)
SELECT count(*) FILTER (WHERE r.region <> (
			SELECT count(*) FROM unnest(s.region_starts) st
			WHERE (extract(epoch FROM tm.t - '2000-01-01') * 1000000)::bigint > st))
		   AS rows_on_another_regions_range,
	   count(DISTINCT r.region) = cardinality(s.region_starts) + 1 AS every_region_has_ranges
FROM tm, r, s
WHERE (tm.ctid::text::point)[0] >= r.first_block
  AND (tm.ctid::text::point)[0] < r.first_block + r.nblocks
GROUP BY s.region_starts;
-- skipping on both columns within 1.2 of a fresh full optimize's
DROP TABLE IF EXISTS tm_fresh;
CREATE TABLE tm_fresh WITH (fillfactor = 75) AS SELECT * FROM tm;
CREATE INDEX tm_fresh_brin ON tm_fresh USING brin (t, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('tm_fresh', 't', 'b');
CALL zorder.optimize('tm_fresh');
SELECT i.column_name, i.mean_ranges_touched / f.mean_ranges_touched < 1.2 AS within_1_2_of_fresh
FROM zorder.clustering_information('tm', probes => 0) i
JOIN zorder.clustering_information('tm_fresh', probes => 0) f USING (key_position)
ORDER BY i.key_position;
-- the table is no larger than a fresh full optimize at the same fillfactor
SELECT pg_relation_size('tm') <= 1.1 * pg_relation_size('tm_fresh') AS size_as_fresh;
-- a full optimize takes fresh boundaries, and the regions go
CALL zorder.optimize('tm', full => true);
SELECT region_keys, region_starts, region_bands
FROM zorder.layouts WHERE relid = 'tm'::regclass;
DROP TABLE tm, tm_before, tm_fresh CASCADE;

-- A table that grows enough for a region to get twice the bands (fourfold
-- and more, here) gets the next region beyond the highest t, with more
-- bands; each starts higher.
CREATE TABLE tn (id int PRIMARY KEY, t timestamp, b int, note text)
	WITH (fillfactor = 75, autovacuum_enabled = off);
INSERT INTO tn SELECT g, '2026-01-01'::timestamp + g * interval '1 minute',
	(random() * 1000)::int, md5(g::text)
FROM generate_series(1, 1000) g;
CREATE INDEX tn_brin ON tn USING brin (t, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('tn', 't', 'b');
CALL zorder.optimize('tn');
VACUUM tn;
CREATE TABLE tn_before AS SELECT * FROM tn;
SELECT q FROM generate_series(1, 30) r,
	unnest(ARRAY[format('INSERT INTO tn SELECT g, ''2026-01-01''::timestamp + g * interval ''1 minute'',
		(random() * 1000)::int, md5(g::text) FROM generate_series(%s, %s) g', 1001 + (r - 1) * 200, 1000 + r * 200),
				 'CALL zorder.optimize(''tn'')', 'VACUUM tn']) WITH ORDINALITY AS s(q, o)
ORDER BY r, o \gexec
INSERT INTO tn_before SELECT * FROM tn WHERE id > 1000;
SELECT cardinality(region_keys) > 1 AS several_regions,
	   region_keys[1] = ALL (region_keys) AS all_on_t,
	   region_bands[1] < region_bands[cardinality(region_bands)] AS more_bands,
	   (SELECT bool_and(s > lag) FROM (
			SELECT s, lag(s) OVER (ORDER BY o) FROM unnest(region_starts) WITH ORDINALITY u(s, o)) x
		WHERE lag IS NOT NULL) AS rising
FROM zorder.layouts WHERE relid = 'tn'::regclass;
SELECT count(*) AS missing FROM (SELECT * FROM tn_before EXCEPT ALL SELECT * FROM tn) d;
SELECT count(*) AS extra FROM (SELECT * FROM tn EXCEPT ALL SELECT * FROM tn_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('tn');
SELECT bt_index_check('tn_pkey', true);
DROP TABLE tn, tn_before CASCADE;

-- Calls that bring few rows each: a region gets no more bands than its
-- first call brings rows per BRIN range's pages, so that each band's first
-- range spans its BRIN range and later rows fill it; with a band for every
-- few rows, each band's ranges would end after a page or two and leave the
-- rest of their BRIN ranges empty.  The table stays about the size of a
-- fresh copy.
CREATE TABLE tf (id int PRIMARY KEY, t int, b int, pad text)
	WITH (fillfactor = 100, autovacuum_enabled = off);
INSERT INTO tf SELECT g, g, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 50000) g;
CREATE INDEX tf_brin ON tf USING brin (t, b) WITH (pages_per_range = 32);
SELECT zorder.cluster_by('tf', 't', 'b');
CALL zorder.optimize('tf');
VACUUM tf;
SELECT q FROM generate_series(1, 40) r,
	unnest(ARRAY[format('INSERT INTO tf SELECT g, g, (random() * 1000)::int, md5(g::text)
		FROM generate_series(%s, %s) g', 50001 + (r - 1) * 40, 50000 + r * 40),
				 'CALL zorder.optimize(''tf'')', 'VACUUM tf']) WITH ORDINALITY AS s(q, o)
ORDER BY r, o \gexec
CREATE TABLE tf_fresh AS SELECT * FROM tf;
SELECT region_bands[1] <= 40 / 32 AS a_row_per_page,
	   pg_relation_size('tf') <= 1.15 * pg_relation_size('tf_fresh') AS size_as_fresh
FROM zorder.layouts WHERE relid = 'tf'::regclass;
SELECT count(*) AS heap_problems FROM verify_heapam('tf');
DROP TABLE tf, tf_fresh;
DROP PROCEDURE tm_round(int);

RESET zorder.band_regions;
-- New rows crowded into a narrow band of values inside the layout's (a hot
-- product): the first call that finds most of its new rows in a band whose
-- buckets hold a small share of the table opens a region for the band, and
-- the rows laid out before with its values move there with the new ones;
-- the band's rows are then in bands of b, each in the order of a, so that a
-- filter on a value of the band reads a range or two per band of b rather
-- than every range of the band's slab.
CREATE TABLE hb (id int PRIMARY KEY, a int, b int, note text)
	WITH (fillfactor = 75, autovacuum_enabled = off);
INSERT INTO hb SELECT g, (g::bigint * 7919) % 1000000, (g::bigint * 104729) % 1000, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX hb_brin ON hb USING brin (a, b) WITH (pages_per_range = 4);
CREATE INDEX hb_note ON hb (note);
SELECT zorder.cluster_by('hb', 'a', 'b');
CALL zorder.optimize('hb');
VACUUM hb;
CREATE PROCEDURE hb_round(r int) LANGUAGE sql AS $$
	INSERT INTO hb SELECT g, 500000 + (g::bigint * 7919) % 1000, (g::bigint * 104729) % 1000, md5(g::text)
	FROM generate_series(20001 + (r - 1) * 500, 20000 + r * 500) g;
$$;
SELECT count(*) AS laid_out_in_band FROM hb WHERE a BETWEEN 500000 AND 500999 \gset
CALL hb_round(1);
CREATE TABLE hb_before AS SELECT * FROM hb;
CALL zorder.optimize('hb');
VACUUM hb;
-- a region for a, holding the band (its start below, its end above), which
-- the new rows and those laid out before in the band moved to, once each
SELECT region_keys, region_starts[1] < region_ends[1] AS a_band,
	   region_ends[1] - region_starts[1] < 2000 AS narrow,
	   misplaced IS NULL AS none_left
FROM zorder.layouts WHERE relid = 'hb'::regclass;
SELECT rows_moved BETWEEN 500 + :laid_out_in_band AND 600 AS new_and_laid_out_moved
FROM zorder.optimize_history
WHERE "table" = 'hb'::regclass ORDER BY started_at DESC LIMIT 1;
SELECT q FROM generate_series(2, 20) r,
	unnest(ARRAY[format('CALL hb_round(%s)', r), 'INSERT INTO hb_before SELECT * FROM hb WHERE id > (SELECT max(id) FROM hb_before)',
				 'CALL zorder.optimize(''hb'')', 'VACUUM hb']) WITH ORDINALITY AS s(q, o)
ORDER BY r, o \gexec
-- the band's ranges fill alike, and split within the calls' budgets: a
-- call after one whose budget ran out places the rows that waited too
SELECT sum(rows_moved) <= 4 * 19 * 500 AS at_most_4_moves_a_row,
	   max(rows_moved) <= 2 * 5 * 500 AS no_call_moves_much
FROM (SELECT rows_moved FROM zorder.optimize_history
	  WHERE "table" = 'hb'::regclass ORDER BY started_at DESC LIMIT 19) h;
SELECT cardinality(region_keys) AS regions FROM zorder.layouts WHERE relid = 'hb'::regclass;
SELECT count(*) AS missing FROM (SELECT * FROM hb_before EXCEPT ALL SELECT * FROM hb) d;
SELECT count(*) AS extra FROM (SELECT * FROM hb EXCEPT ALL SELECT * FROM hb_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('hb');
SELECT bt_index_check('hb_pkey', true), bt_index_check('hb_note', true);
-- every row on a range of its region: those of the band on the band's
WITH r AS (
	SELECT first_block, nblocks,
		   floor((key_lo::numeric + 9223372036854775808) / 72057594037927936)::int AS region
	FROM zorder.runs WHERE relid = 'hb'::regclass AND run = 0),
s AS (SELECT region_starts[1] + 9223372034707292160 AS lo,
			 region_ends[1] + 9223372034707292160 AS hi
	  FROM zorder.layouts WHERE relid = 'hb'::regclass)
SELECT count(*) FILTER (WHERE r.region <> CASE WHEN hb.a > s.lo AND hb.a <= s.hi THEN 1 ELSE 0 END)
		   AS rows_on_another_regions_range,
	   count(*) AS rows_on_ranges
FROM hb, r, s
WHERE (hb.ctid::text::point)[0] >= r.first_block
  AND (hb.ctid::text::point)[0] < r.first_block + r.nblocks;
-- skipping on both columns within 1.2 of a fresh full optimize's
CREATE TABLE hb_fresh WITH (fillfactor = 75) AS SELECT * FROM hb;
CREATE INDEX hb_fresh_brin ON hb_fresh USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('hb_fresh', 'a', 'b');
CALL zorder.optimize('hb_fresh');
SELECT i.column_name, i.mean_ranges_touched / f.mean_ranges_touched < 1.2 AS within_1_2_of_fresh
FROM zorder.clustering_information('hb', probes => 0) i
JOIN zorder.clustering_information('hb_fresh', probes => 0) f USING (key_position)
ORDER BY i.key_position;
DROP TABLE hb, hb_before, hb_fresh CASCADE;
DROP PROCEDURE hb_round(int);

-- Bands on two columns: the rows of the first band whose b lies in the
-- second band stay in the first band's region (a later band takes no row
-- an earlier one holds), and every row is on a range of its region.
CREATE TABLE xb (id int PRIMARY KEY, a int, b int, note text)
	WITH (fillfactor = 75, autovacuum_enabled = off);
INSERT INTO xb SELECT g, (g::bigint * 7919) % 1000000, (g::bigint * 104729) % 1000000, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX xb_brin ON xb USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('xb', 'a', 'b');
CALL zorder.optimize('xb');
VACUUM xb;
-- a band of a, half of whose rows have b in 300000 to 300999
INSERT INTO xb SELECT g, 500000 + (g::bigint * 7919) % 1000,
	CASE WHEN g % 2 = 0 THEN 300000 + (g::bigint * 31) % 1000 ELSE (g::bigint * 104729) % 1000000 END,
	md5(g::text)
FROM generate_series(20001, 20500) g;
CALL zorder.optimize('xb');
VACUUM xb;
-- then a band of b there, a outside the band of a
INSERT INTO xb SELECT g, (g::bigint * 7919) % 400000, 300000 + (g::bigint * 37) % 1000, md5(g::text)
FROM generate_series(20501, 21000) g;
CREATE TABLE xb_before AS SELECT * FROM xb;
CALL zorder.optimize('xb');
VACUUM xb;
SELECT region_keys, misplaced IS NULL AS none_left
FROM zorder.layouts WHERE relid = 'xb'::regclass;
WITH l AS (SELECT region_keys k, region_starts s, region_ends e
		   FROM zorder.layouts WHERE relid = 'xb'::regclass),
r AS (SELECT first_block, nblocks,
			 floor((key_lo::numeric + 9223372036854775808) / 72057594037927936)::int AS region
	  FROM zorder.runs WHERE relid = 'xb'::regclass AND run = 0),
x AS (SELECT xb.ctid AS tid, (
		SELECT min(i) FROM l, generate_subscripts(l.k, 1) i
		WHERE (CASE l.k[i] WHEN 1 THEN xb.a ELSE xb.b END) > l.s[i] + 9223372034707292160
		  AND (CASE l.k[i] WHEN 1 THEN xb.a ELSE xb.b END) <= l.e[i] + 9223372034707292160) AS region
	  FROM xb)
SELECT coalesce(x.region, 0) AS region, count(*) > 0 AS has_rows,
	   count(*) FILTER (WHERE r.region <> coalesce(x.region, 0)) AS on_another_regions_range
FROM x JOIN r ON (x.tid::text::point)[0] >= r.first_block
			 AND (x.tid::text::point)[0] < r.first_block + r.nblocks
GROUP BY 1 ORDER BY 1;
SELECT count(*) AS missing FROM (SELECT * FROM xb_before EXCEPT ALL SELECT * FROM xb) d;
SELECT count(*) AS extra FROM (SELECT * FROM xb EXCEPT ALL SELECT * FROM xb_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('xb');
SELECT bt_index_check('xb_pkey', true);
-- the ranges count the rows they hold
SELECT sum(rows) = (SELECT count(*) FROM xb) AS rows_counted
FROM zorder.runs WHERE relid = 'xb'::regclass;
-- with zorder.band_regions off, a new band opens no region
SET zorder.band_regions = off;
INSERT INTO xb SELECT g, 800000 + (g::bigint * 7919) % 1000, (g::bigint * 104729) % 1000000, md5(g::text)
FROM generate_series(21001, 21500) g;
CALL zorder.optimize('xb');
SELECT cardinality(region_keys) AS regions FROM zorder.layouts WHERE relid = 'xb'::regclass;
RESET zorder.band_regions;
DROP TABLE xb, xb_before;

DROP TABLE pl, pl_before, pl_fresh CASCADE;
DROP FUNCTION pl_skipping();
