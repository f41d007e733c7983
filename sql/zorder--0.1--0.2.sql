/* zorder--0.1--0.2.sql: update zorder 0.1 to 0.2 (ALTER EXTENSION zorder UPDATE) */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.2'" to load this file. \quit

-- 0.1 was installed into schema zorder, which CREATE EXTENSION made or, if
-- it existed, took as it was; the schema was not a member of the
-- extension, and pg_extension.extnamespace named it.  0.2 makes the schema
-- a member owned by the extension's owner (see zorder--0.2.sql), and its
-- C code refuses to use any other (catalog.c, catalog_owner).  PostgreSQL
-- keeps an extension's extnamespace across ALTER EXTENSION UPDATE whatever
-- the new control file says (extension.c, ApplyExtensionUpdates), and
-- refuses ALTER EXTENSION ... ADD SCHEMA for the schema that holds the
-- extension; SET SCHEMA needs a relocatable extension.  So this script
-- points extnamespace at pg_catalog, as CREATE EXTENSION does for 0.2, and
-- drops the extension's dependency on the schema, before it adds the
-- schema as a member.
--
-- Adopting the schema is safe only if nobody but the extension's owner
-- can have put anything in it: a schema that another role owns or may
-- create objects in, or that holds objects the extension did not make, is
-- refused, with nothing changed.  Whoever runs the update can then check
-- the schema, fix it, and run the update again.
DO $$
DECLARE
	ext oid;
	extowner oid;
	nsp oid;
	nspowner oid;
	stranger text;
