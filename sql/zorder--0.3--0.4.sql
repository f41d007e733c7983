/* zorder--0.3--0.4.sql: update an installed 0.3 to 0.4 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.4'" to load this file. \quit

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
