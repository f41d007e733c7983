-- Hardening: the extension owns its schema and nothing a role can name runs
-- as a superuser; the catalog views are security barriers; cluster_by and
-- clear_keys on a partitioned table need every partition's owner; catalog
-- rows of temporary tables dropped without an event trigger are not
-- inherited by a later table with the same OID.
SET search_path = public;
SET client_min_messages = notice;
SELECT current_database() AS db \gset
CREATE ROLE regress_zh_mallory;
GRANT CREATE ON DATABASE :"db" TO regress_zh_mallory;

-- ---------------------------------------------------------------------
-- A schema zorder created beforehand by another role is refused
-- ---------------------------------------------------------------------
DROP EXTENSION zorder;
SET ROLE regress_zh_mallory;
CREATE SCHEMA zorder;
RESET ROLE;
-- (no context: from 18 on it also quotes the extension script)
\set VERBOSITY default
\set SHOW_CONTEXT never
CREATE EXTENSION zorder;
\set SHOW_CONTEXT errors
\set VERBOSITY terse
-- the attack of issue 11, carried on whatever the outcome: the schema
-- zorder is moved aside and replaced by one whose "tables" has a trigger
SET ROLE regress_zh_mallory;
ALTER SCHEMA zorder RENAME TO zorder_moved;
CREATE SCHEMA zorder;
CREATE TABLE zorder.tables (relid oid, keys int2[]);
CREATE TABLE zorder.layouts (relid oid);
CREATE TABLE zorder.runs (relid oid);
CREATE TABLE zorder.history (relid oid);
CREATE TABLE zorder.temp_relations (relid oid, session text, incarnation bigint);
CREATE FUNCTION zorder.grab() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN ALTER ROLE regress_zh_mallory SUPERUSER; RETURN NULL; END$$;
CREATE TRIGGER grab AFTER DELETE ON zorder.tables
	FOR EACH STATEMENT EXECUTE FUNCTION zorder.grab();
RESET ROLE;
CREATE TABLE zh_junk (a int);
DROP TABLE zh_junk;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_zh_mallory';
ALTER ROLE regress_zh_mallory NOSUPERUSER;
DROP SCHEMA zorder, zorder_moved CASCADE;
DROP EXTENSION IF EXISTS zorder;
CREATE EXTENSION zorder;
SELECT nspowner::regrole AS owner,
	   EXISTS (SELECT FROM pg_depend d
			   WHERE d.classid = 'pg_namespace'::regclass AND d.objid = n.oid
				 AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zorder')
				 AND d.deptype = 'e') AS member_of_extension
FROM pg_namespace n WHERE nspname = 'zorder';

-- ---------------------------------------------------------------------
-- The extension's schema renamed by mistake: another role takes the name,
-- and still nothing of theirs runs as the superuser
-- ---------------------------------------------------------------------
CREATE TABLE zh_keep (a int, b int);
INSERT INTO zh_keep SELECT g % 17, g % 23 FROM generate_series(1, 500) g;
SELECT zorder.cluster_by('zh_keep', 'a', 'b');
ALTER SCHEMA zorder RENAME TO zorder_renamed;
SET ROLE regress_zh_mallory;
CREATE SCHEMA zorder;
CREATE TABLE zorder.tables (relid oid, keys int2[]);
CREATE TABLE zorder.layouts (relid oid);
CREATE TABLE zorder.runs (relid oid);
CREATE TABLE zorder.history (relid oid);
CREATE TABLE zorder.temp_relations (relid oid, session text, incarnation bigint);
INSERT INTO zorder.tables SELECT 'zh_keep'::regclass, '{2}';
CREATE FUNCTION zorder.grab() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN ALTER ROLE regress_zh_mallory SUPERUSER; RETURN NULL; END$$;
CREATE TRIGGER grab AFTER DELETE ON zorder.tables
	FOR EACH STATEMENT EXECUTE FUNCTION zorder.grab();
CREATE TRIGGER grab_ins AFTER INSERT OR UPDATE ON zorder.tables
	FOR EACH STATEMENT EXECUTE FUNCTION zorder.grab();
RESET ROLE;
CREATE TABLE zh_junk (a int);
\set VERBOSITY default
DROP TABLE zh_junk;
\set VERBOSITY terse
SELECT zorder_renamed.cluster_by('zh_keep', 'b');
CALL zorder_renamed.optimize('zh_keep');
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_zh_mallory';
-- put things right: the other role's schema out of the way first (while
-- the name is wrong, even DROP refuses to run the event trigger)
ALTER SCHEMA zorder RENAME TO zorder_mallory;
ALTER SCHEMA zorder_renamed RENAME TO zorder;
DROP SCHEMA zorder_mallory CASCADE;
-- the schema given away: its new owner could rename it
ALTER SCHEMA zorder OWNER TO regress_zh_mallory;
SELECT zorder.cluster_by('zh_keep', 'b');
ALTER SCHEMA zorder OWNER TO CURRENT_USER;
SELECT keys FROM zorder.clustered_tables WHERE "table" = 'zh_keep'::regclass;
DROP TABLE zh_keep;
SELECT count(*) AS rows_of_dropped FROM zorder.tables t
WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = t.relid);

