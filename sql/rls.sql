-- Row-level security and column privileges: the functions that read rows
-- or BRIN summaries (clustering_information and its _json wrapper,
-- ranges_touched) answer only a caller who could SELECT what they read;
-- suggest_pages_per_range uses only statistics pg_stats would show.
-- A role subject to row-level security learns nothing from hidden rows.
SET search_path = public;

CREATE ROLE regress_zrls_owner;
-- sees its own rows only
CREATE ROLE regress_zrls_reader;
-- not subject to row-level security
CREATE ROLE regress_zrls_bypass BYPASSRLS;
-- SELECT on some columns only
CREATE ROLE regress_zrls_cols;
-- no privilege at all
CREATE ROLE regress_zrls_nobody;
CREATE SCHEMA zrls AUTHORIZATION regress_zrls_owner;
GRANT USAGE ON SCHEMA zrls TO PUBLIC;

-- k runs 1 .. 1000 twice over the reader's rows; one row of another role,
-- in the middle of the table, holds k = 123457.
SET ROLE regress_zrls_owner;
CREATE TABLE zrls.t (id int, k int, tag text, who name)
	WITH (autovacuum_enabled = false);
INSERT INTO zrls.t SELECT g, g, repeat(md5(g::text), 4), 'regress_zrls_reader'
FROM generate_series(1, 1000) g;
INSERT INTO zrls.t VALUES (1001, 123457, 'secret', 'regress_zrls_owner');
INSERT INTO zrls.t SELECT g, g - 1001, repeat(md5(g::text), 4), 'regress_zrls_reader'
FROM generate_series(1002, 2001) g;
-- the index also summarizes who, which some roles may not read
CREATE INDEX t_brin ON zrls.t USING brin (k, who) WITH (pages_per_range = 2);
SELECT zorder.cluster_by('zrls.t', 'k', 'tag');
ALTER TABLE zrls.t ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON zrls.t USING (who = current_user);
GRANT SELECT ON zrls.t TO regress_zrls_reader, regress_zrls_bypass;
-- suggest_pages_per_range without statistics: varlena keys get the
-- default width
CREATE TABLE zrls.no_stats AS
	SELECT * FROM zorder.suggest_pages_per_range('zrls.t');
ANALYZE zrls.t;
CREATE TABLE zrls.owner_stats AS
	SELECT * FROM zorder.suggest_pages_per_range('zrls.t');
GRANT SELECT ON zrls.no_stats, zrls.owner_stats TO PUBLIC;
RESET ROLE;

-- ---------------------------------------------------------------------
-- A role subject to the policies
-- ---------------------------------------------------------------------
SET ROLE regress_zrls_reader;
SELECT count(*), max(k) FROM zrls.t;
-- the attack: bisection on value and upper with one page per range finds
-- the largest k of the table, hidden or not
DO $$
DECLARE
	lo bigint := 1001;
	hi bigint := 1000000000;
	mid bigint;
BEGIN
	WHILE lo < hi LOOP
		mid := (lo + hi + 1) / 2;
		IF zorder.ranges_touched('zrls.t', 'k', mid::text, '1000000000',
								 pages_per_range => 1) > 0 THEN
			lo := mid;
		ELSE
			hi := mid - 1;
		END IF;
	END LOOP;
	RAISE NOTICE 'largest k: %', lo;
END
$$;
-- every function that reads rows or summaries refuses, through the BRIN
-- index or the heap alike
SELECT zorder.ranges_touched('zrls.t', 'k', '123457');
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1);
SELECT zorder.ranges_touched('zrls.t', 'id', '1001');
SELECT column_name FROM zorder.clustering_information('zrls.t');
SELECT zorder.clustering_information_json('zrls.t');
-- suggest_pages_per_range answers as without statistics: pg_stats hides
-- them from this role
SELECT count(*) FROM pg_stats WHERE schemaname = 'zrls' AND tablename = 't';
SELECT (SELECT array_agg(index_pages ORDER BY pages_per_range)
		FROM zorder.suggest_pages_per_range('zrls.t')) =
	   (SELECT array_agg(index_pages ORDER BY pages_per_range)
		FROM zrls.no_stats) AS as_without_stats;
-- with row_security off, a query fails, and so do the functions
SET row_security = off;
SELECT count(*) FROM zrls.t;
SELECT zorder.ranges_touched('zrls.t', 'k', '1');
RESET row_security;
RESET ROLE;

-- ---------------------------------------------------------------------
-- Roles that row-level security does not apply to: the full report
-- ---------------------------------------------------------------------
SET ROLE regress_zrls_owner;
-- the statistics differ from the defaults (the test above compares with
-- something)
SELECT (SELECT array_agg(index_pages ORDER BY pages_per_range)
		FROM zorder.suggest_pages_per_range('zrls.t')) =
	   (SELECT array_agg(index_pages ORDER BY pages_per_range)
		FROM zrls.owner_stats) AS owner_figures,
	   (SELECT array_agg(index_pages ORDER BY pages_per_range) FROM zrls.owner_stats) <>
	   (SELECT array_agg(index_pages ORDER BY pages_per_range) FROM zrls.no_stats) AS stats_matter;
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1) AS hidden_row_range,
	   zorder.ranges_touched('zrls.t', 'k', '123457') AS from_index;
SELECT key_position, column_name, brin_index, probes_used
FROM zorder.clustering_information('zrls.t', 0) ORDER BY key_position;
SELECT zorder.clustering_information_json('zrls.t', 0) -> 'keys' AS keys;
RESET ROLE;
SET ROLE regress_zrls_bypass;
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1) AS hidden_row_range;
SELECT count(*) AS key_rows FROM zorder.clustering_information('zrls.t');
RESET ROLE;
-- a superuser
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1) AS hidden_row_range;
SELECT count(*) AS key_rows FROM zorder.clustering_information('zrls.t');

