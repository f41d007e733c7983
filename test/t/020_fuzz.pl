
# A seeded fuzz run over the extension's SQL surface.
#
# Every function and procedure of the extension (found in the catalog, so new
# ones are covered without editing this file) is called many times with
# random arguments: values of its own argument types and of others, NULLs,
# extremes (0, -1, huge numbers, empty and long strings, NaN, infinities),
# tables of other roles, views, sequences, indexes, catalogs, dropped OIDs,
# dropped, renamed and retyped columns, as the superuser, as the tables'
# owner and as an unprivileged role, under small batch sizes and statement
# timeouts.  A second phase adds DDL from a concurrent session (ALTER
# COLUMN TYPE, VACUUM FULL, CLUSTER, TRUNCATE, DROP, RLS, ...).
#
# What must hold after every call:
# - the server answers (SELECT 1 in the same session) and its log shows no
#   crash, failed assertion, PANIC or resource leak;
# - no error has SQLSTATE class XX (internal error, corruption);
# - no call changes any table's contents (the extension only moves rows);
# - a call that fails changes nothing in the zorder.* catalog (checksums
#   before and after), unless it is a multi-transaction CALL that committed
#   batches before failing;
# - a call by a role that is not superuser changes nothing in the catalog
#   about tables that role does not own;
# and at the end every table passes amcheck.
#
# ZORDER_FUZZ_SEED sets the seed (printed), ZORDER_FUZZ_SECONDS the time of
# the calls (default 40; both phases together).  The first phase depends on
# the seed only, so a failure there replays with the same seed.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;
use Time::HiRes qw(time);

my $seed = $ENV{ZORDER_FUZZ_SEED} || (time() ^ $$) % 1000000000;
my $seconds = $ENV{ZORDER_FUZZ_SECONDS} || 40;
$seed = int($seed);
srand($seed);
diag("fuzz seed $seed (set ZORDER_FUZZ_SEED=$seed to replay), $seconds s");

my $node = new_node(
	'fuzz', conf => qq(
log_statement = none
log_min_messages = warning
autovacuum = off
max_locks_per_transaction = 256
));

my $db = 'postgres';

