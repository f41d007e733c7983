-- Bad input: every call fails with a clear error and the right SQLSTATE,
-- and changes nothing.
SET search_path = public, zorder;
\set VERBOSITY sqlstate

CREATE TABLE t (a int, b text, p point, c int, d int, e int, f int, g int,
				h int, i int);
INSERT INTO t SELECT g, g::text, point(g, g), g, g, g, g, g, g, g
FROM generate_series(1, 100) g;
CREATE VIEW v AS SELECT a FROM t;
CREATE MATERIALIZED VIEW mv AS SELECT a FROM t;
CREATE SEQUENCE s;
CREATE INDEX t_a ON t (a);
CREATE TABLE big_t (x text);
SELECT pg_relation_filenode('t') AS filenode \gset

\set VERBOSITY default
-- no keys yet: the hint says what to do
CALL zorder.optimize('t');
\set VERBOSITY sqlstate

-- not a table
SELECT zorder.cluster_by('v', 'a');
SELECT zorder.cluster_by('mv', 'a');
SELECT zorder.cluster_by('s', 'last_value');
SELECT zorder.cluster_by('t_a', 'a');
SELECT zorder.cluster_by('pg_class', 'relname');
SELECT zorder.cluster_by((SELECT reltoastrelid FROM pg_class WHERE relname = 'big_t')::regclass, 'chunk_id');
CALL zorder.optimize('v');
CALL zorder.optimize('mv');
CALL zorder.optimize('s');
CALL zorder.optimize('pg_class');
SELECT zorder.cluster_by('no_such_table', 'a');
CALL zorder.optimize(0);
-- a table access method other than heap, even one built on it
CREATE ACCESS METHOD heap_alias TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE not_heap (a int, b int) USING heap_alias;
\set VERBOSITY default
SELECT zorder.cluster_by('not_heap', 'a', 'b');
\set VERBOSITY sqlstate
CALL zorder.optimize('not_heap');
DROP TABLE not_heap;
DROP ACCESS METHOD heap_alias;

