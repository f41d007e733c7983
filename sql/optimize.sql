-- Full optimize: the rewrite keeps every row, every header-level guarantee
-- of CLUSTER, and actually lays the table out along the curve.

SET search_path = public, zorder;
SELECT setseed(0.42);

-- A table with a dropped column, TOASTed values, NULL keys, a grant, a
-- trigger that must never fire, a check constraint and two indexes.
CREATE TABLE events (
	id int PRIMARY KEY,
	gone text,
	a int,
	b float8,
	note text,
	doc text CHECK (length(doc) > 0)
);
INSERT INTO events
SELECT g, 'x', (random() * 1000)::int, random() * 1000,
	   CASE WHEN g % 7 = 0 THEN NULL ELSE md5(g::text) END,
	   CASE WHEN g % 500 = 0 THEN repeat(md5(g::text), 400) ELSE 'd' || g END
FROM generate_series(1, 20000) g;
UPDATE events SET a = NULL WHERE id % 97 = 0;
UPDATE events SET b = NULL WHERE id % 89 = 0;
DELETE FROM events WHERE id % 13 = 0;
ALTER TABLE events DROP COLUMN gone;
CREATE INDEX events_note ON events (note);
CREATE ROLE zorder_reader;
GRANT SELECT ON events TO zorder_reader;
CREATE FUNCTION never() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'trigger fired'; END $$;
CREATE TRIGGER events_never BEFORE INSERT OR UPDATE OR DELETE ON events
	FOR EACH ROW EXECUTE FUNCTION never();

-- TOASTed values are really out of line
SELECT count(*) > 0 AS has_toast FROM events WHERE pg_column_size(doc) < length(doc);

CREATE TABLE events_before AS SELECT * FROM events;
CREATE TEMP TABLE ids AS
	SELECT 'events'::regclass::oid AS relid,
		   pg_relation_filenode('events') AS filenode;

-- Random order: every block spans most of each key's domain.
SELECT avg(amax - amin) > 800 AS a_spread, avg(bmax - bmin) > 800 AS b_spread
FROM (SELECT (ctid::text::point)[0] AS blk,
			 min(a) AS amin, max(a) AS amax, min(b) AS bmin, max(b) AS bmax
	  FROM events GROUP BY 1) s;

SELECT zorder.cluster_by('events', 'a', 'b');
SELECT "table", keys, curve FROM zorder.clustered_tables;
CALL zorder.optimize('events');

-- same OID, new file
SELECT 'events'::regclass::oid = relid AS same_oid,
	   pg_relation_filenode('events') <> filenode AS new_filenode
FROM ids;

-- same rows, compared by content
SELECT count(*) AS missing FROM (SELECT * FROM events_before EXCEPT ALL SELECT * FROM events) d;
SELECT count(*) AS extra FROM (SELECT * FROM events EXCEPT ALL SELECT * FROM events_before) d;

-- no corruption in the heap, its TOAST table or the rebuilt indexes
SELECT count(*) AS heap_problems FROM verify_heapam('events', check_toast => true);
SELECT bt_index_check('events_pkey', true), bt_index_check('events_note', true);

-- grants, triggers and constraints survive; the trigger never fired
SELECT has_table_privilege('zorder_reader', 'events', 'SELECT') AS reader_can_select;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'events'::regclass;
-- (not-null constraints are in pg_constraint from 18 on)
SELECT conname FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype <> 'n' ORDER BY 1;
SELECT attname FROM pg_attribute
WHERE attrelid = 'events'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;

-- laid out along the curve: blocks now span a small part of each domain
SELECT avg(amax - amin) < 250 AS a_tight, avg(bmax - bmin) < 250 AS b_tight
FROM (SELECT (ctid::text::point)[0] AS blk,
			 min(a) AS amin, max(a) AS amax, min(b) AS bmin, max(b) AS bmax
	  FROM events GROUP BY 1) s;

-- NULL keys get their own bucket after every value, so rows with a NULL
-- key are kept together (in random order they sat in most blocks)
SELECT count(*) AS null_a_rows, count(DISTINCT (ctid::text::point)[0]) < 30 AS null_a_together
FROM events WHERE a IS NULL;

-- the layout record
SELECT relid::regclass, keys, curve, bits, rows_written = (SELECT count(*) FROM events) AS rows_ok,
	   pages = pg_relation_size('events') / 8192 AS pages_ok,
	   sample_rows = rows_written AS sampled_all,
	   array_length(bounds, 1) AS nbounds
FROM zorder.layouts;