-- ---------------------------------------------------------------------
-- FORCE ROW LEVEL SECURITY: the owner is subject to the policies, as a
-- query of the owner is; with row_security off, a query fails, so do we
-- ---------------------------------------------------------------------
SET ROLE regress_zrls_owner;
ALTER TABLE zrls.t FORCE ROW LEVEL SECURITY;
SELECT count(*) FROM zrls.t;
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1);
SELECT count(*) FROM zorder.clustering_information('zrls.t');
SELECT count(*) FROM zorder.suggest_pages_per_range('zrls.t');
SET row_security = off;
SELECT count(*) FROM zrls.t;
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1) AS hidden_row_range;
SELECT count(*) AS key_rows FROM zorder.clustering_information('zrls.t');
RESET row_security;
ALTER TABLE zrls.t NO FORCE ROW LEVEL SECURITY;
-- without row-level security on the table, the reader gets the report
ALTER TABLE zrls.t DISABLE ROW LEVEL SECURITY;
RESET ROLE;
SET ROLE regress_zrls_reader;
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1) AS hidden_row_range;
SELECT count(*) AS key_rows FROM zorder.clustering_information('zrls.t');
RESET ROLE;

-- ---------------------------------------------------------------------
-- Column privileges: each column read needs SELECT on it, from the table
-- or from a column grant, as in a query
-- ---------------------------------------------------------------------
SET ROLE regress_zrls_owner;
GRANT SELECT (id, k) ON zrls.t TO regress_zrls_cols;
RESET ROLE;
SET ROLE regress_zrls_cols;
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1) AS k_range;
SELECT zorder.ranges_touched('zrls.t', 'id', '1001') AS id_from_heap;
-- tag (a key, read from the heap) and who (in the BRIN index) are not
-- granted
SELECT zorder.ranges_touched('zrls.t', 'tag', 'x');
SELECT zorder.ranges_touched('zrls.t', 'who', 'regress_zrls_owner');
SELECT count(*) FROM zorder.clustering_information('zrls.t');
SELECT zorder.clustering_information_json('zrls.t');
-- pg_stats shows k, not tag; so does suggest_pages_per_range use them
SELECT attname FROM pg_stats WHERE schemaname = 'zrls' AND tablename = 't' ORDER BY 1;
SELECT (SELECT array_agg(index_pages ORDER BY pages_per_range)
		FROM zorder.suggest_pages_per_range('zrls.t')) =
	   (SELECT array_agg(index_pages ORDER BY pages_per_range)
		FROM zrls.no_stats) AS as_without_stats;
RESET ROLE;
SET ROLE regress_zrls_owner;
GRANT SELECT (tag) ON zrls.t TO regress_zrls_cols;
RESET ROLE;
SET ROLE regress_zrls_cols;
SELECT key_position, column_name, probes_used
FROM zorder.clustering_information('zrls.t', 0) ORDER BY key_position;
RESET ROLE;
-- row-level security applies to column grants too
SET ROLE regress_zrls_owner;
ALTER TABLE zrls.t ENABLE ROW LEVEL SECURITY;
RESET ROLE;
SET ROLE regress_zrls_cols;
SELECT zorder.ranges_touched('zrls.t', 'k', '123457', pages_per_range => 1);
RESET ROLE;
-- no privilege on any column: refused before the table is locked
SET ROLE regress_zrls_nobody;
SELECT zorder.ranges_touched('zrls.t', 'k', '1');
SELECT count(*) FROM zorder.clustering_information('zrls.t');
SELECT count(*) FROM zorder.suggest_pages_per_range('zrls.t');
RESET ROLE;

-- ---------------------------------------------------------------------
-- Partitions: a partition is read with its own privileges and policies,
-- as a query on it is; SELECT on the parent does not reach it
-- ---------------------------------------------------------------------
SET ROLE regress_zrls_owner;
CREATE TABLE zrls.p (k int, who name) PARTITION BY RANGE (k);
CREATE TABLE zrls.p1 PARTITION OF zrls.p FOR VALUES FROM (0) TO (1000000);
INSERT INTO zrls.p VALUES (1, 'regress_zrls_reader'), (123457, 'regress_zrls_owner');
SELECT zorder.cluster_by('zrls.p', 'k');
ALTER TABLE zrls.p ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON zrls.p USING (who = current_user);
GRANT SELECT ON zrls.p TO regress_zrls_reader;
RESET ROLE;
SET ROLE regress_zrls_reader;
SELECT k FROM zrls.p;
SELECT zorder.ranges_touched('zrls.p1', 'k', '123457');
SELECT count(*) FROM zorder.clustering_information('zrls.p1');
RESET ROLE;
SET ROLE regress_zrls_owner;
ALTER TABLE zrls.p1 ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON zrls.p1 USING (who = current_user);
GRANT SELECT ON zrls.p1 TO regress_zrls_reader;
RESET ROLE;
SET ROLE regress_zrls_reader;
SELECT k FROM zrls.p1;
SELECT zorder.ranges_touched('zrls.p1', 'k', '123457');
RESET ROLE;

DROP SCHEMA zrls CASCADE;
DROP ROLE regress_zrls_owner;
DROP ROLE regress_zrls_reader;
DROP ROLE regress_zrls_bypass;
DROP ROLE regress_zrls_cols;
DROP ROLE regress_zrls_nobody;
