-- The quantile boundaries a layout stores read back the same whatever the
-- session's settings, and an incremental call does not place rows with
-- boundaries of a key column's old type or collation: it takes new ones
-- from a sample, as after a key change.
SET search_path = public, zorder;
SET zorder.merge_threshold = 1;
-- cubes: placement into the main run's ranges is tested in incremental_placement.sql
SET zorder.placement = off;
SET DateStyle = 'ISO, MDY';

-- Header of a stored boundary array (see quantile.c): type, typmod,
-- collation, form ('b': binary) and count.
CREATE FUNCTION pg_temp.bounds_header(b bytea,
	OUT typ regtype, OUT typmod int, OUT coll oid, OUT form text, OUT n int)
LANGUAGE sql AS $$
SELECT ((get_byte(b, 4)::bigint << 24) | (get_byte(b, 5) << 16) | (get_byte(b, 6) << 8) | get_byte(b, 7))::oid::regtype,
	   (get_byte(b, 8) << 24) | (get_byte(b, 9) << 16) | (get_byte(b, 10) << 8) | get_byte(b, 11),
	   ((get_byte(b, 12)::bigint << 24) | (get_byte(b, 13) << 16) | (get_byte(b, 14) << 8) | get_byte(b, 15))::oid,
	   chr(get_byte(b, 16)),
	   (get_byte(b, 17) << 24) | (get_byte(b, 18) << 16) | (get_byte(b, 19) << 8) | get_byte(b, 20)
$$;

-- Two identical tables with a date key, one laid out under DateStyle
-- 'SQL, DMY' (a date then reads 13/01/2024), the other under ISO.  Fewer
-- rows than a sample takes: both get the same boundaries and order.
CREATE TABLE dmy (id int PRIMARY KEY, d date, n int);
INSERT INTO dmy SELECT g, date '2023-01-01' + ((g::bigint * 7919) % 1096)::int, g % 97
FROM generate_series(1, 20000) g;
CREATE TABLE iso (LIKE dmy INCLUDING INDEXES);
INSERT INTO iso SELECT * FROM dmy;
SELECT zorder.cluster_by('dmy', 'd', 'n'), zorder.cluster_by('iso', 'd', 'n');
SET DateStyle = 'SQL, DMY';
CALL zorder.optimize('dmy', full => true);
RESET DateStyle;
SET DateStyle = 'ISO, MDY';
CALL zorder.optimize('iso', full => true);
-- the same boundaries, stored alike
SELECT a.bounds = b.bounds AS same_bounds, (pg_temp.bounds_header(a.bounds[1])).*
FROM zorder.layouts a, zorder.layouts b
WHERE a.relid = 'dmy'::regclass AND b.relid = 'iso'::regclass;

-- newcomers, with days of the month above and below 12; the incremental
-- call from an ISO session reads the boundaries written under DMY
INSERT INTO dmy SELECT g, date '2023-01-01' + ((g::bigint * 104729) % 1096)::int, g % 97
FROM generate_series(20001, 21000) g;
INSERT INTO iso SELECT * FROM dmy WHERE id > 20000;
CREATE TABLE dmy_before AS SELECT * FROM dmy;
CALL zorder.optimize('dmy');
CALL zorder.optimize('iso');
SELECT mode, rows_moved FROM zorder.optimize_history
WHERE "table" = 'dmy'::regclass ORDER BY started_at DESC LIMIT 1;
-- every row went where the ISO-laid-out twin put it
SELECT count(*) AS misplaced FROM dmy JOIN iso USING (id) WHERE dmy.ctid <> iso.ctid;
SELECT count(*) AS missing FROM (SELECT * FROM dmy_before EXCEPT ALL SELECT * FROM dmy) d;
SELECT count(*) AS heap_problems FROM verify_heapam('dmy');
SELECT bt_index_check('dmy_pkey', true);
-- and from a session with yet another DateStyle
SET DateStyle = 'German';
INSERT INTO dmy SELECT g, date '2023-01-01' + (g * 7) % 1096, g % 97
FROM generate_series(21001, 21500) g;
CALL zorder.optimize('dmy');
RESET DateStyle;
SET DateStyle = 'ISO, MDY';
SELECT count(*) AS outside_runs FROM dmy WHERE NOT EXISTS (
  SELECT FROM zorder.sorted_runs r
  WHERE r."table" = 'dmy'::regclass
    AND (ctid::text::point)[0] >= r.first_block
    AND (ctid::text::point)[0] < r.first_block + r.nblocks);

