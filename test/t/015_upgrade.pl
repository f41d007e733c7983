# ALTER EXTENSION zorder UPDATE from each earlier release (0.1 to 0.7) to
# the current version (0.8): an updated install has exactly the objects of a
# fresh one (a description of every member object, compared line by line).
#
# First, empty installs of each, updated.  Then a real layout:
# the current library cannot write a 0.1 catalog (it refuses, and says to
# update), so the 0.1 catalog of a real layout is made the way 0.1 wrote
# it: a table is laid out with the current version, the extension is dropped (the heap
# stays as it is), 0.1 is installed, and its catalog gets the same keys,
# layout, runs and history, with the boundaries in 0.1's form (the text of
# a text[] of their output forms).  Then the update must convert all of
# it, leave objects identical to those of a fresh install, and the old
# table must work on: incremental and full optimize, clustering
# information, amcheck, the same rows.  A schema zorder that another role
# owns, may create in, or that holds objects of its own is refused, with
# nothing changed.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

# A description of the extension's objects: every member, the columns,
# constraints, indexes, views, function definitions, privileges, initial
# privileges, dependencies and configuration tables.
my $describe = q{
WITH ext AS (SELECT * FROM pg_extension WHERE extname = 'zorder'),
members AS (
  SELECT d.classid, d.objid FROM pg_depend d, ext
  WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
	AND d.deptype = 'e'),
rels AS (SELECT c.* FROM members m JOIN pg_class c
		 ON m.classid = 'pg_class'::regclass AND c.oid = m.objid)
SELECT x FROM (
SELECT format('extension %s %s %s %s %s', extnamespace::regnamespace,
			  extrelocatable, extversion, extconfig::regclass[], extcondition) AS x
FROM ext
UNION ALL
SELECT 'member ' || pg_describe_object(classid, objid, 0) FROM members
UNION ALL
SELECT format('column %s.%s %s %s %s %s %s', c.relname, a.attname, a.attnum,
			  format_type(a.atttypid, a.atttypmod), a.attnotnull,
			  pg_get_expr(ad.adbin, ad.adrelid), a.attacl)
FROM rels c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
UNION ALL
SELECT format('relation %s %s %s %s %s %s', relname, relkind, relowner::regrole,
			  relacl, reloptions, obj_description(oid, 'pg_class'))
FROM rels
UNION ALL
SELECT format('view %s %s', relname, pg_get_viewdef(oid)) FROM rels
WHERE relkind = 'v'
UNION ALL
SELECT format('index %s', pg_get_indexdef(i.indexrelid))
FROM rels c JOIN pg_index i ON i.indrelid = c.oid
UNION ALL
SELECT format('constraint %s %s %s', c.relname, co.conname,
			  pg_get_constraintdef(co.oid))
FROM rels c JOIN pg_constraint co ON co.conrelid = c.oid
UNION ALL
SELECT format('trigger %s %s', c.relname, pg_get_triggerdef(t.oid))
FROM rels c JOIN pg_trigger t ON t.tgrelid = c.oid
UNION ALL
SELECT format('function %s %s %s %s', pg_get_functiondef(p.oid), p.proowner::regrole,
			  p.proacl, obj_description(p.oid, 'pg_proc'))
FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
UNION ALL
SELECT format('schema %s %s %s', n.nspname, n.nspowner::regrole, n.nspacl)
FROM members m JOIN pg_namespace n
  ON m.classid = 'pg_namespace'::regclass AND n.oid = m.objid
UNION ALL
SELECT format('sequence %s %s %s %s %s %s %s %s', c.relname,
			  s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmax,
			  s.seqmin, s.seqcache, s.seqcycle)
FROM rels c JOIN pg_sequence s ON s.seqrelid = c.oid
UNION ALL
SELECT format('event trigger %s %s %s %s %s', e.evtname, e.evtevent,
			  e.evtfoid::regproc, e.evtenabled, e.evttags)
FROM members m JOIN pg_event_trigger e
  ON m.classid = 'pg_event_trigger'::regclass AND e.oid = m.objid
UNION ALL
SELECT format('initial privileges %s %s %s',
			  pg_describe_object(i.classoid, i.objoid, i.objsubid),
			  i.privtype, i.initprivs)
FROM members m JOIN pg_init_privs i
  ON i.classoid = m.classid AND i.objoid = m.objid
UNION ALL
SELECT format('dependency %s -> %s %s',
			  pg_describe_object(d.classid, d.objid, d.objsubid),
			  pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid),
			  d.deptype)
FROM members m JOIN pg_depend d
  ON d.classid = m.classid AND d.objid = m.objid AND d.deptype <> 'e'
UNION ALL
SELECT format('extension dependency %s %s',
			  pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid),
			  d.deptype)
