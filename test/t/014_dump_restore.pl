# pg_dump and pg_restore keep what zorder knows of a table's layout: its
# keys and curve come back, bound by name to the restored tables and their
# columns (also a key column renamed since it was declared), in plain
# and custom format, into another database of the same cluster and into
# another cluster.  The sorted runs do not come back (they were block
# numbers of the old files), but COPY writes the rows in the old heap's
# order: the first optimize checks the restored heap against the layout's
# boundary set (one scan), takes the rows in key order for the table's
# run, keeping its curve, and goes on incrementally (test/t/021 measures
# what it moves and how it skips).
# Rows of temporary tables and of tables that are gone stay out of the
# dump.  Also: a table rewritten in place (VACUUM FULL) is laid out again.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $src = PostgreSQL::Test::Cluster->new('dumpsrc');
$src->init;
$src->append_conf('postgresql.conf', "autovacuum = off\n");
$src->start;
$src->safe_psql('postgres', 'CREATE DATABASE src');

# "Ev ents" has a dropped column before its keys, so that a restore
# numbers its columns differently; pt is partitioned (keys on the parent,
# layouts on the leaves); declared has keys but was never laid out.
$src->safe_psql('src', q{
CREATE EXTENSION zorder;
CREATE EXTENSION amcheck;
CREATE SCHEMA "Sales";
CREATE TABLE "Sales"."Ev ents" (id bigint PRIMARY KEY, gone int, a int, b text, c int);
ALTER TABLE "Sales"."Ev ents" DROP COLUMN gone;
INSERT INTO "Sales"."Ev ents" (id, a, b, c)
SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(1, 20000) g;
CREATE INDEX ev_a_brin ON "Sales"."Ev ents" USING brin (a) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('"Sales"."Ev ents"', 'b', 'a');
CALL zorder.optimize('"Sales"."Ev ents"', curve => 'z');
INSERT INTO "Sales"."Ev ents" (id, a, b, c)
SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(20001, 20300) g;
CALL zorder.optimize('"Sales"."Ev ents"');
CREATE TABLE pt (k int, v int, w int) PARTITION BY RANGE (k);
CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (500);
CREATE TABLE pt2 PARTITION OF pt FOR VALUES FROM (500) TO (1000);
INSERT INTO pt SELECT g % 1000, (g * 31) % 97, (g * 17) % 89 FROM generate_series(1, 5000) g;
SELECT zorder.cluster_by('pt', 'w', 'v');
CALL zorder.optimize('pt');
CREATE TABLE declared (x int, y int);
INSERT INTO declared SELECT g, g % 10 FROM generate_series(1, 100) g;
SELECT zorder.cluster_by('declared', 'y', 'x');
CREATE TABLE renamed (x int, gone int, y int, z int);
ALTER TABLE renamed DROP COLUMN gone;
INSERT INTO renamed SELECT g, g % 7, g % 11 FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('renamed', 'z', 'y');
CALL zorder.optimize('renamed');
ALTER TABLE renamed RENAME COLUMN z TO zz;
CALL zorder.optimize('renamed');
});

# rows the dump must leave out: those of a relation that is gone (as a
# temporary table that ended without DROP leaves them), and those of a
# temporary table that is alive while pg_dump runs
$src->safe_psql('src',
	q{INSERT INTO zorder.tables (relid, keys) VALUES (4000000000, '{1}')});
my $tmp = $src->background_psql('src');
$tmp->query_safe(q{
CREATE TEMP TABLE tmp (a int, b int);
INSERT INTO tmp SELECT g, g FROM generate_series(1, 100) g;
SELECT zorder.cluster_by('tmp', 'a', 'b');
CALL zorder.optimize('tmp');
});
is( $src->safe_psql(
		'src',
		q{SELECT count(*) FROM zorder.tables t JOIN pg_class c ON c.oid = t.relid
	  WHERE c.relpersistence = 't'}),
	'1',
	'the temporary table has keys while pg_dump runs');

# keys and curves: of the tables with keys, and of the partitions laid out
my $layout_query = q{
SELECT * FROM (
  SELECT "table"::text AS t, keys::text, curve FROM zorder.clustered_tables
  UNION ALL
  SELECT l.relid::text, '', l.curve FROM zorder.layouts l
  WHERE NOT EXISTS (SELECT FROM zorder.tables t WHERE t.relid = l.relid)) s
ORDER BY t COLLATE "C"};
my $expected_layout = $src->safe_psql('src', $layout_query);
is( $expected_layout,
	qq{"Sales"."Ev ents"|{b,a}|z
declared|{y,x}|
pt|{w,v}|
pt1||hilbert
pt2||hilbert
renamed|{zz,y}|hilbert},
	'source: keys and curves');