-- ALTER COLUMN ... TYPE of a key: the boundaries were numeric, the column
-- is now an integer.  The next incremental call takes integer boundaries
-- from a sample (as after a key change); old runs stay as they are.
CREATE TABLE retyped (id int PRIMARY KEY, k numeric, n int);
INSERT INTO retyped SELECT g, ((g::bigint * 7919) % 10007) / 4.0, g % 89
FROM generate_series(1, 20000) g;
SELECT zorder.cluster_by('retyped', 'k', 'n');
CALL zorder.optimize('retyped', full => true);
ALTER TABLE retyped ALTER COLUMN k TYPE int USING round(k);
INSERT INTO retyped SELECT g, (g::bigint * 104729) % 2500, g % 89
FROM generate_series(20001, 21000) g;
CREATE TABLE retyped_before AS SELECT * FROM retyped;
CALL zorder.optimize('retyped');
SELECT (pg_temp.bounds_header(bounds[1])).typ AS k_bounds_type,
	   (pg_temp.bounds_header(bounds[2])).typ AS n_bounds_type
FROM zorder.layouts WHERE relid = 'retyped'::regclass;
SELECT count(*) AS missing FROM (SELECT * FROM retyped_before EXCEPT ALL SELECT * FROM retyped) d;
SELECT count(*) AS added FROM (SELECT * FROM retyped EXCEPT ALL SELECT * FROM retyped_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('retyped');
SELECT bt_index_check('retyped_pkey', true);
-- the boundaries of k are 4-byte integers, ascending, within k's range
SELECT bool_and(len = 4) AS all_int4, bool_and(v >= prev) AS ascending,
	   min(v) >= 0 AND max(v) <= 2502 AS in_range
FROM (SELECT len, v, lag(v) OVER (ORDER BY i) AS prev
	  FROM zorder.layouts l,
		   LATERAL (SELECT bounds[1] AS b) b,
		   LATERAL generate_series(0, (pg_temp.bounds_header(b.b)).n - 1) i,
		   LATERAL (SELECT (get_byte(b.b, 21 + i * 8) << 24) | (get_byte(b.b, 22 + i * 8) << 16) |
						   (get_byte(b.b, 23 + i * 8) << 8) | get_byte(b.b, 24 + i * 8) AS len,
						   (get_byte(b.b, 25 + i * 8) << 24) | (get_byte(b.b, 26 + i * 8) << 16) |
						   (get_byte(b.b, 27 + i * 8) << 8) | get_byte(b.b, 28 + i * 8) AS v) x
	  WHERE l.relid = 'retyped'::regclass) s;
-- ALTER ... TYPE rewrote the table, so its runs were of a file that is
-- gone: the call laid it out again in full, as one run that holds every
-- row and nothing else, and no extents that overlap.
SELECT count(DISTINCT run) AS runs, sum(rows) AS rows_in_runs
FROM zorder.sorted_runs WHERE "table" = 'retyped'::regclass;
SELECT count(*) AS outside_runs FROM retyped WHERE NOT EXISTS (
  SELECT FROM zorder.sorted_runs r
  WHERE r."table" = 'retyped'::regclass
    AND (ctid::text::point)[0] >= r.first_block
    AND (ctid::text::point)[0] < r.first_block + r.nblocks);
SELECT count(*) AS extents_off FROM zorder.sorted_runs r
WHERE r."table" = 'retyped'::regclass
  AND r.rows <> (SELECT count(*) FROM retyped
				 WHERE (ctid::text::point)[0] >= r.first_block
				   AND (ctid::text::point)[0] < r.first_block + r.nblocks);
SELECT count(*) AS overlaps FROM zorder.sorted_runs a, zorder.sorted_runs b
WHERE a."table" = 'retyped'::regclass AND b."table" = 'retyped'::regclass
  AND a.first_block < b.first_block
  AND a.first_block + a.nblocks > b.first_block;

-- A key's collation changes: new boundaries in the new order.
CREATE TABLE recollated (id int PRIMARY KEY, w text COLLATE "und-x-icu", n int);
INSERT INTO recollated
SELECT g, chr(65 + (g % 26)) || chr(97 + (g * 7 % 26)) || g, g % 50 FROM generate_series(1, 5000) g;
SELECT zorder.cluster_by('recollated', 'w', 'n');
CALL zorder.optimize('recollated', full => true);
SELECT (pg_temp.bounds_header(bounds[1])).coll = (SELECT oid FROM pg_collation WHERE collname = 'und-x-icu') AS icu_bounds
FROM zorder.layouts WHERE relid = 'recollated'::regclass;
ALTER TABLE recollated ALTER COLUMN w TYPE text COLLATE "C";
INSERT INTO recollated SELECT g, lower(chr(65 + (g % 26))) || g, g % 50 FROM generate_series(5001, 5500) g;
CALL zorder.optimize('recollated');
SELECT (pg_temp.bounds_header(bounds[1])).coll = '"C"'::regcollation::oid AS c_bounds
FROM zorder.layouts WHERE relid = 'recollated'::regclass;
SELECT count(*) AS heap_problems FROM verify_heapam('recollated');

-- A set's collation dropped since it was sampled: the set no longer fits,
-- said plainly by layout_key and by the optimize that checks the heap
-- against it, which lays the table out anew; no lookup of a missing
-- collation fails the call.
CREATE COLLATION zb_coll FROM "C";
CREATE TABLE uncollated (id int PRIMARY KEY, w text COLLATE zb_coll, n int);
INSERT INTO uncollated SELECT g, md5(g::text), g % 50 FROM generate_series(1, 3000) g;
CREATE TABLE uncollated_before AS SELECT id, w COLLATE "C" AS w, n FROM uncollated;
SELECT zorder.cluster_by('uncollated', 'w', 'n');
-- (set ids numbered from 500 here, for the messages that name them)
SELECT setval('zorder.boundary_sets_id_seq', 500, false) IS NOT NULL AS numbered;
SELECT boundary_set AS uncollated_set FROM zorder.prepare_layout('uncollated') \gset
SELECT zorder.layout_key(:uncollated_set, 'abc'::text, 1) IS NOT NULL AS key_before;
ALTER TABLE uncollated ALTER COLUMN w TYPE text COLLATE "C";
DROP COLLATION zb_coll;
SELECT zorder.layout_key(:uncollated_set, 'abc'::text, 1);
CALL zorder.optimize('uncollated');
SELECT mode FROM zorder.optimize_history WHERE "table" = 'uncollated'::regclass;
SELECT count(*) AS differ FROM
	((SELECT * FROM uncollated EXCEPT ALL SELECT * FROM uncollated_before)
	 UNION ALL (SELECT * FROM uncollated_before EXCEPT ALL SELECT * FROM uncollated)) d;
SELECT count(*) AS heap_problems FROM verify_heapam('uncollated');
SELECT bt_index_check('uncollated_pkey', true);
DROP TABLE uncollated, uncollated_before;

-- stored boundaries that do not parse: a clear error, nothing moved
CREATE TABLE broken (id int PRIMARY KEY, a int, b int);
INSERT INTO broken SELECT g, g % 100, g % 37 FROM generate_series(1, 2000) g;
SELECT zorder.cluster_by('broken', 'a', 'b');
CALL zorder.optimize('broken', full => true);
INSERT INTO broken SELECT g, g % 100, g % 37 FROM generate_series(2001, 2100) g;
UPDATE zorder.layouts SET bounds[1] = substring(bounds[1] FROM 1 FOR 30)
WHERE relid = 'broken'::regclass;
CALL zorder.optimize('broken');
SELECT count(*) AS rows_after FROM broken;

DROP TABLE dmy, iso, dmy_before, retyped, retyped_before, recollated, broken;

-- Wide values take no part in the boundaries (as in ANALYZE): a key column
-- of values past 1 kB would otherwise hold the whole sample in memory and
-- could store boundaries past the 1 GB a bytea holds.  The table is still
-- laid out, its rows unchanged, and a wide value gets its coordinate by
-- comparison.  Values are random hex so that they stay wide once stored.
CREATE TABLE wide (k text, n int);
INSERT INTO wide
SELECT CASE WHEN g % 2 = 0
			THEN lpad(g::text, 6, '0') || string_agg(md5(g::text || i::text), '')
			ELSE lpad(g::text, 6, '0') END,
	   g % 97
FROM generate_series(1, 3000) g, generate_series(1, 80) i
GROUP BY g;
CREATE TABLE wide_before AS SELECT * FROM wide;
SELECT count(*) FILTER (WHERE octet_length(k) > 1024) AS wide_rows FROM wide;
SELECT zorder.cluster_by('wide', 'k', 'n');
CALL zorder.optimize('wide', full => true);
SELECT octet_length(bounds[1]) < 100000 AS narrow_bounds,
	   octet_length(bounds[1]) > 100 AS short_values_bound
FROM zorder.boundary_sets WHERE relid = 'wide'::regclass;
SELECT count(*) AS differ FROM
	((SELECT * FROM wide EXCEPT ALL SELECT * FROM wide_before)
	 UNION ALL (SELECT * FROM wide_before EXCEPT ALL SELECT * FROM wide)) d;
SELECT count(*) AS heap_errors FROM verify_heapam('wide');
DROP TABLE wide, wide_before;
