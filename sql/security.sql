-- Security: who may change a table's clustering, under which identity the
-- work runs, that nothing a user puts on the search_path takes part, that
-- the catalog stays closed; then more bad input, each failing with the right
-- SQLSTATE and changing nothing.
SET search_path = public;
\set VERBOSITY sqlstate
-- the settings exist from here on (a SET before the library is loaded would
-- only make a placeholder, which is not checked)
LOAD 'zorder';
-- cubes only: merges into the main run are tested in merge.sql
SET zorder.merge_threshold = 1;
-- cubes: placement into the main run's ranges is tested in incremental_placement.sql
SET zorder.placement = off;

CREATE ROLE regress_zs_owner;
-- every privilege on the table, but not its owner
CREATE ROLE regress_zs_other;
-- members of the owning role, with and without its privileges
CREATE ROLE regress_zs_member IN ROLE regress_zs_owner;
CREATE ROLE regress_zs_noinherit NOINHERIT IN ROLE regress_zs_owner;
-- may read one table only
CREATE ROLE regress_zs_reader;
CREATE SCHEMA zs AUTHORIZATION regress_zs_owner;
GRANT USAGE ON SCHEMA zs TO PUBLIC;

-- ---------------------------------------------------------------------
-- Only the owner (or a member of the owning role, or a superuser)
-- ---------------------------------------------------------------------
SET ROLE regress_zs_owner;
CREATE TABLE zs.t (id int PRIMARY KEY, a int, b int, v text);
INSERT INTO zs.t SELECT g, (g * 7919) % 500, (g * 104729) % 300, md5(g::text)
FROM generate_series(1, 2000) g;
GRANT ALL ON zs.t TO regress_zs_other;
GRANT SELECT ON zs.t TO regress_zs_reader;
SELECT zorder.cluster_by('zs.t', 'a', 'b');
RESET ROLE;
SELECT pg_relation_filenode('zs.t') AS filenode \gset
CREATE TABLE zs_t_copy AS SELECT * FROM zs.t;

