-- The planner support (planner.c): with the library preloaded and default
-- planner settings, a table zorder lays out gets its BRIN plan for selective
-- filters on each key and keeps the sequential scan for wide ones; tables it
-- does not lay out keep PostgreSQL's own estimate.  Plans only (COSTS OFF):
-- the filters are chosen far from the point where the two plans cost the
-- same, so that layouts that differ with the table's OID give the same plans.
CREATE SCHEMA zplan;
SET search_path = zplan, public;
SELECT setseed(0.5);
-- ANALYZE samples 300 rows per unit of the statistics target: at 200 it
-- reads every row of these 60,000-row tables, so the statistics, and the
-- plans PostgreSQL's own estimate gives, are the same on every run (a
-- random sample's correlation decided the plan for the table never laid out)
SET default_statistics_target = 200;
SELECT current_setting('shared_preload_libraries') ~ 'zorder' AS preloaded;

-- 60000 rows, keys of 1000 values each, in random order; 4 pages per range
CREATE TABLE ev (a int, b int, ts timestamp, pad text);
INSERT INTO ev
SELECT (random() * 999)::int, (random() * 999)::int,
	   '2026-01-01'::timestamp + random() * interval '100 days', 'x'
FROM generate_series(1, 60000);
CREATE INDEX ev_brin ON ev USING brin (a, b, ts) WITH (pages_per_range = 4);
-- the same rows, never laid out
CREATE TABLE plain AS SELECT * FROM ev;
CREATE INDEX plain_brin ON plain USING brin (a, b, ts) WITH (pages_per_range = 4);
ANALYZE ev, plain;

-- random order: BRIN reads everything, the planner scans
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE a = 500;

SELECT zorder.cluster_by('ev', 'a', 'b', 'ts');
CALL zorder.optimize('ev');
ANALYZE ev;

-- equality on each key, IN, short ranges, two keys: BRIN
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE a = 500;
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE b = 17;
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE ts = '2026-02-01 10:00';
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE a IN (10, 11, 12);
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE b BETWEEN 300 AND 310;
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE ts >= '2026-03-01' AND ts < '2026-03-02';
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE a BETWEEN 100 AND 200 AND b BETWEEN 100 AND 200;
-- wide filters: the scan
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE a > 100;
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE b BETWEEN 100 AND 900;
EXPLAIN (COSTS OFF) SELECT * FROM ev WHERE ts < '2026-04-01';
-- what the plan reads is what it returns
SELECT count(*) FROM ev WHERE a = 500;
SELECT count(*) FROM plain WHERE a = 500;

-- a prepared statement's generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE pa(int) AS SELECT * FROM ev WHERE a = $1;
EXPLAIN (COSTS OFF) EXECUTE pa(500);
PREPARE pr(int, int) AS SELECT * FROM ev WHERE b BETWEEN $1 AND $2;
EXPLAIN (COSTS OFF) EXECUTE pr(300, 310);
RESET plan_cache_mode;

-- a join that filters the laid-out table
CREATE TABLE names (b int PRIMARY KEY, name text);
INSERT INTO names SELECT g, 'name ' || g FROM generate_series(0, 999) g;
ANALYZE names;
EXPLAIN (COSTS OFF)
SELECT n.name, count(*) FROM ev JOIN names n USING (b)
WHERE ev.a = 500 GROUP BY n.name;

-- the table zorder does not lay out: PostgreSQL's estimate, the scan
EXPLAIN (COSTS OFF) SELECT * FROM plain WHERE a = 500;
EXPLAIN (COSTS OFF) SELECT * FROM plain WHERE b = 17;

-- partitions, each laid out
CREATE TABLE pt (a int, b int, pad text) PARTITION BY RANGE (a);
CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (500);
CREATE TABLE pt2 PARTITION OF pt FOR VALUES FROM (500) TO (1000);
INSERT INTO pt SELECT a, b, pad FROM ev;
CREATE INDEX ON pt USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('pt', 'a', 'b');
CALL zorder.optimize('pt');
ANALYZE pt;
EXPLAIN (COSTS OFF) SELECT * FROM pt WHERE b = 17;
EXPLAIN (COSTS OFF) SELECT * FROM pt WHERE a = 700;
EXPLAIN (COSTS OFF) SELECT * FROM pt WHERE b > 100;

-- inheritance: a child laid out, its parent empty
CREATE TABLE inh (a int, b int, pad text);
CREATE TABLE inh_child () INHERITS (inh);
INSERT INTO inh_child SELECT a, b, pad FROM ev;
CREATE INDEX ON inh_child USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('inh_child', 'a', 'b');
CALL zorder.optimize('inh_child');
ANALYZE inh, inh_child;
EXPLAIN (COSTS OFF) SELECT * FROM inh WHERE b = 17;
EXPLAIN (COSTS OFF) SELECT * FROM inh WHERE b > 100;

-- a role that may not read a key column gets PostgreSQL's estimate (which
-- depends on the correlation ANALYZE found, so only the costs are compared)
CREATE FUNCTION brin_cost(query text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
BEGIN
	SET LOCAL enable_seqscan = off;
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
	RETURN (plan -> 0 -> 'Plan' ->> 'Total Cost')::float8;
END
$$;
CREATE ROLE zplan_reader;
GRANT USAGE ON SCHEMA zplan TO zplan_reader;
GRANT SELECT (b, pad) ON ev TO zplan_reader;
CREATE TEMP TABLE costs (who text, cost float8);
GRANT ALL ON costs TO zplan_reader;
INSERT INTO costs SELECT 'owner', brin_cost('SELECT b FROM ev WHERE b = 17');
SET ROLE zplan_reader;
INSERT INTO costs SELECT 'reader', brin_cost('SELECT b FROM ev WHERE b = 17');
RESET ROLE;
-- row-level security: PostgreSQL's estimate too
ALTER TABLE ev ENABLE ROW LEVEL SECURITY;
CREATE POLICY all_rows ON ev USING (true);
GRANT SELECT ON ev TO zplan_reader;
SET ROLE zplan_reader;
INSERT INTO costs SELECT 'reader, rls', brin_cost('SELECT b FROM ev WHERE b = 17');
RESET ROLE;
SELECT who, cost = (SELECT cost FROM costs WHERE who = 'owner') AS owner_estimate
FROM costs ORDER BY who;

-- A query planned in parallel mode (in a parallel worker, by a parallel
-- safe function) builds no model and fails on nothing: PostgreSQL's
-- estimate serves there.  (force_parallel_mode is debug_parallel_query
-- from 16 on.)
CREATE TABLE par (a int);
INSERT INTO par SELECT g % 100 FROM generate_series(1, 10000) g;
CREATE INDEX ON par USING brin (a);
CREATE FUNCTION par_count(int) RETURNS bigint LANGUAGE plpgsql PARALLEL SAFE
AS $$ BEGIN RETURN (SELECT count(*) FROM par WHERE a = $1); END $$;
SELECT count(*) FROM (SELECT set_config(name, 'on', false) FROM pg_settings
	WHERE name IN ('force_parallel_mode', 'debug_parallel_query')) s;
SELECT par_count(7);
SELECT count(*) FROM (SELECT set_config(name, 'off', false) FROM pg_settings
	WHERE name IN ('force_parallel_mode', 'debug_parallel_query')) s;
SELECT par_count(7);
DROP FUNCTION par_count;
DROP TABLE par;

DROP SCHEMA zplan CASCADE;
DROP TABLE costs;
DROP ROLE zplan_reader;
