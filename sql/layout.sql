-- zorder.layout_key, boundary sets and zorder.prepare_layout (layoutkey.c)
SET client_min_messages = notice;
-- runs and cubes as recognition records them; placement into the run's
-- ranges is tested in incremental_placement.sql
SET zorder.placement = off;
-- set ids that do not depend on the tests before
SELECT setval('zorder.boundary_sets_id_seq', 100, false);

-- A table with a heavy value, NULLs and a text key under a collation.
CREATE TABLE lk (id int PRIMARY KEY, a int, b text COLLATE "C", c float8);
INSERT INTO lk
SELECT g, CASE WHEN g % 3 = 0 THEN 7 ELSE (g::bigint * 7919) % 1000 END,
	   md5((g % 500)::text), CASE WHEN g % 10 = 0 THEN NULL ELSE (g::bigint * 104729 % 10007) / 10007.0 END
FROM generate_series(1, 60000) g;
SELECT zorder.cluster_by('lk', 'a', 'b', 'c');
CALL zorder.optimize('lk', true);

-- The full rewrite recorded its boundaries as a set.
SELECT b.id = l.boundary_set AS recorded, b.relid, b.origin, b.columns, b.types,
	   b.curve, b.bits
FROM zorder.boundary_sets b JOIN zorder.layouts l ON l.relid = b.relid
WHERE b.relid = 'lk'::regclass;
-- Collations by schema-qualified name ('-': none), read back as the
-- collations they name.
SELECT b.collations, b.collations::regcollation[] AS named
FROM zorder.boundary_sets b WHERE b.relid = 'lk'::regclass;

-- ORDER BY layout_key under that set is the order the rewrite wrote: the
-- keys never go down in heap order.
SELECT count(*) AS rows, count(*) FILTER (WHERE k < prev) AS out_of_order,
	   count(DISTINCT k) > 1000 AS spread
FROM (SELECT k, lag(k) OVER (ORDER BY ctid) AS prev
	  FROM (SELECT lk.ctid, zorder.layout_key(l.boundary_set, a, b, c) AS k
			FROM lk, zorder.layouts l WHERE l.relid = 'lk'::regclass) s) s;

-- The rows of the heavy value a = 7 spread over many keys.
SELECT count(DISTINCT zorder.layout_key(100, a, b, c)) > 100 AS heavy_spread
FROM lk WHERE a = 7;
-- NULLs come last on their axis; the key is the same every time.
SELECT zorder.layout_key(100, 7, 'x'::text, 0.5::float8) =
	   zorder.layout_key(100, 7, 'x'::text, 0.5::float8) AS stable;

-- In a parallel plan too: the workers (the leader does not take part)
-- load the set themselves and give every row the key a plain scan gives.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE lk_serial AS SELECT id, zorder.layout_key(100, a, b, c) AS k FROM lk;
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
CREATE FUNCTION pg_temp.plan_is_parallel(q text) RETURNS boolean
	LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		found := found OR l LIKE '%Workers Planned%';
	END LOOP;
	RETURN found;
