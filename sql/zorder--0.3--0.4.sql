/* zorder--0.3--0.4.sql: update an installed 0.3 to 0.4 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.4'" to load this file. \quit

-- 0.4 adds the room's columns to the history and the reports, and the key
-- advisor's function.  test/t/015_upgrade.pl checks that an install updated
-- from 0.1, 0.2 and 0.3 has exactly the objects of a fresh 0.4 install.

-- ---- 0.4: the room zorder chooses (room.c) --------------------------------
-- Each call records what arrived, where it went, and the fillfactor zorder
-- chose with its reason.  Columns are added last, where zorder--0.4.sql
-- declares them.
ALTER TABLE zorder.history
	ADD COLUMN rows_arrived bigint,
	ADD COLUMN appends text CHECK (appends IN ('spread', 'ordered')),
	ADD COLUMN fillfactor int,
	ADD COLUMN room text;

CREATE OR REPLACE VIEW zorder.optimize_history WITH (security_barrier) AS
	SELECT h.relid::regclass AS "table", h.started_at, h.mode, h.rows_moved,
		   h.runs_merged, h.runs_after, h.duration,
		   h.rows_arrived, h.appends, h.fillfactor, h.room
	FROM zorder.history h
	WHERE pg_catalog.has_table_privilege(h.relid, 'SELECT')
	  AND (SELECT r.session || '/' || r.incarnation
		   FROM zorder.temp_relations r WHERE r.relid = h.relid)
		  IS NOT DISTINCT FROM
		  CASE WHEN (SELECT k.relpersistence FROM pg_catalog.pg_class k
					 WHERE k.oid = h.relid) = 't'
			   THEN zorder._temp_record(h.relid) END;

-- clustering_information shows the table's fillfactor and the reason for
-- the room zorder last chose, as its last columns; a function's result
-- type cannot change in place, and clustering_information_json's body
-- depends on it: both are created again as zorder--0.4.sql declares them.
DROP FUNCTION zorder.clustering_information_json(regclass, integer, integer);
DROP FUNCTION zorder.clustering_information(regclass, integer, integer);

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

-- ==== 0.4: the key advisor (advisor.c, issue #29) ==========================
--
-- Kept together at the end, apart from other 0.4 objects, in this script and
-- in zorder--0.4.sql alike.  Not SECURITY DEFINER: it runs as the
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