BEGIN
	SELECT e.oid, e.extowner, e.extnamespace INTO ext, extowner, nsp
	  FROM pg_catalog.pg_extension e
	 WHERE e.extname OPERATOR(pg_catalog.=) 'zorder';
	SELECT n.nspowner INTO nspowner
	  FROM pg_catalog.pg_namespace n
	 WHERE n.oid OPERATOR(pg_catalog.=) nsp
	   AND n.nspname OPERATOR(pg_catalog.=) 'zorder';
	IF NOT FOUND THEN
		RAISE EXCEPTION USING
			ERRCODE = 'object_not_in_prerequisite_state',
			MESSAGE = 'extension "zorder" is not in schema "zorder"',
			DETAIL = 'Version 0.1 of the extension is in schema "zorder"; this one is in schema "' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(pg_catalog.get_namespace_name(nsp)) OPERATOR(pg_catalog.||) '".',
			HINT = 'Rename that schema back to "zorder", then run ALTER EXTENSION zorder UPDATE again.';
	END IF;
	IF nspowner OPERATOR(pg_catalog.<>) extowner THEN
		RAISE EXCEPTION USING
			ERRCODE = 'insufficient_privilege',
			MESSAGE = 'schema "zorder" is not owned by the owner of extension "zorder"',
			DETAIL = 'Version 0.2 makes the schema part of the extension; it is owned by role "' OPERATOR(pg_catalog.||) pg_catalog.pg_get_userbyid(nspowner) OPERATOR(pg_catalog.||) '", who could have put objects of their own in it.',
			HINT = 'Check what the schema holds, give it to role "' OPERATOR(pg_catalog.||) pg_catalog.pg_get_userbyid(extowner) OPERATOR(pg_catalog.||) '" with ALTER SCHEMA zorder OWNER TO, then run ALTER EXTENSION zorder UPDATE again.';
	END IF;
	SELECT pg_catalog.string_agg(pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)), ', ')
	  INTO stranger
	  FROM pg_catalog.pg_namespace n,
		   LATERAL pg_catalog.aclexplode(n.nspacl) a
	 WHERE n.oid OPERATOR(pg_catalog.=) nsp
	   AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
	   AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner;
	IF stranger IS NOT NULL THEN
		RAISE EXCEPTION USING
			ERRCODE = 'insufficient_privilege',
			MESSAGE = 'other roles may create objects in schema "zorder"',
			DETAIL = 'CREATE on the schema is granted to ' OPERATOR(pg_catalog.||) stranger OPERATOR(pg_catalog.||) '.',
			HINT = 'Check what the schema holds, revoke CREATE on it from every role but its owner, then run ALTER EXTENSION zorder UPDATE again.';
	END IF;
	-- objects of the schema that are neither members of the extension nor
	-- parts of a member (indexes, row types, array types)
	WITH RECURSIVE ours(classid, objid) AS (
		SELECT d.classid, d.objid FROM pg_catalog.pg_depend d
		 WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
		   AND d.refobjid OPERATOR(pg_catalog.=) ext
		   AND d.deptype OPERATOR(pg_catalog.=) 'e'
		UNION
		SELECT d.classid, d.objid FROM pg_catalog.pg_depend d
		  JOIN ours o ON d.refclassid OPERATOR(pg_catalog.=) o.classid
					 AND d.refobjid OPERATOR(pg_catalog.=) o.objid
		 WHERE d.deptype OPERATOR(pg_catalog.=) ANY ('{a,i}'::pg_catalog."char"[])
	), theirs(classid, objid) AS (
		SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, oid FROM pg_catalog.pg_class WHERE relnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, oid FROM pg_catalog.pg_proc WHERE pronamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, oid FROM pg_catalog.pg_type WHERE typnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_operator'::pg_catalog.regclass, oid FROM pg_catalog.pg_operator WHERE oprnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_collation'::pg_catalog.regclass, oid FROM pg_catalog.pg_collation WHERE collnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_conversion'::pg_catalog.regclass, oid FROM pg_catalog.pg_conversion WHERE connamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_opclass'::pg_catalog.regclass, oid FROM pg_catalog.pg_opclass WHERE opcnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_opfamily'::pg_catalog.regclass, oid FROM pg_catalog.pg_opfamily WHERE opfnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass, oid FROM pg_catalog.pg_statistic_ext WHERE stxnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_ts_config'::pg_catalog.regclass, oid FROM pg_catalog.pg_ts_config WHERE cfgnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_ts_dict'::pg_catalog.regclass, oid FROM pg_catalog.pg_ts_dict WHERE dictnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_ts_parser'::pg_catalog.regclass, oid FROM pg_catalog.pg_ts_parser WHERE prsnamespace OPERATOR(pg_catalog.=) nsp
		UNION ALL SELECT 'pg_catalog.pg_ts_template'::pg_catalog.regclass, oid FROM pg_catalog.pg_ts_template WHERE tmplnamespace OPERATOR(pg_catalog.=) nsp
	)
	SELECT pg_catalog.string_agg(i.type OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) i.identity, ', ')
	  INTO stranger
	  FROM theirs t,
		   LATERAL pg_catalog.pg_identify_object(t.classid, t.objid, 0) i
	 WHERE NOT EXISTS (SELECT FROM ours o
					   WHERE o.classid OPERATOR(pg_catalog.=) t.classid
						 AND o.objid OPERATOR(pg_catalog.=) t.objid);
	IF stranger IS NOT NULL THEN
		RAISE EXCEPTION USING
			ERRCODE = 'object_not_in_prerequisite_state',
			MESSAGE = 'schema "zorder" holds objects that are not part of extension "zorder"',
			DETAIL = 'Version 0.2 makes the schema part of the extension, and does not take in other objects: ' OPERATOR(pg_catalog.||) stranger OPERATOR(pg_catalog.||) '.',
			HINT = 'Move or drop them, then run ALTER EXTENSION zorder UPDATE again.';
	END IF;

	UPDATE pg_catalog.pg_extension
	   SET extnamespace = 'pg_catalog'::pg_catalog.regnamespace
	 WHERE oid OPERATOR(pg_catalog.=) ext;
	DELETE FROM pg_catalog.pg_depend
	 WHERE classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
	   AND objid OPERATOR(pg_catalog.=) ext
	   AND refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
	   AND refobjid OPERATOR(pg_catalog.=) nsp;
END
$$;
ALTER EXTENSION zorder ADD SCHEMA zorder;

