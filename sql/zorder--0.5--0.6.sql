/* zorder--0.5--0.6.sql: update an installed 0.5 to 0.6 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.6'" to load this file. \quit

-- 0.6 adds zorder.estimate and changes no catalog table, so nothing is
-- dropped and every privilege a DBA granted or revoked is kept.
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
