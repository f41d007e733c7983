/* zorder--0.1.sql: objects of the zorder extension, all in schema zorder */

\echo Use "CREATE EXTENSION zorder" to load this file. \quit

-- Space-filling-curve keys over raw values.

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

-- Catalog.  Ordinary users cannot change it directly: the extension's
-- functions check privileges and write it as the extension's owner.

CREATE TABLE zorder.tables (
	relid oid PRIMARY KEY,		-- table (or partitioned table) the keys apply to
	keys int2[] NOT NULL		-- attribute numbers, in declared order
);
COMMENT ON TABLE zorder.tables IS 'clustering keys declared with zorder.cluster_by';

-- The layout a full optimize gave a table (one row per leaf relation), with
-- the quantile boundaries it used so later work can place rows in the same
-- space.
CREATE TABLE zorder.layouts (
	relid oid PRIMARY KEY,
	keys int2[] NOT NULL,		-- attribute numbers of this relation
	curve text NOT NULL CHECK (curve IN ('hilbert', 'z')),
	bits int NOT NULL,			-- bits per key column in the curve key
	bounds text[] NOT NULL,		-- one array literal of boundaries per key
	sample_rows int NOT NULL,	-- rows the boundaries were drawn from
	optimized_at timestamptz NOT NULL,
	rows_written bigint NOT NULL,
	pages bigint NOT NULL,
	duration interval NOT NULL,
	sort_runs int NOT NULL,		-- sorted runs spilled to temp files
	temp_bytes bigint NOT NULL	-- compressed bytes written to temp files
);
COMMENT ON TABLE zorder.layouts IS 'layout of each table as left by its last full zorder.optimize';

REVOKE ALL ON zorder.tables, zorder.layouts FROM PUBLIC;

-- What users may see: tables they can read.
CREATE VIEW zorder.clustered_tables AS
	SELECT t.relid::regclass AS "table",
		   ARRAY(SELECT a.attname
				 FROM unnest(t.keys) WITH ORDINALITY AS k(attnum, ord)
				 JOIN pg_catalog.pg_attribute a
				   ON a.attrelid = t.relid AND a.attnum = k.attnum
				 ORDER BY k.ord) AS keys,
		   l.curve, l.optimized_at, l.rows_written, l.pages, l.duration
	FROM zorder.tables t
	LEFT JOIN zorder.layouts l USING (relid)
	WHERE pg_catalog.has_table_privilege(t.relid, 'SELECT');
GRANT SELECT ON zorder.clustered_tables TO PUBLIC;

-- Declaring keys.

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

-- Laying a table out.

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

-- Forget the keys of dropped tables, so a later table that reuses the OID
-- does not inherit them.
CREATE FUNCTION zorder._on_sql_drop()
	RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM zorder.tables t
	 USING pg_event_trigger_dropped_objects() d
	 WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0
	   AND t.relid = d.objid;
	DELETE FROM zorder.layouts l
	 USING pg_event_trigger_dropped_objects() d
	 WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0
	   AND l.relid = d.objid;
	DELETE FROM zorder.cubes c
	 USING pg_event_trigger_dropped_objects() d
	 WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0
	   AND c.relid = d.objid;
	DELETE FROM zorder.history h
	 USING pg_event_trigger_dropped_objects() d
	 WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0
	   AND h.relid = d.objid;
END
$$;

CREATE EVENT TRIGGER zorder_sql_drop ON sql_drop
	EXECUTE FUNCTION zorder._on_sql_drop();

-- Skipping: clustering information and BRIN (brin.c)

-- Readers of a table must reach these functions (they check privileges on
-- the table themselves); the catalog tables stay closed to PUBLIC.
GRANT USAGE ON SCHEMA zorder TO PUBLIC;

-- pages_per_range of the BRIN indexes on the key columns when the layout
-- was written (the largest, if they differ): every sorted run starts on a
-- multiple of it, so no block range mixes two runs.  NULL: no such index.
ALTER TABLE zorder.layouts ADD COLUMN pages_per_range int;

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
		OUT sorted_runs integer)
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
	AS $$
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
WHERE t.key_position = 1
$$;
COMMENT ON FUNCTION zorder.clustering_information_json(regclass, integer, integer) IS
	'zorder.clustering_information as one jsonb document';

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

-- Incremental optimize (incremental.c)

-- Sorted runs of each table, one row per extent of contiguous blocks.  A
-- full optimize leaves one main run.  An incremental call writes the rows
-- outside every run as a new cube (merging the newest small ones), and
-- merges the cubes' rows back into the main run one key slice at a time;
-- the main run is then several extents, each sorted and covering the keys
-- from its key_lo up to the next extent's.  An extent is made of whole
-- BRIN ranges, so no range mixes two runs.
CREATE TABLE zorder.cubes (
	relid oid NOT NULL,
	first_block bigint NOT NULL,
	nblocks bigint NOT NULL,
	rows bigint NOT NULL,
	created_xid xid NOT NULL,	-- rows inserted later are not part of it
	created_at timestamptz NOT NULL DEFAULT now(),
	run int NOT NULL DEFAULT 0,	-- 0: the main run; cubes: newer ones higher
	key_lo bigint,				-- main run: where its keys start (curve key,
								-- sign bit flipped)
	PRIMARY KEY (relid, first_block)
);
COMMENT ON TABLE zorder.cubes IS 'sorted runs of each table, by extent';

-- Where the next slice of the main run to merge starts (a curve key, sign
-- bit flipped); NULL: at the start.
ALTER TABLE zorder.layouts ADD COLUMN merge_cursor bigint;

-- What each call did.
CREATE TABLE zorder.history (
	relid oid NOT NULL,
	started_at timestamptz NOT NULL,
	mode text NOT NULL CHECK (mode IN ('full', 'incremental', 'merge')),
	rows_moved bigint NOT NULL,
	cubes_merged int,
	cubes_after int NOT NULL,
	duration interval NOT NULL
);
CREATE INDEX ON zorder.history (relid, started_at);
COMMENT ON TABLE zorder.history IS 'one row per zorder.optimize of a table';
REVOKE ALL ON zorder.cubes, zorder.history FROM PUBLIC;

CREATE VIEW zorder.optimize_history AS
	SELECT h.relid::regclass AS "table", h.started_at, h.mode, h.rows_moved,
		   h.cubes_merged, h.cubes_after, h.duration
	FROM zorder.history h
	WHERE pg_catalog.has_table_privilege(h.relid, 'SELECT');
GRANT SELECT ON zorder.optimize_history TO PUBLIC;

CREATE VIEW zorder.sorted_runs AS
	SELECT c.relid::regclass AS "table", c.first_block, c.nblocks, c.rows,
		   c.created_at, c.run
	FROM zorder.cubes c
	WHERE pg_catalog.has_table_privilege(c.relid, 'SELECT');
GRANT SELECT ON zorder.sorted_runs TO PUBLIC;