FROM pg_depend d, ext
WHERE d.classid = 'pg_extension'::regclass AND d.objid = ext.oid) s
ORDER BY x COLLATE "C"};

# ---------------------------------------------------------------------
# A fresh install of the current version, to compare with
# ---------------------------------------------------------------------
my $current = '0.8';
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION zorder');
is($node->safe_psql('fresh', q{SELECT extversion FROM pg_extension
	WHERE extname = 'zorder'}), $current, "the default version is $current");
my $fresh = $node->safe_psql('fresh', $describe);
like($fresh, qr/^column layouts\.loose_ranges 25 bigint\[\]/m,
	'the description covers columns, by position');

# Whether database $db has the objects of the fresh install; on failure,
# the lines that differ.
sub same_as_fresh
{
	my ($db, $what) = @_;
	my $got = $node->safe_psql($db, $describe);
	my %fresh_lines = map { $_ => 1 } split /\n/, $fresh;
	my %got_lines = map { $_ => 1 } split /\n/, $got;
	my @missing = grep { !$got_lines{$_} } split /\n/, $fresh;
	my @extra = grep { !$fresh_lines{$_} } split /\n/, $got;
	my $ok = ok($got eq $fresh, $what);
	if (!$ok)
	{
		diag("only in the fresh install:\n  " . join("\n  ", @missing))
		  if @missing;
		diag("only in $db:\n  " . join("\n  ", @extra)) if @extra;
		diag('the same lines in another order') if !@missing && !@extra;
	}
	return $ok;
}

# ---------------------------------------------------------------------
# Empty installs of each earlier release, updated
# ---------------------------------------------------------------------
foreach my $old ('0.1', '0.2', '0.3', '0.4', '0.5', '0.6', '0.7')
{
	my $name = 'from_' . ($old =~ s/\./_/r);
	$node->safe_psql('postgres', "CREATE DATABASE $name");
	$node->safe_psql($name, "CREATE EXTENSION zorder VERSION '$old'");
	is($node->safe_psql($name, q{SELECT extversion FROM pg_extension
		WHERE extname = 'zorder'}), $old, "$old installed");
	$node->safe_psql($name, 'ALTER EXTENSION zorder UPDATE');
	is($node->safe_psql($name, q{SELECT extversion FROM pg_extension
		WHERE extname = 'zorder'}), $current, "$old updated to $current");
	same_as_fresh($name,
		"$old updated: the objects are those of a fresh $current install");
}

# ---------------------------------------------------------------------
# A table laid out, and its catalog as 0.1 would have kept it
# ---------------------------------------------------------------------
my $db = 'old';
$node->safe_psql('postgres', "CREATE DATABASE $db");
# 0.1 kept appended rows in cubes, merged now and then: lay the table out
# that way (placement off) so that the catalog holds what 0.1's would.
$node->safe_psql('postgres', "ALTER DATABASE $db SET zorder.placement = off");
$node->safe_psql($db, q{
CREATE EXTENSION amcheck;
CREATE EXTENSION zorder;
CREATE TABLE ev (id bigint PRIMARY KEY, a int, b text, c int);
INSERT INTO ev SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(1, 20000) g;
CREATE INDEX ev_a_brin ON ev USING brin (a) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('ev', 'b', 'a');
CALL zorder.optimize('ev', curve => 'z');
INSERT INTO ev SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(20001, 20300) g;
CALL zorder.optimize('ev');
});

my $runs_query =
  q{SELECT first_block, nblocks, rows, created_xid, run, key_lo
	FROM zorder.runs ORDER BY first_block};
my $runs = $node->safe_psql($db, $runs_query);
my $history_query =
  q{SELECT relid::regclass, started_at, mode, rows_moved, runs_merged,
		   runs_after, duration FROM zorder.history ORDER BY started_at};
my $history = $node->safe_psql($db, $history_query);
isnt($runs, '', 'the table has runs');
like($runs, qr/\|[1-9]\d*\|$/m, 'a cube besides the main run');
my $layout_query =
  q{SELECT keys, curve, bits, sample_rows, optimized_at, rows_written, pages,
		   duration, sort_runs, temp_bytes, pages_per_range, merge_cursor
	FROM zorder.layouts WHERE relid = 'ev'::regclass};