-- the Z curve works too, and gives a different order
CREATE TEMP TABLE hilbert_order AS SELECT id FROM events;
CALL zorder.optimize('events', full => true, curve => 'z');
SELECT curve FROM zorder.layouts WHERE relid = 'events'::regclass;
SELECT count(*) AS missing FROM (SELECT * FROM events_before EXCEPT ALL SELECT * FROM events) d;
SELECT count(*) AS heap_problems FROM verify_heapam('events', check_toast => true);
SELECT (SELECT array_agg(id) FROM hilbert_order) <> (SELECT array_agg(id) FROM events) AS order_changed;

-- Update chains and recently dead rows: an open snapshot keeps old
-- versions alive; the rewrite must keep them and their chains intact.
BEGIN;
SET LOCAL session_replication_role = replica;	-- keep the trigger quiet
UPDATE events SET note = 'updated' WHERE id % 5 = 0;
DELETE FROM events WHERE id % 11 = 0;
CALL zorder.optimize('events', full => true);
SELECT count(*) AS heap_problems FROM verify_heapam('events', check_toast => true);
SELECT count(*) FILTER (WHERE note = 'updated') AS updated, count(*) AS total FROM events;
ROLLBACK;
SELECT count(*) AS missing FROM (SELECT * FROM events_before EXCEPT ALL SELECT * FROM events) d;
SELECT count(*) AS extra FROM (SELECT * FROM events EXCEPT ALL SELECT * FROM events_before) d;

-- Inside a transaction block that rolls back, nothing changes.
SELECT pg_relation_filenode('events') AS filenode_before \gset
BEGIN;
CALL zorder.optimize('events', full => true);
ROLLBACK;
SELECT pg_relation_filenode('events') = :filenode_before AS filenode_unchanged;

-- A heavy hitter: half the rows have a = 0.  Its rows get half the space
-- (about half the blocks), and a filter on b still reads few blocks.
SELECT setseed(0.1);
CREATE TABLE heavy AS
SELECT CASE WHEN random() < 0.5 THEN 0 ELSE (random() * 1000)::int END AS a,
	   (random() * 1000)::int AS b
FROM generate_series(1, 40000) g;
SELECT zorder.cluster_by('heavy', 'a', 'b');
CALL zorder.optimize('heavy');
WITH blk AS (
	SELECT (ctid::text::point)[0] AS blk, bool_or(a = 0) AS a0,
		   bool_or(b = 500) AS b500
	FROM heavy GROUP BY 1)
SELECT count(*) FILTER (WHERE a0) < 0.65 * count(*) AS a0_in_few_blocks,
	   count(*) FILTER (WHERE b500) < 0.15 * count(*) AS b500_in_few_blocks
FROM blk;
DROP TABLE heavy;

-- Text keys are compared with their collation.
CREATE TABLE words (w text COLLATE "und-x-icu", n int);
INSERT INTO words
SELECT chr(65 + (g % 26)) || chr(97 + (g * 7 % 26)) || g, g % 50 FROM generate_series(1, 5000) g;
INSERT INTO words SELECT lower(w), n FROM words WHERE n < 25;
CREATE TABLE words_before AS SELECT * FROM words;
SELECT zorder.cluster_by('words', 'w', 'n');
CALL zorder.optimize('words');
SELECT count(*) AS missing FROM (SELECT * FROM words_before EXCEPT ALL SELECT * FROM words) d;
SELECT count(*) AS heap_problems FROM verify_heapam('words');
-- The stored boundaries of a text key: a header (format, type, typmod,
-- collation, 'b' for the binary form, count), then each value's length and
-- bytes (see quantile.c).
CREATE FUNCTION pg_temp.text_bounds(b bytea) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  n int := (get_byte(b, 17) << 24) | (get_byte(b, 18) << 16) | (get_byte(b, 19) << 8) | get_byte(b, 20);
  pos int := 21;
  len int;
  res text[] := '{}';
BEGIN
  IF get_byte(b, 16) <> ascii('b') THEN
    RAISE 'not the binary form';
  END IF;
  FOR i IN 1 .. n LOOP
    len := (get_byte(b, pos) << 24) | (get_byte(b, pos + 1) << 16) | (get_byte(b, pos + 2) << 8) | get_byte(b, pos + 3);
    res := res || convert_from(substring(b FROM pos + 5 FOR len), 'UTF8');
    pos := pos + 4 + len;
  END LOOP;
  RETURN res;
END $$;
-- boundaries follow the ICU order (a < B), not the byte order (B < a)
SELECT (pg_temp.text_bounds(bounds[1]))[1] AS first_bound FROM zorder.layouts WHERE relid = 'words'::regclass;
SELECT count(*) AS unordered_bounds
FROM (SELECT b, lag(b) OVER (ORDER BY ord) AS prev
	  FROM zorder.layouts l,
		   unnest(pg_temp.text_bounds(l.bounds[1])) WITH ORDINALITY AS u(b, ord)
	  WHERE l.relid = 'words'::regclass) s
