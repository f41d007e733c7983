/* zorder--0.3--0.4.sql: update an installed 0.3 to 0.4 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.4'" to load this file. \quit

-- 0.4 adds functions and changes no table.  test/t/015_upgrade.pl checks
-- that an install updated from 0.1, 0.2 and 0.3 has exactly the objects of
-- a fresh 0.4 install.

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
