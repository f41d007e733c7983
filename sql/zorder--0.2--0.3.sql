/* zorder--0.2--0.3.sql: update an installed 0.2 to 0.3 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.3'" to load this file. \quit

-- 0.3 declares every table whole in its install script (zorder--0.3.sql)
-- instead of creating tables and adding columns later, as 0.2's did; the
-- objects are the same.  0.3 declares its columns in the order 0.2's
-- ALTER TABLE ... ADD COLUMN statements left them (an added column comes
-- last, and PostgreSQL cannot move a column), so an updated install and a
-- fresh one have the same tables, column for column, without rebuilding
-- zorder.layouts here.  Nothing needs to change but the version, which
-- ALTER EXTENSION records itself.  test/t/015_upgrade.pl checks that an
-- install updated from 0.1 and from 0.2 has exactly the objects of a fresh
-- 0.3 install.