# contents of every table, in one string
my $contents_query = q{
SELECT (SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM "Sales"."Ev ents" e)
	|| ' ' || (SELECT md5(string_agg(p::text, ',' ORDER BY k, v, w)) FROM pt p)
	|| ' ' || (SELECT md5(string_agg(d::text, ',' ORDER BY x)) FROM declared d)};
my $expected_contents = $src->safe_psql('src', $contents_query);

my $dumpdir = PostgreSQL::Test::Utils::tempdir;
$src->command_ok(
	[ 'pg_dump', '-Fc', '-f', "$dumpdir/src.dump", '-d', $src->connstr('src') ],
	'pg_dump, custom format');
$src->command_ok(
	[ 'pg_dump', '-Fp', '-f', "$dumpdir/src.sql", '-d', $src->connstr('src') ],
	'pg_dump, plain format');
$tmp->quit;

# another cluster, whose OIDs run elsewhere: a row bound by OID rather
# than by name would not find its table
my $other = PostgreSQL::Test::Cluster->new('dumpdst');
$other->init;
$other->append_conf('postgresql.conf', "autovacuum = off\n");
$other->start;
$other->safe_psql('postgres',
	'CREATE TABLE burn (a int); DROP TABLE burn; ' x 40
	  . 'CREATE DATABASE restored');
$src->safe_psql('postgres',
	'CREATE DATABASE r_custom; CREATE DATABASE r_plain');

$src->command_ok(
	[
		'pg_restore', '--exit-on-error', '-d', $src->connstr('r_custom'),
		"$dumpdir/src.dump"
	],
	'pg_restore, custom format, another database');
$src->command_ok(
	[
		'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d',
		$src->connstr('r_plain'), '-f', "$dumpdir/src.sql"
	],
	'psql, plain format, another database');
$other->command_ok(
	[
		'pg_restore', '--exit-on-error', '-d', $other->connstr('restored'),
		"$dumpdir/src.dump"
	],
	'pg_restore, custom format, another cluster');