-- Rows of relations that are gone: 0.1 kept those of temporary tables that
-- went away without a DROP, which a later table reusing the OID would have
-- inherited.
DELETE FROM zorder.tables t WHERE NOT EXISTS
	(SELECT FROM pg_catalog.pg_class c WHERE c.oid = t.relid);
DELETE FROM zorder.layouts l WHERE NOT EXISTS
	(SELECT FROM pg_catalog.pg_class c WHERE c.oid = l.relid);
DELETE FROM zorder.cubes u WHERE NOT EXISTS
	(SELECT FROM pg_catalog.pg_class c WHERE c.oid = u.relid);
DELETE FROM zorder.history h WHERE NOT EXISTS
	(SELECT FROM pg_catalog.pg_class c WHERE c.oid = h.relid);

-- Temporary tables with rows in the catalog, and the session each belongs
-- to.  PostgreSQL fires no event trigger when a temporary table goes away
-- with ON COMMIT DROP, DISCARD or the end of its session, so rows of such
-- a table are told from those of a later table with the same OID by this
-- record (catalog.c, zorder_claim_catalog).
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

REVOKE ALL ON zorder.tables, zorder.layouts, zorder.temp_relations FROM PUBLIC;

-- The views change, and they depend on the columns retyped below.
DROP VIEW zorder.clustered_tables, zorder.optimize_history, zorder.sorted_runs;

-- Rows name their table as regclass (see zorder--0.2.sql), in place: the
-- same OIDs, the same columns in the same order as a 0.2 install.
ALTER TABLE zorder.tables ALTER COLUMN relid TYPE regclass;
ALTER TABLE zorder.cubes ALTER COLUMN relid TYPE regclass;
ALTER TABLE zorder.history ALTER COLUMN relid TYPE regclass;

-- Boundaries: 0.1 kept each key's as the text of a text[] of the values'
-- output forms.  0.2 keeps them with the type, typmod and collation they
-- are for, in the form quantile.c (zorder_bounds_to_bytea) writes; its
-- text variant ('t') holds output forms, read back with the type's input
-- function as 0.1 read them.  They are taken to be for the column as it is
-- now, as 0.1 took them; a key column dropped since gets type 0, which
-- matches no column, so that new boundaries are taken.  A full optimize
-- writes them in the binary form.  The conversion function is dropped
-- again below.
CREATE FUNCTION zorder._bounds_from_0_1(rel oid, keys int2[], bounds text[])
	RETURNS bytea[]
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $f$
SELECT array_agg(
		int4send(1) || oidsend(coalesce(a.atttypid, 0)) ||
		int4send(coalesce(a.atttypmod, -1)) ||
		oidsend(coalesce(a.attcollation, 0)) || '\x74'::bytea ||
		int4send(coalesce(cardinality(bounds[k.ord]::text[]), 0)) ||
		coalesce((SELECT string_agg(int4send(octet_length(convert_to(v.v, current_setting('server_encoding')))) ||
									convert_to(v.v, current_setting('server_encoding')),
									''::bytea ORDER BY v.i)
				  FROM unnest(bounds[k.ord]::text[]) WITH ORDINALITY AS v(v, i)),
				 ''::bytea)
		ORDER BY k.ord)
FROM unnest(keys) WITH ORDINALITY AS k(attnum, ord)
LEFT JOIN pg_attribute a
	   ON a.attrelid = rel AND a.attnum = k.attnum AND NOT a.attisdropped
$f$;
ALTER TABLE zorder.layouts
	ALTER COLUMN relid TYPE regclass,
	ALTER COLUMN bounds TYPE bytea[]
		USING zorder._bounds_from_0_1(relid, keys, bounds);
DROP FUNCTION zorder._bounds_from_0_1(oid, int2[], text[]);

