-- A full optimize moves every row, yet a logical decoding slot sees no row
-- changes for the rewritten table: the rewrite writes pages, not inserts.
SET search_path = public, zorder;

CREATE TABLE dtab (id int PRIMARY KEY, a int, b int);
SELECT zorder.cluster_by('dtab', 'a', 'b');
SELECT 'init' FROM pg_create_logical_replication_slot('zorder_slot', 'test_decoding');
INSERT INTO dtab SELECT g, g % 50, g % 31 FROM generate_series(1, 500) g;

-- the inserts are decoded
SELECT count(*) AS inserts FROM pg_logical_slot_get_changes('zorder_slot', NULL, NULL)
WHERE data LIKE 'table public.dtab: INSERT:%';

CALL zorder.optimize('dtab');

-- the rewrite is not
SELECT count(*) AS row_changes FROM pg_logical_slot_get_changes('zorder_slot', NULL, NULL)
WHERE data LIKE 'table public.dtab:%';

-- and later changes still are
UPDATE dtab SET b = -b WHERE id <= 3;
SELECT data FROM pg_logical_slot_get_changes('zorder_slot', NULL, NULL)
WHERE data LIKE 'table public.dtab:%' ORDER BY data;

SELECT count(*) AS heap_problems FROM verify_heapam('dtab');
SELECT pg_drop_replication_slot('zorder_slot');
DROP TABLE dtab;