my $layout = $node->safe_psql($db, $layout_query);
my @bounds = split /\n/,
  $node->safe_psql($db,
	q{SELECT encode(b, 'hex') FROM zorder.layouts, unnest(bounds) WITH ORDINALITY AS u(b, i)
	  WHERE relid = 'ev'::regclass ORDER BY i});
is(scalar(@bounds), 2, 'two keys, two sets of boundaries');

# zorder's stored form of boundaries (quantile.c): header, then values
sub parse_bounds
{
	my ($hex) = @_;
	my $bin = pack('H*', $hex);
	my ($version, $typ, $typmod, $coll, $form, $n) =
	  unpack('N N l> N a N', $bin);
	my $pos = 21;
	my @values;
	for (1 .. $n)
	{
		my $len = unpack('N', substr($bin, $pos, 4));
		push @values, substr($bin, $pos + 4, $len);
		$pos += 4 + $len;
	}
	return ($typ, $typmod, $coll, $form, @values);
}

# key 1 is b (text: its send form is its text), key 2 is a (int4)
my ($btyp, $btypmod, $bcoll, $bform, @bvals) = parse_bounds($bounds[0]);
my ($atyp, $atypmod, $acoll, $aform, @avals) = parse_bounds($bounds[1]);
is("$bform $aform", 'b b', 'boundaries in binary form');
@avals = map { unpack('l>', $_) } @avals;
ok(@bvals > 10 && @avals > 10, 'boundaries chosen for both keys');

