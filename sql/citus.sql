-- Tables Citus distributes are refused (src/citus.c), tested without Citus:
-- a stand-in for Citus's catalog table pg_catalog.pg_dist_partition, with
-- the columns zorder reads, lists the tables as Citus would.  With Citus
-- itself, test/t/022_citus.pl runs a coordinator and two workers.
SET search_path = public, zorder;

CREATE TABLE d (id int, a int, b int);
CREATE TABLE r (id int, a int, b int);
CREATE TABLE l (id int, a int, b int);
CREATE TABLE p (id int, a int, b int) PARTITION BY RANGE (id);
CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (100);
CREATE TABLE plain (id int, a int, b int);
INSERT INTO d SELECT i, i % 10, i % 7 FROM generate_series(1, 100) i;
INSERT INTO plain SELECT * FROM d;

-- Without the table, nothing is refused; the lookup that found no table is
-- kept by the syscache and must be forgotten when the table appears.
SELECT zorder.cluster_by('plain', 'a', 'b');
SELECT zorder.clear_keys('d');

SET allow_system_table_mods = on;
CREATE TABLE pg_catalog.pg_dist_partition (logicalrelid regclass NOT NULL,
	partmethod "char" NOT NULL, partkey text, colocationid int NOT NULL,
	repmodel "char" NOT NULL, autoconverted boolean NOT NULL DEFAULT false);
RESET allow_system_table_mods;
INSERT INTO pg_dist_partition VALUES
	('d', 'h', '{VAR}', 1, 's'),
	('r', 'n', NULL, 2, 't'),
	('l', 'n', NULL, 0, 's'),
	('p', 'h', '{VAR}', 3, 's'),
	('p1', 'h', '{VAR}', 3, 's');

-- every public function that takes a table, with the reason and what to do
\set VERBOSITY sqlstate
SELECT zorder.cluster_by('d', 'a', 'b');
\set VERBOSITY default
SELECT zorder.cluster_by('d', 'a', 'b');
SELECT zorder.cluster_by('r', 'a', 'b');
SELECT zorder.cluster_by('l', 'a', 'b');
\set VERBOSITY sqlstate
SELECT zorder.cluster_by('p', 'a', 'b');
SELECT zorder.cluster_by('p1', 'a', 'b');
SELECT zorder.clear_keys('d');
CALL zorder.optimize('d');
CALL zorder.optimize('d', "full" => true);
CALL zorder.optimize('p');
CALL zorder.optimize('p1');
SELECT * FROM zorder.clustering_information('d');
SELECT * FROM zorder.clustering_information('p');
SELECT zorder.clustering_information_json('r');
SELECT zorder.ranges_touched('d', 'a', '1');
SELECT * FROM zorder.suggest_pages_per_range('l');
SELECT * FROM zorder.prepare_layout('d');
SELECT zorder.drop_unused_boundary_sets('d');
\set VERBOSITY default

-- the refusals left nothing in the catalog; other tables work as before
SELECT relid FROM zorder.tables ORDER BY relid::text;
CALL zorder.optimize('plain');
SELECT sorted_runs FROM zorder.clustering_information('plain') LIMIT 1;

-- The privilege checks come first: a role that may not read the table
-- learns nothing more.
CREATE ROLE citus_reader;
\set VERBOSITY sqlstate
SET ROLE citus_reader;
SELECT * FROM zorder.clustering_information('d');
SELECT zorder.cluster_by('d', 'a', 'b');
RESET ROLE;
\set VERBOSITY default

-- Citus gone: d is an ordinary table again.
SET allow_system_table_mods = on;
DROP TABLE pg_catalog.pg_dist_partition;
RESET allow_system_table_mods;
SELECT zorder.cluster_by('d', 'a', 'b');
CALL zorder.optimize('d');
SELECT sorted_runs FROM zorder.clustering_information('d') LIMIT 1;

DROP TABLE d, r, l, p, plain;
DROP ROLE citus_reader;
