/* zorder--0.6--0.7.sql: update an installed 0.6 to 0.7 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.7'" to load this file. \quit

-- 0.7 adds zorder.layouts.scan_lsn: where the newcomers' scan of the next
-- incremental call may start reading the pages of the runs (collect.c).
-- NULL, as every updated row has it, means "read them all", as 0.6 did.
-- Nothing is dropped, so every privilege a DBA granted or revoked is kept.
-- test/t/015_upgrade.pl checks that the update ends with the objects of a
-- fresh 0.7 install.

ALTER TABLE zorder.layouts ADD scan_lsn pg_lsn;

-- A row that comes in by INSERT (pg_restore) is of another cluster's WAL.
CREATE OR REPLACE FUNCTION zorder._layouts_no_file() RETURNS trigger
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
