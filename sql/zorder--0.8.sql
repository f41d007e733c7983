/* zorder--0.8.sql: objects of the zorder extension, all in schema zorder */

\echo Use "CREATE EXTENSION zorder" to load this file. \quit

-- Each catalog table is declared whole, with the module of src/ that owns
-- it (the only one that writes it; every statement goes through the catalog
-- door of catalog.c, as the extension's owner).  Order: the schema; the key
-- functions; the catalog tables (declared keys and temporary tables,
-- boundary sets, layouts, runs, history); what pg_dump keeps of them; the
-- views users read; the functions users call; the drop trigger.
--
-- Column order: an installed 0.2 reaches 0.3 through
-- zorder--0.2--0.3.sql, 0.3 reaches 0.4 through zorder--0.3--0.4.sql and
-- 0.4 reaches 0.5 through zorder--0.4--0.5.sql (each adds its columns
-- last; zorder--0.5--0.6.sql adds a function only, zorder--0.6--0.7.sql a column), and all must end with the same objects, column order included
-- (ALTER TABLE ADD COLUMN puts a column last, and nothing reorders columns
-- in place).  So the columns below are in the order 0.2's ALTERs left
-- them, grouped by comments, and the update scripts rebuild no table.  Reordering them would mean rebuilding zorder.layouts in the
-- update script, with its rows, triggers and pg_dump configuration, for no
-- gain to anyone reading a row by name.

-- ==== The schema ===========================================================
--
-- The extension owns its schema.  Its functions run catalog statements as
-- the extension's owner (a superuser) and its event trigger fires on every
-- DROP, so whoever controls the schema they name controls a superuser.  A
-- schema that exists already may belong to another role, who could rename
-- it and put tables and triggers of their own in its place.  So the control
-- file names no schema (schema = pg_catalog only anchors the extension),
-- and the script creates schema zorder itself: it becomes a member of the
-- extension, owned by the role installing it, dropped with the extension,
-- and never taken over.  The C code checks that the name "zorder" still
-- leads to that member schema before it uses it (catalog.c).
DO $$
BEGIN
	IF EXISTS (SELECT FROM pg_catalog.pg_namespace
			   WHERE nspname OPERATOR(pg_catalog.=) 'zorder') THEN
		RAISE EXCEPTION USING
			ERRCODE = 'duplicate_schema',
			MESSAGE = 'schema "zorder" already exists',
			DETAIL = 'The zorder extension creates its schema itself, so that no other role can own it or create objects in it.',
			HINT = 'Drop or rename the existing schema "zorder" (after checking what it holds), then run CREATE EXTENSION zorder again.';
	END IF;
END
$$;
CREATE SCHEMA zorder;

-- Readers of a table must reach the functions (they check privileges on
-- the table themselves); the catalog tables stay closed to PUBLIC.
GRANT USAGE ON SCHEMA zorder TO PUBLIC;

-- ==== Space-filling-curve keys over raw values (keyfuncs.c) ================

CREATE FUNCTION zorder.zorder_key(VARIADIC "any") RETURNS bytea
	AS 'MODULE_PATHNAME', 'zorder_key'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION zorder.hilbert_key(VARIADIC "any") RETURNS bytea
	AS 'MODULE_PATHNAME', 'hilbert_key'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION zorder.zorder_key("any") IS
	'order-preserving Z-order (Morton) key over the arguments';
COMMENT ON FUNCTION zorder.hilbert_key("any") IS
	'order-preserving Hilbert-curve key over the arguments';

-- ==== The catalog ==========================================================
--
-- Ordinary users cannot change it directly: the extension's functions
-- check privileges and write it as the extension's owner.  Rows name their
-- table as regclass, so that pg_dump writes the table's name and
-- pg_restore binds the row to the restored table (see "Dump and restore").

-- Temporary tables with rows in the catalog, and the session each belongs
-- to (tables.c).  PostgreSQL fires no event trigger when a temporary table
-- goes away with ON COMMIT DROP, DISCARD or the end of its session, so rows
-- of such a table are told from those of a later table with the same OID
-- by this record (zorder_claim_catalog).
CREATE TABLE zorder.temp_relations (
	relid oid PRIMARY KEY,
	session text NOT NULL,		-- backend process ID / start time
	incarnation bigint NOT NULL -- handed out by that session
);
COMMENT ON TABLE zorder.temp_relations IS 'temporary tables with catalog rows, and their sessions';

-- What a temporary table's record must say for its rows to be current, in
-- this session ("session/incarnation"); NULL if this session has none.
-- Backend state, hence parallel restricted.
CREATE FUNCTION zorder._temp_record(relid oid) RETURNS text
	AS 'MODULE_PATHNAME', 'zorder_temp_record'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- The clustering keys declared with zorder.cluster_by (tables.c).
CREATE TABLE zorder.tables (
	relid regclass PRIMARY KEY,		-- table (or partitioned table) the keys apply to
	keys int2[] NOT NULL,		-- attribute numbers, in declared order
	-- Keys are attribute numbers, and a restored table numbers its columns
	-- afresh: one that had dropped columns before a key gets other numbers.
	-- So the key columns' names are kept too (kept current by every zorder
	-- call that writes the table's layout: tables.c, zorder_open_checked),
	-- and a row inserted with names, as pg_restore inserts them, is bound to
	-- the columns of those names if all exist (zorder._tables_bind_keys).
	key_names name[],
	-- Keys chosen by the key advisor (zorder.cluster_by_auto, autokeys.c):
	-- the most key columns it may choose (NULL: keys declared by hand), and
	-- when zorder.optimize last weighed them against the workload.
	auto_max_keys int CHECK (auto_max_keys BETWEEN 1 AND 4),
	auto_checked_at timestamptz,
	-- ---- 0.8 ----
	-- A fillfactor zorder gave the table other than by a call on it
	-- (room.c), which it may change as one its history names: on a Citus
	-- coordinator, the distributed table's, the room of its shards, which
	-- Citus gives the shards it makes (a move's copy, a split); on a node,
	-- the one such a shard came with.  NULL: none.
	room_fillfactor int CHECK (room_fillfactor BETWEEN 10 AND 100)
);
COMMENT ON TABLE zorder.tables IS 'clustering keys declared with zorder.cluster_by or chosen with zorder.cluster_by_auto';

CREATE FUNCTION zorder._tables_bind_keys() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	bound int2[];
BEGIN
	IF NEW.key_names IS NOT NULL THEN
		SELECT array_agg(a.attnum ORDER BY k.ord) INTO bound
		  FROM unnest(NEW.key_names) WITH ORDINALITY AS k(name, ord)
		  JOIN pg_attribute a
			ON a.attrelid = NEW.relid AND a.attname = k.name
		   AND a.attnum > 0 AND NOT a.attisdropped;
		IF cardinality(bound) = cardinality(NEW.key_names) THEN
			NEW.keys := bound;
		END IF;
	END IF;
	RETURN NEW;
END
$$;
CREATE TRIGGER tables_bind_keys BEFORE INSERT ON zorder.tables
	FOR EACH ROW EXECUTE FUNCTION zorder._tables_bind_keys();

-- ==== Boundary sets (layoutkey.c) =========================================
--
-- A boundary set is the quantile boundaries one sample gave a table's key
-- columns, with the curve and bits they go with.  A set is never changed
-- once written (a new sample makes a new set), so zorder.layout_key over a
-- set is a function of its arguments alone: it can order pg_repack's
-- copy, CLUSTER and REPACK through an expression index.  Sets live as long
-- as their table, or as long as an index names them: an index on
-- layout_key(17, ...) needs set 17 as long as the index exists.  A set
-- must mean the same after a dump and restore, where the OIDs of types and
-- collations change, and after pg_upgrade, which keeps the OIDs of types
-- but not of collations: types are kept as regtype, and collations by
-- their schema-qualified names (format('%I.%I'), '-' for none), as
-- pg_upgrade refuses a regcollation column in a user table.  A domain key
-- column is kept as its base type.
CREATE TABLE zorder.boundary_sets (
	-- below the ids of distributed tables' sets (zorder.table_set_ids)
	id int GENERATED BY DEFAULT AS IDENTITY (MAXVALUE 1073741823) PRIMARY KEY,
	relid regclass NOT NULL,		-- the table (a leaf) it was sampled from
	-- optimize: a full rewrite's; prepare: zorder.prepare_layout's; copy
	-- (0.8): a layout's set carried with a copy of its table from another
	-- node (a Citus shard moved, zorder._adopt_layout_set)
	origin text NOT NULL CHECK (origin IN ('optimize', 'prepare', 'copy')),
	columns name[] NOT NULL,		-- key columns when sampled
	keys int2[] NOT NULL,			-- ... and their attribute numbers
	types regtype[] NOT NULL,		-- ... their types,
	typmods int4[] NOT NULL,		-- typmods
	collations text[] NOT NULL,		-- and collations ('-': none)
	curve text NOT NULL CHECK (curve IN ('hilbert', 'z')),
	bits int NOT NULL,				-- bits per key column in the curve key
	bounds bytea[] NOT NULL,		-- per key, as in zorder.layouts.bounds
	sample_rows int NOT NULL,
	owner name NOT NULL,			-- the table's owner when it was sampled
	created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON zorder.boundary_sets (relid);
COMMENT ON TABLE zorder.boundary_sets IS
	'quantile boundaries of a table''s keys, one immutable row per sample';
REVOKE ALL ON zorder.boundary_sets FROM PUBLIC;

-- The sets that indexes name (by a constant) in calls of zorder.layout_key.
CREATE FUNCTION zorder._boundary_sets_in_use(OUT set_id integer, OUT relid oid)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'zorder_boundary_sets_in_use'
	LANGUAGE C STABLE STRICT;
REVOKE ALL ON FUNCTION zorder._boundary_sets_in_use() FROM PUBLIC;

-- A set never changes, except that one whose table is dropped passes to
-- the table whose index uses it (zorder._on_sql_drop); none is deleted
-- while an index names it.
CREATE FUNCTION zorder._boundary_sets_immutable()
	RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF TG_OP = 'UPDATE' THEN
		IF (OLD.id, OLD.origin, OLD.columns, OLD.keys, OLD.types, OLD.typmods,
			OLD.collations, OLD.curve, OLD.bits, OLD.bounds, OLD.sample_rows,
			OLD.owner)
		   IS DISTINCT FROM
		   (NEW.id, NEW.origin, NEW.columns, NEW.keys, NEW.types, NEW.typmods,
			NEW.collations, NEW.curve, NEW.bits, NEW.bounds, NEW.sample_rows,
			NEW.owner) THEN
			RAISE EXCEPTION 'boundary sets cannot be changed'
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = 'Indexes and layouts may depend on boundary set ' || OLD.id || '.',
					  HINT = 'Call zorder.prepare_layout to sample a new set.';
		END IF;
		RETURN NEW;
	END IF;
	IF EXISTS (SELECT FROM zorder._boundary_sets_in_use() u
			   WHERE TG_OP = 'TRUNCATE' OR u.set_id = OLD.id)
	   -- the sets of a dropped table go with it unless a table of the same
	   -- owner takes them over (zorder._on_sql_drop): an index of another
	   -- role's table does not keep another owner's sampled values alive
	   AND (TG_OP = 'TRUNCATE'
			OR EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid = OLD.relid)) THEN
		RAISE EXCEPTION 'boundary sets in use cannot be deleted'
			USING ERRCODE = 'dependent_objects_still_exist',
				  DETAIL = 'An index calls zorder.layout_key with '
					|| CASE WHEN TG_OP = 'TRUNCATE' THEN 'one of them' ELSE 'boundary set ' || OLD.id END || '.',
				  HINT = 'Drop the index first; zorder.drop_unused_boundary_sets deletes the sets nothing uses.';
	END IF;
	RETURN CASE WHEN TG_OP = 'TRUNCATE' THEN NULL ELSE OLD END;
END
$$;
CREATE TRIGGER boundary_sets_immutable BEFORE UPDATE OR DELETE ON zorder.boundary_sets
	FOR EACH ROW EXECUTE FUNCTION zorder._boundary_sets_immutable();
CREATE TRIGGER boundary_sets_truncate BEFORE TRUNCATE ON zorder.boundary_sets
	FOR EACH STATEMENT EXECUTE FUNCTION zorder._boundary_sets_immutable();

-- ==== Layouts (layout.c) ===================================================
--
-- The layout a full optimize gave a table (one row per leaf relation), with
-- the quantile boundaries it used so later work can place rows in the same
-- space, and the state incremental calls keep between them.
CREATE TABLE zorder.layouts (
	relid regclass PRIMARY KEY,
	keys int2[] NOT NULL,		-- attribute numbers of this relation
	curve text NOT NULL CHECK (curve IN ('hilbert', 'z')),
	bits int NOT NULL,			-- bits per key column in the curve key
	bounds bytea[] NOT NULL,	-- per key: its boundaries in the binary form
								-- of the column's type, after the type,
								-- typmod and collation they were chosen for
								-- (see quantile.c); read back whatever the
								-- session's settings, and taken anew by an
								-- incremental call when the column changed
	sample_rows int NOT NULL,	-- rows the boundaries were drawn from
	optimized_at timestamptz NOT NULL,
	rows_written bigint NOT NULL,
	pages bigint NOT NULL,
	duration interval NOT NULL,
	sort_runs int NOT NULL,		-- sorted runs spilled to temp files
	temp_bytes bigint NOT NULL,	-- compressed bytes written to temp files
	-- pages_per_range of the BRIN indexes on the key columns when the
	-- layout was written (the largest, if they differ): every sorted run
	-- starts on a multiple of it, so no block range mixes two runs.  NULL:
	-- no such index (brin.c).
	pages_per_range int,
	-- where the next slice of the main run to merge starts (a curve key,
	-- sign bit flipped); NULL: at the start.
	merge_cursor bigint,
	-- the relfilenode of the heap the table's runs are true of.  A table
	-- rewritten since (VACUUM FULL, CLUSTER, TRUNCATE, ALTER TABLE, a
	-- restore) holds its rows elsewhere: the next zorder.optimize checks
	-- the new heap against the layout's boundary set in one scan
	-- (recognize.c) and, where the order is gone, forgets its runs and lays
	-- the table out again in full rather than trust block numbers of a file
	-- that is gone.
	layout_filenode oid,
	-- the boundary set the layout was written with; and the newest
	-- prepared set the heap was last checked against, with the relfilenode
	-- checked: a set is checked again only after a rewrite (layoutkey.c).
	boundary_set int,
	checked_set int,
	checked_filenode oid,
	-- rows inside a recognised run that the rewrite left out of key order
	-- (pg_repack's copy fills earlier pages' leftover space with narrow
	-- rows): the next incremental call moves them, as newcomers
	misplaced tid[],
	-- Time-ordered keys (regions.c): per key column of an integer kind, the
	-- highest value of the rows laid out so far, in an order-preserving
	-- bigint form (NULL: not known); and the regions of the key space
	-- opened for rows beyond such a value, each by its key position, start
	-- and number of bands; and the end of each, the highest value it holds
	-- (the bigint form of the highest value there is for a region of rows
	-- beyond its start, a value within the layout's for a region of a
	-- narrow band of them).
	key_tops bigint[],
	region_keys int2[],
	region_starts bigint[],
	region_bands int[],
	region_ends bigint[],
	-- the BRIN ranges whose summaries an incremental call made while rows
	-- that left them were still visible to some snapshot (so the summaries
	-- cover those rows' values too): the next call summarizes them again
	-- (batch.c).
	loose_ranges bigint[],
	-- ---- 0.7 ----
	-- The WAL position an incremental call read under its lock, before
	-- its snapshot, when it went to the end: no row came into a page of
	-- the runs whose LSN is not past it without that call seeing it, so
	-- the next call reads such pages for no newcomer (collect.c).  True of
	-- the file layout_filenode names only: whatever records another file
	-- clears it.
	scan_lsn pg_lsn
);
COMMENT ON TABLE zorder.layouts IS 'layout of each table as left by its last full zorder.optimize';

-- A layout row that comes in by INSERT names no heap file: zorder writes
-- a layout first and records the file after the runs are written
-- (catalog.c, zorder_record_runs_filenode), and a row pg_restore brings
-- names a file of the old cluster, whose number may equal one of this
-- cluster's by chance.
CREATE FUNCTION zorder._layouts_no_file() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	NEW.layout_filenode := NULL;
	NEW.checked_filenode := NULL;
	NEW.misplaced := NULL;
	NEW.scan_lsn := NULL;
	RETURN NEW;
END
$$;
CREATE TRIGGER layouts_no_file BEFORE INSERT ON zorder.layouts
	FOR EACH ROW EXECUTE FUNCTION zorder._layouts_no_file();

-- ==== Sorted runs and history (layout.c) ===================================
--
-- Sorted runs of each table, one row per extent of contiguous blocks.  A
-- full optimize leaves one main run (run 0).  An incremental call places
-- the rows outside every run into the main run's ranges that hold their
-- keys, or, with zorder.placement off, writes them as a newer run of their
-- own (a "cube", merging the newest small ones), and merges those runs'
-- rows back into the main run one key slice at a time; the main run is
-- then several extents, each sorted and covering the keys from its key_lo
-- up to the next extent's.  An extent is made of whole BRIN ranges, so no
-- range mixes two runs.  (0.1 called this table zorder.cubes.)
CREATE TABLE zorder.runs (
	relid regclass NOT NULL,
	first_block bigint NOT NULL,
	nblocks bigint NOT NULL,
	rows bigint NOT NULL,
	created_xid xid NOT NULL,	-- rows inserted later are not part of it
	created_at timestamptz NOT NULL DEFAULT now(),
	run int NOT NULL DEFAULT 0,	-- 0: the main run; newer runs higher
	key_lo bigint,				-- main run: where its keys start (curve key,
								-- sign bit flipped)
	PRIMARY KEY (relid, first_block)
);
COMMENT ON TABLE zorder.runs IS 'sorted runs of each table, by extent';

-- What each call did.
CREATE TABLE zorder.history (
	relid regclass NOT NULL,
	started_at timestamptz NOT NULL,
	mode text NOT NULL CHECK (mode IN ('full', 'incremental', 'merge')),
	rows_moved bigint NOT NULL,
	runs_merged int,			-- runs besides the main one whose rows the
								-- call moved (NULL: a full call)
	runs_after int NOT NULL,	-- the table's runs after the call
	duration interval NOT NULL,
	-- ---- 0.4: the room zorder chooses (room.c) ----
	rows_arrived bigint,		-- rows outside every run the call found
	appends text CHECK (appends IN ('spread', 'ordered')),
								-- where they went: over the main run's
								-- ranges, or to few (time-ordered, banded)
	fillfactor int,				-- the table's fillfactor zorder set (NULL:
								-- it set none; the table's own is left alone)
	room text,					-- why
	-- ---- 0.5: what the call wrote (report.c) ----
	wal_bytes bigint,			-- WAL the call generated
	pages_written bigint,		-- heap pages it wrote rows into
	-- ---- 0.6: the skipping before and after (report.c) ----
	ranges_before float8[],		-- per key column, the mean block ranges a
	ranges_after float8[]		-- point filter on it read (NULL: no BRIN
								-- minmax index covers it)
);
CREATE INDEX ON zorder.history (relid, started_at);
COMMENT ON TABLE zorder.history IS 'one row per zorder.optimize of a table';

REVOKE ALL ON zorder.tables, zorder.layouts, zorder.temp_relations FROM PUBLIC;
-- Every choice of automatic keys (autokeys.c; written by tables.c): the
-- keys before (NULL: the first choice) and after, the block ranges the
-- recorded workload would read with each laid out, and why.  A log, as
-- zorder.history is.
CREATE TABLE zorder.key_changes (
	relid regclass NOT NULL,
	changed_at timestamptz NOT NULL,
	old_keys name[],
	new_keys name[] NOT NULL,
	ranges_old float8,
	ranges_new float8 NOT NULL,
	reason text NOT NULL
);
CREATE INDEX ON zorder.key_changes (relid, changed_at);
COMMENT ON TABLE zorder.key_changes IS 'automatic key choices, with their reasons';

REVOKE ALL ON zorder.runs, zorder.history, zorder.key_changes FROM PUBLIC;

-- ==== Citus: each shard's layout, kept on the coordinator (shardsets.c) =====
--
-- On a Citus coordinator, the boundary set each shard of a distributed
-- table was last laid out with, as its node reported it after the call.
-- A shard that a move (citus_move_shard_placement, the rebalancer) took to
-- another node arrives there in its old order but without zorder's rows;
-- the next zorder.optimize gives it this set as a prepared one, and the
-- node recognises the layout in one scan instead of rewriting the shard.
-- Not dumped: shard ids are of this cluster.
CREATE TABLE zorder.shard_sets (
	relid regclass NOT NULL,		-- the distributed table
	shardid bigint NOT NULL,		-- its shard (pg_dist_shard.shardid)
	node_group int NOT NULL,		-- the node group that held it then
	set_id int NOT NULL,			-- the set's id there
	layout_set jsonb NOT NULL,		-- the set, as zorder._shard_layout_set
									-- gives it
	recorded_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (relid, shardid)
);
COMMENT ON TABLE zorder.shard_sets IS
	'on a Citus coordinator, the boundary set of each shard''s last layout';
REVOKE ALL ON zorder.shard_sets FROM PUBLIC;

-- On a node: the boundary set of a shard's layout, for the coordinator to
-- keep (only the room, if it is the set the coordinator knows); and giving
-- a shard that has no layout on this node such a set, as a prepared set
-- that its next zorder.optimize checks the heap against.  The coordinator
-- calls them, as the calling role, who must own the shard.
CREATE FUNCTION zorder._shard_layout_set(rel regclass, known integer DEFAULT NULL)
	RETURNS jsonb
	AS 'MODULE_PATHNAME', 'zorder_shard_layout_set'
	LANGUAGE C VOLATILE;
CREATE FUNCTION zorder._adopt_layout_set(rel regclass, layout_set jsonb)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'zorder_adopt_layout_set'
	LANGUAGE C VOLATILE STRICT;
-- A distributed table's set has the same id on every node (tableset.c):
-- its coordinator numbers such sets from this sequence, above every id a
-- node gives a set of its own.
CREATE SEQUENCE zorder.table_set_ids AS integer
	MINVALUE 1073741824 MAXVALUE 2147483647;
REVOKE ALL ON SEQUENCE zorder.table_set_ids FROM PUBLIC;
-- A Citus distributed table's one set (tableset.c): each shard's sample
-- for its coordinator, the set stored on each node under the id the
-- coordinator chose, and a call that lays a shard out with it.
CREATE FUNCTION zorder._shard_sample_set(rel regclass, curve text DEFAULT NULL)
	RETURNS jsonb
	AS 'MODULE_PATHNAME', 'zorder_shard_sample_set'
	LANGUAGE C VOLATILE;
CREATE FUNCTION zorder._take_table_set(rel regclass, "table" regclass,
									   set_id integer, layout_set jsonb)
	RETURNS void
	AS 'MODULE_PATHNAME', 'zorder_take_table_set'
	LANGUAGE C VOLATILE;
CREATE PROCEDURE zorder._optimize_with_set(rel regclass, boundary_set integer,
										   "full" boolean DEFAULT false,
										   curve text DEFAULT NULL)
	AS 'MODULE_PATHNAME', 'zorder_optimize_with_set'
	LANGUAGE C;

-- ==== Dump and restore (pg_dump, pg_restore, pg_upgrade) ===================
--
-- The rows that say how a user wants a table laid out are configuration:
-- pg_dump writes them with the tables (pg_extension_config_dump), by the
-- table's name (relid is regclass), and pg_restore binds them to the
-- restored tables.  Only rows of tables that exist and are not temporary
-- go into a dump: a temporary table belongs to its session, and a row of
-- a table that is gone would come back under a bare number that may name
-- some other table.  The sorted runs (zorder.runs) are not dumped: they
-- name blocks of a heap file, and a restored table is a new file; nor are
-- the history (a log, like pg_cron's job_run_details) and the records of
-- temporary tables.  Files a crashed optimize left are recorded under
-- $PGDATA/pg_zorder, outside any database, and never dumped either.
SELECT pg_catalog.pg_extension_config_dump('zorder.tables',
	'WHERE EXISTS (SELECT FROM pg_catalog.pg_class c '
	'WHERE c.oid OPERATOR(pg_catalog.=) tables.relid '
	'AND c.relpersistence OPERATOR(pg_catalog.<>) ''t'') '
	'AND NOT EXISTS (SELECT FROM zorder.temp_relations r '
	'WHERE r.relid OPERATOR(pg_catalog.=) tables.relid)');
SELECT pg_catalog.pg_extension_config_dump('zorder.layouts',
	'WHERE EXISTS (SELECT FROM pg_catalog.pg_class c '
	'WHERE c.oid OPERATOR(pg_catalog.=) layouts.relid '
	'AND c.relpersistence OPERATOR(pg_catalog.<>) ''t'') '
	'AND NOT EXISTS (SELECT FROM zorder.temp_relations r '
	'WHERE r.relid OPERATOR(pg_catalog.=) layouts.relid)');
-- the boundary sets of tables that exist and are not temporary, as above
SELECT pg_catalog.pg_extension_config_dump('zorder.boundary_sets',
	'WHERE EXISTS (SELECT FROM pg_catalog.pg_class c '
	'WHERE c.oid OPERATOR(pg_catalog.=) boundary_sets.relid '
	'AND c.relpersistence OPERATOR(pg_catalog.<>) ''t'') '
	'AND NOT EXISTS (SELECT FROM zorder.temp_relations r '
	'WHERE r.relid OPERATOR(pg_catalog.=) boundary_sets.relid)');
SELECT pg_catalog.pg_extension_config_dump('zorder.boundary_sets_id_seq', '');

-- ==== What users may see: tables they can read =============================
--
-- The views are security barriers: their own conditions run before any of
-- the caller's, so a function in a caller's WHERE clause never sees a row
-- of a table the caller may not read.  They show the rows that are current
-- (catalog.c, zorder_claim_catalog): a temporary table's only in its own
-- session, and no rows a dropped temporary table left behind.
CREATE VIEW zorder.clustered_tables WITH (security_barrier) AS
	SELECT t.relid::regclass AS "table",
		   ARRAY(SELECT a.attname
				 FROM unnest(t.keys) WITH ORDINALITY AS k(attnum, ord)
				 JOIN pg_catalog.pg_attribute a
				   ON a.attrelid = t.relid AND a.attnum = k.attnum
				 ORDER BY k.ord) AS keys,
		   l.curve, l.optimized_at, l.rows_written, l.pages, l.duration
	FROM zorder.tables t
	LEFT JOIN zorder.layouts l USING (relid)
	WHERE pg_catalog.has_table_privilege(t.relid, 'SELECT')
	  AND (SELECT r.session || '/' || r.incarnation
		   FROM zorder.temp_relations r WHERE r.relid = t.relid)
		  IS NOT DISTINCT FROM
		  CASE WHEN (SELECT k.relpersistence FROM pg_catalog.pg_class k
					 WHERE k.oid = t.relid) = 't'
			   THEN zorder._temp_record(t.relid) END;
GRANT SELECT ON zorder.clustered_tables TO PUBLIC;

CREATE VIEW zorder.optimize_history WITH (security_barrier) AS
	SELECT h.relid::regclass AS "table", h.started_at, h.mode, h.rows_moved,
		   h.runs_merged, h.runs_after, h.duration,
		   h.rows_arrived, h.appends, h.fillfactor, h.room,
		   h.wal_bytes, h.pages_written,
		   -- read from the rows' values: not where row-level security
		   -- applies to the caller
		   CASE WHEN NOT pg_catalog.row_security_active(h.relid)
				THEN h.ranges_before END AS ranges_before,
		   CASE WHEN NOT pg_catalog.row_security_active(h.relid)
				THEN h.ranges_after END AS ranges_after
	FROM zorder.history h
	WHERE pg_catalog.has_table_privilege(h.relid, 'SELECT')
	  AND (SELECT r.session || '/' || r.incarnation
		   FROM zorder.temp_relations r WHERE r.relid = h.relid)
		  IS NOT DISTINCT FROM
		  CASE WHEN (SELECT k.relpersistence FROM pg_catalog.pg_class k
					 WHERE k.oid = h.relid) = 't'
			   THEN zorder._temp_record(h.relid) END;
GRANT SELECT ON zorder.optimize_history TO PUBLIC;

CREATE VIEW zorder.key_history WITH (security_barrier) AS
	SELECT k.relid::regclass AS "table", k.changed_at, k.old_keys,
		   k.new_keys,
		   -- read from the rows' values: not where row-level security
		   -- applies to the caller
		   CASE WHEN NOT pg_catalog.row_security_active(k.relid)
				THEN k.ranges_old END AS ranges_old,
		   CASE WHEN NOT pg_catalog.row_security_active(k.relid)
				THEN k.ranges_new END AS ranges_new,
		   CASE WHEN NOT pg_catalog.row_security_active(k.relid)
				THEN k.reason END AS reason
	FROM zorder.key_changes k
	WHERE pg_catalog.has_table_privilege(k.relid, 'SELECT')
	  AND (SELECT r.session || '/' || r.incarnation
		   FROM zorder.temp_relations r WHERE r.relid = k.relid)
		  IS NOT DISTINCT FROM
		  CASE WHEN (SELECT c.relpersistence FROM pg_catalog.pg_class c
					 WHERE c.oid = k.relid) = 't'
			   THEN zorder._temp_record(k.relid) END;
GRANT SELECT ON zorder.key_history TO PUBLIC;

CREATE VIEW zorder.sorted_runs WITH (security_barrier) AS
	SELECT c.relid::regclass AS "table", c.first_block, c.nblocks, c.rows,
		   c.created_at, c.run
	FROM zorder.runs c
	WHERE pg_catalog.has_table_privilege(c.relid, 'SELECT')
	  AND (SELECT r.session || '/' || r.incarnation
		   FROM zorder.temp_relations r WHERE r.relid = c.relid)
		  IS NOT DISTINCT FROM
		  CASE WHEN (SELECT k.relpersistence FROM pg_catalog.pg_class k
					 WHERE k.oid = c.relid) = 't'
			   THEN zorder._temp_record(c.relid) END;
GRANT SELECT ON zorder.sorted_runs TO PUBLIC;

-- ==== Declaring keys (tables.c) ============================================

CREATE FUNCTION zorder.cluster_by(rel regclass, VARIADIC columns name[])
	RETURNS void
	AS 'MODULE_PATHNAME', 'zorder_cluster_by'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.cluster_by(regclass, name[]) IS
	'declare the clustering keys of a table (no rewrite)';

CREATE FUNCTION zorder.clear_keys(rel regclass)
	RETURNS void
	AS 'MODULE_PATHNAME', 'zorder_clear_keys'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.clear_keys(regclass) IS
	'forget the clustering keys and layout of a table';

-- ==== Laying a table out (optimize.c, pending.c) ===========================

CREATE PROCEDURE zorder.optimize(rel regclass,
								 "full" boolean DEFAULT false,
								 curve text DEFAULT NULL)
	AS 'MODULE_PATHNAME', 'zorder_optimize'
	LANGUAGE C;
COMMENT ON PROCEDURE zorder.optimize(regclass, boolean, text) IS
	'lay a table out along its clustering keys';

CREATE FUNCTION zorder.cleanup()
	RETURNS integer
	AS 'MODULE_PATHNAME', 'zorder_cleanup'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.cleanup() IS
	'remove relation files left behind by a crashed zorder.optimize';
REVOKE ALL ON FUNCTION zorder.cleanup() FROM PUBLIC;

-- ==== Online layouts by pg_repack or REPACK (layoutkey.c) ==================

CREATE FUNCTION zorder.drop_unused_boundary_sets(rel regclass)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'zorder_drop_unused_boundary_sets'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.drop_unused_boundary_sets(regclass) IS
	'delete the boundary sets of a table that no index, layout or pending rewrite uses';

CREATE FUNCTION zorder.layout_key(set_id integer, VARIADIC "any")
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'zorder_layout_key'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION zorder.layout_key(integer, "any") IS
	'the curve key zorder.optimize sorts by, under a stored boundary set';

CREATE FUNCTION zorder.prepare_layout(rel regclass, curve text DEFAULT 'hilbert',
		OUT "table" regclass,
		OUT boundary_set integer,
		OUT order_by text,
		OUT pg_repack text,
		OUT create_index text,
		OUT cluster text,
		OUT repack text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'zorder_prepare_layout'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.prepare_layout(regclass, text) IS
	'sample a table into a new boundary set and say how to lay it out online';

-- ==== Skipping: clustering information and BRIN (skipping.c, brin.c) =======

CREATE FUNCTION zorder.clustering_information(rel regclass,
		probes integer DEFAULT 500,
		with_pages_per_range integer DEFAULT NULL,
		OUT key_position integer,
		OUT column_name name,
		OUT brin_index regclass,
		OUT pages_per_range integer,
		OUT total_ranges bigint,
		OUT unsummarized_ranges bigint,
		OUT probes_used bigint,
		OUT mean_ranges_touched float8,
		OUT ideal_ranges_touched float8,
		OUT ratio_to_ideal float8,
		OUT average_overlaps float8,
		OUT average_depth float8,
		OUT depth_histogram jsonb,
		OUT keys name[],
		OUT curve text,
		OUT optimized_at timestamptz,
		OUT table_pages bigint,
		OUT unclustered_share float8,
		OUT sorted_runs integer,
		-- ---- 0.4: the room (room.c) ----
		OUT fillfactor integer,
		OUT room text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'zorder_clustering_information'
	LANGUAGE C STABLE;
COMMENT ON FUNCTION zorder.clustering_information(regclass, integer, integer) IS
	'block ranges a point filter on each key column reads, against the ideal';

CREATE FUNCTION zorder.clustering_information_json(rel regclass,
		probes integer DEFAULT 500,
		with_pages_per_range integer DEFAULT NULL)
	RETURNS jsonb
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
-- a standard SQL body is parsed here, at install time: what it calls is
-- fixed by OID, not looked up by name when it runs
BEGIN ATOMIC
WITH c AS MATERIALIZED (
	SELECT * FROM zorder.clustering_information(rel, probes, with_pages_per_range)
)
SELECT jsonb_build_object(
		'table', rel::text,
		'keys', to_jsonb(t.keys),
		'curve', t.curve,
		'optimized_at', t.optimized_at,
		'table_pages', t.table_pages,
		'unclustered_share', t.unclustered_share,
		'sorted_runs', t.sorted_runs,
		'fillfactor', t.fillfactor,
		'room', t.room,
		'columns', (SELECT jsonb_agg(jsonb_build_object(
						'column', c.column_name,
						'brin_index', c.brin_index::text,
						'pages_per_range', c.pages_per_range,
						'total_ranges', c.total_ranges,
						'unsummarized_ranges', c.unsummarized_ranges,
						'probes', c.probes_used,
						'mean_ranges_touched', c.mean_ranges_touched,
						'ideal_ranges_touched', c.ideal_ranges_touched,
						'ratio_to_ideal', c.ratio_to_ideal,
						'average_overlaps', c.average_overlaps,
						'average_depth', c.average_depth,
						'depth_histogram', c.depth_histogram)
						ORDER BY c.key_position)
					FROM c))
FROM c AS t
WHERE t.key_position = 1;
END;
COMMENT ON FUNCTION zorder.clustering_information_json(regclass, integer, integer) IS
	'zorder.clustering_information as one jsonb document';

-- On a Citus coordinator: each shard of a distributed table measured on its
-- node, one row per shard and key column, the shards that skip worst first
-- (shardreport.c).
CREATE FUNCTION zorder.shard_clustering_information(rel regclass,
		probes integer DEFAULT 500,
		with_pages_per_range integer DEFAULT NULL,
		OUT shard text,
		OUT key_position integer,
		OUT column_name name,
		OUT total_ranges bigint,
		OUT mean_ranges_touched float8,
		OUT ideal_ranges_touched float8,
		OUT ratio_to_ideal float8,
		OUT table_pages bigint,
		OUT sorted_runs integer,
		OUT optimized_at timestamptz)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'zorder_shard_clustering_information'
	LANGUAGE C STABLE;
COMMENT ON FUNCTION zorder.shard_clustering_information(regclass, integer, integer) IS
	'on a Citus coordinator, the skipping of each shard of a distributed table, worst first';

CREATE FUNCTION zorder.ranges_touched(rel regclass, column_name name,
		value text, upper text DEFAULT NULL,
		pages_per_range integer DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'zorder_ranges_touched'
	LANGUAGE C STABLE;
COMMENT ON FUNCTION zorder.ranges_touched(regclass, name, text, text, integer) IS
	'block ranges that column = value (or BETWEEN value AND upper) cannot skip';

CREATE FUNCTION zorder.suggest_pages_per_range(rel regclass,
		OUT pages_per_range integer,
		OUT block_ranges bigint,
		OUT index_pages bigint,
		OUT ranges_read float8,
		OUT heap_pages_read float8,
		OUT share_read float8,
		OUT cost float8,
		OUT recommended boolean)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'zorder_suggest_pages_per_range'
	LANGUAGE C STABLE;
COMMENT ON FUNCTION zorder.suggest_pages_per_range(regclass) IS
	'BRIN index size against pages a point filter reads, for each pages_per_range';

-- ==== The drop trigger (tables.c) ==========================================
--
-- Forget the keys of dropped tables, so a later table that reuses the OID
-- does not inherit them.  In C and not SECURITY DEFINER: it runs as the
-- role that dropped the table, and only its one catalog statement runs as
-- the extension's owner, after the checks of zorder_catalog_exec.
CREATE FUNCTION zorder._on_sql_drop()
	RETURNS event_trigger
	AS 'MODULE_PATHNAME', 'zorder_on_sql_drop'
	LANGUAGE C;

CREATE EVENT TRIGGER zorder_sql_drop ON sql_drop
	EXECUTE FUNCTION zorder._on_sql_drop();

-- ==== 0.4: the key advisor (advisor.c, issue #29) ==========================
--
-- Kept together at the end, apart from other 0.4 objects, in this script and
-- in zorder--0.3--0.4.sql alike.  Not SECURITY DEFINER: it runs as the
-- caller, who must be able to read the columns, and pg_qualstats shows the
-- caller only what it may see.
CREATE FUNCTION zorder.recommend_keys(rel regclass, max_keys integer DEFAULT 4,
		OUT rank integer,
		OUT keys name[],
		OUT ranges_read float8,
		OUT ranges_read_now float8,
		OUT workload jsonb,
		OUT reason text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'zorder_recommend_keys'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.recommend_keys(regclass, integer) IS
	'key sets ranked by the block ranges the recorded workload would read';

-- Owner only, as cluster_by; the workload is read as the caller, as
-- recommend_keys reads it (autokeys.c).
CREATE FUNCTION zorder.cluster_by_auto(rel regclass, max_keys integer DEFAULT 3)
	RETURNS name[]
	AS 'MODULE_PATHNAME', 'zorder_cluster_by_auto'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.cluster_by_auto(regclass, integer) IS
	'declare the key advisor''s first choice as the keys of a table, and let zorder.optimize re-evaluate them';

-- ==== What a call would do (estimate.c) ====================================

CREATE FUNCTION zorder.estimate(rel regclass, "full" boolean DEFAULT NULL,
		OUT "table" regclass,
		OUT mode text,
		OUT reason text,
		OUT rows_arrived bigint,
		OUT rows_to_move bigint,
		OUT heap_bytes bigint,
		OUT index_bytes bigint,
		OUT temp_bytes bigint,
		OUT wal_bytes bigint,
		OUT lock text,
		OUT lock_seconds float8,
		OUT seconds float8,
		OUT time_from text,
		OUT key_columns name[],
		OUT ranges_read_now float8[],
		OUT ranges_read_after float8[])
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'zorder_estimate'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.estimate(regclass, boolean) IS
	'what zorder.optimize would do on a table, before it runs';