-- ---------------------------------------------------------------------
-- The catalog views: a cheap leaky function sees only readable tables
-- ---------------------------------------------------------------------
CREATE ROLE regress_zh_peeker;
CREATE TABLE zh_secret (a int, b int);
CREATE TABLE zh_open (a int, b int);
INSERT INTO zh_secret SELECT g % 31, g % 37 FROM generate_series(1, 1000) g;
INSERT INTO zh_open SELECT g % 31, g % 37 FROM generate_series(1, 1000) g;
GRANT SELECT ON zh_open TO regress_zh_peeker;
SELECT zorder.cluster_by('zh_secret', 'a', 'b'), zorder.cluster_by('zh_open', 'a', 'b');
CALL zorder.optimize('zh_secret', full => true);
CALL zorder.optimize('zh_open', full => true);
SET ROLE regress_zh_peeker;
CREATE FUNCTION pg_temp.peek(regclass) RETURNS boolean
	LANGUAGE plpgsql COST 0.0000001 AS
$$BEGIN RAISE NOTICE 'peek saw %', $1; RETURN true; END$$;
SELECT count(*) FROM zorder.clustered_tables WHERE pg_temp.peek("table");
SELECT count(*) FROM zorder.optimize_history WHERE pg_temp.peek("table");
SELECT count(*) FROM zorder.sorted_runs WHERE pg_temp.peek("table");
RESET ROLE;
SELECT c.relname, c.reloptions FROM pg_class c
WHERE c.relnamespace = 'zorder'::regnamespace AND c.relkind = 'v' ORDER BY 1;

-- ---------------------------------------------------------------------
-- cluster_by and clear_keys on a partitioned table whose partition
-- belongs to another role
-- ---------------------------------------------------------------------
CREATE ROLE regress_zh_parent;
CREATE ROLE regress_zh_part;
CREATE TABLE zh_p (k int, v int) PARTITION BY RANGE (k);
ALTER TABLE zh_p OWNER TO regress_zh_parent;
CREATE TABLE zh_p1 (k int, v int);
ALTER TABLE zh_p1 OWNER TO regress_zh_part;
ALTER TABLE zh_p ATTACH PARTITION zh_p1 FOR VALUES FROM (0) TO (1000);
CREATE TABLE zh_p2 PARTITION OF zh_p FOR VALUES FROM (1000) TO (2000);
ALTER TABLE zh_p2 OWNER TO regress_zh_parent;
INSERT INTO zh_p SELECT g, g % 7 FROM generate_series(0, 1999) g;
SET ROLE regress_zh_part;
SELECT zorder.cluster_by('zh_p1', 'v', 'k');
CALL zorder.optimize('zh_p1', full => true);
RESET ROLE;
SELECT (SELECT count(*) FROM zorder.tables WHERE relid = 'zh_p1'::regclass) AS p1_keys,
	   (SELECT count(*) FROM zorder.layouts WHERE relid = 'zh_p1'::regclass) AS p1_layouts,
	   (SELECT count(*) FROM zorder.runs WHERE relid = 'zh_p1'::regclass) AS p1_runs;
SET ROLE regress_zh_parent;
SELECT zorder.cluster_by('zh_p', 'k');
SELECT zorder.clear_keys('zh_p');
RESET ROLE;
SELECT (SELECT keys FROM zorder.tables WHERE relid = 'zh_p1'::regclass) AS p1_keys,
	   (SELECT count(*) FROM zorder.layouts WHERE relid = 'zh_p1'::regclass) AS p1_layouts,
	   (SELECT count(*) FROM zorder.runs WHERE relid = 'zh_p1'::regclass) AS p1_runs,
	   (SELECT count(*) FROM zorder.tables WHERE relid = 'zh_p'::regclass) AS parent_keys;
-- owning every partition, the parent's owner may
ALTER TABLE zh_p1 OWNER TO regress_zh_parent;
SET ROLE regress_zh_parent;
SELECT zorder.cluster_by('zh_p', 'k');
RESET ROLE;
SELECT relid::regclass, keys FROM zorder.tables
WHERE relid IN ('zh_p'::regclass, 'zh_p1'::regclass) ORDER BY 1;

-- ---------------------------------------------------------------------
-- Temporary tables dropped without an event trigger (ON COMMIT DROP, the
-- end of the session, DISCARD): their rows stay, and a later table that
-- gets the same OID must not inherit them.  The OID's reuse is played by
-- moving the rows to a new table's OID, as a wrapped OID counter would.
-- ---------------------------------------------------------------------
CREATE FUNCTION zh_reuse_oid(old oid, new oid) RETURNS void
	LANGUAGE plpgsql AS
$$BEGIN
	UPDATE zorder.tables SET relid = new WHERE relid = old;
	UPDATE zorder.layouts SET relid = new WHERE relid = old;
	UPDATE zorder.runs SET relid = new WHERE relid = old;
	UPDATE zorder.history SET relid = new WHERE relid = old;
	IF to_regclass('zorder.temp_relations') IS NOT NULL THEN
		EXECUTE 'UPDATE zorder.temp_relations SET relid = $2 WHERE relid = $1'
			USING old, new;
	END IF;