WHERE prev IS NOT NULL AND NOT (prev COLLATE "und-x-icu" < b COLLATE "und-x-icu");

-- Other key types: numeric, timestamptz, uuid-like text, inet, an enum.
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE mixed (n numeric, t timestamptz, i inet, m mood, j jsonb);
INSERT INTO mixed
SELECT g / 7.0, '2024-01-01'::timestamptz + g * interval '1 minute',
	   ('10.0.' || (g % 256) || '.' || (g / 256 % 256))::inet,
	   (ARRAY['sad', 'ok', 'happy'])[1 + g % 3]::mood,
	   jsonb_build_object('k', g % 100)
FROM generate_series(1, 3000) g;
CREATE TABLE mixed_before AS SELECT * FROM mixed;
SELECT zorder.cluster_by('mixed', 'n', 't', 'i', 'm', 'j');
CALL zorder.optimize('mixed');
SELECT count(*) AS missing FROM (SELECT n, t, i, m, j::text FROM mixed_before
	EXCEPT ALL SELECT n, t, i, m, j::text FROM mixed) d;
SELECT bits FROM zorder.layouts WHERE relid = 'mixed'::regclass;

-- Unlogged and temporary tables work.
CREATE UNLOGGED TABLE ulog AS SELECT g AS a, g % 10 AS b FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('ulog', 'a', 'b');
CALL zorder.optimize('ulog');
SELECT count(*), sum(a) FROM ulog;
CREATE TEMP TABLE tmp AS SELECT g AS a, g % 10 AS b FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('tmp', 'a', 'b');
CALL zorder.optimize('tmp');
SELECT count(*), sum(a) FROM tmp;
DROP TABLE tmp;

-- A partitioned table: the parent's keys apply to every leaf, present and
-- future; each leaf is rewritten.
CREATE TABLE sales (region int, amount int, day date) PARTITION BY LIST (region);
CREATE TABLE sales_1 PARTITION OF sales FOR VALUES IN (1);
CREATE TABLE sales_2 PARTITION OF sales FOR VALUES IN (2) PARTITION BY RANGE (day);
CREATE TABLE sales_2a PARTITION OF sales_2 FOR VALUES FROM ('2020-01-01') TO ('2022-01-01');
-- a leaf whose columns are in another order (attribute numbers differ)
CREATE TABLE sales_2b (day date, amount int, region int);
ALTER TABLE sales_2 ATTACH PARTITION sales_2b FOR VALUES FROM ('2022-01-01') TO ('2030-01-01');
INSERT INTO sales
SELECT 1 + g % 2, (random() * 1000)::int, '2020-01-01'::date + (g % 3000)
FROM generate_series(1, 6000) g;
CREATE TABLE sales_before AS SELECT * FROM sales;
SELECT zorder.cluster_by('sales', 'amount', 'day');
CREATE TEMP TABLE leaf_files AS
	SELECT relid, pg_relation_filenode(relid) AS filenode
	FROM pg_partition_tree('sales') WHERE isleaf;
CALL zorder.optimize('sales');
SELECT l.relid, pg_relation_filenode(l.relid) <> l.filenode AS rewritten, z.keys
FROM leaf_files l LEFT JOIN zorder.layouts z ON z.relid = l.relid ORDER BY 1::text;
SELECT count(*) AS missing FROM (SELECT * FROM sales_before EXCEPT ALL SELECT * FROM sales) d;
SELECT count(*) AS extra FROM (SELECT * FROM sales EXCEPT ALL SELECT * FROM sales_before) d;
SELECT count(*) AS heap_problems FROM pg_partition_tree('sales') p,
	LATERAL verify_heapam(p.relid) WHERE p.isleaf;
-- inside a transaction block, all leaves in that one transaction
BEGIN;
CALL zorder.optimize('sales', full => true);
ROLLBACK;
SELECT count(*) AS missing FROM (SELECT * FROM sales_before EXCEPT ALL SELECT * FROM sales) d;

-- Clearing the keys.
SELECT zorder.clear_keys('words');
SELECT count(*) FROM zorder.layouts WHERE relid = 'words'::regclass;
CALL zorder.optimize('words');

-- Dropping a table forgets its keys.
DROP TABLE ulog;
SELECT count(*) AS ulog_entries FROM zorder.tables t
WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = t.relid);

DROP TABLE events, events_before, words, words_before, mixed, mixed_before,
	sales, sales_before;
DROP TYPE mood;
DROP FUNCTION never();
DROP ROLE zorder_reader;
