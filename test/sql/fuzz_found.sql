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