# ----------------------------------------------------------------
# Set-up: roles, tables of many types and owners, the checksums
# ----------------------------------------------------------------
$node->safe_psql(
	$db, q{
CREATE ROLE fz_owner LOGIN;
CREATE ROLE fz_other LOGIN;
CREATE SCHEMA fz AUTHORIZATION fz_owner;
GRANT USAGE ON SCHEMA fz TO fz_other;
CREATE TYPE fz.mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN fz.posint AS int CHECK (VALUE > 0);

SET ROLE fz_owner;
CREATE TABLE fz.t1 (id int, a int, b text COLLATE "C", c float8, d date,
	e numeric, f uuid, g timestamptz, h bool, m fz.mood, p point, j jsonb,
	r int4range, gone int, w fz.posint, u text COLLATE "und-x-icu");
INSERT INTO fz.t1
SELECT i, CASE WHEN i % 17 = 0 THEN NULL WHEN i % 29 = 0 THEN 2147483647
			   WHEN i % 31 = 0 THEN -2147483648 ELSE (i * 7919) % 1000 END,
	   CASE WHEN i % 13 = 0 THEN '' WHEN i % 37 = 0 THEN repeat('x', 3000)
			ELSE md5(i::text) END,
	   CASE i % 11 WHEN 0 THEN 'NaN' WHEN 1 THEN 'Infinity'
			WHEN 2 THEN '-Infinity' WHEN 3 THEN NULL ELSE i / 7.0 END,
	   CASE WHEN i % 19 = 0 THEN 'infinity'::date
			ELSE date '2024-01-01' + (i % 400) END,
	   CASE WHEN i % 23 = 0 THEN 'NaN'::numeric ELSE i * 1.000001 END,
	   md5(i::text)::uuid,
	   timestamptz '2024-01-01' + i * interval '1 minute',
	   i % 2 = 0, (ARRAY['sad', 'ok', 'happy'])[i % 3 + 1]::fz.mood,
	   point(i, -i), jsonb_build_object('i', i), int4range(i, i + 10), i,
	   i % 50 + 1, CASE WHEN i % 5 = 0 THEN 'Ä' || i ELSE 'a' || i END
FROM generate_series(1, 2000) i;
ALTER TABLE fz.t1 DROP COLUMN gone;
CREATE INDEX t1_brin ON fz.t1 USING brin (a, c) WITH (pages_per_range = 1);
CREATE INDEX t1_id ON fz.t1 (id);
CREATE TABLE fz.t2 (k text, v bigint, n numeric);
INSERT INTO fz.t2 SELECT (i % 97)::text, i::bigint * 1000000007, i / 3.0
	FROM generate_series(1, 1500) i;
CREATE INDEX t2_k ON fz.t2 (k);
CREATE TABLE fz.t3 (k int, s text, x float8);
INSERT INTO fz.t3 SELECT i % 500, 'v' || i, random() FROM generate_series(1, 3000) i;
CREATE INDEX t3_k ON fz.t3 (k);
CREATE TABLE fz.empty (a int, b int);
CREATE TABLE fz.parted (k int, v text) PARTITION BY RANGE (k);
CREATE TABLE fz.parted_1 PARTITION OF fz.parted FOR VALUES FROM (0) TO (500);
INSERT INTO fz.parted SELECT i % 500, 'p' || i FROM generate_series(1, 500) i;
CREATE TABLE fz.rls (id int, secret int);
INSERT INTO fz.rls SELECT i, i * 31 % 1000 FROM generate_series(1, 800) i;
CREATE INDEX rls_brin ON fz.rls USING brin (secret) WITH (pages_per_range = 1);
ALTER TABLE fz.rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY few ON fz.rls FOR SELECT USING (id < 10);
GRANT SELECT ON fz.rls, fz.t2 TO fz_other;
CREATE VIEW fz.v AS SELECT id, a FROM fz.t1;
CREATE SEQUENCE fz.seq;
CREATE MATERIALIZED VIEW fz.mv AS SELECT id, a, c FROM fz.t1;
CREATE UNLOGGED TABLE fz.unlogged (a int, b int);
INSERT INTO fz.unlogged SELECT i, -i FROM generate_series(1, 300) i;
RESET ROLE;

-- a partition, and a table, of another owner
CREATE TABLE fz.parted_2 PARTITION OF fz.parted FOR VALUES FROM (500) TO (1000);
ALTER TABLE fz.parted_2 OWNER TO fz_other;
INSERT INTO fz.parted SELECT 500 + i % 500, 'q' || i FROM generate_series(1, 500) i;
CREATE TABLE fz.other_owned (a int, b text);
INSERT INTO fz.other_owned SELECT i, i::text FROM generate_series(1, 300) i;
ALTER TABLE fz.other_owned OWNER TO fz_other;
-- a table of the superuser's nobody else may read
CREATE TABLE fz.private (a int, b int);
INSERT INTO fz.private SELECT i, i FROM generate_series(1, 300) i;
CREATE TABLE fz.dropped (a int);
SELECT zorder.cluster_by('fz.t1', 'a', 'c');
SELECT zorder.cluster_by('fz.t3', 'k', 'x');
SELECT zorder.cluster_by('fz.t2', 'k', 'v');
SELECT zorder.cluster_by('fz.parted', 'k');
SELECT zorder.cluster_by('fz.rls', 'secret', 'id');
SELECT zorder.cluster_by('fz.unlogged', 'a', 'b');
SELECT zorder.cluster_by('fz.other_owned', 'b', 'a');

-- Checksums, readable by the superuser only.
CREATE SCHEMA fzc;
REVOKE ALL ON SCHEMA fzc FROM PUBLIC;
-- the contents of every table of schema fz, as a multiset of rows (a sum
-- of row hashes: the order of the rows does not count)
CREATE FUNCTION fzc.contents() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r regclass;
	s text;
	acc text := '';
BEGIN
	FOR r IN SELECT c.oid FROM pg_class c
			 WHERE c.relnamespace = 'fz'::regnamespace
			   AND c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
			 ORDER BY c.relname
	LOOP
		EXECUTE format('SELECT count(*) || %L || coalesce(sum(hashtext(x::text)::numeric), 0) FROM %s x',
					   '/', r) INTO s;
		acc := acc || r::text || ':' || s || ' ';
	END LOOP;
	RETURN md5(acc);
END $$;
-- every row of the zorder catalog, except the rows about tables that
-- skip_owner owns (NULL: all rows)
CREATE FUNCTION fzc.catalog(skip_owner name) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	s text;
	acc text := '';
BEGIN
	FOR r IN SELECT c.oid::regclass AS rel,
					EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid
							AND a.attname = 'relid' AND NOT a.attisdropped) AS has_relid
			 FROM pg_class c
			 WHERE c.relnamespace = 'zorder'::regnamespace AND c.relkind = 'r'
			 ORDER BY c.relname
	LOOP
		IF r.has_relid AND skip_owner IS NOT NULL THEN
			EXECUTE format('SELECT count(*) || %L || coalesce(sum(hashtext(x::text)::numeric), 0)
							FROM %s x WHERE NOT EXISTS (SELECT FROM pg_class c
								WHERE c.oid = x.relid AND c.relowner = %L::regrole)',
						   '/', r.rel, skip_owner) INTO s;
		ELSE
			EXECUTE format('SELECT count(*) || %L || coalesce(sum(hashtext(x::text)::numeric), 0) FROM %s x',
						   '/', r.rel) INTO s;
		END IF;
		acc := acc || r.rel::text || ':' || s || ' ';
	END LOOP;
	RETURN md5(acc);
END $$;
});

