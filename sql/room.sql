-- The room zorder chooses when the table's owner set no fillfactor
-- (room.c, issue #27): the table's fillfactor reloption, set by zorder and
-- recorded with its reason in the history; before any growth is seen, a
-- room read from how the table's latest rows came (arrivals.c); room for
-- spread appends, none for time-ordered or banded ones; an owner's
-- fillfactor left alone; per partition.
SET search_path = public;
LOAD 'zorder';
SELECT setseed(0.27);
CREATE VIEW room_last AS
	SELECT "table", mode, rows_arrived, appends, fillfactor, room
	FROM zorder.optimize_history h
	WHERE started_at = (SELECT max(started_at) FROM zorder.optimize_history
						WHERE "table" = h."table");
CREATE FUNCTION reloptions(t regclass) RETURNS text[] LANGUAGE sql
	AS $$ SELECT reloptions FROM pg_class WHERE oid = t $$;

-- Spread appends.  A first full optimize, with no history: the table's
-- latest rows spread over a and b, so room for spread appends.
CREATE TABLE sp (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO sp SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 19960) g;
CREATE INDEX sp_brin ON sp USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('sp', 'a', 'b');
SELECT reloptions('sp') AS before_any_call;
CALL zorder.optimize('sp');
VACUUM sp;
SELECT reloptions('sp') AS after_full;
SELECT * FROM room_last WHERE "table" = 'sp'::regclass;
-- the rewrite recorded its run range by range (place.c), every row counted
SELECT count(*) AS extents, count(*) = ceil(pg_relation_size('sp') / 8192 / 4.0) AS one_a_range,
	   sum(rows) = (SELECT count(*) FROM sp) AS every_row
FROM zorder.sorted_runs WHERE "table" = 'sp'::regclass;
-- the rewrite wrote its pages to that fillfactor: 80 rows a page, where
-- 100 would take 107
SELECT max(n) AS most_rows_on_a_page FROM (
	SELECT count(*) AS n FROM sp GROUP BY (ctid::text::point)[0]) p;
-- ordinary INSERTs leave that room alone: heap_insert honours the
-- fillfactor, so only the run's last page, which the rewrite left half
-- full, takes some; the rest go to new pages after the run, 80 a page
INSERT INTO sp SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(20001, 20200) g;
SELECT (ctid::text::point)[0] - (SELECT pages FROM zorder.layouts
								 WHERE relid = 'sp'::regclass) AS block_after_run,
	   count(*) AS inserted
FROM sp WHERE id > 20000 GROUP BY 1 ORDER BY 1;
CREATE TABLE sp_before AS SELECT * FROM sp;
-- the call sees 1 % spread over the keys: room for 20 such calls
CALL zorder.optimize('sp');
VACUUM sp;
SELECT reloptions('sp') AS after_spread;
SELECT * FROM room_last WHERE "table" = 'sp'::regclass;
SELECT mode, rows_moved FROM zorder.optimize_history
WHERE "table" = 'sp'::regclass ORDER BY started_at DESC LIMIT 1;
SELECT count(*) AS missing FROM (SELECT * FROM sp_before EXCEPT ALL SELECT * FROM sp) d;
SELECT count(*) AS extra FROM (SELECT * FROM sp EXCEPT ALL SELECT * FROM sp_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('sp', check_toast => true);
SELECT bt_index_check('sp_pkey', true);
-- the next full rewrite keeps that room, from the history
CALL zorder.optimize('sp', "full" => true);
SELECT reloptions('sp') AS after_second_full;
SELECT * FROM room_last WHERE "table" = 'sp'::regclass;
-- clustering_information shows the fillfactor and why
SELECT fillfactor, room FROM zorder.clustering_information('sp', probes => 1)
WHERE key_position = 1;
SELECT j->'fillfactor' AS fillfactor, j->>'room' = (SELECT room FROM room_last
	WHERE "table" = 'sp'::regclass) AS same_room
FROM zorder.clustering_information_json('sp', probes => 1) j;

-- Time-ordered rows: the table's latest rows lie above all the others on
-- a, so its first layout keeps no room, and appends beyond every value
-- the table had keep it so.
CREATE TABLE tm (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO tm SELECT g, g, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX tm_brin ON tm USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('tm', 'a', 'b');
CALL zorder.optimize('tm');
INSERT INTO tm SELECT g, g, (random() * 1000)::int, md5(g::text)
FROM generate_series(20001, 20400) g;
CREATE TABLE tm_before AS SELECT * FROM tm;
CALL zorder.optimize('tm');
VACUUM tm;
SELECT reloptions('tm') AS after_time_ordered;
SELECT * FROM room_last WHERE "table" = 'tm'::regclass;
SELECT count(*) AS missing FROM (SELECT * FROM tm_before EXCEPT ALL SELECT * FROM tm) d;
SELECT count(*) AS heap_problems FROM verify_heapam('tm', check_toast => true);
SELECT bt_index_check('tm_pkey', true);
-- the next full rewrite writes the pages without room
CALL zorder.optimize('tm', "full" => true);
SELECT reloptions('tm') AS tm_rewritten, room FROM room_last WHERE "table" = 'tm'::regclass;
-- and a call that finds nothing arriving keeps that choice: it has
-- nothing new to go by
CALL zorder.optimize('tm');
SELECT reloptions('tm') AS tm_nothing_arrived;

-- The owner takes the room over: once a call has left the owner's
-- fillfactor alone, it stays the owner's, even when the owner later sets
-- a value zorder once chose.
CREATE TABLE takeover (a int, b int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO takeover SELECT (random() * 1000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
SELECT zorder.cluster_by('takeover', 'a', 'b');
CALL zorder.optimize('takeover');
SELECT reloptions('takeover') AS zorders_choice;
ALTER TABLE takeover SET (fillfactor = 70);
INSERT INTO takeover SELECT (random() * 1000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 400) g;
CALL zorder.optimize('takeover');
SELECT room FROM room_last WHERE "table" = 'takeover'::regclass;
ALTER TABLE takeover SET (fillfactor = 90);
INSERT INTO takeover SELECT 1000 + g, 1000 + g, md5(g::text)
FROM generate_series(1, 400) g;
CALL zorder.optimize('takeover');
CALL zorder.optimize('takeover', "full" => true);
SELECT reloptions('takeover') AS owners_choice, room
FROM room_last WHERE "table" = 'takeover'::regclass;

-- Banded appends: new rows crowd into a band of 0.1 % of a's values.
CREATE TABLE hot (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO hot SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX hot_brin ON hot USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('hot', 'a', 'b');
CALL zorder.optimize('hot');
INSERT INTO hot SELECT g, 50000 + (random() * 100)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(20001, 20400) g;
CREATE TABLE hot_before AS SELECT * FROM hot;
CALL zorder.optimize('hot');
VACUUM hot;
SELECT reloptions('hot') AS after_banded;
SELECT * FROM room_last WHERE "table" = 'hot'::regclass;
SELECT count(*) AS missing FROM (SELECT * FROM hot_before EXCEPT ALL SELECT * FROM hot) d;
SELECT count(*) AS heap_problems FROM verify_heapam('hot', check_toast => true);
SELECT bt_index_check('hot_pkey', true);

-- The owner's fillfactor is never changed: set before the first call ...
CREATE TABLE own (id int PRIMARY KEY, a int, b int, pad text)
	WITH (fillfactor = 85, autovacuum_enabled = off);
INSERT INTO own SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
SELECT zorder.cluster_by('own', 'a', 'b');
CALL zorder.optimize('own');
INSERT INTO own SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(20001, 20200) g;
CALL zorder.optimize('own');
CALL zorder.optimize('own', "full" => true);
SELECT reloptions('own') AS owners_fillfactor;
SELECT mode, fillfactor, room FROM zorder.optimize_history
WHERE "table" = 'own'::regclass ORDER BY started_at;
-- ... or after zorder chose one: from then on it is the owner's
ALTER TABLE sp SET (fillfactor = 97);
INSERT INTO sp SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(20201, 20400) g;
CALL zorder.optimize('sp');
CALL zorder.optimize('sp', "full" => true);
SELECT reloptions('sp') AS set_by_the_owner_later;
SELECT mode, fillfactor, room FROM room_last WHERE "table" = 'sp'::regclass;
-- RESET hands the choice back to zorder
ALTER TABLE sp RESET (fillfactor);
CALL zorder.optimize('sp', "full" => true);
SELECT reloptions('sp') AS after_reset;

-- With zorder.placement off new rows make runs of their own: no room.
SET zorder.placement = off;
CREATE TABLE cb (id int PRIMARY KEY, a int, b int) WITH (autovacuum_enabled = off);
INSERT INTO cb SELECT g, (random() * 1000)::int, (random() * 1000)::int
FROM generate_series(1, 2000) g;
SELECT zorder.cluster_by('cb', 'a', 'b');
CALL zorder.optimize('cb');
SELECT reloptions('cb') AS placement_off, room FROM room_last WHERE "table" = 'cb'::regclass;
RESET zorder.placement;
-- A table too small to tell how its rows came: the default room.
CREATE TABLE small (id int PRIMARY KEY, a int, b int) WITH (autovacuum_enabled = off);
INSERT INTO small SELECT g, (random() * 1000)::int, (random() * 1000)::int
FROM generate_series(1, 2000) g;
SELECT zorder.cluster_by('small', 'a', 'b');
CALL zorder.optimize('small');
SELECT reloptions('small') AS too_small_to_tell, room
FROM room_last WHERE "table" = 'small'::regclass;
-- a rewrite of rows its own transaction inserted, which other sessions
-- cannot see yet, records its run whole: the first call counts it
CREATE INDEX small_brin ON small USING brin (a, b) WITH (pages_per_range = 4);
BEGIN;
INSERT INTO small SELECT g, (random() * 1000)::int, (random() * 1000)::int
FROM generate_series(2001, 3000) g;
CALL zorder.optimize('small', "full" => true);
COMMIT;
SELECT count(*) AS extents, sum(rows) = (SELECT count(*) FROM small) AS every_row
FROM zorder.sorted_runs WHERE "table" = 'small'::regclass;
INSERT INTO small SELECT g, (random() * 1000)::int, (random() * 1000)::int
FROM generate_series(3001, 3030) g;
CALL zorder.optimize('small');
SELECT count(*) > 1 AS by_range, sum(rows) = (SELECT count(*) FROM small) AS every_row
FROM zorder.sorted_runs WHERE "table" = 'small'::regclass;
-- Banded latest rows (a in a band) are crowded as time-ordered ones are.
CREATE TABLE bandrows (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO bandrows SELECT g, CASE WHEN g <= 19000 THEN (random() * 100000)::int
	ELSE 50000 + (random() * 100)::int END, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
SELECT zorder.cluster_by('bandrows', 'a', 'b');
CALL zorder.optimize('bandrows');
SELECT reloptions('bandrows') AS banded_latest_rows, room
FROM room_last WHERE "table" = 'bandrows'::regclass;

-- A partitioned table: each partition its own room, from its own appends.
CREATE TABLE pt (id int, a int, b int, pad text) PARTITION BY RANGE (id);
CREATE TABLE pt_spread PARTITION OF pt FOR VALUES FROM (0) TO (1000000)
	WITH (autovacuum_enabled = off);
CREATE TABLE pt_time PARTITION OF pt FOR VALUES FROM (1000000) TO (2000000)
	WITH (autovacuum_enabled = off);
CREATE TABLE pt_own PARTITION OF pt FOR VALUES FROM (2000000) TO (3000000)
	WITH (fillfactor = 80, autovacuum_enabled = off);
INSERT INTO pt SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
INSERT INTO pt SELECT 1000000 + g, g, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
INSERT INTO pt SELECT 2000000 + g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 5000) g;
SELECT zorder.cluster_by('pt', 'a', 'b');
CALL zorder.optimize('pt');
INSERT INTO pt SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(20001, 20200) g;
INSERT INTO pt SELECT 1000000 + g, g, (random() * 1000)::int, md5(g::text)
FROM generate_series(20001, 20400) g;
INSERT INTO pt SELECT 2000000 + g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(5001, 5200) g;
CREATE TABLE pt_before AS SELECT * FROM pt;
CALL zorder.optimize('pt');
SELECT fillfactor, room FROM zorder.clustering_information('pt_own', probes => 1)
WHERE key_position = 1;
SELECT c.relname, c.reloptions, l.appends, l.fillfactor, l.room
FROM pg_class c JOIN room_last l ON l."table" = c.oid
WHERE c.relname LIKE 'pt\_%' AND c.relkind = 'r' AND c.relname <> 'pt_before'
ORDER BY 1;
SELECT count(*) AS missing FROM (SELECT * FROM pt_before EXCEPT ALL SELECT * FROM pt) d;
SELECT count(*) AS heap_problems
FROM (VALUES ('pt_spread'::regclass), ('pt_time'), ('pt_own')) p(t),
	 verify_heapam(p.t, check_toast => true);

-- The room used up.  Spread appends fill the room a full rewrite wrote;
-- then ranges without room split, and a call writes more than placing its
-- rows takes.  Once the splits since the table was laid out have written
-- beyond placement as much as a full rewrite of the table and its indexes
-- would (WAL, or heap pages where more), the call says so, and the next
-- one rewrites the table in full with the room chosen from the appends it
-- saw, by itself, when the rewrite's lock fits zorder.auto_rewrite_limit
-- (default 60 s).
SHOW zorder.auto_rewrite_limit;
CREATE FUNCTION masked(t text) RETURNS text LANGUAGE sql
	AS $$ SELECT regexp_replace(regexp_replace(t, 'at [0-9.]+ s', 'at N s'),
								'[0-9.]+ MB', 'N MB', 'g') $$;
-- The rule, from the history and the sizes: what the incremental calls
-- since t was last laid out that spread their rows and moved more than
-- arrived wrote beyond the least a call of t that spread 100 rows or more
-- and moved just those ever wrote per row, over every page of t, its
-- TOAST table and their indexes.
CREATE FUNCTION split_cost_share(t regclass) RETURNS float8 LANGUAGE sql AS $$
	WITH c AS (
		SELECT h.started_at, h.rows_arrived, h.rows_moved,
			   greatest(coalesce(h.wal_bytes, 0), coalesce(h.pages_written, 0) *
						current_setting('block_size')::int)::float8 AS cost
		FROM zorder.history h WHERE h.relid = t AND h.mode = 'incremental'
		  AND h.appends = 'spread' AND h.wal_bytes IS NOT NULL),
	b AS (
		SELECT coalesce(min(cost / rows_arrived) FILTER (WHERE rows_arrived >= 100
						AND rows_moved = rows_arrived), 0) AS base FROM c)
	SELECT coalesce(sum(greatest(c.cost - c.rows_arrived * b.base, 0))
					FILTER (WHERE c.rows_moved > c.rows_arrived
							AND c.started_at > l.optimized_at), 0) /
		   (SELECT sum(pg_relation_size(r)) FROM pg_class c2,
			LATERAL (SELECT c2.oid UNION ALL SELECT indexrelid FROM pg_index
					 WHERE indrelid = c2.oid) x(r)
			WHERE c2.oid = t OR c2.oid = (SELECT reltoastrelid FROM pg_class
										  WHERE oid = t))
	FROM c, b, zorder.layouts l WHERE l.relid = t $$;
-- After each call: whether it moved rows besides the arrived ones, that
-- share, and whether the call said the room was used up.
CREATE TABLE room_calls (t regclass, call int, mode text, split boolean,
						 share float8, says_used_up boolean);
CREATE PROCEDURE note_call(t regclass) LANGUAGE sql AS $$
	INSERT INTO room_calls
	SELECT t, (SELECT count(*) FROM room_calls r WHERE r.t = note_call.t) + 1,
		   h.mode, h.rows_moved > h.rows_arrived, split_cost_share(t),
		   h.room ~ 'the room is used up'
	FROM zorder.optimize_history h WHERE h."table" = t
	ORDER BY h.started_at DESC LIMIT 1 $$;
-- What the calls noted since call `since` show: when ranges first split,
-- whether the calls then said the room was used up, that they said so
-- exactly where the share reached 1 (the index summaries a call makes
-- after its decision may change the sizes a little), and kept saying so.
CREATE FUNCTION room_story(t regclass, since int)
RETURNS TABLE (calls bigint, first_split int, used_up_after_splits boolean,
			   as_the_rule_says boolean, keeps_saying_so boolean)
LANGUAGE sql AS $$
	SELECT count(*), min(call) FILTER (WHERE split),
		   min(call) FILTER (WHERE says_used_up) > min(call) FILTER (WHERE split),
		   bool_and(CASE WHEN says_used_up THEN share >= 0.98 ELSE share < 1.02 END),
		   bool_and(says_used_up) FILTER (WHERE call >= (SELECT min(call)
					FROM room_calls r WHERE r.t = room_story.t AND r.call > since
					AND r.says_used_up))
	FROM room_calls WHERE room_calls.t = room_story.t AND call > since
	  AND mode = 'incremental' $$;
CREATE TABLE ru (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX ru_brin ON ru USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('ru', 'a', 'b');
CALL zorder.optimize('ru');
-- 8 % spread a call, each after a checkpoint (as calls hours apart come),
-- with automatic rewrites off: three calls fit in the 33.3 % room, the
-- fourth splits ranges, and the splits go on until they have written what
-- a rewrite would.
SET zorder.auto_rewrite_limit = 0;
SELECT format('INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, '
			  'md5(g::text) FROM generate_series(%s, %s) g', 20001 + i * 1600,
			  20000 + (i + 1) * 1600),
	   'CHECKPOINT', $$CALL zorder.optimize('ru')$$, $$CALL note_call('ru')$$
FROM generate_series(0, 7) i \gexec
SELECT * FROM room_story('ru', 0);
SELECT mode, rows_arrived, appends, fillfactor, masked(room) AS room
FROM room_last WHERE "table" = 'ru'::regclass;
RESET zorder.auto_rewrite_limit;
INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(40001, 41600) g;
-- zorder.estimate tells the same before the call
SELECT mode, masked(reason) AS reason, lock FROM zorder.estimate('ru');
CREATE TABLE ru_before AS SELECT * FROM ru;
CALL zorder.optimize('ru');
SELECT mode, fillfactor, masked(room) AS room FROM room_last WHERE "table" = 'ru'::regclass;
SELECT reloptions('ru') AS after_automatic_rewrite;
SELECT masked(room) = (SELECT masked(room) FROM room_last WHERE "table" = 'ru'::regclass)
	AS clustering_information_says_why
FROM zorder.clustering_information('ru', probes => 1) WHERE key_position = 1;
SELECT count(*) AS missing FROM (SELECT * FROM ru_before EXCEPT ALL SELECT * FROM ru) d;
SELECT count(*) AS extra FROM (SELECT * FROM ru EXCEPT ALL SELECT * FROM ru_before) d;
SELECT count(*) AS heap_problems FROM verify_heapam('ru', check_toast => true);
SELECT bt_index_check('ru_pkey', true);
SELECT unclustered_share, sorted_runs FROM zorder.clustering_information('ru', probes => 1)
WHERE key_position = 1;
-- Used up again (room for 20 calls of 5.8 %: the least, fillfactor 75,
-- 33 %).  With zorder.auto_rewrite_limit 0 calls stay incremental, and
-- say nothing more.
SET zorder.auto_rewrite_limit = 0;
SELECT format('INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, '
			  'md5(g::text) FROM generate_series(%s, %s) g', 50000 + i * 2000,
			  50000 + i * 2000 + 1999),
	   'CHECKPOINT', $$CALL zorder.optimize('ru')$$, $$CALL note_call('ru')$$
FROM generate_series(0, 7) i \gexec
SELECT * FROM room_story('ru', 8);
SELECT mode, count(*) FROM zorder.optimize_history WHERE "table" = 'ru'::regclass
GROUP BY mode ORDER BY mode;
SELECT masked(substring(room from 'the room is used up.*')) AS says_used_up
FROM room_last WHERE "table" = 'ru'::regclass;
INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(80000, 80799) g;
CALL zorder.optimize('ru');
SELECT mode FROM room_last WHERE "table" = 'ru'::regclass;
-- Inside a transaction block a call makes no rewrite by itself: its lock
-- would last until the caller commits.
RESET zorder.auto_rewrite_limit;
BEGIN;
INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(80800, 80899) g;
CALL zorder.optimize('ru');
COMMIT;
SELECT mode FROM room_last WHERE "table" = 'ru'::regclass;
-- A rewrite that would hold its lock longer than the limit is left to the
-- DBA, with a NOTICE: here the history says the last full rewrite took
-- 100 s, from which the estimate scales.
UPDATE zorder.history SET duration = '100 s'
WHERE relid = 'ru'::regclass AND mode = 'full';
INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(81000, 81799) g;
\set VERBOSITY terse
CALL zorder.optimize('ru');
\set VERBOSITY default
SELECT mode FROM room_last WHERE "table" = 'ru'::regclass;
SET zorder.auto_rewrite_limit = '10min';
CALL zorder.optimize('ru');
SELECT mode FROM room_last WHERE "table" = 'ru'::regclass;
RESET zorder.auto_rewrite_limit;
-- An owner's fillfactor is the owner's room: never rewritten for it.
ALTER TABLE ru SET (fillfactor = 99);
INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(42000, 44999) g;
CALL zorder.optimize('ru');
INSERT INTO ru SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(45000, 47999) g;
CALL zorder.optimize('ru');
SELECT mode, fillfactor, room FROM room_last WHERE "table" = 'ru'::regclass;
-- An unlogged table writes no WAL for its rows: its calls weigh the heap
-- pages they wrote rows into, and the splits use the room up all the same.
CREATE UNLOGGED TABLE un (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO un SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX un_brin ON un USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('un', 'a', 'b');
CALL zorder.optimize('un');
SET zorder.auto_rewrite_limit = 0;
SELECT format('INSERT INTO un SELECT g, (random() * 100000)::int, (random() * 1000)::int, '
			  'md5(g::text) FROM generate_series(%s, %s) g', 20001 + i * 1600,
			  20000 + (i + 1) * 1600),
	   $$CALL zorder.optimize('un')$$, $$CALL note_call('un')$$
FROM generate_series(0, 19) i \gexec
SELECT * FROM room_story('un', 0);
RESET zorder.auto_rewrite_limit;
INSERT INTO un SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(60001, 61600) g;
CREATE TABLE un_before AS SELECT * FROM un;
CALL zorder.optimize('un');
SELECT mode, masked(room) ~ '^automatic full rewrite' AS automatic
FROM room_last WHERE "table" = 'un'::regclass;
SELECT count(*) AS differ FROM ((SELECT * FROM un EXCEPT ALL SELECT * FROM un_before)
	UNION ALL (SELECT * FROM un_before EXCEPT ALL SELECT * FROM un)) d;
SELECT count(*) AS heap_problems FROM verify_heapam('un', check_toast => true);
SELECT bt_index_check('un_pkey', true);

-- A table laid out again by another tool (here CLUSTER on the layout key)
-- has the room that copy wrote: the growth counts from there, and the next
-- call stays incremental.
CREATE TABLE rc (id int PRIMARY KEY, a int, b int, pad text)
	WITH (autovacuum_enabled = off);
INSERT INTO rc SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(1, 20000) g;
SELECT zorder.cluster_by('rc', 'a', 'b');
CALL zorder.optimize('rc');
SET zorder.auto_rewrite_limit = 0;
SELECT format('INSERT INTO rc SELECT g, (random() * 100000)::int, (random() * 1000)::int, '
			  'md5(g::text) FROM generate_series(%s, %s) g', 20001 + i * 1600,
			  20000 + (i + 1) * 1600),
	   'CHECKPOINT', $$CALL zorder.optimize('rc')$$
FROM generate_series(0, 7) i \gexec
RESET zorder.auto_rewrite_limit;
SELECT room ~ 'the room is used up' AS says_used_up
FROM room_last WHERE "table" = 'rc'::regclass;
SELECT create_index, cluster FROM zorder.prepare_layout('rc') \gset
:create_index;
:cluster;
SELECT reloptions('rc') AS clustered_with;
SET client_min_messages = warning;	-- the NOTICE names the set's number
CALL zorder.optimize('rc');
RESET client_min_messages;
SELECT mode, fillfactor, room ~ 'used up' AS used_up FROM room_last WHERE "table" = 'rc'::regclass;
SELECT sum(rows) AS main_run_rows, (SELECT count(*) FROM rc) AS table_rows
FROM zorder.sorted_runs WHERE "table" = 'rc'::regclass AND run = 0;
SELECT count(*) AS heap_problems FROM verify_heapam('rc', check_toast => true);
SELECT bt_index_check('rc_pkey', true);
-- Keys cleared and declared again: the history still says the fillfactor
-- is zorder's, and the next full rewrite chooses it again.
SELECT zorder.clear_keys('rc');
SELECT zorder.cluster_by('rc', 'a', 'b');
CALL zorder.optimize('rc', "full" => true);
SELECT mode, fillfactor, room !~ 'left alone' AS still_zorders FROM room_last
WHERE "table" = 'rc'::regclass;

-- Each partition by its own room: the spread one is rewritten, the
-- time-ordered one and the owner's go on incrementally.
SET zorder.auto_rewrite_limit = 0;
SELECT format('INSERT INTO pt SELECT g, (random() * 100000)::int, (random() * 1000)::int, '
			  'md5(g::text) FROM generate_series(%s, %s) g', 30001 + i * 2000,
			  30000 + (i + 1) * 2000),
	   format('INSERT INTO pt SELECT 1000000 + g, g, (random() * 1000)::int, md5(g::text) '
			  'FROM generate_series(%s, %s) g', 20401 + i * 200, 20400 + (i + 1) * 200),
	   format('INSERT INTO pt SELECT 2000000 + g, (random() * 100000)::int, '
			  '(random() * 1000)::int, md5(g::text) FROM generate_series(%s, %s) g',
			  5201 + i * 100, 5200 + (i + 1) * 100),
	   'CHECKPOINT', $$CALL zorder.optimize('pt')$$
FROM generate_series(0, 7) i \gexec
RESET zorder.auto_rewrite_limit;
SELECT c.relname, l.mode, l.room ~ 'the room is used up' AS used_up
FROM pg_class c JOIN room_last l ON l."table" = c.oid
WHERE c.relname LIKE 'pt\_%' AND c.relkind = 'r' AND c.relname <> 'pt_before'
ORDER BY 1;
INSERT INTO pt SELECT g, (random() * 100000)::int, (random() * 1000)::int, md5(g::text)
FROM generate_series(46001, 46200) g;
DROP TABLE pt_before;
CREATE TABLE pt_before AS SELECT * FROM pt;
CALL zorder.optimize('pt');
SELECT c.relname, l.mode, masked(l.room) ~ '^automatic full rewrite' AS automatic
FROM pg_class c JOIN room_last l ON l."table" = c.oid
WHERE c.relname LIKE 'pt\_%' AND c.relkind = 'r' AND c.relname <> 'pt_before'
ORDER BY 1;
SELECT count(*) AS missing FROM (SELECT * FROM pt_before EXCEPT ALL SELECT * FROM pt) d;
SELECT count(*) AS extra FROM (SELECT * FROM pt EXCEPT ALL SELECT * FROM pt_before) d;
SELECT count(*) AS heap_problems
FROM (VALUES ('pt_spread'::regclass), ('pt_time'), ('pt_own')) p(t),
	 verify_heapam(p.t, check_toast => true);

DROP TABLE sp, sp_before, tm, tm_before, takeover, hot, hot_before, own, cb, small,
	bandrows, pt, pt_before, ru, ru_before, rc, un, un_before;
DROP FUNCTION masked(text);
DROP FUNCTION room_story(regclass, int);
DROP PROCEDURE note_call(regclass);
DROP TABLE room_calls;
DROP FUNCTION split_cost_share(regclass);
DROP VIEW room_last;
DROP FUNCTION reloptions(regclass);