END$$;
CREATE FUNCTION zh_catalog_rows(rel oid) RETURNS text
	LANGUAGE sql AS
$$SELECT format('keys %s, layouts %s, runs %s, history %s',
	(SELECT count(*) FROM zorder.tables WHERE relid = rel),
	(SELECT count(*) FROM zorder.layouts WHERE relid = rel),
	(SELECT count(*) FROM zorder.runs WHERE relid = rel),
	(SELECT count(*) FROM zorder.history WHERE relid = rel))$$;
-- ON COMMIT DROP; the OID taken over by a permanent table
BEGIN;
CREATE TEMP TABLE zh_tmp (a int, b int) ON COMMIT DROP;
INSERT INTO zh_tmp SELECT g % 13, g % 11 FROM generate_series(1, 300) g;
SELECT zorder.cluster_by('zh_tmp', 'b', 'a');
CALL zorder.optimize('zh_tmp', full => true);
SELECT 'zh_tmp'::regclass::oid AS tmp_oid \gset
COMMIT;
SELECT zh_catalog_rows(:tmp_oid) AS left_behind;
CREATE TABLE zh_heir (a int, b int);
INSERT INTO zh_heir SELECT g % 13, g % 11 FROM generate_series(1, 300) g;
SELECT zh_reuse_oid(:tmp_oid, 'zh_heir'::regclass);
SELECT count(*) AS shown FROM zorder.clustered_tables WHERE "table" = 'zh_heir'::regclass;
SELECT count(*) AS shown FROM zorder.optimize_history WHERE "table" = 'zh_heir'::regclass;
SELECT count(*) AS shown FROM zorder.sorted_runs WHERE "table" = 'zh_heir'::regclass;
CALL zorder.optimize('zh_heir');
SELECT count(*) AS key_rows FROM zorder.clustering_information('zh_heir', 10);
-- declaring keys starts afresh: no layout, no runs, no history inherited
SELECT zorder.cluster_by('zh_heir', 'a');
SELECT zh_catalog_rows('zh_heir'::regclass) AS after_cluster_by;
CALL zorder.optimize('zh_heir');
SELECT mode FROM zorder.optimize_history WHERE "table" = 'zh_heir'::regclass;
SELECT count(*), sum(a), sum(b) FROM zh_heir;
DROP TABLE zh_heir;
-- the end of the session; the OID taken over by a temporary table of a
-- later session
CREATE TEMP TABLE zh_tmp2 (a int, b int);
INSERT INTO zh_tmp2 SELECT g % 13, g % 11 FROM generate_series(1, 300) g;
SELECT zorder.cluster_by('zh_tmp2', 'b', 'a');
CALL zorder.optimize('zh_tmp2', full => true);
SELECT 'zh_tmp2'::regclass::oid AS tmp2_oid \gset
\c
SET search_path = public;
\set VERBOSITY terse
SELECT zh_catalog_rows(:tmp2_oid) AS left_behind;
CREATE TEMP TABLE zh_heir2 (a int, b int);
INSERT INTO zh_heir2 SELECT g % 13, g % 11 FROM generate_series(1, 300) g;
SELECT zh_reuse_oid(:tmp2_oid, 'zh_heir2'::regclass);
SELECT count(*) AS shown FROM zorder.clustered_tables WHERE "table" = 'zh_heir2'::regclass;
SELECT count(*) AS shown FROM zorder.optimize_history WHERE "table" = 'zh_heir2'::regclass;
CALL zorder.optimize('zh_heir2');
SELECT zorder.cluster_by('zh_heir2', 'a');
SELECT zh_catalog_rows('zh_heir2'::regclass) AS after_cluster_by;
CALL zorder.optimize('zh_heir2');
SELECT mode FROM zorder.optimize_history WHERE "table" = 'zh_heir2'::regclass;
SELECT count(*) AS shown FROM zorder.clustered_tables WHERE "table" = 'zh_heir2'::regclass;
-- DISCARD TEMP leaves rows too
CREATE TEMP TABLE zh_tmp3 (a int, b int);
SELECT zorder.cluster_by('zh_tmp3', 'a');
SELECT 'zh_tmp3'::regclass::oid AS tmp3_oid \gset
DISCARD TEMP;
CREATE TABLE zh_heir3 (a int, b int);
SELECT zh_reuse_oid(:tmp3_oid, 'zh_heir3'::regclass);
SELECT count(*) AS shown FROM zorder.clustered_tables WHERE "table" = 'zh_heir3'::regclass;
CALL zorder.optimize('zh_heir3');
DROP TABLE zh_heir3;

-- clean up
DROP TABLE zh_secret, zh_open, zh_p;
DROP FUNCTION zh_reuse_oid(oid, oid), zh_catalog_rows(oid);
REVOKE CREATE ON DATABASE :"db" FROM regress_zh_mallory;
DROP ROLE regress_zh_mallory, regress_zh_peeker, regress_zh_parent, regress_zh_part;