-- zorder.cubes holds the main run too: it is zorder.runs, and history
-- counts runs.  The primary key's constraint and index, and the NOT NULL
-- constraints PostgreSQL 18 and later catalog, are named after the table
-- and column they were made for: they get the names a 0.2 install gives
-- them.  After the last DROP of this script: 0.1's sql_drop trigger, which
-- the DROPs fire and which is replaced at the end, names zorder.cubes.
ALTER TABLE zorder.cubes RENAME TO runs;
ALTER TABLE zorder.runs RENAME CONSTRAINT cubes_pkey TO runs_pkey;
ALTER TABLE zorder.history RENAME COLUMN cubes_merged TO runs_merged;
ALTER TABLE zorder.history RENAME COLUMN cubes_after TO runs_after;
DO $$
DECLARE
	n record;
BEGIN
	FOR n IN
		SELECT c.relname, k.conname,
			   c.relname OPERATOR(pg_catalog.||) '_' OPERATOR(pg_catalog.||)
			   a.attname OPERATOR(pg_catalog.||) '_not_null' AS fresh
		  FROM pg_catalog.pg_constraint k
		  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) k.conrelid
		  JOIN pg_catalog.pg_attribute a
			ON a.attrelid OPERATOR(pg_catalog.=) k.conrelid
		   AND a.attnum OPERATOR(pg_catalog.=) k.conkey[1]
		 WHERE k.contype OPERATOR(pg_catalog.=) 'n'
		   AND k.conrelid OPERATOR(pg_catalog.=) ANY
			   (ARRAY['zorder.runs'::pg_catalog.regclass,
					  'zorder.history'::pg_catalog.regclass])
	LOOP
		IF n.conname OPERATOR(pg_catalog.<>) n.fresh THEN
			EXECUTE pg_catalog.format('ALTER TABLE zorder.%I RENAME CONSTRAINT %I TO %I',
									  n.relname, n.conname, n.fresh);
		END IF;
	END LOOP;
END
$$;

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
		   h.runs_merged, h.runs_after, h.duration
	FROM zorder.history h
	WHERE pg_catalog.has_table_privilege(h.relid, 'SELECT')
	  AND (SELECT r.session || '/' || r.incarnation
		   FROM zorder.temp_relations r WHERE r.relid = h.relid)
		  IS NOT DISTINCT FROM
		  CASE WHEN (SELECT k.relpersistence FROM pg_catalog.pg_class k
					 WHERE k.oid = h.relid) = 't'
			   THEN zorder._temp_record(h.relid) END;
GRANT SELECT ON zorder.optimize_history TO PUBLIC;

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