for my $target ([ $src, 'r_custom' ], [ $src, 'r_plain' ],
	[ $other, 'restored' ])
{
	my ($node, $db) = @$target;
	my $what = $node->name . "/$db";

	is($node->safe_psql($db, $layout_query),
		$expected_layout, "$what: keys and curves are back");
	is( $node->safe_psql(
			$db, q{
SELECT t.keys = ARRAY(SELECT attnum FROM pg_attribute
					  WHERE attrelid = t.relid AND attname IN ('b', 'a')
					  ORDER BY attname DESC)
FROM zorder.tables t WHERE t.relid = '"Sales"."Ev ents"'::regclass}),
		't',
		"$what: the keys name the restored table's columns b and a");
	is( $node->safe_psql(
			$db, q{
SELECT t.keys = ARRAY(SELECT attnum FROM pg_attribute
					  WHERE attrelid = t.relid AND attname IN ('zz', 'y')
					  ORDER BY attname DESC)
FROM zorder.tables t WHERE t.relid = 'renamed'::regclass}),
		't',
		"$what: a key renamed before the dump names the column of its new name");
	is( $node->safe_psql(
			$db, q{
SELECT (SELECT count(*) FROM zorder.tables) || ' ' ||
	   (SELECT count(*) FROM zorder.runs) || ' ' ||
	   (SELECT count(*) FROM zorder.temp_relations) || ' ' ||
	   (SELECT count(*) FROM zorder.history)}),
		'4 0 0 0',
		"$what: no runs, history, temporary tables or tables that are gone");
	is($node->safe_psql($db, $contents_query),
		$expected_contents, "$what: the rows are those dumped");

	my ($ret, $out, $err) = $node->psql($db,
		q{CALL zorder.optimize('"Sales"."Ev ents"')});
	is($ret, 0, "$what: optimize works on the restored table") or diag($err);
	like(
		$err,
		qr/table "Ev ents" is laid out by boundary set \d+\nDETAIL:  \d+ of its 20300 rows are in key order/,
		"$what: the first optimize checks the order of the restored heap");
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(mode, ',' ORDER BY started_at) FROM zorder.optimize_history
WHERE "table" = '"Sales"."Ev ents"'::regclass}),
		'incremental',
		"$what: ... and goes on incrementally");
	is( $node->safe_psql(
			$db, q{
SELECT min(run) || ' ' || max(run) || ' ' || (sum(rows) > 20300 / 2)
FROM zorder.sorted_runs WHERE "table" = '"Sales"."Ev ents"'::regclass}),
		'0 0 true',
		"$what: the table is one sorted run of most of its rows");

	$node->safe_psql($db, q{
INSERT INTO "Sales"."Ev ents" (id, a, b, c)
SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(20301, 20500) g;
DELETE FROM "Sales"."Ev ents" WHERE id % 50 = 0;
CALL zorder.optimize('"Sales"."Ev ents"');
CALL zorder.optimize('pt');
CALL zorder.optimize('declared');
INSERT INTO pt SELECT g % 1000, (g * 31) % 97, (g * 17) % 89 FROM generate_series(5001, 5400) g;
CALL zorder.optimize('pt');
});
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(mode, ',' ORDER BY started_at) FROM zorder.optimize_history
WHERE "table" = '"Sales"."Ev ents"'::regclass}),
		'incremental,incremental',
		"$what: later calls are incremental");
	is($node->safe_psql($db, $layout_query),
		$expected_layout =~ s/declared\|\{y,x\}\|/declared|{y,x}|hilbert/r,
		"$what: the curves stayed");
	is( $node->safe_psql(
			$db, q{
SELECT (SELECT count(*) FROM "Sales"."Ev ents") || ' ' ||
	   (SELECT count(*) FROM pt) || ' ' || (SELECT count(*) FROM declared)}),
		'20090 5400 100',
		"$what: no row lost or added");
	is( $node->safe_psql(
			$db, q{
SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM "Sales"."Ev ents" e}),
		$src->safe_psql(
			'src', q{
SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM (
  SELECT * FROM "Sales"."Ev ents"
  UNION ALL
  SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
  FROM generate_series(20301, 20500) g) e
WHERE id % 50 <> 0}),
		"$what: the rows are those expected");
	$node->safe_psql($db, 'CREATE EXTENSION IF NOT EXISTS amcheck');
	is( $node->safe_psql(
			$db, q{
SELECT (SELECT count(*) FROM verify_heapam('"Sales"."Ev ents"'))
	 + (SELECT count(*) FROM verify_heapam('pt1'))
	 + (SELECT count(*) FROM verify_heapam('pt2'))
	 + (SELECT count(*) FROM verify_heapam('declared'))}),
		'0',
		"$what: verify_heapam finds nothing");
	($ret, $out, $err) = $node->psql($db,
		q{SELECT bt_index_check('"Sales"."Ev ents_pkey"', true)});
	is($ret, 0, "$what: bt_index_check passes") or diag($err);
	is( $node->safe_psql(
			$db, q{
SELECT sorted_runs FROM zorder.clustering_information('"Sales"."Ev ents"')
WHERE key_position = 1}),
		$node->safe_psql(
			$db, q{
SELECT count(DISTINCT run) FROM zorder.sorted_runs
WHERE "table" = '"Sales"."Ev ents"'::regclass}),
		"$what: clustering_information reads the new runs");
}

# A table rewritten in place (VACUUM FULL) has a new file too, so its
# recorded runs say nothing about it.  VACUUM FULL copies the rows in the
# order they had, though: the next call checks that order against the
# layout's boundaries (one scan), takes the part in key order for the
# table's run, and goes on incrementally, keeping the curve.
$src->safe_psql('src', 'VACUUM FULL "Sales"."Ev ents"');
my ($ret, $out, $err) =
  $src->psql('src', q{CALL zorder.optimize('"Sales"."Ev ents"')});
like(
	$err,
	qr/table "Ev ents" is laid out by boundary set \d+\nDETAIL:  \d+ of its \d+ rows are in key order/,
	'VACUUM FULL: the next optimize checks the order of the rewritten heap');
is( $src->safe_psql(
		'src', q{
SELECT mode FROM zorder.optimize_history
WHERE "table" = '"Sales"."Ev ents"'::regclass ORDER BY started_at DESC LIMIT 1}
	),
	'incremental',
	'VACUUM FULL: and goes on incrementally');
is( $src->safe_psql(
		'src', q{
SELECT curve || ' ' || (SELECT count(*) > 0 FROM zorder.sorted_runs
						WHERE "table" = '"Sales"."Ev ents"'::regclass)
FROM zorder.clustered_tables WHERE "table" = '"Sales"."Ev ents"'::regclass}),
	'z true',
	'VACUUM FULL: the curve stayed, with runs of the new file');
is( $src->safe_psql(
		'src', q{
SELECT count(*) FROM verify_heapam('"Sales"."Ev ents"')}),
	'0', 'VACUUM FULL: verify_heapam finds nothing');
is($src->safe_psql('src', $contents_query),
	$expected_contents, 'VACUUM FULL: the rows are unchanged');

$other->stop;
$src->stop;
done_testing();
