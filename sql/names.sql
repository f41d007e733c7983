-- Objects are found by OID, not by names printed into SQL: the BRIN index
-- optimize creates, and the publications that refuse incremental moves.
SET search_path = public;
SET zorder.merge_threshold = 1;
-- cubes: placement into the main run's ranges is tested in incremental_placement.sql
SET zorder.placement = off;

-- The BRIN index is created as the table's owner, on the table's OID: an
-- owner who may create in the schema but no longer look names up in it
-- (USAGE revoked) gets the index, as ALTER TABLE ADD CONSTRAINT would.
-- Through "CREATE INDEX ON nm.t" it failed after the whole rewrite with
-- "permission denied for schema nm".
CREATE ROLE zorder_names_owner;
CREATE SCHEMA nm;
GRANT USAGE, CREATE ON SCHEMA nm TO zorder_names_owner;
CREATE TABLE nm.t (a int, b int);
ALTER TABLE nm.t OWNER TO zorder_names_owner;
INSERT INTO nm.t SELECT g % 97, g % 89 FROM generate_series(1, 2000) g;
SELECT zorder.cluster_by('nm.t', 'a', 'b');
REVOKE USAGE ON SCHEMA nm FROM zorder_names_owner;
SET zorder.create_brin = on;
SET zorder.brin_pages_per_range = 4;
CALL zorder.optimize('nm.t');
SELECT c.relname, pg_get_indexdef(i.indexrelid), c.relowner::regrole
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'nm.t'::regclass;
SELECT pages_per_range FROM zorder.layouts WHERE relid = 'nm.t'::regclass;
-- without CREATE on the schema, nothing is created: the rewrite is undone
REVOKE CREATE ON SCHEMA nm FROM zorder_names_owner;
DROP INDEX nm.t_a_b_idx;
CALL zorder.optimize('nm.t', full => true);
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'nm.t'::regclass;
RESET zorder.create_brin;
RESET zorder.brin_pages_per_range;
DROP TABLE nm.t;
DROP SCHEMA nm;
DROP ROLE zorder_names_owner;

-- A partition published through its root (publish_via_partition_root):
-- pg_publication_tables lists the root, not the partition, so a lookup of
-- the partition's name there missed it and moved rows that an insert-only
-- subscriber would then hold twice.
CREATE TABLE pv (id int, a int, b int) PARTITION BY RANGE (id);
CREATE TABLE pv1 PARTITION OF pv FOR VALUES FROM (0) TO (100000);
INSERT INTO pv SELECT g, g % 97, g % 89 FROM generate_series(0, 999) g;
SELECT zorder.cluster_by('pv', 'a', 'b');
CALL zorder.optimize('pv');
SET client_min_messages = error;	-- wal_level may be too low to publish
CREATE PUBLICATION zorder_pub_root FOR TABLE pv
	WITH (publish = 'insert', publish_via_partition_root = true);
RESET client_min_messages;
INSERT INTO pv SELECT g, g % 97, g % 89 FROM generate_series(1000, 1099) g;
CREATE TABLE pv_before AS SELECT ctid AS tid, * FROM pv1;
CALL zorder.optimize('pv');
SELECT count(*) AS moved FROM pv1 p JOIN pv_before b USING (id) WHERE p.ctid <> b.tid;
SELECT mode, rows_moved FROM zorder.history WHERE relid = 'pv1'::regclass
ORDER BY started_at;
-- the same through the partition itself
ALTER PUBLICATION zorder_pub_root SET (publish_via_partition_root = false);
CALL zorder.optimize('pv');
DROP PUBLICATION zorder_pub_root;

-- publications of the schema (of an ancestor, here), and of all tables
CREATE SCHEMA pubs;
ALTER TABLE pv SET SCHEMA pubs;		-- pv1 stays in public
SET client_min_messages = error;
CREATE PUBLICATION zorder_pub_schema FOR TABLES IN SCHEMA pubs
	WITH (publish = 'insert, update');
RESET client_min_messages;
CALL zorder.optimize('pubs.pv');
DROP PUBLICATION zorder_pub_schema;
SET client_min_messages = error;
CREATE PUBLICATION zorder_pub_every FOR ALL TABLES WITH (publish = 'delete');
RESET client_min_messages;
ALTER TABLE pv1 REPLICA IDENTITY FULL;
CALL zorder.optimize('pubs.pv');
-- inserts and deletes both: the moves replicate as moves
ALTER PUBLICATION zorder_pub_every SET (publish = 'insert, delete');
CALL zorder.optimize('pubs.pv');
DROP PUBLICATION zorder_pub_every;
SELECT mode, rows_moved FROM zorder.history WHERE relid = 'pv1'::regclass
ORDER BY started_at;
SELECT count(*), sum(id), sum(a), sum(b) FROM pubs.pv;
SELECT count(*) AS heap_problems FROM verify_heapam('pv1');
SELECT count(*) AS missing FROM (SELECT id, a, b FROM pv_before EXCEPT ALL SELECT * FROM pv1) d;
DROP TABLE pubs.pv, pv_before;
DROP SCHEMA pubs;