# The oid of a dropped table, to pass where a table is expected.
my $dropped_oid = $node->safe_psql($db,
	q{SELECT 'fz.dropped'::regclass::oid; DROP TABLE fz.dropped;});

# The extension's functions and procedures: name, kind, input argument
# types and names, how many have defaults, whether the last is VARIADIC,
# whether it returns a set.
my @funcs;
for my $line (
	split /\n/,
	$node->safe_psql(
		$db, q{
SELECT p.proname, p.prokind, p.pronargdefaults, p.provariadic <> 0, p.proretset,
	   (SELECT string_agg(format_type(t, NULL), ';' ORDER BY o)
		  FROM unnest(p.proargtypes) WITH ORDINALITY u(t, o)),
	   (SELECT string_agg(n, ';' ORDER BY o)
		  FROM unnest(p.proargnames, coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[coalesce(cardinality(p.proargnames), 0)])))
			   WITH ORDINALITY u(n, m, o) WHERE m IN ('i', 'b', 'v'))
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
	AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'zorder'
WHERE p.prorettype NOT IN ('event_trigger'::regtype, 'trigger'::regtype)
ORDER BY 1, 6}))
{
	my ($name, $kind, $ndef, $variadic, $retset, $types, $names) =
	  split /\|/, $line, -1;
	push @funcs,
	  {
		name => $name,
		kind => $kind,
		ndef => $ndef,
		variadic => $variadic eq 't',
		retset => $retset eq 't',
		types => [ split /;/, $types // '' ],
		names => [ split /;/, $names // '' ],
	  };
}
ok(scalar(@funcs) >= 8, 'found the extension\'s functions: '
	  . join(', ', map { $_->{name} } @funcs));

# Calls that move rows or change the catalog come more often; clear_keys
# less (the other calls need keys).
my %weight = (optimize => 6, cluster_by => 3, clear_keys => 0.5);
my @weighted;
for my $f (@funcs)
{
	my $w = $weight{ $f->{name} } // 1;
	push @weighted, ($f) x int($w * 2);
}

# ----------------------------------------------------------------
# Random values
# ----------------------------------------------------------------
sub pick { return $_[ int(rand(@_)) ]; }
sub chance { return rand() < $_[0]; }

my @rels = qw(fz.t1 fz.t2 fz.t3 fz.empty fz.parted fz.parted_1 fz.parted_2
  fz.rls fz.other_owned fz.private fz.unlogged fz.mv fz.v fz.seq fz.t1_id
  fz.t1_brin pg_class zorder.tables);
# the tables the calls are meant for
my @tables = qw(fz.t1 fz.t2 fz.t3 fz.parted fz.parted_1 fz.rls fz.unlogged
  fz.other_owned fz.empty);
my %cols;    # relation => its column names (dropped ones too)

sub refresh_columns
{
	%cols = ();
	for my $line (
		split /\n/,
		$node->safe_psql(
			$db, q{
SELECT c.oid::regclass, a.attname FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = 'fz'::regnamespace AND a.attnum > 0 ORDER BY 1, a.attnum}))
	{
		my ($rel, $att) = split /\|/, $line, 2;
		push @{ $cols{$rel} }, $att;
	}
	return;
}
refresh_columns();

sub quote_lit
{
	my $s = shift;
	$s =~ s/'/''/g;
	return "'$s'";
}

sub rel_value
{
	return quote_lit(pick(@tables)) if chance(0.6);
	return quote_lit(pick(@rels)) if chance(0.5);
	return pick(
		"'$dropped_oid'::oid", "'0'", "'-'", "'4294967295'", "'-1'",
		"'1259'", "'" . int(rand(30000)) . "'", 'NULL', "'fz.\"T1\"'",
		"'fz.no_such_table'", "repeat('x', 100)", "''", "'pg_temp.t'",
		"'zorder.history'");
}

my $current_rel = 'fz.t1';

sub column_value
{
	my @c = @{ $cols{$current_rel} // $cols{'fz.t1'} };
	return quote_lit(pick(@c)) if chance(0.8);
	return pick(
		"'ctid'", "'xmin'", "'tableoid'", "'oid'", "''", 'NULL',
		"'no_such_column'", quote_lit('a' x 70), "'A'", "'\"a\"'",
		"'........pg.dropped.14........'", quote_lit(pick(@c)) . '::text');
}

sub int_value
{
	return pick(0, -1, 1, 2, 3, 7, 128, 500, 2147483647, -2147483648,
		'NULL', 'NULL::int', int(rand(100000)), '2147483648::bigint',
		"'1e10'::float8");
}

sub text_value
{
	return pick(
		"'hilbert'", "'z'", "'Z'", "'zorder'", "''", 'NULL', "repeat('z', 100000)",
		"'NaN'", "'Infinity'", "'-Infinity'", "'0'", "'-1'",
		"'2147483647'", "'99999999999999999999'", "'(((('", "'2024-01-01'",
		"'13/01/2024'", "'infinity'", "'a'", quote_lit(pick('sad', 'ok', 'happy')),
		"'{1,2}'", "'[1,2)'", "'(1,2)'", "'" . int(rand(1000)) . "'",
		"'" . rand(1000) . "'", "'Ä'", "md5('x')", "'\\x00'");
}

sub bool_value { return pick('true', 'false', 'NULL', "'t'", '1::int'); }

# A value of a random type, for the VARIADIC "any" key functions.
sub any_value
{
	return pick(
		int_value(), '0::int2', '(-32768)::int2', '32767::int2',
		'9223372036854775807::int8', '(-9223372036854775808)::int8',
		"'NaN'::float8", "'Infinity'::float8", "'-Infinity'::float8",
		"'-0'::float8", '1e308::float8', '1e-308::float8', "'NaN'::float4",
		"'Infinity'::float4", "'NaN'::numeric", "'Infinity'::numeric",
		"('1e1000')::numeric", "'-0.000000000000000000001'::numeric",
		"''::text", "repeat('x', 50000)", "'Ä'::text COLLATE \"und-x-icu\"",
		"'b'::text COLLATE \"C\"", "'abc'::varchar(3)", "'a'::char(5)",
		"'x'::name", "'q'::\"char\"", "'\\x'::bytea", "'\\xff00'::bytea",
		"decode(repeat('ff', 5000), 'hex')", 'true', 'false', 'NULL',
		'NULL::int', 'NULL::text', "'infinity'::date", "'-infinity'::date",
		"'4713-01-01 BC'::date", "'5874897-12-31'::date",
		"'infinity'::timestamptz", "'294276-12-31 23:59:59'::timestamp",
		"'epoch'::timestamptz", "'-178000000 years'::interval",
		"'0'::interval", "'00000000-0000-0000-0000-000000000000'::uuid",
		"'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid", "'::1/128'::inet",
		"'0.0.0.0/0'::cidr", "'08:00:2b:01:02:03'::macaddr", "'1'::oid",
		"'4294967295'::oid", "'{}'::jsonb", "'[1,{\"a\":null}]'::jsonb",
		"'(1,2)'::point", "'[1,2)'::int4range", "'empty'::int4range",
		"'{1,NULL}'::int[]", "'{}'::text[]", "ROW(1, 'a')", "'sad'::fz.mood",
		'5::fz.posint', "'1.00'::money", "B'101'", "'a b'::tsvector",
		"'12:00'::time", "'12:00+01'::timetz", "'1'::regclass");
}

# The argument list of a call of $f: positional values, sometimes fewer
# (defaults), sometimes named, sometimes with the wrong types.
sub args_for
{
	my $f = shift;
	my @types = @{ $f->{types} };
	my @names = @{ $f->{names} };
	my $n = scalar @types;
	my $keep = $n;
	$keep = $n - int(rand($f->{ndef} + 1)) if $f->{ndef} > 0;
	my @out;
	for my $i (0 .. $keep - 1)
	{
		my $t = $types[$i];
		my $v;
		if (chance(0.04))
		{
			$v = any_value();    # a random type
		}
		elsif ($t eq 'regclass')
		{
			$v = rel_value();
			# the columns the next arguments name come from this table
			$current_rel = ($v =~ /^'(fz\.\w+)'$/) ? $1 : 'fz.t1';
		}
		elsif ($t eq 'name') { $v = column_value(); }
		elsif ($t eq 'name[]' && $f->{variadic} && $i == $n - 1)
		{
			# VARIADIC columns: a list, an array, NULL or empty
			my $r = rand();
			if ($r < 0.75)
			{
				my $k = pick(1, 1, 2, 2, 2, 3, 3, 4, 5, 33);
				$v = join(', ', map { column_value() } 1 .. $k);
			}
			elsif ($r < 0.85)
			{
				$v = 'VARIADIC ARRAY['
				  . join(', ', map { column_value() } 1 .. pick(1, 2, 3))
				  . ']::name[]';
			}
			else
			{
				$v = pick("VARIADIC NULL::name[]", "VARIADIC '{}'::name[]",
					"VARIADIC '{NULL}'::name[]", "VARIADIC '{a,a}'::name[]");
			}
		}
		elsif ($t eq '"any"')
		{
			my $r = rand();
			if ($r < 0.8)
			{
				$v = join(', ',
					map { any_value() } 1 .. pick(1, 1, 2, 2, 3, 4, 8, 17, 40));
			}
			else
			{
				$v = pick(
					"VARIADIC ARRAY[1, 2, 3]", "VARIADIC '{}'::int[]",
					"VARIADIC NULL::int[]", "VARIADIC ARRAY['a', NULL]",
					"VARIADIC ARRAY[" . join(', ', map { int(rand(1e6)) } 1 .. 70) . "]");
			}
		}
		elsif ($t eq 'boolean') { $v = bool_value(); }
		elsif ($t =~ /^(integer|bigint|smallint)$/) { $v = int_value(); }
		elsif ($t eq 'text') { $v = text_value(); }
		else { $v = pick('NULL', text_value(), int_value()); }

		if ($i >= $n - $f->{ndef} && $i < scalar(@names) && chance(0.3)
			&& !($f->{variadic} && $i == $n - 1))
		{
			$v = "$names[$i] => $v";
		}
		push @out, $v;
	}
	# named arguments must come last: if one is named, name the rest too
	my $named = 0;
	for my $i (0 .. $#out)
	{
		$named = 1 if $out[$i] =~ /^\w+ => /;
		$out[$i] = "$names[$i] => $out[$i]"
		  if $named && $out[$i] !~ /^\w+ => / && $i < scalar(@names)
		  && !($f->{variadic} && $i == $n - 1);
	}
	return join(', ', @out);
}

# A random call: the SQL, whether it may commit more than once, the role.
sub random_call
{
	my $concurrent = shift;
	if ($concurrent && chance(0.4))
	{
		# small batches of the tables the other session alters, so that
		# its DDL gets in between two batches of one call
		return {
			fname => 'optimize',
			sql => 'CALL zorder.optimize(' . pick("'fz.t3'", "'fz.t2'", "'fz.t1'")
			  . (chance(0.2) ? ', true' : '') . ')',
			set => [
				'SET zorder.max_batch_size = ' . pick(1, 5, 50),
				"SET zorder.merge_threshold = " . pick(0, 0.5),
				"SET lock_timeout = '2s'", "SET statement_timeout = '10s'"
			],
			role => pick('', 'fz_owner'),
			block => 0,
			multi => 1
		};
	}
	my $f = pick(@weighted);
	my $args = args_for($f);
	my $q = "zorder.$f->{name}($args)";
	my $sql;
	if ($f->{kind} eq 'p') { $sql = "CALL $q"; }
	elsif ($f->{retset}) { $sql = "SELECT * FROM $q"; }
	elsif ($f->{name} =~ /_key$/ && chance(0.3))
	{
		# over the rows of a table, NULLs included
		my $rel = pick('fz.t1', 'fz.t2', 'fz.t3', 'fz.parted', 'fz.rls');
		my @c = grep { !/pg\.dropped/ } @{ $cols{$rel} // ['1'] };
		@c = ('1') unless @c;
		$sql = "SELECT zorder.$f->{name}("
		  . join(', ', map { '"' . pick(@c) . '"' } 1 .. pick(1, 2, 3, 5))
		  . ") FROM $rel";
	}
	else { $sql = "SELECT $q"; }
	my $role = pick('fz_other', 'fz_other', 'fz_owner', 'fz_owner', 'fz_owner', '', '');
	my @set;
	push @set, 'SET zorder.max_batch_size = ' . pick(1, 5, 100, 100000)
	  if chance(0.4);
	push @set, 'SET zorder.merge_threshold = ' . pick(0, 0.001, 0.5, 1)
	  if chance(0.2);
	push @set, 'SET zorder.create_brin = on' if chance(0.2);
	push @set, 'SET zorder.brin_pages_per_range = ' . pick(1, 2, 128)
	  if chance(0.1);
	push @set, "SET maintenance_work_mem = '1MB'"
	  if chance(0.1);
	push @set, "SET DateStyle = 'SQL, DMY'" if chance(0.1);
	push @set, "SET statement_timeout = '" . pick(1, 5, 20, 100) . "ms'"
	  if chance(0.08);
	push @set, "SET lock_timeout = '2s'", "SET statement_timeout = '10s'"
	  if $concurrent;
	my $block = chance(0.1);
	# a CALL outside a transaction block commits once per batch
	my $multi = ($f->{kind} eq 'p' && !$block);
	return {
		fname => $f->{name},
		sql => $sql,
		set => \@set,
		role => $role,
		block => $block,
		multi => $multi
	};
}

# ----------------------------------------------------------------
# Running a call and checking what must hold
# ----------------------------------------------------------------
my $calls = 0;
my $errors = 0;
my %sqlstates;
my %succeeded;    # function => calls that succeeded
my @failures;    # what went wrong; the run goes on (up to 5) but after a crash
my $crashed = 0;

sub fail_call
{
	my ($c, $why, $out, $err) = @_;
	my $repro = join("\n", @{ $c->{set} }, ($c->{role} ? "SET ROLE $c->{role};" : ()),
		($c->{block} ? 'BEGIN;' : ()), "$c->{sql};");
	push @failures, "$why\n  seed $seed, call $calls:\n$repro\n  stderr: "
	  . substr($err // '', 0, 2000);
	return;
}

my $session;
my $stale = 1;    # the checksums of the session must be taken again

sub run_call
{
	my ($c, $concurrent) = @_;
	$calls++;
	my $role = $c->{role};
	my $check = !$concurrent;
	my $script = '';
	# a checksum that fails is reported, not left to compare as the old one
	my $sums = "SELECT fzc.contents() AS c%1\$s, fzc.catalog(NULL) AS k%1\$s, "
	  . "fzc.catalog('fz_owner') AS o%1\$s, fzc.catalog('fz_other') AS x%1\$s \\gset\n"
	  . "\\if :ERROR\n\\set sums_failed true\n\\endif\n";
	# the checksums before the call are those after the previous one,
	# unless something else ran since
	$script .= "\\set sums_failed false\n";
	$script .= sprintf($sums, 0) if $check && $stale;
	$stale = !$check;
	$script .= "$_;\n" for @{ $c->{set} };
	$script .= "SET ROLE $role;\n" if $role;
	$script .= "BEGIN;\n" if $c->{block};
	$script .= "\\o /dev/null\n$c->{sql};\n\\o\n";
	$script .= "\\set e :ERROR\n\\set st :SQLSTATE\n";
	$script .= "COMMIT;\n\\if :ERROR\nROLLBACK;\n\\endif\n" if $c->{block};
	# statement_timeout may be 1 ms, and on a busy machine it cancels a RESET
	# like any statement, several in a row (CI saw the checksums then run
	# as the call's role, under its timeout): RESET ALL until it succeeds
	# (nothing times out after that), then RESET ROLE, which RESET ALL leaves
	# alone; should all that fail, a new connection starts clean
	$script .= "RESET ALL;\n" . ("\\if :ERROR\nRESET ALL;\n\\endif\n" x 5)
	  . "\\if :ERROR\n\\connect\n\\else\nRESET ROLE;\n"
	  . "\\if :ERROR\n\\connect\n\\endif\n\\endif\n";
	if ($check)
	{
		my $others =
		    $role eq 'fz_owner' ? ":'o1' = :'o0'"
		  : $role eq 'fz_other' ? ":'x1' = :'x0'"
		  :                       'true';
		$script .= sprintf($sums, 1);
		$script .= "SELECT 'RESULT', :'e', :'st', :'c1' = :'c0', "
		  . ":'k1' = :'k0', $others, 1, current_user = session_user, :'sums_failed';\n";
		$script .= "\\set c0 :c1\n\\set k0 :k1\n\\set o0 :o1\n\\set x0 :x1\n";
	}
	else
	{
		$script .= "SELECT 'RESULT', :'e', :'st', true, true, true, 1, "
		  . "current_user = session_user, 'false';\n";
	}
	# one session for all the calls (stale caches are part of the test);
	# psql exits when the server crashes
	my ($out, $err) = ('', '');
	$session //= $node->background_psql($db, on_error_stop => 0);
	$session->{stderr} = '';
	eval { $out = $session->query($script); 1; } or do
	{
		$err = "$@ " . ($session->{stderr} // '');
		$out = '';
	};
	$err = $session->{stderr} if $err eq '';
	my ($res) = $out =~ /^(RESULT\|.*)$/m;
	if (!defined $res)
	{
		fail_call($c, 'no answer after the call (server crashed?)', $out, $err);
		$crashed = 1;
		return 0;
	}
	my (undef, $e, $st, $same_contents, $same_catalog, $same_others, $one, $reset,
		$sums_failed) = split /\|/, $res;
	$errors++ if $e eq 'true';
	$succeeded{ $c->{fname} }++ if $e ne 'true';
	$sqlstates{$st}++ if $e eq 'true';
	if ($st =~ /^XX/)
	{
		fail_call($c, "SQLSTATE $st (internal error or corruption)", $out, $err);
	}
	elsif ($one ne '1')
	{
		fail_call($c, 'SELECT 1 did not answer', $out, $err);
	}
	elsif ($reset ne 't')
	{
		# the checks after this call ran as the call's role: they prove nothing
		fail_call($c, 'the test could not reset the session\'s role after the call',
			$out, $err);
	}
	elsif ($sums_failed ne 'false')
	{
		# the checks could not be made: they prove nothing
		fail_call($c, 'the checksums around the call failed', $out, $err);
	}
	elsif ($same_contents ne 't')
	{
		fail_call($c, 'a table\'s contents changed', $out, $err);
	}
	elsif ($e eq 'true' && !$c->{multi} && $same_catalog ne 't')
	{
		fail_call($c, 'the call failed but the zorder catalog changed', $out, $err);
	}
	elsif ($role && $same_others ne 't')
	{
		fail_call($c, "a call by $role changed the catalog rows of a table it does not own",
			$out, $err);
	}
	return 1;
}

# Seeded DDL between calls of the first phase, as the superuser: tables and
# columns change under the catalog's feet.
sub random_ddl
{
	my $k = int(rand(1000));
	return pick(
		"ALTER TABLE fz.t3 ADD COLUMN c$k int DEFAULT $k",
		"ALTER TABLE fz.t3 DROP COLUMN IF EXISTS x",
		"ALTER TABLE fz.t3 ADD COLUMN IF NOT EXISTS x float8",
		"ALTER TABLE fz.t3 ALTER COLUMN k TYPE text USING k::text",
		"ALTER TABLE fz.t3 ALTER COLUMN k TYPE int USING length(k::text)",
		"ALTER TABLE fz.t3 ALTER COLUMN k TYPE bigint",
		"ALTER TABLE fz.t3 RENAME COLUMN s TO s2",
		"ALTER TABLE fz.t3 RENAME COLUMN s2 TO s",
		"ALTER TABLE fz.t2 ALTER COLUMN k TYPE varchar(10)",
		"ALTER TABLE fz.t2 ALTER COLUMN k TYPE text COLLATE \"C\"",
		"ALTER TABLE fz.t2 ALTER COLUMN k SET DATA TYPE text COLLATE \"und-x-icu\"",
		"VACUUM FULL fz.t3",
		"CLUSTER fz.t3 USING t3_k",
		"TRUNCATE fz.t3",
		"INSERT INTO fz.t3 (k, s) SELECT i, 'n' || i FROM generate_series(1, 700) i",
		"INSERT INTO fz.t1 (id, a, c, w) SELECT i, i % 7, i, 1 FROM generate_series(1, 300) i",
		"DELETE FROM fz.t1 WHERE id % 10 = $k % 10",
		"UPDATE fz.t2 SET v = v + 1 WHERE v % 3 = 0",
		"DROP TABLE IF EXISTS fz.t3; CREATE TABLE fz.t3 (k int, s text, x float8); "
		  . "INSERT INTO fz.t3 SELECT i % 300, 'w' || i, i FROM generate_series(1, 2000) i; "
		  . "CREATE INDEX t3_k ON fz.t3 (k); ALTER TABLE fz.t3 OWNER TO fz_owner; "
		  . "SELECT zorder.cluster_by('fz.t3', 'k', 's')",
		"SELECT zorder.cluster_by('fz.t3', 'k', 's')",
		"SELECT zorder.cluster_by('fz.t3', 'k')",
		"SELECT zorder.cluster_by('fz.t1', 'b', 'd', 'u')",
		"SELECT zorder.cluster_by('fz.t1', 'a', 'c')",
		"SELECT zorder.cluster_by('fz.t2', 'k', 'v')",
		"SELECT zorder.cluster_by('fz.parted', 'k')",
		"SELECT zorder.cluster_by('fz.rls', 'secret', 'id')",
		"ALTER TABLE fz.rls DISABLE ROW LEVEL SECURITY",
		"ALTER TABLE fz.rls ENABLE ROW LEVEL SECURITY",
		"ALTER TABLE fz.t2 OWNER TO fz_other",
		"ALTER TABLE fz.t2 OWNER TO fz_owner",
		"CREATE INDEX IF NOT EXISTS t3_brin ON fz.t3 USING brin (k)",
		"DROP INDEX IF EXISTS fz.t3_brin",
		"ANALYZE fz.t1");
}

my $t_start = time();
my $phase1_end = $t_start + $seconds * 0.7;
my $phase2_end = $t_start + $seconds;

# Phase 1: one session, seeded.
while (time() < $phase1_end && !$crashed && @failures < 5)
{
	if (chance(0.06))
	{
		my ($out, $err) = ('', '');
		$node->psql($db, random_ddl(), stdout => \$out, stderr => \$err,
			on_error_stop => 0);
		refresh_columns();
		$stale = 1;
		next;
	}
	run_call(random_call(0), 0) or last;
}
my $phase1_calls = $calls;

# Phase 2: DDL from a second session while the calls run.
if (!$crashed && @failures < 5)
{
	my $ddl = "SET lock_timeout = '1s';\n";
	for (1 .. 2000)
	{
		$ddl .= random_ddl() . ";\n";
		$ddl .= "BEGIN; LOCK fz.t3 IN ACCESS EXCLUSIVE MODE; "
		  . "SELECT pg_sleep(0.05); COMMIT;\n"
		  if chance(0.1);
		$ddl .= "SELECT pg_sleep(0.0" . int(rand(5)) . ");\n";
	}
	my $dir = PostgreSQL::Test::Utils::tempdir;
	PostgreSQL::Test::Utils::append_to_file("$dir/ddl.sql", $ddl);
	my $storm = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr($db), '-f', "$dir/ddl.sql" ],
		'>', "$dir/ddl.out", '2>', "$dir/ddl.err");
	while (time() < $phase2_end && !$crashed && @failures < 5)
	{
		$cols{'fz.t3'} = [ 'k', 's', 'x' ];
		run_call(random_call(1), 1) or last;
	}
	$storm->kill_kill;
	$storm->finish;
}
eval { $session->quit; 1; } if $session;
note("calls: $phase1_calls seeded, " . ($calls - $phase1_calls) . " with concurrent DDL; $errors failed with "
	  . join(', ', map { "$_ x$sqlstates{$_}" } sort keys %sqlstates));
diag("fuzz: $calls calls, $errors errors, " . int(time() - $t_start) . ' s; succeeded: '
	  . join(', ', map { "$_ x$succeeded{$_}" } sort keys %succeeded));

is(join("\n\n", @failures), '', 'no crash, no internal error, nothing changed by a failed call');

# Nothing left broken: the server answers, every table and index is sound.
is($node->safe_psql($db, 'SELECT 1'), '1', 'the server answers');
my $broken = $node->safe_psql(
	$db, q{
SELECT c.oid::regclass || ': ' || v.msg
FROM pg_class c, LATERAL verify_heapam(c.oid) v
WHERE c.relnamespace IN ('fz'::regnamespace, 'zorder'::regnamespace)
  AND c.relkind IN ('r', 'm')});
is($broken, '', 'amcheck finds every heap sound');
my $bt = $node->psql(
	$db, q{
SELECT bt_index_check(i.indexrelid, true)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_am am ON am.oid = c.relam AND am.amname = 'btree'
WHERE c.relnamespace IN ('fz'::regnamespace, 'zorder'::regnamespace)});
is($bt, 0, 'amcheck finds every btree index sound');

$node->stop;

# The server log: no crash, failed assertion, PANIC, internal error or leak.
my @bad = grep {
	/terminated by signal|PANIC:|TRAP:| XX00[012] .*(ERROR|FATAL|PANIC): |WARNING: .*(leak|not closed|don't own)/
} split /\n/, slurp_file($node->logfile);
is(join("\n", @bad), '', 'the server log shows no crash, no internal error, no leak');

done_testing();