# the text of a text[], as 0.1 wrote it (array_out's quoting)
sub array_literal
{
	return "(ARRAY[" . join(',', map { "'" . (s/'/''/gr) . "'" } @_)
	  . "]::text[])::text";
}
my $old_bounds =
  'ARRAY[' . array_literal(@bvals) . ', ' . array_literal(@avals) . ']';

my $contents_query =
  q{SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM ev e};
my $contents = $node->safe_psql($db, $contents_query);
my $ctids = $node->safe_psql($db,
	q{SELECT md5(string_agg(ctid::text || id, ',' ORDER BY id)) FROM ev});

$node->safe_psql($db, q{
CREATE TABLE saved_runs AS SELECT * FROM zorder.runs;
-- the columns 0.1 had (0.4 added the room's, 0.5 what a call wrote, last)
CREATE TABLE saved_history AS SELECT relid, started_at, mode, rows_moved,
	runs_merged, runs_after, duration FROM zorder.history;
CREATE TABLE saved_layout AS SELECT * FROM zorder.layouts;
DROP EXTENSION zorder;
CREATE EXTENSION zorder VERSION '0.1';
});
is( $node->safe_psql(
		$db, q{SELECT extversion || ' ' || extnamespace::regnamespace
			   FROM pg_extension WHERE extname = 'zorder'}),
	'0.1 zorder',
	'0.1 installed as released: in schema zorder');

# the current library refuses the 0.1 catalog, and says what to do
my ($ret, $out, $err) =
  $node->psql($db, q{SELECT zorder.cluster_by('ev', 'b', 'a')});
like($err, qr/extension "zorder" must be updated.*ALTER EXTENSION zorder UPDATE/s,
	'the new library on the old catalog: update first');

$node->safe_psql($db, qq{
INSERT INTO zorder.tables (relid, keys) VALUES ('ev'::regclass, '{3,2}');
INSERT INTO zorder.layouts (relid, keys, curve, bits, bounds, sample_rows,
	optimized_at, rows_written, pages, duration, sort_runs, temp_bytes,
	pages_per_range, merge_cursor)
SELECT relid, keys, curve, bits, $old_bounds, sample_rows, optimized_at,
	rows_written, pages, duration, sort_runs, temp_bytes, pages_per_range,
	merge_cursor
FROM saved_layout;
-- zorder.runs was zorder.cubes in 0.1
INSERT INTO zorder.cubes SELECT * FROM saved_runs;
INSERT INTO zorder.history SELECT * FROM saved_history;
-- rows a temporary table that ended without DROP left behind in 0.1
INSERT INTO zorder.tables (relid, keys) VALUES (4000000000, '{1}');
INSERT INTO zorder.layouts (relid, keys, curve, bits, bounds, sample_rows,
	optimized_at, rows_written, pages, duration, sort_runs, temp_bytes)
VALUES (4000000000, '{1}', 'z', 8, '{"{1,2}"}', 1, now(), 1, 1, '1s', 0, 0);
INSERT INTO zorder.cubes (relid, first_block, nblocks, rows, created_xid)
VALUES (4000000000, 0, 1, 1, '1');
});
is( $node->safe_psql(
		$db, q{SELECT pg_typeof(bounds)::text || ' ' || bounds[2]
			   FROM zorder.layouts WHERE relid = 'ev'::regclass}),
	'text[] {' . join(',', @avals) . '}',
	'0.1: boundaries kept as text');

# ---------------------------------------------------------------------
# The update
# ---------------------------------------------------------------------
$node->safe_psql($db, 'ALTER EXTENSION zorder UPDATE');
is( $node->safe_psql(
		$db, q{SELECT extversion || ' ' || extnamespace::regnamespace
			   FROM pg_extension WHERE extname = 'zorder'}),
	"$current pg_catalog",
	"updated to $current");
same_as_fresh($db, "the objects are those of a fresh $current install");

is( $node->safe_psql(
		$db, q{SELECT "table", keys, curve FROM zorder.clustered_tables}),
	'ev|{b,a}|z',
	'keys and curve are there');
is( $node->safe_psql(
		$db, q{SELECT key_names FROM zorder.tables WHERE relid = 'ev'::regclass}),
	'{b,a}',
	'the key columns are named');
is($node->safe_psql($db, $layout_query), $layout, 'the layout is unchanged');
is($node->safe_psql($db, $runs_query), $runs, 'the runs are unchanged');
is($node->safe_psql($db, $history_query),
	$history, 'the history is unchanged');
is( $node->safe_psql(
		$db, q{SELECT layout_filenode = pg_relation_filenode('ev')
			   FROM zorder.layouts WHERE relid = 'ev'::regclass}),
	't',
	'the runs are taken as those of the current file');
is( $node->safe_psql(
		$db, q{SELECT (SELECT count(*) FROM zorder.tables) + (SELECT count(*) FROM zorder.layouts)
				+ (SELECT count(*) FROM zorder.runs WHERE relid = 4000000000)}),
	'2',
	'rows of a relation that is gone are dropped');

# the boundaries: text form, for the column's type, typmod and collation,
# the same values
@bounds = split /\n/,
  $node->safe_psql($db,
	q{SELECT encode(b, 'hex') FROM zorder.layouts, unnest(bounds) WITH ORDINALITY AS u(b, i)
	  WHERE relid = 'ev'::regclass ORDER BY i});
my ($ntyp, $ntypmod, $ncoll, $nform, @nvals) = parse_bounds($bounds[0]);
is_deeply(
	[ $ntyp, $ntypmod, $ncoll, $nform, @nvals ],
	[ $btyp, $btypmod, $bcoll, 't', @bvals ],
	'text key: boundaries converted');
($ntyp, $ntypmod, $ncoll, $nform, @nvals) = parse_bounds($bounds[1]);
is_deeply(
	[ $ntyp, $ntypmod, $ncoll, $nform, @nvals ],
	[ $atyp, $atypmod, $acoll, 't', @avals ],
	'integer key: boundaries converted');

# ---------------------------------------------------------------------
# The old table works on
# ---------------------------------------------------------------------
is($node->safe_psql($db, $contents_query), $contents, 'rows unchanged');
is( $node->safe_psql(
		$db, q{SELECT md5(string_agg(ctid::text || id, ',' ORDER BY id)) FROM ev}),
	$ctids,
	'nothing moved');

($ret, $out, $err) = $node->psql($db, q{
INSERT INTO ev SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(20301, 20500) g;
CALL zorder.optimize('ev');
});
is($ret, 0, 'incremental optimize after the update') or diag($err);
unlike($err, qr/rewritten or restored/, '... trusts the runs of 0.1');
is( $node->safe_psql(
		$db, q{SELECT mode, rows_moved FROM zorder.optimize_history
			   ORDER BY started_at DESC LIMIT 1}),
	'incremental|200',
	'... moves only the new rows');
# 0.4: an updated catalog records the room after the call.  The
# fillfactor 100 that the current version's rewrite set (placement off) is
# in no history the old catalog kept, so it counts as the owner's.
is( $node->safe_psql(
		$db, q{SELECT rows_arrived, fillfactor, room, reloptions
			   FROM zorder.optimize_history, pg_class
			   WHERE oid = 'ev'::regclass ORDER BY started_at DESC LIMIT 1}),
	"200||the table's own fillfactor 100: left alone|{fillfactor=100}",
	'... and records the room, leaving a fillfactor it cannot tell as its own');
# 0.5: and what the call wrote: the 200 rows into a few pages, with WAL
is( $node->safe_psql(
		$db, q{SELECT pages_written BETWEEN 1 AND 200, wal_bytes > 0
			   FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1}),
	't|t',
	'... and what the call wrote');
is( $node->safe_psql(
		$db, q{SELECT (pg_typeof(b))::text FROM zorder.layouts, unnest(bounds) b
			   WHERE relid = 'ev'::regclass LIMIT 1}),
	'bytea',
	'... with the converted boundaries');
is( $node->safe_psql(
		$db, q{SELECT sorted_runs > 0 AND table_pages > 0
			   FROM zorder.clustering_information('ev') WHERE key_position = 1}),
	't',
	'clustering_information works');

sub check_table
{
	my ($what, $rows) = @_;
	is( $node->safe_psql(
			$db, q{SELECT count(*) FROM verify_heapam('ev')}),
		'0', "$what: verify_heapam finds nothing");
	my ($r, $o, $e) =
	  $node->psql($db, q{SELECT bt_index_check('ev_pkey', true)});
	is($r, 0, "$what: bt_index_check passes") or diag($e);
	is( $node->safe_psql(
			$db,
			q{SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM ev e}),
		$node->safe_psql(
			$db, qq{
SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM (
  SELECT g AS id, (g * 7919) % 1000 AS a, 'k' || ((g * 104729) % 613) AS b,
		 g % 17 AS c
  FROM generate_series(1, $rows) g) e}),
		"$what: the rows are those inserted");
	return;
}
check_table('incremental', 20500);

$node->safe_psql($db, q{
CALL zorder.optimize('ev', full => true);
});
is( $node->safe_psql(
		$db, q{SELECT curve || ' ' || (SELECT count(*) FROM zorder.sorted_runs)
			   FROM zorder.clustered_tables}),
	'z 1',
	'full optimize: the curve stays, one run');
is( $node->safe_psql(
		$db, q{SELECT bool_and(get_byte(b, 16) = 98) FROM zorder.layouts, unnest(bounds) b
			   WHERE relid = 'ev'::regclass}),
	't',
	'full optimize: boundaries in binary form again');
check_table('full', 20500);

# keys declared anew, and a new table, as in any install
$node->safe_psql($db, q{
SELECT zorder.cluster_by('ev', 'a', 'c');
CREATE TABLE ev2 (x int, y int);
INSERT INTO ev2 SELECT g, g % 7 FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('ev2', 'y', 'x');
CALL zorder.optimize('ev2');
DROP TABLE ev2;
});
is( $node->safe_psql(
		$db, q{SELECT "table", keys FROM zorder.clustered_tables}),
	'ev|{a,c}',
	'cluster_by and the drop trigger work');

# ---------------------------------------------------------------------
# A schema zorder that is not safe to take in is refused
# ---------------------------------------------------------------------
$node->safe_psql('postgres', 'CREATE ROLE mallory');

sub refused
{
	my ($what, $setup, $pattern) = @_;
	my $name = "refused_" . (my $n = $what) =~ s/\W+/_/gr;
	$node->safe_psql('postgres', "CREATE DATABASE $name");
	$node->safe_psql($name, $setup);
	my $before = $node->safe_psql($name, $describe);
	my ($r, $o, $e) = $node->psql($name, 'ALTER EXTENSION zorder UPDATE');
	isnt($r, 0, "$what: the update fails");
	like($e, $pattern, "$what: and says why");
	is($node->safe_psql($name, $describe),
		$before, "$what: nothing changed");
	return;
}

refused(
	'schema owned by another role',
	q{CREATE SCHEMA zorder AUTHORIZATION mallory;
	  CREATE EXTENSION zorder VERSION '0.1';},
	qr/schema "zorder" is not owned by the owner of extension "zorder"/);
refused(
	'other roles may create in the schema',
	q{CREATE EXTENSION zorder VERSION '0.1';
	  GRANT CREATE ON SCHEMA zorder TO mallory;},
	qr/other roles may create objects in schema "zorder".*mallory/s);
refused(
	'objects of others in the schema',
	q{CREATE EXTENSION zorder VERSION '0.1';
	  CREATE FUNCTION zorder.extra() RETURNS int LANGUAGE sql AS 'SELECT 1';},
	qr/schema "zorder" holds objects that are not part of extension "zorder".*function zorder\.extra\(\)/s
);

$node->stop;
done_testing();