-- A standard SQL body (0.1's was a string, parsed at every call).
CREATE OR REPLACE FUNCTION zorder.clustering_information_json(rel regclass,
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

-- Dump and restore (pg_dump, pg_restore, pg_upgrade).
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
--
-- layout_filenode is the relfilenode of the heap the table's runs are true
-- of.  A table rewritten since (VACUUM FULL, CLUSTER, TRUNCATE, ALTER
-- TABLE, a restore) holds its rows elsewhere: the next zorder.optimize
-- forgets its runs and lays the table out again in full (catalog.c,
-- zorder_forget_stale_runs) rather than trust block numbers of a file
-- that is gone.
ALTER TABLE zorder.layouts ADD COLUMN layout_filenode oid;

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
	RETURN NEW;
END
$$;
CREATE TRIGGER layouts_no_file BEFORE INSERT ON zorder.layouts
	FOR EACH ROW EXECUTE FUNCTION zorder._layouts_no_file();

-- Keys are attribute numbers, and a restored table numbers its columns
-- afresh: one that had dropped columns before a key gets other numbers.
-- So zorder.tables also keeps the key columns' names (kept current by
-- every zorder call that writes the table's layout: catalog.c,
-- zorder_open_checked), and a row inserted with names, as pg_restore
-- inserts them, is bound to the columns of those names if all exist.
ALTER TABLE zorder.tables ADD COLUMN key_names name[];

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

-- The runs recorded by 0.1 are taken to be of the heap each table has now,
-- as 0.1 took them.
UPDATE zorder.layouts l SET layout_filenode = c.relfilenode
  FROM pg_catalog.pg_class c WHERE c.oid = l.relid;
UPDATE zorder.tables t SET key_names = n.names
  FROM (SELECT t2.relid,
			   array_agg(a.attname ORDER BY k.ord) AS names,
			   count(a.attname) AS found,
			   cardinality(t2.keys) AS wanted
		  FROM zorder.tables t2
		 CROSS JOIN unnest(t2.keys) WITH ORDINALITY AS k(attnum, ord)
		  LEFT JOIN pg_catalog.pg_attribute a
			ON a.attrelid = t2.relid AND a.attnum = k.attnum
		   AND NOT a.attisdropped
		 GROUP BY t2.relid, t2.keys) n
 WHERE n.relid = t.relid AND n.found = n.wanted;

-- ==== Boundary sets and the layout key (layoutkey.c) ======================
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
	id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	relid regclass NOT NULL,		-- the table (a leaf) it was sampled from
	origin text NOT NULL CHECK (origin IN ('optimize', 'prepare')),
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
-- Dumped with the tables, as zorder.tables and zorder.layouts are: only the
-- sets of tables that exist and are not temporary.
SELECT pg_catalog.pg_extension_config_dump('zorder.boundary_sets',
	'WHERE EXISTS (SELECT FROM pg_catalog.pg_class c '
	'WHERE c.oid OPERATOR(pg_catalog.=) boundary_sets.relid '
	'AND c.relpersistence OPERATOR(pg_catalog.<>) ''t'') '
	'AND NOT EXISTS (SELECT FROM zorder.temp_relations r '
	'WHERE r.relid OPERATOR(pg_catalog.=) boundary_sets.relid)');
SELECT pg_catalog.pg_extension_config_dump('zorder.boundary_sets_id_seq', '');

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

-- The set a table's layout was written with (layout_filenode, above, is
-- the heap its sorted runs are true of); and the newest prepared set the
-- heap was last checked against, with the relfilenode checked: a set is
-- checked again only after a rewrite.
ALTER TABLE zorder.layouts ADD COLUMN boundary_set int,
	ADD COLUMN checked_set int,
	ADD COLUMN checked_filenode oid,
	-- rows inside a recognised run that the rewrite left out of key order
	-- (pg_repack's copy fills earlier pages' leftover space with narrow
	-- rows): the next incremental call moves them, as newcomers
	ADD COLUMN misplaced tid[];

-- Time-ordered keys (regions.c): per key column of an integer kind, the
-- highest value of the rows laid out so far, in an order-preserving bigint
-- form (NULL: not known); and the regions of the key space opened for rows
-- beyond such a value, each by its key position, start and number of
-- bands; and the end of each, the highest value it holds (the bigint form
-- of the highest value there is for a region of rows beyond its start, a
-- value within the layout's for a region of a narrow band of them).
ALTER TABLE zorder.layouts ADD COLUMN key_tops bigint[],
	ADD COLUMN region_keys int2[],
	ADD COLUMN region_starts bigint[],
	ADD COLUMN region_bands int[],
	ADD COLUMN region_ends bigint[];

-- The BRIN ranges whose summaries an incremental call made while rows that
-- left them were still visible to some snapshot (so the summaries cover
-- those rows' values too): the next call summarizes them again (batch.c).
ALTER TABLE zorder.layouts ADD COLUMN loose_ranges bigint[];

-- A dropped table's sets go with it, except those an index of another
-- table names: zorder._on_sql_drop passes them to that table.

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

-- ==== end of boundary sets and the layout key ==============================

-- The sql_drop trigger in C (0.1's was PL/pgSQL, SECURITY DEFINER): it
-- forgets the records of temporary tables and the boundary sets too.  Last,
-- because it reads the objects made above, and the DROPs of this script
-- fire it.
CREATE OR REPLACE FUNCTION zorder._on_sql_drop()
	RETURNS event_trigger
	AS 'MODULE_PATHNAME', 'zorder_on_sql_drop'
	LANGUAGE C;
