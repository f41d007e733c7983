-- The attack harness: a table owner who is an attacker, and every public
-- function and procedure run against that owner's tables by a superuser and
-- by the owner.  Each key column's type hides a spy in a domain CHECK, at
-- every depth a value can be read back at (the domain itself, an array of
-- it, a composite attribute, a range subtype), and an enum stands for types
-- changed in place.  The spy counts its runs as the owner and, run as
-- anyone else, says so with a WARNING and makes the attacker a superuser:
-- no WARNING may appear below, and the attacker must end as no superuser.
-- An outsider with no rights on the tables must see no sampled value in
-- any error.
--
-- A new public function joins by a line in the list at the end (the test
-- fails until every function of the extension is listed there).
SET search_path = public;
\set VERBOSITY default
LOAD 'zorder';

CREATE ROLE regress_za_attacker;
CREATE ROLE regress_za_outsider;
CREATE SCHEMA za AUTHORIZATION regress_za_attacker;
GRANT USAGE ON SCHEMA za TO PUBLIC;

SET ROLE regress_za_attacker;
CREATE SEQUENCE za.spy_runs;
CREATE FUNCTION za.spy(shape text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	IF current_user <> 'regress_za_attacker' THEN
		RAISE WARNING 'spy in %: ran as %', shape, current_user;
		IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'ALTER ROLE regress_za_attacker SUPERUSER';
		END IF;
	ELSE
		PERFORM nextval('za.spy_runs');
	END IF;
	RETURN true;
END $$;
GRANT EXECUTE ON FUNCTION za.spy(text) TO PUBLIC;
CREATE DOMAIN za.d AS int CHECK (za.spy('domain'));
CREATE TYPE za.pair AS (a int, b za.d);
CREATE TYPE za.drange AS RANGE (subtype = za.d);
CREATE TYPE za.mood AS ENUM ('calm', 'cross', 'secret-label');

-- one table per shape, keys (x, k); the values are the owner's secrets
CREATE TABLE za.t_domain (x int, k za.d);
CREATE TABLE za.t_array (x int, k za.d[]);
CREATE TABLE za.t_composite (x int, k za.pair);
CREATE TABLE za.t_range (x int, k za.drange);
CREATE TABLE za.t_enum (x int, k za.mood);
INSERT INTO za.t_domain SELECT g, g % 97 FROM generate_series(1, 3000) g;
INSERT INTO za.t_array SELECT g, ARRAY[g % 97, g % 13]::za.d[] FROM generate_series(1, 3000) g;
INSERT INTO za.t_composite SELECT g, ROW(g % 89, g % 97)::za.pair FROM generate_series(1, 3000) g;
INSERT INTO za.t_range SELECT g, za.drange(g % 97, g % 97 + 5) FROM generate_series(1, 3000) g;
INSERT INTO za.t_enum SELECT g, (ARRAY['calm', 'cross', 'secret-label'])[g % 3 + 1]::za.mood
FROM generate_series(1, 3000) g;
SELECT zorder.cluster_by(t, 'x', 'k')
FROM unnest(ARRAY['za.t_domain', 'za.t_array', 'za.t_composite', 'za.t_range',
				  'za.t_enum']::regclass[]) t;
RESET ROLE;

-- Every public function and procedure, as the owner and as a superuser,
-- on every shape: each call of za_calls, %1$s standing for the table as a
-- regclass literal and %2$s for its name.  za_run_all returns the calls
-- that failed, with their errors.
CREATE TABLE za_tables (t regclass);
INSERT INTO za_tables VALUES ('za.t_domain'), ('za.t_array'), ('za.t_composite'),
	('za.t_range'), ('za.t_enum');
GRANT SELECT ON za_tables TO PUBLIC;
CREATE TABLE za_calls (fn text, call text);
INSERT INTO za_calls VALUES
	('cluster_by', $$SELECT zorder.cluster_by(%1$s, 'x', 'k')$$),
	-- before the first optimize (a full rewrite's figures) and after
	-- (an incremental call's), each with the skipping read from a sample
	('estimate', $$SELECT count(*) FROM zorder.estimate(%1$s)$$),
	('optimize', $$CALL zorder.optimize(%1$s, full => true)$$),
	('optimize', $$CALL zorder.optimize(%1$s)$$),
	('estimate', $$SELECT count(*) FROM zorder.estimate(%1$s, true)$$),
	('estimate', $$SELECT count(*) FROM zorder.estimate(%1$s)$$),
	('clustering_information', $$SELECT count(*) FROM zorder.clustering_information(%1$s)$$),
	('clustering_information_json', $$SELECT zorder.clustering_information_json(%1$s) IS NOT NULL$$),
	-- on a Citus coordinator only: refused before anything is read;
	-- test/t/022_citus.pl runs it on distributed tables
	('shard_clustering_information', $c$DO $d$ BEGIN PERFORM zorder.shard_clustering_information(%1$s);
		EXCEPTION WHEN wrong_object_type THEN NULL; END $d$$c$),
	-- what a Citus coordinator keeps of a shard's layout, and gives back
	-- to a shard with no layout (a move) at the end of the list
	('_shard_layout_set', $$SELECT set_config('za.doc', zorder._shard_layout_set(%1$s)::text, false) IS NOT NULL$$),
	-- a value of the column, read without min(): before PostgreSQL 18 a
	-- composite has no min(), and the call must run on every major alike
	('ranges_touched', $$SELECT zorder.ranges_touched(%1$s, 'k',
		(SELECT k::text FROM %2$s WHERE k IS NOT NULL ORDER BY ctid LIMIT 1))$$),
	('suggest_pages_per_range', $$SELECT count(*) FROM zorder.suggest_pages_per_range(%1$s)$$),
	('prepare_layout', $$SELECT set_config('za.set', max(boundary_set)::text, false)
		FROM zorder.prepare_layout(%1$s)$$),
	('layout_key', $$SELECT count(DISTINCT zorder.layout_key(
		current_setting('za.set')::int, x, k)) FROM %2$s$$),
	('zorder_key', $$SELECT count(DISTINCT zorder.zorder_key(x, k)) FROM %2$s$$),
	('hilbert_key', $$SELECT count(DISTINCT zorder.hilbert_key(x, k)) FROM %2$s$$),
	('drop_unused_boundary_sets', $$SELECT zorder.drop_unused_boundary_sets(%1$s) >= 0$$),
	('cleanup', $$SELECT zorder.cleanup() IS NOT NULL$$),
	-- no workload source here (pg_qualstats and pg_stat_statements need
	-- shared_preload_libraries): refused before anything is read;
	-- test/t/023_advisor.pl runs it on a spied type with a workload
	('recommend_keys', $c$DO $d$ BEGIN PERFORM zorder.recommend_keys(%1$s);
		EXCEPTION WHEN object_not_in_prerequisite_state THEN NULL; END $d$$c$),
	('cluster_by_auto', $c$DO $d$ BEGIN PERFORM zorder.cluster_by_auto(%1$s);
		EXCEPTION WHEN object_not_in_prerequisite_state THEN NULL; END $d$$c$),
	('clear_keys', $$SELECT zorder.clear_keys(%1$s)$$),
	('cluster_by', $$SELECT zorder.cluster_by(%1$s, 'x', 'k')$$),
	('_adopt_layout_set', $$SELECT zorder._adopt_layout_set(%1$s, current_setting('za.doc')::jsonb)$$),
	-- the heap checked against the adopted set, its boundaries read back
	('optimize', $$CALL zorder.optimize(%1$s)$$);
GRANT SELECT ON za_calls TO PUBLIC;

CREATE TABLE za_failures (who text, failure text);
GRANT INSERT ON za_failures TO PUBLIC;
CREATE PROCEDURE za_run_all()
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	c record;
	level text := current_setting('client_min_messages');
BEGIN
	-- what the calls say (NOTICEs naming boundary sets, whose ids depend
	-- on the tests run before) is not what is checked; a spy's WARNING is
	PERFORM set_config('client_min_messages', 'warning', false);
	FOR r IN SELECT t FROM za_tables ORDER BY t::text LOOP
		FOR c IN SELECT fn, call FROM za_calls LOOP
			BEGIN
				EXECUTE format(c.call, quote_literal(r.t::text) || '::regclass', r.t);
			EXCEPTION WHEN OTHERS THEN
				INSERT INTO za_failures
					VALUES (current_user, r.t::text || ' ' || c.fn || ': ' || SQLERRM);
			END;
			COMMIT;
		END LOOP;
	END LOOP;
	PERFORM set_config('client_min_messages', level, false);
END $$;
GRANT EXECUTE ON PROCEDURE za_run_all TO PUBLIC;

-- as a superuser
SELECT nextval('za.spy_runs') AS runs_before \gset
CALL za_run_all();
SELECT failure FROM za_failures WHERE who = current_user ORDER BY 1;
-- the spy did run (as the owner, in the calls that read values back)
SELECT nextval('za.spy_runs') > :runs_before + 1 AS spy_ran;

-- as the owner
SET ROLE regress_za_attacker;
CALL za_run_all();
RESET ROLE;
SELECT failure FROM za_failures WHERE who = 'regress_za_attacker' ORDER BY 1;
-- the last call of each table checked its heap against the set it was
-- given after clear_keys, and went on incrementally
SELECT t, (SELECT h.mode FROM zorder.optimize_history h WHERE h."table" = t
		   ORDER BY h.started_at DESC LIMIT 1) AS last_call
FROM za_tables ORDER BY t::text;

-- after keys are re-declared, a last full layout for what follows
SET ROLE regress_za_attacker;
SELECT zorder.cluster_by(t, 'x', 'k') FROM za_tables;
CALL zorder.optimize('za.t_enum', full => true);
CALL zorder.optimize('za.t_composite', full => true);
RESET ROLE;

-- The error a statement raises, as a role sees it, with set numbers (which
-- depend on the tests run before) left out.
CREATE FUNCTION za_error(sql text, set_id int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	msg text;
	detail text;
	hint text;
BEGIN
	EXECUTE format(sql, set_id);
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
		hint = PG_EXCEPTION_HINT;
	RETURN replace(concat_ws(E'\n', msg, detail, hint), 'set ' || set_id, 'set N');
END $$;
GRANT EXECUTE ON FUNCTION za_error TO PUBLIC;

-- ---------------------------------------------------------------------
-- Types changed in place: the layout gets new boundaries, a set says it
-- is outdated, and nobody sees a sampled value
-- ---------------------------------------------------------------------
SET ROLE regress_za_attacker;
SELECT max(boundary_set) AS enum_set FROM zorder.prepare_layout('za.t_enum') \gset
SELECT max(boundary_set) AS comp_set FROM zorder.prepare_layout('za.t_composite') \gset
ALTER TYPE za.mood RENAME VALUE 'secret-label' TO 'renamed';
ALTER TYPE za.pair ADD ATTRIBUTE c text;
INSERT INTO za.t_enum SELECT g, 'calm' FROM generate_series(3001, 3100) g;
INSERT INTO za.t_composite SELECT g, ROW(g % 89, g % 97, 'x')::za.pair
FROM generate_series(3001, 3100) g;
-- the next incremental calls work, with new boundaries (each says, in a
-- NOTICE left out here, that the set prepared before no longer fits)
SET client_min_messages = warning;
CALL zorder.optimize('za.t_enum');
CALL zorder.optimize('za.t_composite');
RESET client_min_messages;
SELECT "table", mode FROM zorder.optimize_history
WHERE "table" IN ('za.t_enum'::regclass, 'za.t_composite'::regclass)
ORDER BY started_at DESC LIMIT 2;
-- the old sets: a clear error that quotes no value (the keys computed
-- from rows of the tables: a value cast in the query itself would run the
-- domain's CHECK as whoever wrote the query)
SELECT za_error($$SELECT zorder.layout_key(%s, x, k) FROM za.t_enum LIMIT 1$$, :enum_set);
SELECT za_error($$SELECT zorder.layout_key(%s, x, k) FROM za.t_composite LIMIT 1$$, :comp_set);
RESET ROLE;
-- a superuser gets the same, and the spy runs as nobody else
SELECT za_error($$SELECT zorder.layout_key(%s, x, k) FROM za.t_enum LIMIT 1$$, :enum_set);
SELECT za_error($$SELECT zorder.layout_key(%s, x, k) FROM za.t_composite LIMIT 1$$, :comp_set);
-- an outsider is refused before anything is read back
SET ROLE regress_za_outsider;
SELECT za_error($$SELECT zorder.layout_key(%s, 1, NULL::za.mood)$$, :enum_set);
SELECT za_error($$SELECT zorder.layout_key(%s, 1, NULL::za.pair)$$, :comp_set);
-- ... and from a table's set, and from giving it one
SELECT za_error($$SELECT zorder._shard_layout_set('za.t_domain') -- %s$$, 0);
SELECT za_error($$SELECT zorder._adopt_layout_set('za.t_domain', '{"fillfactor": 50}') -- %s$$, 0);
RESET ROLE;

-- ---------------------------------------------------------------------
-- Layout sets the owner makes up: refused at once, with nothing stored,
-- rather than failing every later call on the table
-- ---------------------------------------------------------------------
SET ROLE regress_za_attacker;
CREATE TABLE za.t_adopt (x int, k za.d);
INSERT INTO za.t_adopt SELECT g, g % 97 FROM generate_series(1, 500) g;
SELECT zorder.cluster_by('za.t_adopt', 'x', 'k');
SELECT zorder._shard_layout_set('za.t_domain') - 'id' - 'fillfactor' AS good_doc \gset
SELECT za_error(format($$SELECT zorder._adopt_layout_set('za.t_adopt', %L::jsonb) -- %%s$$, d), 0)
FROM (VALUES
	(jsonb_set(:'good_doc'::jsonb, '{bounds}', (:'good_doc'::jsonb -> 'bounds') - 1)),
	(jsonb_set(:'good_doc'::jsonb, '{bits}', '0'::jsonb)),
	(jsonb_set(:'good_doc'::jsonb, '{bits}', '4096'::jsonb)),
	(jsonb_set(:'good_doc'::jsonb, '{columns}', '["x", null]'::jsonb)),
	(jsonb_set(:'good_doc'::jsonb, '{typmods}', '[]'::jsonb)),
	(jsonb_set(:'good_doc'::jsonb, '{types}', '[["int4"], ["int4"]]'::jsonb)),
	(jsonb_set(:'good_doc'::jsonb, '{columns}', (SELECT jsonb_agg('x'::text) FROM generate_series(1, 40)))),
	(:'good_doc'::jsonb - 'curve'),
	('{"columns": 7}'::jsonb),
	-- well formed, but what it names does not read back here
	(jsonb_set(:'good_doc'::jsonb, '{collations}', '["a.b.c.d", "-"]'::jsonb)),
	(jsonb_set(:'good_doc'::jsonb, '{types}', '["99999", "int4"]'::jsonb)),
	(jsonb_set(:'good_doc'::jsonb, '{types}', '["xml", "int4"]'::jsonb)),
	(jsonb_set(:'good_doc'::jsonb, '{bounds}', '["\\x00", "\\x00"]'::jsonb))) v(d);
RESET ROLE;
SELECT count(*) AS sets_stored FROM zorder.boundary_sets WHERE relid = 'za.t_adopt'::regclass;
SET ROLE regress_za_attacker;
-- a set of the right shape whose types are not the table's is stored, and
-- the call finds that it does not fit: a full rewrite, no error
SELECT zorder._adopt_layout_set('za.t_adopt',
	jsonb_set(:'good_doc'::jsonb, '{types}', '["text", "text"]'::jsonb)) AS adopted;
SET client_min_messages = warning;
CALL zorder.optimize('za.t_adopt');
RESET client_min_messages;
SELECT mode FROM zorder.optimize_history WHERE "table" = 'za.t_adopt'::regclass;
INSERT INTO za.t_adopt SELECT g, g % 97 FROM generate_series(501, 600) g;
CALL zorder.optimize('za.t_adopt');
SELECT mode FROM zorder.optimize_history WHERE "table" = 'za.t_adopt'::regclass
ORDER BY started_at;
RESET ROLE;
-- the copy's set was taken, and the layout is of a set the rewrite sampled
SELECT b.origin, b.types::text, b.id = l.boundary_set AS the_layouts
FROM zorder.boundary_sets b JOIN zorder.layouts l ON l.relid = b.relid
WHERE b.relid = 'za.t_adopt'::regclass ORDER BY b.id;

-- ---------------------------------------------------------------------
-- An index of another role's table does not keep a set alive
-- ---------------------------------------------------------------------
SET ROLE regress_za_attacker;
SELECT max(boundary_set) AS pin_set FROM zorder.prepare_layout('za.t_domain') \gset
RESET ROLE;
CREATE SCHEMA zo AUTHORIZATION regress_za_outsider;
SET ROLE regress_za_outsider;
CREATE TABLE zo.pin (x int, k int);
CREATE INDEX zo_pin_key ON zo.pin (zorder.layout_key(:pin_set, x, k));
RESET ROLE;
SET ROLE regress_za_attacker;
-- (the newest prepared set stays for a rewrite that may be ordering by it)
SELECT count(*) FROM zorder.prepare_layout('za.t_domain');
SELECT zorder.drop_unused_boundary_sets('za.t_domain') > 0 AS dropped;
RESET ROLE;
SELECT count(*) AS pinned_set_left FROM zorder.boundary_sets WHERE id = :pin_set;
-- the outsider's index now names no set: writing into its table fails
-- cleanly, as for any set that does not exist
SET ROLE regress_za_outsider;
SELECT za_error($$INSERT INTO zo.pin VALUES (1, 1) -- %s$$, :pin_set);
RESET ROLE;

-- ---------------------------------------------------------------------
-- What must hold at the end
-- ---------------------------------------------------------------------
SELECT rolsuper AS attacker_is_superuser FROM pg_roles
WHERE rolname = 'regress_za_attacker';
-- every public function and procedure is in the list above
SELECT p.proname AS not_in_the_harness
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'zorder'
WHERE d.deptype = 'e' AND p.proname NOT LIKE '\_%'
  AND p.proname NOT IN (SELECT fn FROM za_calls)
ORDER BY 1;

DROP TABLE za_tables, za_calls, za_failures;
DROP SCHEMA zo CASCADE;
DROP PROCEDURE za_run_all;
DROP FUNCTION za_error;
DROP SCHEMA za CASCADE;
DROP ROLE regress_za_attacker, regress_za_outsider;
