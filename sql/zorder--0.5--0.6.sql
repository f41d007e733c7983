/* zorder--0.5--0.6.sql: update an installed 0.5 to 0.6 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.6'" to load this file. \quit

-- 0.6 adds zorder.estimate, automatic keys (zorder.cluster_by_auto, two
-- columns of zorder.tables, zorder.key_changes and its view) and the
-- skipping before and after each call (two columns of zorder.history and
-- of zorder.optimize_history).  Nothing is dropped, so every privilege a
-- DBA granted or revoked is kept.
-- test/t/015_upgrade.pl checks that the update ends with the objects of a
-- fresh 0.6 install.

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

-- ==== Automatic keys (autokeys.c) ==========================================

ALTER TABLE zorder.tables
	ADD auto_max_keys int CHECK (auto_max_keys BETWEEN 1 AND 4),
	ADD auto_checked_at timestamptz;
COMMENT ON TABLE zorder.tables IS 'clustering keys declared with zorder.cluster_by or chosen with zorder.cluster_by_auto';

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
REVOKE ALL ON zorder.key_changes FROM PUBLIC;

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

CREATE FUNCTION zorder.cluster_by_auto(rel regclass, max_keys integer DEFAULT 3)
	RETURNS name[]
	AS 'MODULE_PATHNAME', 'zorder_cluster_by_auto'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION zorder.cluster_by_auto(regclass, integer) IS
	'declare the key advisor''s first choice as the keys of a table, and let zorder.optimize re-evaluate them';

-- ==== The skipping before and after a call (report.c) ======================

ALTER TABLE zorder.history
	ADD ranges_before float8[],
	ADD ranges_after float8[];
-- new columns go at the end, so the view is replaced in place
CREATE OR REPLACE VIEW zorder.optimize_history WITH (security_barrier) AS
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