-- bad columns
SELECT zorder.cluster_by('t', 'nope');
SELECT zorder.cluster_by('t', 'a', 'a');
SELECT zorder.cluster_by('t', 'ctid');
SELECT zorder.cluster_by('t', 'xmin', 'a');
SELECT zorder.cluster_by('t', 'p');
SELECT zorder.cluster_by('t', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i');
SELECT zorder.cluster_by('t', VARIADIC '{}'::name[]);
SELECT zorder.cluster_by('t', VARIADIC '{{a},{b}}'::name[]);
SELECT zorder.cluster_by('t', VARIADIC ARRAY['a', NULL]::name[]);

-- NULL arguments
SELECT zorder.cluster_by(NULL, 'a');
SELECT zorder.cluster_by('t', VARIADIC NULL::name[]);
SELECT zorder.clear_keys(NULL);
CALL zorder.optimize(NULL);
CALL zorder.optimize('t', NULL);

-- nothing was declared by any of the above
SELECT count(*) AS declared FROM zorder.tables WHERE relid = 't'::regclass;

-- a good declaration, then bad optimize options
SELECT zorder.cluster_by('t', 'a', 'c');
CALL zorder.optimize('t', curve => 'peano');
CALL zorder.optimize('t', curve => NULL::text);
SELECT pg_relation_filenode('t') <> :filenode AS rewritten_by_default_curve;
SELECT pg_relation_filenode('t') AS filenode \gset

-- a dropped key column is reported, with a hint
ALTER TABLE t DROP COLUMN c;
\set VERBOSITY default
CALL zorder.optimize('t');
\set VERBOSITY sqlstate
-- a renamed key column is still the same key
SELECT zorder.cluster_by('t', 'a', 'd');
ALTER TABLE t RENAME COLUMN d TO d2;
SELECT keys FROM zorder.clustered_tables WHERE "table" = 't'::regclass;

-- not the owner
CREATE ROLE zorder_intruder;
GRANT ALL ON SCHEMA public TO zorder_intruder;
GRANT ALL ON t TO zorder_intruder;
SET ROLE zorder_intruder;
SELECT zorder.cluster_by('t', 'a');
SELECT zorder.clear_keys('t');
CALL zorder.optimize('t');
SELECT zorder.cleanup();
-- the catalog cannot be changed directly
DELETE FROM zorder.tables;
INSERT INTO zorder.layouts VALUES (1);
SELECT * FROM zorder.tables;
RESET ROLE;
SELECT pg_relation_filenode('t') = :filenode AS unchanged;
SELECT keys FROM zorder.clustered_tables WHERE "table" = 't'::regclass;

-- the table is in use by this session (an open cursor)
BEGIN;
DECLARE cur CURSOR FOR SELECT * FROM t;
FETCH 1 FROM cur;
CALL zorder.optimize('t');
ROLLBACK;

-- another session's temporary table cannot be reached by name; by OID it
-- is refused (checked in the isolation tests).

-- out-of-range settings
\set VERBOSITY default
SET zorder.merge_threshold = 1.5;
SET zorder.merge_threshold = -0.1;
\set VERBOSITY sqlstate

-- the measuring functions: not a table (v is a view, m_brin an index,
-- parted a partitioned table), no keys, bad probes and sample sizes,
-- unknown or system columns, values that do not parse, NULL arguments
CREATE TABLE m (id int, a int, b int);
INSERT INTO m SELECT g, g % 97, g % 89 FROM generate_series(1, 1000) g;
CREATE INDEX m_brin ON m USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('m', 'a', 'b');
CALL zorder.optimize('m');
CREATE TABLE nokeys (a int);
CREATE TABLE parted (a int, b int) PARTITION BY RANGE (a);
SELECT * FROM zorder.clustering_information(NULL);
SELECT * FROM zorder.clustering_information(0);
SELECT * FROM zorder.clustering_information('v');
SELECT * FROM zorder.clustering_information('m_brin');
SELECT * FROM zorder.clustering_information('parted');
SELECT * FROM zorder.clustering_information('nokeys');
SELECT * FROM zorder.clustering_information('m', -1);
SELECT * FROM zorder.clustering_information('m', NULL);
SELECT * FROM zorder.clustering_information('m', 10, 0);
SELECT * FROM zorder.suggest_pages_per_range(NULL);
SELECT * FROM zorder.suggest_pages_per_range('nokeys');
SELECT zorder.ranges_touched('m', 'nope', '1');
SELECT zorder.ranges_touched('m', 'ctid', '1');
SELECT zorder.ranges_touched('m', 'a', 'one');
SELECT zorder.ranges_touched('m', 'a', NULL);
SELECT zorder.ranges_touched('m', NULL, '1');
SELECT zorder.ranges_touched('m', 'a', '1', pages_per_range => 200000);
SELECT zorder.ranges_touched('v', 'a', '1');
\set VERBOSITY default
SELECT * FROM zorder.clustering_information('nokeys');
SELECT * FROM zorder.clustering_information('parted');
\set VERBOSITY sqlstate
DROP TABLE m, nokeys, parted;

DROP TABLE t, big_t CASCADE;
DROP SEQUENCE s;
DROP OWNED BY zorder_intruder;
DROP ROLE zorder_intruder;

-- Out of temporary disk space (a tiny temp_file_limit) and little memory:
-- a clean error, and the table is unchanged.
\set VERBOSITY default
CREATE TABLE spill AS
SELECT g AS id, md5(g::text) || md5((g * 3)::text) AS pad, (g::bigint * 7919) % 10007 AS a,
	   (g::bigint * 104729) % 10009 AS b
FROM generate_series(1, 60000) g;
SELECT zorder.cluster_by('spill', 'a', 'b');
CREATE TABLE spill_copy AS SELECT * FROM spill;
SELECT pg_relation_filenode('spill') AS filenode \gset
SET maintenance_work_mem = '1MB';
SET temp_file_limit = '1MB';
-- (53400; from 18 on the message quotes the setting's name)
\set VERBOSITY sqlstate
CALL zorder.optimize('spill');
\set VERBOSITY default
RESET temp_file_limit;
SELECT pg_relation_filenode('spill') = :filenode AS unchanged,
	   count(*) AS rows, sum(id) AS ids FROM spill;
-- with room, the same call spills and succeeds
CALL zorder.optimize('spill');
RESET maintenance_work_mem;
SELECT sort_runs > 1 AS spilled, rows_written FROM zorder.layouts WHERE relid = 'spill'::regclass;
SELECT count(*) AS rows, sum(id) AS ids FROM spill;
-- every row intact, through many runs merged in several passes
SELECT (SELECT count(*) FROM (SELECT * FROM spill EXCEPT ALL SELECT * FROM spill_copy) d) AS changed,
	   (SELECT count(*) FROM (SELECT * FROM spill_copy EXCEPT ALL SELECT * FROM spill) d) AS lost;
SELECT count(*) AS heap_problems FROM verify_heapam('spill');
DROP TABLE spill, spill_copy;
