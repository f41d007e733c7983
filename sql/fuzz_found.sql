--
-- Calls the fuzz run (test/t/020_fuzz.pl) found to crash the server, each
-- kept here as a plain regression test.
--

-- An empty table laid out, an incremental call, then one that asks for
-- the other curve: the move loop ran once with no rows and no extents, and
-- freed an extent array that had never been allocated (SIGSEGV).
CREATE TABLE fz_empty (a int, b int);
SELECT zorder.cluster_by('fz_empty', 'a', 'b');
CALL zorder.optimize('fz_empty', true);
CALL zorder.optimize('fz_empty');
CALL zorder.optimize('fz_empty', false, 'z');
SELECT curve FROM zorder.clustered_tables WHERE "table" = 'fz_empty'::regclass;
-- and rows arriving afterwards go the new way
INSERT INTO fz_empty SELECT i, -i FROM generate_series(1, 1000) i;
CALL zorder.optimize('fz_empty');
SELECT count(*), sum(a), sum(b) FROM fz_empty;
SELECT count(*) AS corrupt FROM verify_heapam('fz_empty');
DROP TABLE fz_empty;

-- The owner of a partitioned table that does not own one of its partitions
-- deleted that partition's unused boundary sets through the parent.  Like
-- cluster_by, it must own every partition; nothing is deleted otherwise.
CREATE ROLE fz_parent_owner;
CREATE TABLE fz_parted (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE fz_part1 PARTITION OF fz_parted FOR VALUES FROM (0) TO (1000);
INSERT INTO fz_parted SELECT i, -i FROM generate_series(0, 999) i;
SELECT zorder.cluster_by('fz_parted', 'a', 'b');
SELECT count(*) > 0 AS prepared FROM zorder.prepare_layout('fz_part1');
SELECT count(*) > 0 AS prepared FROM zorder.prepare_layout('fz_part1');
ALTER TABLE fz_parted OWNER TO fz_parent_owner;
SET ROLE fz_parent_owner;
SELECT zorder.drop_unused_boundary_sets('fz_parted');
RESET ROLE;
SELECT count(*) AS sets_kept FROM zorder.boundary_sets
WHERE relid = 'fz_part1'::regclass;
-- its owner may
SELECT zorder.drop_unused_boundary_sets('fz_parted');
SELECT count(*) AS sets_kept FROM zorder.boundary_sets
WHERE relid = 'fz_part1'::regclass;
DROP TABLE fz_parted;
DROP ROLE fz_parent_owner;