END $$;
SELECT pg_temp.plan_is_parallel('CREATE TABLE lk_par AS
	SELECT id, zorder.layout_key(100, a, b, c) AS k FROM lk') AS parallel_plan;
CREATE TABLE lk_par AS SELECT id, zorder.layout_key(100, a, b, c) AS k FROM lk;
RESET parallel_setup_cost; RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size; RESET max_parallel_workers_per_gather;
RESET parallel_leader_participation;
SELECT count(*) AS rows, count(*) FILTER (WHERE p.k IS DISTINCT FROM s.k) AS differ
FROM lk_par p FULL JOIN lk_serial s USING (id);
DROP TABLE lk_par, lk_serial;

-- Bad calls.
SELECT zorder.layout_key(999, 1, 'x'::text, 1.0::float8);
SELECT zorder.layout_key(NULL, 1, 'x'::text, 1.0::float8);
SELECT zorder.layout_key(100, 1, 'x'::text);
SELECT zorder.layout_key(100, 1::bigint, 'x'::text, 1.0::float8);
SELECT zorder.layout_key(100, 1, 'x', 1.0::float8);
SELECT zorder.layout_key(100, VARIADIC ARRAY[1, 2, 3]);

-- Sets never change.
UPDATE zorder.boundary_sets SET bits = 1 WHERE id = 100;

-- Who may compute keys: the owner, and readers of the key columns that
-- no row-level security applies to, as pg_stats shows histograms; not
-- roles that only write the table (the keys would reveal the sampled
-- values to them).
CREATE ROLE lk_none;
CREATE ROLE lk_reader;
CREATE ROLE lk_writer;
GRANT SELECT ON lk TO lk_reader;
GRANT INSERT ON lk TO lk_writer;
SET ROLE lk_none;
SELECT zorder.layout_key(100, 1, 'x'::text, 1.0::float8);
SET ROLE lk_reader;
SELECT zorder.layout_key(100, 1, 'x'::text, 1.0::float8) =
	   (SELECT zorder.layout_key(100, 1, 'x'::text, 1.0::float8)) AS reader_ok;
RESET ROLE;
ALTER TABLE lk ENABLE ROW LEVEL SECURITY;
CREATE POLICY lk_some ON lk FOR SELECT USING (id < 10);
SET ROLE lk_reader;
SELECT zorder.layout_key(100, 1, 'x'::text, 1.0::float8);
SET ROLE lk_writer;
SELECT zorder.layout_key(100, 1, 'x'::text, 1.0::float8) IS NOT NULL AS writer_ok;
RESET ROLE;
GRANT SELECT ON lk TO lk_writer;
SET ROLE lk_writer;
SELECT zorder.layout_key(100, 1, 'x'::text, 1.0::float8) IS NOT NULL AS writer_ok;
RESET ROLE;
REVOKE SELECT ON lk FROM lk_writer;
ALTER TABLE lk DISABLE ROW LEVEL SECURITY;
DROP POLICY lk_some ON lk;

-- prepare_layout: owner only.
SET ROLE lk_reader;
SELECT * FROM zorder.prepare_layout('lk');
RESET ROLE;
SELECT "table", boundary_set, order_by, pg_repack, create_index, cluster,
	   (repack IS NOT NULL) =
	   (current_setting('server_version_num')::int >= 190000) AS repack_only_from_19
FROM zorder.prepare_layout('lk');
SELECT id, relid, origin FROM zorder.boundary_sets WHERE relid = 'lk'::regclass ORDER BY id;

-- Names that need quoting, and one row per leaf of a partitioned table.
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."Pa'rt" (id int, "we""ird" int, "Bee" date)
	PARTITION BY RANGE (id);
CREATE TABLE "Odd Schema"."Pa'rt 1" PARTITION OF "Odd Schema"."Pa'rt"
	FOR VALUES FROM (0) TO (100);
CREATE TABLE "Odd Schema".p2 PARTITION OF "Odd Schema"."Pa'rt"
	FOR VALUES FROM (100) TO (200);
INSERT INTO "Odd Schema"."Pa'rt" SELECT g, g % 7, date '2024-01-01' + g FROM generate_series(0, 199) g;
SELECT zorder.cluster_by('"Odd Schema"."Pa''rt"', 'we"ird', 'Bee');
SELECT "table", order_by, pg_repack, create_index, cluster
FROM zorder.prepare_layout('"Odd Schema"."Pa''rt"') ORDER BY 1::text;
-- the statements run as they are
DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT * FROM zorder.prepare_layout('"Odd Schema"."Pa''rt"') LOOP
		EXECUTE replace(r.create_index, 'CONCURRENTLY ', '');
		EXECUTE r.cluster;
		EXECUTE format('SELECT count(*) FROM %s ORDER BY 1', r."table");
		EXECUTE 'SELECT ' || r.order_by || ' FROM ' || r."table"::text || ' LIMIT 1';
	END LOOP;
END
$$;
-- the sets of dropped tables go with them
DROP SCHEMA "Odd Schema" CASCADE;
SELECT count(*) FROM zorder.boundary_sets WHERE relid::text LIKE '%Pa%' OR relid::text LIKE '%p2%';

-- Recognition: CLUSTER by the prepared key, then rows arrive; the next
-- optimize takes the clustered heap for one sorted run and moves only the
-- newcomers.
TRUNCATE zorder.history;
SELECT boundary_set AS set, order_by, create_index, cluster
FROM zorder.prepare_layout('lk') \gset
SELECT replace(:'create_index', 'CONCURRENTLY ', '') AS create_index \gset
:create_index;
:cluster;
INSERT INTO lk SELECT g, g % 1000, md5(g::text), 0.25 FROM generate_series(60001, 60500) g;
UPDATE lk SET c = 0.125 WHERE id BETWEEN 100 AND 199;	-- younger versions in place
CALL zorder.optimize('lk');
SELECT run, rows FROM zorder.sorted_runs WHERE "table" = 'lk'::regclass ORDER BY first_block;
SELECT mode, rows_moved FROM zorder.optimize_history WHERE "table" = 'lk'::regclass;
SELECT l.boundary_set = :set AS layout_has_set FROM zorder.layouts l WHERE relid = 'lk'::regclass;
-- the run the catalog claims is in key order in the heap
SELECT count(*) FILTER (WHERE k < prev) AS out_of_order_in_run
FROM (SELECT k, lag(k) OVER (ORDER BY ctid) AS prev
	  FROM (SELECT ctid, zorder.layout_key(:set, a, b, c) AS k FROM lk
			WHERE (ctid::text::point)[0] < (SELECT nblocks FROM zorder.runs
											 WHERE relid = 'lk'::regclass AND run = 0)) s) s;
SELECT count(*) AS corrupt FROM verify_heapam('lk');
SELECT bt_index_check(indexrelid, true) FROM pg_index WHERE indrelid = 'lk'::regclass;
SELECT count(*), sum(a), count(c) FROM lk;
-- checked once: the next call does not scan again
CALL zorder.optimize('lk');
SELECT mode, rows_moved FROM zorder.optimize_history WHERE "table" = 'lk'::regclass;

-- A copy as pg_repack makes it: INSERT ... SELECT ... ORDER BY the key, in
-- one transaction.  With rows of varying width, an insert that finds the
-- current page full puts a narrow row into room an earlier page left: the
-- check lists those rows, and the incremental call moves them out.
CREATE TABLE lk2 (id int PRIMARY KEY, a int, b int, pad text);
INSERT INTO lk2 SELECT g, (g * 7919) % 1000, (g::bigint * 104729) % 997,
	repeat('p', CASE WHEN g % 7 = 0 THEN 1 ELSE 20 + (g * 31) % 300 END)
FROM generate_series(1, 30000) g;
SELECT zorder.cluster_by('lk2', 'a', 'b');
SELECT boundary_set AS set3 FROM zorder.prepare_layout('lk2') \gset
CREATE TEMP TABLE lk2_copy AS SELECT * FROM lk2;
BEGIN;
TRUNCATE lk2;
INSERT INTO lk2 SELECT * FROM lk2_copy ORDER BY zorder.layout_key(:set3, a, b);
COMMIT;
SELECT count(*) FILTER (WHERE k < prev) > 0 AS copy_has_rows_out_of_order
FROM (SELECT k, lag(k) OVER (ORDER BY ctid) AS prev
	  FROM (SELECT ctid, zorder.layout_key(:set3, a, b) AS k FROM lk2) s) s;
CALL zorder.optimize('lk2');
SELECT run, rows FROM zorder.sorted_runs WHERE "table" = 'lk2'::regclass ORDER BY first_block;
SELECT count(*) FILTER (WHERE k < prev) AS out_of_order_in_run
FROM (SELECT k, lag(k) OVER (ORDER BY ctid) AS prev
	  FROM (SELECT ctid, zorder.layout_key(:set3, a, b) AS k FROM lk2
			WHERE (ctid::text::point)[0] < (SELECT nblocks FROM zorder.runs
											 WHERE relid = 'lk2'::regclass AND run = 0)) s) s;
SELECT count(*) AS corrupt FROM verify_heapam('lk2');
SELECT bt_index_check('lk2_pkey', true);
SELECT (SELECT count(*) FROM (SELECT * FROM lk2 EXCEPT ALL SELECT * FROM lk2_copy) x) AS extra,
	   (SELECT count(*) FROM (SELECT * FROM lk2_copy EXCEPT ALL SELECT * FROM lk2) x) AS missing;
-- moved: the list is cleared by the next call
CALL zorder.optimize('lk2');
SELECT misplaced IS NULL AS misplaced_cleared FROM zorder.layouts WHERE relid = 'lk2'::regclass;
SELECT rows_moved FROM zorder.optimize_history WHERE "table" = 'lk2'::regclass ORDER BY started_at DESC LIMIT 1;
-- A full rewrite after that: the list named rows of the old heap and
-- goes with it; the next incremental call moves nothing.
SELECT boundary_set AS set4 FROM zorder.prepare_layout('lk2') \gset
BEGIN;
TRUNCATE lk2;
INSERT INTO lk2 SELECT * FROM lk2_copy ORDER BY zorder.layout_key(:set4, a, b);
COMMIT;
CALL zorder.optimize('lk2');
SELECT misplaced IS NOT NULL AS misplaced_listed FROM zorder.layouts WHERE relid = 'lk2'::regclass;
CALL zorder.optimize('lk2', true);
SELECT misplaced IS NULL AS misplaced_cleared FROM zorder.layouts WHERE relid = 'lk2'::regclass;
CALL zorder.optimize('lk2');
SELECT rows_moved FROM zorder.optimize_history WHERE "table" = 'lk2'::regclass ORDER BY started_at DESC LIMIT 1;
DROP TABLE lk2;

-- A heap in another order is not taken for a run, and the runs recorded
-- before it was rewritten are dropped.
SELECT boundary_set AS set2 FROM zorder.prepare_layout('lk') \gset
CLUSTER lk USING lk_pkey;
CALL zorder.optimize('lk');
SELECT l.boundary_set = :set2 AS took_set2 FROM zorder.layouts l WHERE relid = 'lk'::regclass;
SELECT run, rows FROM zorder.sorted_runs WHERE "table" = 'lk'::regclass ORDER BY first_block;
SELECT count(*) AS corrupt FROM verify_heapam('lk');
SELECT count(*), sum(a), count(c) FROM lk;
-- A rewrite with no prepared set is checked against the layout's own set:
-- VACUUM FULL keeps the order, so the table stays one run and nothing
-- moves; CLUSTER by another index does not, so its runs are dropped.
CALL zorder.optimize('lk', true);
VACUUM FULL lk;
CALL zorder.optimize('lk');
SELECT run, rows FROM zorder.sorted_runs WHERE "table" = 'lk'::regclass ORDER BY first_block;
SELECT rows_moved FROM zorder.optimize_history WHERE "table" = 'lk'::regclass ORDER BY started_at DESC LIMIT 1;
CLUSTER lk USING lk_pkey;
CALL zorder.optimize('lk');
SELECT run, rows FROM zorder.sorted_runs WHERE "table" = 'lk'::regclass ORDER BY first_block;
SELECT count(*) AS corrupt FROM verify_heapam('lk');
SELECT count(*), sum(a), count(c) FROM lk;

SELECT 'lk'::regclass::oid AS lk_oid \gset
DROP TABLE lk;
SELECT count(*) FROM zorder.boundary_sets WHERE relid::oid = :lk_oid;
DROP ROLE lk_none, lk_reader, lk_writer;


-- A run cut short by out-of-order rows ends on the range boundary before
-- them (pages_per_range 8 here) and counts the rows of its own blocks only.
CREATE TABLE lk_cut (id int, a int, b int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO lk_cut SELECT g, (g * 7919) % 1000, (g::bigint * 104729) % 997, repeat('x', 100)
FROM generate_series(1, 3030) g;
SELECT zorder.cluster_by('lk_cut', 'a', 'b');
CREATE INDEX lk_cut_brin ON lk_cut USING brin (a, b) WITH (pages_per_range = 8);
CALL zorder.optimize('lk_cut', true);
SELECT boundary_set AS cut_set FROM zorder.prepare_layout('lk_cut') \gset
CREATE TEMP TABLE lk_cut_copy AS SELECT * FROM lk_cut;
BEGIN;
TRUNCATE lk_cut;
INSERT INTO lk_cut SELECT * FROM lk_cut_copy ORDER BY zorder.layout_key(:cut_set, a, b);
COMMIT;
-- the free space map then names the copy's part-filled last page, so the
-- rows below fill it first whatever this backend still has cached
VACUUM lk_cut;
-- frozen rows out of order after the copy: the run must end before them
INSERT INTO lk_cut SELECT g, (g * 31) % 1000, (g * 17) % 997, repeat('y', 100)
FROM generate_series(3031, 3300) g;
VACUUM FREEZE lk_cut;
CREATE TEMP TABLE lk_cut_blocks AS
	SELECT (ctid::text::point)[0]::int AS blk, count(*) AS n FROM lk_cut GROUP BY 1;
CALL zorder.optimize('lk_cut');
SELECT pages, rows_written = (SELECT sum(n) FROM lk_cut_blocks WHERE blk < pages) AS run_rows_in_its_blocks
FROM zorder.layouts WHERE relid = 'lk_cut'::regclass;
SELECT (SELECT sum(rows) FROM zorder.runs WHERE relid = 'lk_cut'::regclass) =
	   (SELECT count(*) FROM lk_cut) AS cubes_count_every_row_once;
SELECT count(*) AS corrupt FROM verify_heapam('lk_cut');
SELECT (SELECT count(*) FROM (SELECT * FROM lk_cut EXCEPT ALL
		(SELECT * FROM lk_cut_copy UNION ALL SELECT g, (g * 31) % 1000, (g * 17) % 997, repeat('y', 100)
		 FROM generate_series(3031, 3300) g)) x) AS extra,
	   (SELECT count(*) FROM lk_cut) AS rows;
DROP TABLE lk_cut;

-- One transaction that copies in key order and then appends rows out of
-- order, as REPACK (CONCURRENTLY) replays the changes made during its copy:
-- all rows share one xmin, so the run ends where the order breaks.
CREATE TABLE lk_one (id int, a int, b int, pad text);
INSERT INTO lk_one SELECT g, (g * 7919) % 1000, (g::bigint * 104729) % 997, repeat('x', 100)
FROM generate_series(1, 3000) g;
SELECT zorder.cluster_by('lk_one', 'a', 'b');
SELECT boundary_set AS one_set FROM zorder.prepare_layout('lk_one') \gset
CREATE TEMP TABLE lk_one_copy AS SELECT * FROM lk_one;
BEGIN;
TRUNCATE lk_one;
INSERT INTO lk_one SELECT * FROM lk_one_copy ORDER BY zorder.layout_key(:one_set, a, b);
INSERT INTO lk_one SELECT g, (g * 31) % 1000, (g * 17) % 997, repeat('y', 100)
FROM generate_series(3001, 3300) g;
COMMIT;
CREATE TEMP TABLE lk_one_heap AS
	SELECT ctid AS tid, (ctid::text::point)[0] AS blk, zorder.layout_key(:one_set, a, b) AS k FROM lk_one;
CALL zorder.optimize('lk_one');
-- the blocks the run was recorded on were in key order
SELECT l.pages > 0 AS has_run, count(*) FILTER (WHERE k < prev) AS out_of_order_in_run
FROM zorder.layouts l,
	 (SELECT blk, k, lag(k) OVER (ORDER BY tid) AS prev FROM lk_one_heap) s
WHERE l.relid = 'lk_one'::regclass AND s.blk < l.pages GROUP BY l.pages;
SELECT count(*) AS corrupt FROM verify_heapam('lk_one');
SELECT count(*) AS rows, count(*) FILTER (WHERE id > 3000) AS appended FROM lk_one;
DROP TABLE lk_one;

-- ==== Safety of the boundary sets ====

-- The set's code runs as the table's owner: a domain CHECK (code of the
-- owner's choosing) must never run as the superuser who calls
-- prepare_layout or optimize.  The set keeps the domain's base type, so
-- loading it runs no CHECK at all.
CREATE ROLE lk_evil;
CREATE SCHEMA lk_evil AUTHORIZATION lk_evil;
SET ROLE lk_evil;
CREATE TABLE lk_evil.who (who name, su boolean);
GRANT INSERT ON lk_evil.who TO PUBLIC;
CREATE FUNCTION lk_evil.spy(v int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO lk_evil.who VALUES (current_user,
		(SELECT rolsuper FROM pg_roles WHERE rolname = current_user));
	RETURN true;
END $$;
CREATE DOMAIN lk_evil.spied AS int CHECK (lk_evil.spy(VALUE));
CREATE TABLE lk_evil.t (id int, a lk_evil.spied, b int);
INSERT INTO lk_evil.t SELECT g, g % 97, g % 89 FROM generate_series(1, 3000) g;
SELECT zorder.cluster_by('lk_evil.t', 'a', 'b');
TRUNCATE lk_evil.who;
RESET ROLE;
SELECT boundary_set AS evil_set FROM zorder.prepare_layout('lk_evil.t') \gset
CALL zorder.optimize('lk_evil.t');
CALL zorder.optimize('lk_evil.t', true);
SELECT boundary_set AS evil_set2 FROM zorder.prepare_layout('lk_evil.t') \gset
CALL zorder.optimize('lk_evil.t');
SELECT count(*) AS checks_as_superuser FROM lk_evil.who WHERE su;
SELECT types FROM zorder.boundary_sets WHERE id = :evil_set;
-- a domain key column: layout_key takes its values, an index on it works
SET ROLE lk_evil;
SELECT count(DISTINCT zorder.layout_key(:evil_set, a, b)) > 100 AS domain_keys
FROM lk_evil.t;
CREATE INDEX lk_evil_layout ON lk_evil.t (zorder.layout_key(:evil_set, a, b));
INSERT INTO lk_evil.t VALUES (0, 1, 1);
RESET ROLE;
SELECT count(*) AS checks_as_superuser FROM lk_evil.who WHERE su;

-- Writers: a role that may read the key columns writes into a table with
-- an index on layout_key; one that only inserts is refused with a hint,
-- as it would otherwise read the sampled values through the key.
CREATE ROLE lk_app;
CREATE ROLE lk_insert_only;
GRANT USAGE ON SCHEMA lk_evil TO lk_app, lk_insert_only;
GRANT SELECT, INSERT, UPDATE ON lk_evil.t TO lk_app;
GRANT INSERT ON lk_evil.t TO lk_insert_only;
SET ROLE lk_app;
INSERT INTO lk_evil.t VALUES (3001, 5, 5);
UPDATE lk_evil.t SET b = 6 WHERE id = 3001;
SET ROLE lk_insert_only;
INSERT INTO lk_evil.t VALUES (3002, 5, 5);
RESET ROLE;
-- under row-level security the reader is refused too
ALTER TABLE lk_evil.t ENABLE ROW LEVEL SECURITY;
CREATE POLICY lk_evil_all ON lk_evil.t USING (true);
SET ROLE lk_app;
INSERT INTO lk_evil.t VALUES (3003, 5, 5);
RESET ROLE;
ALTER TABLE lk_evil.t DISABLE ROW LEVEL SECURITY;

-- A set an index of another table uses outlives the table it was sampled
-- from: it passes to the table whose index uses it, whose writers go on.
CREATE TABLE lk_src (a int, b int);
INSERT INTO lk_src SELECT g % 101, g % 103 FROM generate_series(1, 5000) g;
SELECT zorder.cluster_by('lk_src', 'a', 'b');
SELECT boundary_set AS src_set FROM zorder.prepare_layout('lk_src') \gset
CREATE TABLE lk_dst (a int, b int);
CREATE INDEX lk_dst_layout ON lk_dst (zorder.layout_key(:src_set, a, b));
INSERT INTO lk_dst SELECT * FROM lk_src;
DROP TABLE lk_src;
INSERT INTO lk_dst VALUES (1, 2);
SELECT relid FROM zorder.boundary_sets WHERE id = :src_set;
SELECT bt_index_check('lk_dst_layout', true);
-- and it cannot be deleted by hand while the index uses it
BEGIN;
DELETE FROM zorder.boundary_sets WHERE id = :src_set;
ROLLBACK;
BEGIN;
TRUNCATE zorder.boundary_sets;
ROLLBACK;
SELECT count(*) AS still_there FROM zorder.boundary_sets WHERE id = :src_set;

-- Unused sets are dropped on request: not the one an index uses, not the
-- layout's own, not the newest prepared one a rewrite may still use.
SELECT count(*) AS evil_sets FROM zorder.boundary_sets WHERE relid = 'lk_evil.t'::regclass;
SELECT zorder.drop_unused_boundary_sets('lk_evil.t') AS dropped;
SELECT b.id = :evil_set AS indexed, b.id = l.boundary_set AS layout,
	   b.id = :evil_set2 AS newest_prepared
FROM zorder.boundary_sets b LEFT JOIN zorder.layouts l ON l.relid = b.relid
WHERE b.relid = 'lk_evil.t'::regclass ORDER BY b.id;
SET ROLE lk_app;
SELECT zorder.drop_unused_boundary_sets('lk_evil.t') AS dropped;
RESET ROLE;
DROP TABLE lk_dst;
SELECT count(*) AS dropped_with_last_user FROM zorder.boundary_sets WHERE id = :src_set;

-- A set passes only to a table of the owner its table had: another role
-- that names a stranger's set in an index of its own (which computes no
-- key while its table is empty) does not inherit the set, and with it the
-- values sampled from the stranger's rows, when that table is dropped.
CREATE ROLE lk_thief;
GRANT CREATE ON SCHEMA public TO lk_thief;
CREATE TABLE lk_victim (a int, b int);
INSERT INTO lk_victim SELECT g % 101, g % 103 FROM generate_series(1, 5000) g;
SELECT zorder.cluster_by('lk_victim', 'a', 'b');
SELECT boundary_set AS victim_set FROM zorder.prepare_layout('lk_victim') \gset
SET ROLE lk_thief;
CREATE TABLE lk_loot (a int, b int);
CREATE INDEX lk_loot_layout ON lk_loot (zorder.layout_key(:victim_set, a, b));
RESET ROLE;
DROP TABLE lk_victim;
SELECT count(*) AS victim_set_left FROM zorder.boundary_sets WHERE id = :victim_set;
SET ROLE lk_thief;
SELECT zorder.layout_key(:victim_set, 50, 50) IS NOT NULL AS thief_reads;
DROP TABLE lk_loot;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM lk_thief;
DROP ROLE lk_thief;

-- Index names: the table name is cut on a character boundary.
CREATE TABLE "aéééééééééééééééééééééééééééééé" (a int, b int);
INSERT INTO "aéééééééééééééééééééééééééééééé" SELECT g, g FROM generate_series(1, 100) g;
SELECT zorder.cluster_by('"aéééééééééééééééééééééééééééééé"', 'a', 'b');
SELECT convert_from(convert_to(create_index, 'UTF8'), 'UTF8') = create_index AS valid_name
FROM zorder.prepare_layout('"aéééééééééééééééééééééééééééééé"');
DROP TABLE "aéééééééééééééééééééééééééééééé";

-- Switching between sets in one call site does not pile up memory.
CREATE TABLE lk_mem (a int, b text);
INSERT INTO lk_mem SELECT g % 5000, md5(g::text) FROM generate_series(1, 50000) g;
SELECT zorder.cluster_by('lk_mem', 'a', 'b');
SELECT boundary_set AS mem1 FROM zorder.prepare_layout('lk_mem') \gset
SELECT boundary_set AS mem2 FROM zorder.prepare_layout('lk_mem') \gset
CREATE FUNCTION pg_temp.mem(k bigint) RETURNS bigint LANGUAGE sql VOLATILE AS
	'SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts';
SELECT (array_agg(m ORDER BY g))[120] - (array_agg(m ORDER BY g))[20] < 4000000 AS bounded
FROM (SELECT g, pg_temp.mem(zorder.layout_key(CASE WHEN g % 2 = 0 THEN :mem1 ELSE :mem2 END,
											   g, g::text)) AS m
	  FROM generate_series(1, 120) g) s;
DROP TABLE lk_mem;

DROP SCHEMA lk_evil CASCADE;
DROP ROLE lk_evil, lk_app, lk_insert_only;

-- pg_upgrade refuses a cluster whose user tables have a column of a reg*
-- type naming objects whose OIDs it does not keep (its check "reg* data
-- types in user tables"; regclass, regrole and regtype it allows), and
-- the extension's catalog tables are user tables.  None has one, as an
-- array or a domain either.
SELECT c.relname, a.attname, a.atttypid::regtype
FROM pg_depend d
JOIN pg_class c ON c.oid = d.objid
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_type e ON e.oid = CASE WHEN t.typcategory = 'A' THEN t.typelem
							  WHEN t.typtype = 'd' THEN t.typbasetype
							  ELSE t.oid END
WHERE d.classid = 'pg_class'::regclass
  AND d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zorder')
  AND d.deptype = 'e'
  AND c.relkind IN ('r', 'p', 'm')
  AND e.typnamespace = 'pg_catalog'::regnamespace
  AND e.typname IN ('regcollation', 'regconfig', 'regdictionary',
					'regnamespace', 'regoper', 'regoperator', 'regproc',
					'regprocedure')
ORDER BY 1, 2;
-- ... while the member tables are all seen (the query above is not vacuous).
SELECT string_agg(c.relname, ', ' ORDER BY c.relname) AS catalog_tables
FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
WHERE d.classid = 'pg_class'::regclass
  AND d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zorder')
  AND d.deptype = 'e' AND c.relkind IN ('r', 'p', 'm');

-- A DROP that concerns no set does not parse every index expression of
-- the database to find the sets in use (the drop trigger runs on every
-- DROP), not even while a set is left to no table (relid 0, as when a new
-- table took the OID of the set's table while another role's index named
-- the set; made by hand here).  A DROP of an index does, and the set left
-- to no table goes with the last index that named it.
SET track_functions = 'all';
CREATE TABLE lk_orphan_src (a int, b int);
INSERT INTO lk_orphan_src SELECT g, g FROM generate_series(1, 100) g;
SELECT zorder.cluster_by('lk_orphan_src', 'a', 'b');
SELECT boundary_set AS orphan_set FROM zorder.prepare_layout('lk_orphan_src') \gset
CREATE TABLE lk_orphan_idx (a int, b int);
CREATE INDEX ON lk_orphan_idx (zorder.layout_key(:orphan_set, a, b));
UPDATE zorder.boundary_sets SET relid = 0 WHERE id = :orphan_set;
CREATE TABLE lk_plain (a int);
BEGIN;
DROP TABLE lk_plain;
SELECT coalesce(sum(calls), 0) AS in_use_looked_up
FROM pg_stat_xact_user_functions WHERE funcname = '_boundary_sets_in_use';
COMMIT;
BEGIN;
DROP TABLE lk_orphan_idx;
SELECT sum(calls) > 0 AS in_use_looked_up
FROM pg_stat_xact_user_functions WHERE funcname = '_boundary_sets_in_use';
COMMIT;
SELECT count(*) AS orphan_left FROM zorder.boundary_sets WHERE id = :orphan_set;
DROP TABLE lk_orphan_src;
RESET track_functions;
