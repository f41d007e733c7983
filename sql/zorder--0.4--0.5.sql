/* zorder--0.4--0.5.sql: update an installed 0.4 to 0.5 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.5'" to load this file. \quit

-- 0.5 records what each call wrote.  test/t/015_upgrade.pl checks that an
-- install updated from every earlier version has exactly the objects of a
-- fresh 0.5 install.  Nothing is dropped, so every privilege a DBA granted
-- or revoked on zorder's objects is kept.

-- ---- 0.5: what the call wrote (report.c) ----------------------------------
-- Added last, where zorder--0.5.sql declares them; NULL for earlier calls.
ALTER TABLE zorder.history
	ADD COLUMN wal_bytes bigint,
	ADD COLUMN pages_written bigint;

CREATE OR REPLACE VIEW zorder.optimize_history WITH (security_barrier) AS
	SELECT h.relid::regclass AS "table", h.started_at, h.mode, h.rows_moved,
		   h.runs_merged, h.runs_after, h.duration,
		   h.rows_arrived, h.appends, h.fillfactor, h.room,
		   h.wal_bytes, h.pages_written
	FROM zorder.history h
	WHERE pg_catalog.has_table_privilege(h.relid, 'SELECT')
	  AND (SELECT r.session || '/' || r.incarnation
		   FROM zorder.temp_relations r WHERE r.relid = h.relid)
		  IS NOT DISTINCT FROM
		  CASE WHEN (SELECT k.relpersistence FROM pg_catalog.pg_class k
					 WHERE k.oid = h.relid) = 't'
			   THEN zorder._temp_record(h.relid) END;