SET ROLE regress_zs_other;
SELECT has_table_privilege('zs.t', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER') AS all_privileges;
SELECT zorder.cluster_by('zs.t', 'b');
SELECT zorder.clear_keys('zs.t');
CALL zorder.optimize('zs.t');
CALL zorder.optimize('zs.t', full => true);
CALL zorder.optimize('zs.t', curve => 'z');
-- reading the clustering needs SELECT only
SELECT count(*) AS key_rows FROM zorder.clustering_information('zs.t', 50);
RESET ROLE;
SELECT pg_relation_filenode('zs.t') = :filenode AS not_rewritten,
	   (SELECT keys FROM zorder.clustered_tables WHERE "table" = 'zs.t'::regclass),
	   (SELECT count(*) FROM zorder.optimize_history WHERE "table" = 'zs.t'::regclass) AS optimizations;

-- NOINHERIT: membership alone does not make the owner
SET ROLE regress_zs_noinherit;
SELECT zorder.cluster_by('zs.t', 'b');
SELECT zorder.clear_keys('zs.t');
CALL zorder.optimize('zs.t');
RESET ROLE;

-- a member that inherits the owning role's privileges counts as the owner
-- (pg_class_ownercheck follows role membership)
SET ROLE regress_zs_member;
SELECT zorder.cluster_by('zs.t', 'b', 'a');
CALL zorder.optimize('zs.t');
RESET ROLE;
SELECT pg_relation_filenode('zs.t') <> :filenode AS rewritten,
	   (SELECT keys FROM zorder.clustered_tables WHERE "table" = 'zs.t'::regclass),
	   (SELECT string_agg(mode, ',') FROM zorder.optimize_history WHERE "table" = 'zs.t'::regclass) AS modes;
SET ROLE regress_zs_member;
SELECT zorder.clear_keys('zs.t');
RESET ROLE;
SELECT count(*) AS keys_left FROM zorder.clustered_tables WHERE "table" = 'zs.t'::regclass;
-- a superuser may, too
SELECT zorder.cluster_by('zs.t', 'a', 'b');
CALL zorder.optimize('zs.t');
SELECT (SELECT count(*) FROM (TABLE zs_t_copy EXCEPT ALL TABLE zs.t) d) AS missing,
	   (SELECT count(*) FROM (TABLE zs.t EXCEPT ALL TABLE zs_t_copy) d) AS extra;

-- ---------------------------------------------------------------------
-- The work runs as the table's owner, in a security-restricted operation
-- ---------------------------------------------------------------------
-- The owner's expression index calls an IMMUTABLE function that calls a
-- VOLATILE one, which does what zs.spy_mode says: record who runs it, or
-- try to act with the privileges of whoever runs the optimize.
CREATE TABLE zs_secret (x text);	-- owned by the superuser, no grants
SET ROLE regress_zs_owner;
CREATE TABLE zs.spy_log (who name, caller_is_superuser boolean);
CREATE TABLE zs.spy_mode (mode text);
INSERT INTO zs.spy_mode VALUES ('off');
CREATE FUNCTION zs.spy_act() RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	m text := (SELECT mode FROM zs.spy_mode);
BEGIN
	IF m = 'log' THEN
		INSERT INTO zs.spy_log
		SELECT current_user, rolsuper FROM pg_roles WHERE rolname = session_user;
	ELSIF m = 'set role' THEN
		EXECUTE format('SET ROLE %I', (SELECT rolname FROM pg_roles WHERE oid = 10));
	ELSIF m = 'temp table' THEN
		CREATE TEMP TABLE zs_spy_temp (x int);
	ELSIF m = 'superuser' THEN
		ALTER ROLE regress_zs_owner SUPERUSER;
	ELSIF m = 'write' THEN
		INSERT INTO public.zs_secret VALUES ('stolen');
	ELSIF m = 'read' THEN
		PERFORM count(*) FROM public.zs_secret;
	ELSIF m = 'settings' THEN
		PERFORM set_config('search_path', 'zs, public', false);
		PERFORM set_config('zs.planted', 'yes', false);
		PERFORM set_config('work_mem', '1234kB', false);
	END IF;
END
$$;
CREATE FUNCTION zs.spy_key(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	PERFORM zs.spy_act();
	RETURN x;
END
$$;
CREATE TABLE zs.s (id int PRIMARY KEY, a int, b int);
INSERT INTO zs.s SELECT g, g % 10, g % 7 FROM generate_series(1, 20) g;
CREATE INDEX s_spy ON zs.s ((zs.spy_key(a)));
SELECT zorder.cluster_by('zs.s', 'a', 'b');
RESET ROLE;
SELECT current_setting('work_mem') AS work_mem \gset
-- the messages say why
\set VERBOSITY terse

-- a superuser's full optimize rebuilds the index as the owner
UPDATE zs.spy_mode SET mode = 'log';
CALL zorder.optimize('zs.s');
SELECT who, caller_is_superuser, count(*) FROM zs.spy_log GROUP BY 1, 2;
TRUNCATE zs.spy_log;
-- each attempt fails and the whole optimize with it
UPDATE zs.spy_mode SET mode = 'set role';
CALL zorder.optimize('zs.s', full => true);
UPDATE zs.spy_mode SET mode = 'temp table';
CALL zorder.optimize('zs.s', full => true);
-- (the message differs between majors: 42501 on every one)
\set VERBOSITY sqlstate
UPDATE zs.spy_mode SET mode = 'superuser';
CALL zorder.optimize('zs.s', full => true);
\set VERBOSITY terse
UPDATE zs.spy_mode SET mode = 'write';
CALL zorder.optimize('zs.s', full => true);
UPDATE zs.spy_mode SET mode = 'read';
CALL zorder.optimize('zs.s', full => true);
-- settings changed by the owner's code do not outlive the optimize
UPDATE zs.spy_mode SET mode = 'settings';
CALL zorder.optimize('zs.s', full => true);
SHOW search_path;
SELECT coalesce(current_setting('zs.planted', true), '') = 'yes' AS planted;
SELECT current_setting('work_mem') = :'work_mem' AS work_mem_unchanged;

-- the same for an incremental optimize, whose moves insert index entries;
-- batches of 5 rows commit one by one
UPDATE zs.spy_mode SET mode = 'off';
INSERT INTO zs.s SELECT g, g % 10, g % 7 FROM generate_series(21, 40) g;
SET zorder.max_batch_size = 5;
UPDATE zs.spy_mode SET mode = 'set role';
CALL zorder.optimize('zs.s');
UPDATE zs.spy_mode SET mode = 'temp table';
CALL zorder.optimize('zs.s');
-- (the message differs between majors: 42501 on every one)
\set VERBOSITY sqlstate
UPDATE zs.spy_mode SET mode = 'superuser';
CALL zorder.optimize('zs.s');
\set VERBOSITY terse
UPDATE zs.spy_mode SET mode = 'write';
CALL zorder.optimize('zs.s');
UPDATE zs.spy_mode SET mode = 'settings';
CALL zorder.optimize('zs.s');
SHOW search_path;
SELECT coalesce(current_setting('zs.planted', true), '') = 'yes' AS planted;
SELECT current_setting('work_mem') = :'work_mem' AS work_mem_unchanged;
\set VERBOSITY sqlstate
-- the failed calls moved nothing; the last one moved the 20 new rows
SELECT mode, rows_moved FROM zorder.optimize_history
WHERE "table" = 'zs.s'::regclass ORDER BY started_at;
UPDATE zs.spy_mode SET mode = 'off';
INSERT INTO zs.s SELECT g, g % 10, g % 7 FROM generate_series(41, 52) g;
UPDATE zs.spy_mode SET mode = 'log';
CALL zorder.optimize('zs.s');
RESET zorder.max_batch_size;
SELECT who, caller_is_superuser, count(*) FROM zs.spy_log GROUP BY 1, 2;
SELECT count(*) AS stolen FROM zs_secret;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_zs_owner';
SELECT count(*), sum(id), sum(a), sum(b) FROM zs.s;
SELECT count(*) AS heap_problems FROM verify_heapam('zs.s');
SELECT bt_index_check('zs.s_spy', true), bt_index_check('zs.s_pkey', true);
UPDATE zs.spy_mode SET mode = 'off';

-- ---------------------------------------------------------------------
-- Nothing on the search_path takes part
-- ---------------------------------------------------------------------
-- The table owner (not a superuser) plants, in a schema put before
-- pg_catalog on the search_path, functions, aggregates and operators with
-- the names and argument types the extension's queries use.  Each records
-- its call with the role it runs as; a call as the catalog's owner (a
-- superuser) would be a privilege escalation.  coalesce, least, ROW and
-- casts are syntax or catalog entries, not functions looked up by name.
CREATE SCHEMA zs_evil AUTHORIZATION regress_zs_owner;
GRANT USAGE ON SCHEMA zs_evil TO PUBLIC;
SET ROLE regress_zs_owner;
CREATE TABLE zs_evil.calls (who name, what text);
GRANT INSERT ON zs_evil.calls TO PUBLIC;
CREATE FUNCTION zs_evil.spy(what text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO zs_evil.calls VALUES (current_user, what) $$;
CREATE FUNCTION zs_evil.oid_eq(oid, oid) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('='); RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR zs_evil.= (FUNCTION = zs_evil.oid_eq, LEFTARG = oid, RIGHTARG = oid);
CREATE FUNCTION zs_evil.oid_ne(oid, oid) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('<>'); RETURN $1 OPERATOR(pg_catalog.<>) $2; END $$;
CREATE OPERATOR zs_evil.<> (FUNCTION = zs_evil.oid_ne, LEFTARG = oid, RIGHTARG = oid);
CREATE FUNCTION zs_evil.int8_ge(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('>='); RETURN $1 OPERATOR(pg_catalog.>=) $2; END $$;
CREATE OPERATOR zs_evil.>= (FUNCTION = zs_evil.int8_ge, LEFTARG = bigint, RIGHTARG = bigint);
CREATE FUNCTION zs_evil.int8_lt(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('<'); RETURN $1 OPERATOR(pg_catalog.<) $2; END $$;
CREATE OPERATOR zs_evil.< (FUNCTION = zs_evil.int8_lt, LEFTARG = bigint, RIGHTARG = bigint);
CREATE FUNCTION zs_evil.int8_minus(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('-'); RETURN $1 OPERATOR(pg_catalog.-) $2; END $$;
CREATE OPERATOR zs_evil.- (FUNCTION = zs_evil.int8_minus, LEFTARG = bigint, RIGHTARG = bigint);
-- an exact match on oid would beat pg_catalog's (regclass) wherever found
CREATE FUNCTION zs_evil.pg_partition_tree(oid)
RETURNS TABLE (relid regclass, parentrelid regclass, isleaf boolean, level int)
LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('pg_partition_tree'); END $$;
CREATE FUNCTION zs_evil.pg_partition_tree(regclass)
RETURNS TABLE (relid regclass, parentrelid regclass, isleaf boolean, level int)
LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('pg_partition_tree'); END $$;
CREATE FUNCTION zs_evil.agg_step(bigint[], bigint[]) RETURNS bigint[] LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('array_agg'); RETURN pg_catalog.array_cat($1, $2); END $$;
CREATE AGGREGATE zs_evil.array_agg(bigint[]) (SFUNC = zs_evil.agg_step, STYPE = bigint[]);
CREATE FUNCTION zs_evil.sum_step(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('sum'); RETURN 0; END $$;
CREATE AGGREGATE zs_evil.sum(bigint) (SFUNC = zs_evil.sum_step, STYPE = bigint);
CREATE FUNCTION zs_evil.count_step(bigint) RETURNS bigint LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('count'); RETURN 0; END $$;
CREATE AGGREGATE zs_evil.count(*) (SFUNC = zs_evil.count_step, STYPE = bigint, INITCOND = '0');
CREATE FUNCTION zs_evil.now() RETURNS timestamptz LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('now'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION zs_evil.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('clock_timestamp'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION zs_evil.pg_current_xact_id() RETURNS xid8 LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('pg_current_xact_id'); RETURN pg_catalog.pg_current_xact_id(); END $$;
CREATE FUNCTION zs_evil.has_table_privilege(oid, text) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('has_table_privilege'); RETURN true; END $$;
CREATE FUNCTION zs_evil.unnest(smallint[]) RETURNS SETOF smallint LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('unnest'); RETURN QUERY SELECT pg_catalog.unnest($1); END $$;
CREATE FUNCTION zs_evil.to_jsonb(name[]) RETURNS jsonb LANGUAGE plpgsql AS
$$ BEGIN PERFORM zs_evil.spy('to_jsonb'); RETURN '[]'; END $$;

-- the trap works: with the schema first, each of them is what a query gets
SET search_path = zs_evil, pg_catalog, zs, public;
SELECT 1::oid = 1::oid AS eq, 1::oid <> 2::oid AS ne, 2::bigint >= 1::bigint AS ge,
	   1::bigint < 2::bigint AS lt, 2::bigint - 1::bigint AS minus,
	   now() IS NOT NULL AS now, clock_timestamp() IS NOT NULL AS clock,
	   pg_current_xact_id() IS NOT NULL AS xid,
	   has_table_privilege(0::oid, 'SELECT') AS priv,
	   to_jsonb('{a}'::name[]) AS jsonb;
SELECT count(*) FROM pg_partition_tree(0::oid);
SELECT array_agg(ARRAY[1::bigint]), sum(1::bigint), count(*) FROM (VALUES (1)) v(x);
SELECT count(*) FROM unnest('{1}'::int2[]);
RESET search_path;
SELECT count(DISTINCT what) AS shadows_called FROM zs_evil.calls;
TRUNCATE zs_evil.calls;
RESET ROLE;

-- A partitioned table of the owner, with a BRIN index to keep tight.
SET ROLE regress_zs_owner;
CREATE TABLE zs.p (id int, a int, b int) PARTITION BY RANGE (id);
CREATE TABLE zs.p1 PARTITION OF zs.p FOR VALUES FROM (0) TO (1000);
CREATE TABLE zs.p2 PARTITION OF zs.p FOR VALUES FROM (1000) TO (2000);
INSERT INTO zs.p SELECT g, (g * 31) % 97, (g * 17) % 89 FROM generate_series(0, 1999) g;
CREATE INDEX t_brin ON zs.t USING brin (a) WITH (pages_per_range = 4);
RESET ROLE;
CREATE TABLE zs_p_copy AS SELECT * FROM zs.p;
-- who calls and how: the owner, then a superuser, with the schema first
CREATE FUNCTION zs_exercise() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM zorder.cluster_by('zs.p', 'a', 'b');
	PERFORM zorder.cluster_by('zs.p1', 'b');
	PERFORM zorder.cluster_by('zs.p', 'a', 'b');
	PERFORM zorder.cluster_by('zs.t', 'a', 'b');
	-- (pg_catalog.count: this function's own calls must not hit the trap)
	PERFORM pg_catalog.count(*) FROM zorder.clustering_information('zs.t', 20);
	PERFORM zorder.clustering_information_json('zs.t', 20);
	PERFORM zorder.ranges_touched('zs.t', 'a', '7');
	PERFORM pg_catalog.count(*) FROM zorder.suggest_pages_per_range('zs.t');
	PERFORM * FROM zorder.clustered_tables;
	PERFORM * FROM zorder.optimize_history;
	PERFORM * FROM zorder.sorted_runs;
END
$$;
GRANT EXECUTE ON FUNCTION zs_exercise() TO regress_zs_owner;

SET ROLE regress_zs_owner;
SET search_path = zs_evil, pg_catalog, zs, public;
SELECT zs_exercise();
CALL zorder.optimize('zs.p', full => true);
INSERT INTO zs.t SELECT g, (g * 7919) % 500, (g * 104729) % 300, md5(g::text)
FROM generate_series(2001, 2300) g;
-- (into the first partition: an incremental optimize of a partitioned table
-- fails when a later partition has rows to move, see
-- test/sql/incremental_partitions.sql)
INSERT INTO zs.p SELECT g, g % 97, g % 89 FROM generate_series(500, 999) g;
SET zorder.max_batch_size = 100;
CALL zorder.optimize('zs.t');
CALL zorder.optimize('zs.p');
RESET zorder.max_batch_size;
CALL zorder.optimize('zs.t', curve => 'z');
SELECT zs_exercise();
SELECT zorder.clear_keys('zs.p');
CREATE TABLE zs.gone (a int);
SELECT zorder.cluster_by('zs.gone', 'a');
DROP TABLE zs.gone;
RESET search_path;
RESET ROLE;
SELECT count(*) AS calls_by_owner FROM zs_evil.calls;

SET search_path = zs_evil, pg_catalog, zs, public;
SELECT zorder.cluster_by('zs.p', 'b', 'a');
CALL zorder.optimize('zs.p');
INSERT INTO zs.t SELECT g, (g * 7919) % 500, (g * 104729) % 300, md5(g::text)
FROM generate_series(2301, 2500) g;
CALL zorder.optimize('zs.t');
SET zorder.create_brin = on;
CALL zorder.optimize('zs.p', full => true);
RESET zorder.create_brin;
SELECT zs_exercise();
SELECT zorder.clear_keys('zs.p');
SELECT zorder.cleanup() >= 0 AS cleaned;
RESET search_path;
SELECT count(*) AS calls_by_superuser FROM zs_evil.calls;

-- what ran: full and incremental optimizes of both tables
SELECT "table", mode, rows_moved FROM zorder.optimize_history
WHERE "table" IN ('zs.t'::regclass, 'zs.p1'::regclass, 'zs.p2'::regclass)
ORDER BY started_at;
-- and nothing was lost on the way
INSERT INTO zs_t_copy SELECT g, (g * 7919) % 500, (g * 104729) % 300, md5(g::text)
FROM generate_series(2001, 2500) g;
INSERT INTO zs_p_copy SELECT g, g % 97, g % 89 FROM generate_series(500, 999) g;
SELECT (SELECT count(*) FROM (TABLE zs_p_copy EXCEPT ALL TABLE zs.p) d) AS p_missing,
	   (SELECT count(*) FROM (TABLE zs.p EXCEPT ALL TABLE zs_p_copy) d) AS p_extra,
	   (SELECT count(*) FROM (TABLE zs_t_copy EXCEPT ALL TABLE zs.t) d) AS t_missing,
	   (SELECT count(*) FROM (TABLE zs.t EXCEPT ALL TABLE zs_t_copy) d) AS t_extra,
	   (SELECT count(*) FROM zs.p) AS p_rows,
	   (SELECT count(*) FROM zs.t) AS t_rows;
SELECT count(*) AS heap_problems FROM verify_heapam('zs.t');
SELECT bt_index_check('zs.t_pkey', true);
-- the superuser's optimize with zorder.create_brin made BRIN indexes
SELECT indrelid::regclass AS partition, indexrelid::regclass AS brin_index
FROM pg_index WHERE indrelid IN ('zs.p1'::regclass, 'zs.p2'::regclass) ORDER BY 1;

-- ---------------------------------------------------------------------
-- The catalog is closed; the views show what the user may read
-- ---------------------------------------------------------------------
SET ROLE regress_zs_owner;
CREATE TABLE zs.hidden (a int, b int);
INSERT INTO zs.hidden SELECT g, g FROM generate_series(1, 100) g;
SELECT zorder.cluster_by('zs.hidden', 'a', 'b');
CALL zorder.optimize('zs.hidden');
RESET ROLE;

SET ROLE regress_zs_reader;
SELECT * FROM zorder.tables;
SELECT * FROM zorder.layouts;
SELECT * FROM zorder.runs;
SELECT * FROM zorder.history;
INSERT INTO zorder.tables VALUES ('zs.hidden'::regclass, '{1}');
UPDATE zorder.layouts SET curve = 'z';
DELETE FROM zorder.runs;
TRUNCATE zorder.history;
-- optimize_history and sorted_runs are simple views: not writable either
DELETE FROM zorder.optimize_history;
UPDATE zorder.sorted_runs SET rows = 0;
-- zs.t, which the reader may SELECT, shows; zs.hidden does not
SELECT bool_or("table" = 'zs.t'::regclass) AS shows_t,
	   bool_or("table" = 'zs.hidden'::regclass) AS shows_hidden,
	   bool_and(has_table_privilege("table", 'SELECT')) AS all_readable
FROM zorder.clustered_tables;
SELECT bool_or("table" = 'zs.t'::regclass) AS shows_t,
	   bool_or("table" = 'zs.hidden'::regclass) AS shows_hidden,
	   bool_and(has_table_privilege("table", 'SELECT')) AS all_readable
FROM zorder.optimize_history;
SELECT bool_or("table" = 'zs.t'::regclass) AS shows_t,
	   bool_or("table" = 'zs.hidden'::regclass) AS shows_hidden,
	   bool_and(has_table_privilege("table", 'SELECT')) AS all_readable
FROM zorder.sorted_runs;
-- the clustering of a table needs SELECT on it
SELECT count(*) FROM zorder.clustering_information('zs.hidden');
SELECT zorder.clustering_information_json('zs.hidden');
SELECT zorder.ranges_touched('zs.hidden', 'a', '1');
SELECT count(*) FROM zorder.suggest_pages_per_range('zs.hidden');
SELECT count(*) AS key_rows FROM zorder.clustering_information('zs.t', 20);
-- nor may the reader change anything
SELECT zorder.cluster_by('zs.t', 'a');
SELECT zorder.clear_keys('zs.hidden');
CALL zorder.optimize('zs.hidden');
RESET ROLE;
SELECT "table", keys FROM zorder.clustered_tables
WHERE "table"::text LIKE 'zs.%' ORDER BY 1;

-- ---------------------------------------------------------------------
-- More bad input
-- ---------------------------------------------------------------------
SET zorder.max_batch_size = 0;
SET zorder.max_batch_size = -1;
SET zorder.max_batch_size = 'many';
SET zorder.brin_pages_per_range = -1;
SET zorder.brin_pages_per_range = 131073;
SET zorder.create_brin = 'sometimes';
SET zorder.no_such_setting = 1;
-- none of them took
SHOW zorder.max_batch_size;
CALL zorder.optimize('zs.t', curve => '');
CALL zorder.optimize('zs.t', curve => 'Z');
CALL zorder.optimize('zs.t', curve => 'hilbert ');
SELECT count(*) FROM zorder.clustering_information('zs.t', -1);
SELECT count(*) FROM zorder.clustering_information('zs.t', 1000001);
SELECT count(*) FROM zorder.clustering_information('zs.t', NULL);
SELECT count(*) FROM zorder.clustering_information('zs.t', 10, 0);
SELECT count(*) FROM zorder.clustering_information(NULL);
SELECT count(*) FROM zorder.clustering_information('zs.p');
SELECT count(*) FROM zorder.clustering_information('zs_t_copy');
SELECT zorder.ranges_touched('zs.t', 'nope', '1');
SELECT zorder.ranges_touched('zs.t', 'a', 'one');
SELECT zorder.ranges_touched('zs.t', 'a', NULL);
-- (the keys of zs.p were cleared above)
CALL zorder.optimize('zs.p');
-- a foreign table (file_fdw)
CREATE EXTENSION file_fdw;
CREATE SERVER zs_files FOREIGN DATA WRAPPER file_fdw;
CREATE FOREIGN TABLE zs_ft (id int, a int, b int) SERVER zs_files
	OPTIONS (filename '/dev/null', format 'csv');
SELECT zorder.cluster_by('zs_ft', 'a');
CALL zorder.optimize('zs_ft');
SELECT zorder.clear_keys('zs_ft');
SELECT count(*) FROM zorder.clustering_information('zs_ft');
-- a TOAST table, by OID
SELECT reltoastrelid AS toast FROM pg_class WHERE oid = 'zs.t'::regclass \gset
CALL zorder.optimize(:toast);
SELECT zorder.clear_keys(:toast);
SELECT count(*) FROM zorder.clustering_information(:toast);
-- an index
CALL zorder.optimize('zs.t_pkey');
SELECT zorder.clear_keys('zs.t_pkey');
SELECT count(*) FROM zorder.clustering_information('zs.t_pkey');
SELECT count(*) FROM zorder.suggest_pages_per_range('zs.t_pkey');
-- nothing was declared by any of the above
SELECT count(*) AS declared FROM zorder.clustered_tables
WHERE "table" IN ('zs_ft'::regclass, 'zs.t_pkey'::regclass, :toast::regclass);

-- A partition cannot lack a key column: it has all of its parent's
-- columns.  A partitioned table with a foreign partition: the foreign one
-- is skipped.
CREATE TABLE zs_pf (id int, a int, b int) PARTITION BY RANGE (id);
CREATE TABLE zs_pf1 PARTITION OF zs_pf FOR VALUES FROM (0) TO (100);
ALTER TABLE zs_pf ATTACH PARTITION zs_ft FOR VALUES FROM (100) TO (200);
-- a partition whose columns sit at other attribute numbers: keys follow
-- the names
CREATE TABLE zs_pf2 (junk text, b int, id int, a int);
ALTER TABLE zs_pf2 DROP COLUMN junk;
ALTER TABLE zs_pf ATTACH PARTITION zs_pf2 FOR VALUES FROM (200) TO (300);
INSERT INTO zs_pf SELECT g, g % 13, g % 11 FROM generate_series(0, 99) g;
INSERT INTO zs_pf SELECT g, g % 13, g % 11 FROM generate_series(200, 299) g;
CREATE TABLE zs_pf_copy AS SELECT * FROM zs_pf;
SELECT zorder.cluster_by('zs_pf', 'a', 'b');
CALL zorder.optimize('zs_pf');
SELECT "table", keys FROM zorder.clustered_tables WHERE "table"::text LIKE 'zs_pf%' ORDER BY 1;
SELECT relid::regclass, keys FROM zorder.layouts WHERE relid::regclass::text LIKE 'zs_pf%' ORDER BY 1;
SELECT (SELECT count(*) FROM (TABLE zs_pf_copy EXCEPT ALL TABLE zs_pf) d) AS missing,
	   (SELECT count(*) FROM (TABLE zs_pf EXCEPT ALL TABLE zs_pf_copy) d) AS extra;

-- an unlogged table: full, then incremental, then in a rolled-back
-- transaction block
CREATE UNLOGGED TABLE zs_u (id int PRIMARY KEY, a int, b int);
INSERT INTO zs_u SELECT g, (g * 37) % 101, (g * 53) % 103 FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('zs_u', 'a', 'b');
-- asked for an incremental optimize, a table without a layout gets a full one
SELECT pg_relation_filenode('zs_u') AS u_filenode \gset
CALL zorder.optimize('zs_u');
SELECT pg_relation_filenode('zs_u') <> :u_filenode AS rewritten,
	   (SELECT string_agg(mode, ',') FROM zorder.optimize_history WHERE "table" = 'zs_u'::regclass) AS modes,
	   (SELECT relpersistence FROM pg_class WHERE oid = 'zs_u'::regclass);
INSERT INTO zs_u SELECT g, (g * 37) % 101, (g * 53) % 103 FROM generate_series(1001, 1200) g;
CALL zorder.optimize('zs_u');
SELECT mode, rows_moved FROM zorder.optimize_history WHERE "table" = 'zs_u'::regclass ORDER BY started_at;
INSERT INTO zs_u SELECT g, (g * 37) % 101, (g * 53) % 103 FROM generate_series(1201, 1300) g;
SELECT pg_relation_filenode('zs_u') AS u_filenode \gset
BEGIN;
CALL zorder.optimize('zs_u');
CALL zorder.optimize('zs_u', full => true);
ROLLBACK;
SELECT pg_relation_filenode('zs_u') = :u_filenode AS same_file,
	   (SELECT count(*) FROM zorder.optimize_history WHERE "table" = 'zs_u'::regclass) AS optimizations,
	   count(*), sum(id), sum(a), sum(b) FROM zs_u;
SELECT count(*) AS heap_problems FROM verify_heapam('zs_u');
SELECT bt_index_check('zs_u_pkey', true);

-- DROP EXTENSION with tables that have keys, layouts and runs: the tables
-- are untouched, and a new CREATE EXTENSION starts with no keys
DROP FUNCTION zs_exercise();
SELECT count(*) AS keys_of_zs_u FROM zorder.tables WHERE relid = 'zs_u'::regclass;
SELECT count(*), sum(id), sum(a), sum(b) FROM zs_u;
SELECT pg_relation_filenode('zs_u') AS u_filenode \gset
DROP EXTENSION zorder;
SELECT count(*) AS zorder_relations FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'zorder';
SELECT pg_relation_filenode('zs_u') = :u_filenode AS same_file,
	   count(*), sum(id), sum(a), sum(b) FROM zs_u;
SELECT count(*) AS heap_problems FROM verify_heapam('zs_u');
-- dropping a table without the extension's event trigger works
DROP TABLE zs_pf_copy;
CREATE EXTENSION zorder;
SELECT count(*) AS tables_with_keys FROM zorder.tables;
SELECT count(*) AS layouts FROM zorder.layouts;
CALL zorder.optimize('zs_u');
SELECT zorder.cluster_by('zs_u', 'b', 'a');
CALL zorder.optimize('zs_u');
SELECT mode FROM zorder.optimize_history WHERE "table" = 'zs_u'::regclass;
SELECT count(*), sum(id), sum(a), sum(b) FROM zs_u;

-- clean up
DROP TABLE zs_u, zs_pf, zs_t_copy, zs_p_copy, zs_secret;
DROP SERVER zs_files CASCADE;
DROP EXTENSION file_fdw;
DROP SCHEMA zs, zs_evil CASCADE;
DROP ROLE regress_zs_owner, regress_zs_other, regress_zs_member,
	regress_zs_noinherit, regress_zs_reader;
