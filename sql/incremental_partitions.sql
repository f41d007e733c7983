-- Incremental optimize of a partitioned table outside a transaction block:
-- each partition's moves commit on their own, in every partition, not only
-- in the first one.  No row is lost either way.
SET search_path = public;
-- cubes only here: merges into the main run are tested in merge.sql
SET zorder.merge_threshold = 1;
-- cubes: placement into the main run's ranges is tested in incremental_placement.sql
SET zorder.placement = off;

CREATE TABLE ip (id int PRIMARY KEY, a int, b int) PARTITION BY RANGE (id);
CREATE TABLE ip1 PARTITION OF ip FOR VALUES FROM (-1000) TO (1000);
CREATE TABLE ip2 PARTITION OF ip FOR VALUES FROM (1000) TO (2000);
INSERT INTO ip SELECT g, g % 97, g % 89 FROM generate_series(0, 999) g;
INSERT INTO ip SELECT g, g % 97, g % 89 FROM generate_series(1000, 1499) g;
SELECT zorder.cluster_by('ip', 'a', 'b');
CALL zorder.optimize('ip');

-- new rows in the second partition only
INSERT INTO ip SELECT g, g % 97, g % 89 FROM generate_series(1500, 1599) g;
CALL zorder.optimize('ip');
-- new rows in both, moved in batches of 30
INSERT INTO ip SELECT g, g % 97, g % 89 FROM generate_series(-100, -1) g;
INSERT INTO ip SELECT g, g % 97, g % 89 FROM generate_series(1600, 1699) g;
SET zorder.max_batch_size = 30;
CALL zorder.optimize('ip');
RESET zorder.max_batch_size;

SELECT relid::regclass AS partition, mode, rows_moved, runs_merged, runs_after
FROM zorder.history WHERE relid IN ('ip1'::regclass, 'ip2'::regclass)
ORDER BY started_at;
SELECT count(*), sum(id), sum(a), sum(b) FROM ip;
SELECT count(*) AS heap_problems
FROM (SELECT * FROM verify_heapam('ip1') UNION ALL SELECT * FROM verify_heapam('ip2')) v;
SELECT bt_index_check('ip1_pkey', true), bt_index_check('ip2_pkey', true);

DROP TABLE ip;
