# After pg_dump and pg_restore, a laid-out table is recognised rather than
# rewritten (issue #28).  COPY writes the rows in the order of the dump,
# which is the old heap's, and the layout and its boundary set come back
# with zorder's configuration tables; the restored layout names no heap
# file, so the first zorder.optimize checks the heap against the set in
# one scan (recognize.c) and goes on incrementally: it moves the rows
# appended since the restore and the rows the copy holds out of order (an
# incremental call before the dump had placed them into the room of their
# ranges) unless they lie in the box of their block range's other rows,
# and leaves the rest where COPY put them.  Skipping stays what it was
# before the dump.  A restore where a key column's type or collation
# differs from the set's is laid out again in full, and a NOTICE says
# why.

use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZorderTest;

my $node = new_node('restore', conf => "autovacuum = off\n", extensions => []);
$node->safe_psql('postgres', 'CREATE DATABASE src');

# t: fully laid out before the dump, with a dropped column before its keys
# (the restored table numbers its key columns differently); p: laid out,
# then an incremental call placed 1 % more rows into the room of their
# ranges; u: a text key, for the collation check
my $rows_t = 100000;
my $rows_p = 50000;
my $gen = sub {
	my ($from, $to) = @_;
	return "SELECT g, (g::bigint * 7919) % 100003, (g::bigint * 104729) % 99991, "
	  . "repeat('x', 40) FROM generate_series($from, $to) g";
};
$node->safe_psql('src', qq{
CREATE EXTENSION zorder;
CREATE EXTENSION amcheck;
CREATE TABLE t (id bigint PRIMARY KEY, gone int, a int, b int, pad text)
	WITH (fillfactor = 90);
ALTER TABLE t DROP COLUMN gone;
INSERT INTO t (id, a, b, pad) @{[ $gen->(1, $rows_t) ]};
CREATE INDEX t_brin ON t USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('t', 'a', 'b');
CALL zorder.optimize('t');
CREATE TABLE p (id bigint PRIMARY KEY, a int, b int, pad text)
	WITH (fillfactor = 90);
INSERT INTO p @{[ $gen->(1, $rows_p) ]};
CREATE INDEX p_brin ON p USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('p', 'a', 'b');
CALL zorder.optimize('p');
INSERT INTO p @{[ $gen->($rows_p + 1, $rows_p * 101 / 100) ]};
CALL zorder.optimize('p');
CREATE TABLE u (id int PRIMARY KEY, k text, n int);
INSERT INTO u SELECT g, 'k' || (g * 7919) % 1009, g % 97
FROM generate_series(1, 5000) g;
SELECT zorder.cluster_by('u', 'k', 'n');
CALL zorder.optimize('u');
});
is( $node->safe_psql(
		'src', q{
SELECT string_agg(mode, ',' ORDER BY started_at) FROM zorder.optimize_history
WHERE "table" = 'p'::regclass}),
	'full,incremental',
	'source: p took an incremental call before the dump');

# Skipping, measured the same way everywhere: the BRIN ranges that point
# filters on each key column cannot skip, for fixed values of the data.
sub skipping
{
	my ($db, $table) = @_;
	return $node->safe_psql(
		$db, qq{
SELECT sum(zorder.ranges_touched('$table', 'a', ((g::bigint * 7919) % 100003)::text))
	 + sum(zorder.ranges_touched('$table', 'b', ((g::bigint * 104729) % 99991)::text))
FROM generate_series(1, 400, 10) g});
}
my %before = (t => skipping('src', 't'), p => skipping('src', 'p'));

my $dumpdir = PostgreSQL::Test::Utils::tempdir;
$node->command_ok(
	[ 'pg_dump', '-Fc', '-f', "$dumpdir/src.dump", '-d', $node->connstr('src') ],
	'pg_dump, custom format');
$node->command_ok(
	[ 'pg_dump', '-Fp', '-f', "$dumpdir/src.sql", '-d', $node->connstr('src') ],
	'pg_dump, plain format');

$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok(
	[
		'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'),
		"$dumpdir/src.dump"
	],
	'pg_restore');
is( $node->safe_psql(
		'dst', q{
SELECT count(*) FILTER (WHERE layout_filenode IS NULL) || ' ' ||
	   count(*) FILTER (WHERE boundary_set IS NOT NULL)
FROM zorder.layouts}),
	'3 3',
	'restored layouts name their boundary sets and no heap file');

# 1 % appended after the restore
my %appended = (t => $rows_t / 100, p => $rows_p / 100);
my %placed = (t => 0, p => $rows_p / 100);
$node->safe_psql('dst', qq{
INSERT INTO t (id, a, b, pad) @{[ $gen->($rows_t + 1, $rows_t + $appended{t}) ]};
INSERT INTO p @{[ $gen->($rows_p * 2 + 1, $rows_p * 2 + $appended{p}) ]};
});

# p's rows placed before the dump, where the restore put them, and whether
# each lies in the box that the other restored rows of its BRIN range (4
# pages) span, off the range's first page: there it widens no summary of
# the range, so the call has no cause to move it
$node->safe_psql('dst', qq{
CREATE TABLE placed_before AS
SELECT p.id, p.ctid AS tid,
	   (p.ctid::text::point)[0]::int % 4 <> 0 AND
	   p.a BETWEEN box.alo AND box.ahi AND p.b BETWEEN box.blo AND box.bhi AS inside
FROM p JOIN (SELECT (ctid::text::point)[0]::int / 4 AS r,
					min(a) AS alo, max(a) AS ahi, min(b) AS blo, max(b) AS bhi
			 FROM p WHERE id <= $rows_p GROUP BY 1) box
  ON box.r = (p.ctid::text::point)[0]::int / 4
WHERE p.id > $rows_p AND p.id <= $rows_p * 101 / 100});

foreach my $table ('t', 'p')
{
	my ($ret, $out, $err) =
	  $node->psql('dst', "CALL zorder.optimize('$table')");
	is($ret, 0, "$table: optimize after the restore works") or diag($err);
	like(
		$err,
		qr/NOTICE:  table "$table" is laid out by boundary set \d+\nDETAIL:  \d+ of its \d+ rows are in key order/,
		"$table: the restored heap is recognised as the layout's run");
	unlike($err, qr/rewritten or restored/,
		"$table: ... and not rewritten in full");
	my ($mode, $moved) = split /\|/, $node->safe_psql(
		'dst', qq{
SELECT mode, rows_moved FROM zorder.optimize_history
WHERE "table" = '$table'::regclass});
	is($mode, 'incremental', "$table: the first call after the restore is incremental");
	my $limit = 1.1 * ($appended{$table} + $placed{$table});
	ok($moved <= $limit,
		"$table: it moved $moved rows, at most 1.1 x the "
		  . ($appended{$table} + $placed{$table})
		  . " appended since the restore or placed out of order before the dump");
	if ($table eq 'p')
	{
		my ($inside, $inside_moved, $outside, $outside_moved) = split /\|/,
		  $node->safe_psql('dst', q{
SELECT count(*) FILTER (WHERE b.inside),
	   count(*) FILTER (WHERE b.inside AND p.ctid <> b.tid),
	   count(*) FILTER (WHERE NOT b.inside),
	   count(*) FILTER (WHERE NOT b.inside AND p.ctid <> b.tid)
FROM placed_before b JOIN p USING (id)});
		cmp_ok($inside, '>', 0,
			"p: $inside of the rows placed before the dump lie in the box of their range");
		# the test's box is that of all the range's other rows, the check's
		# that of its rows in order, so a few may still be listed and move
		cmp_ok($inside_moved, '<=', $inside / 20,
			"p: ... and the call moved at most 1 in 20 of them: $inside_moved "
			  . "($outside_moved of the $outside others)");
	}
	my $after = skipping('dst', $table);
	ok($after <= 1.05 * $before{$table},
		"$table: skipping within 1.05 x of before the dump ($after ranges against $before{$table})");
	is( $node->safe_psql(
			'dst', qq{
SELECT keys = ARRAY(SELECT attnum FROM pg_attribute WHERE attrelid = '$table'::regclass
					AND attname IN ('a', 'b') ORDER BY attname)::int2[]
FROM zorder.layouts WHERE relid = '$table'::regclass}),
		't',
		"$table: the layout names the restored table's key columns");
	check_heap_and_indexes($node, 'dst', $table,
		table => $table,
		indexes => ["${table}_pkey"]);
	# The rows the runs count are those on their pages, but for rows newer
	# than a run and rows listed apart for the next call to move (a listed
	# row that stays in the range its key belongs to counts there at once).
	my ($catalog, $heap) = split /\|/, $node->safe_psql(
		'dst', qq{
SELECT coalesce((SELECT sum(rows) FROM zorder.runs
				 WHERE relid = '$table'::regclass), 0), count(*)
FROM $table t JOIN zorder.runs c
  ON c.relid = '$table'::regclass
 AND (t.ctid::text::point)[0] >= c.first_block
 AND (t.ctid::text::point)[0] < c.first_block + c.nblocks
WHERE t.xmin::text::bigint <= c.created_xid::text::bigint
  AND t.ctid <> ALL (coalesce((SELECT misplaced FROM zorder.layouts
							  WHERE relid = '$table'::regclass), '{}'))});
	is($catalog, $heap,
		"$table: the runs in the catalog count the rows on their pages");
}

# contents, not counts: the source's rows and those appended since
my $expect_t = $node->safe_psql(
	'src', qq{
SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM (
  SELECT * FROM t UNION ALL @{[ $gen->($rows_t + 1, $rows_t + $appended{t}) ]}) e});
is( $node->safe_psql(
		'dst', q{SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM t e}),
	$expect_t, 't: the rows are those dumped and appended');
my $expect_p = $node->safe_psql(
	'src', qq{
SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM (
  SELECT * FROM p UNION ALL @{[ $gen->($rows_p * 2 + 1, $rows_p * 2 + $appended{p}) ]}) e});
is( $node->safe_psql(
		'dst', q{SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM p e}),
	$expect_p, 'p: the rows are those dumped and appended');

# the next call goes on incrementally from the recognised run
$node->safe_psql('dst', qq{
INSERT INTO t (id, a, b, pad) @{[ $gen->($rows_t * 3 + 1, $rows_t * 3 + 500) ]};
CALL zorder.optimize('t');
});
is( $node->safe_psql(
		'dst', q{
SELECT string_agg(mode, ',' ORDER BY started_at) FROM zorder.optimize_history
WHERE "table" = 't'::regclass}),
	'incremental,incremental',
	't: the next call is incremental too');
check_heap_and_indexes($node, 'dst', 't: after the next call',
	table => 't',
	indexes => ['t_pkey']);

# A restore into a database where a key column's type or collation differs
# from the boundary set's: the set does not fit, the table is laid out in
# full, and a NOTICE says why.
my $plain = slurp_file("$dumpdir/src.sql");
my $retyped = $plain;
ok($retyped =~ s/^(CREATE TABLE public\.t \(\n(?:    .*\n)*?    a) integer,$/$1 bigint,/m,
	'the plain dump, with t.a as bigint');
ok($retyped =~ s/^(CREATE TABLE public\.u \(\n(?:    .*\n)*?    k text)(,)$/$1 COLLATE "POSIX"$2/m,
	'... and u.k in collation POSIX');
open(my $fh, '>', "$dumpdir/retyped.sql") or die;
print $fh $retyped;
close($fh);
$node->safe_psql('postgres', 'CREATE DATABASE retyped');
$node->command_ok(
	[
		'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d',
		$node->connstr('retyped'), '-f', "$dumpdir/retyped.sql"
	],
	'restore of the edited plain dump');
foreach my $case (
	[ 't', qr/Key column "a" is of type bigint; the set was sampled for type integer\./ ],
	[ 'u', qr/Key column "k" has collation "?POSIX"?; the set was sampled for collation /])
{
	my ($table, $why) = @$case;
	my ($ret, $out, $err) =
	  $node->psql('retyped', "CALL zorder.optimize('$table')");
	is($ret, 0, "$table retyped: optimize works") or diag($err);
	like(
		$err,
		qr/NOTICE:  the restored layout of table "$table" does not fit it\nDETAIL:  /,
		"$table retyped: a NOTICE says the restored layout does not fit");
	like($err, $why, "$table retyped: ... and why");
	is( $node->safe_psql(
			'retyped', qq{
SELECT string_agg(mode, ',' ORDER BY started_at) FROM zorder.optimize_history
WHERE "table" = '$table'::regclass}),
		'full',
		"$table retyped: the table is laid out in full");
}
is( $node->safe_psql(
		'retyped', q{SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM t e}),
	$node->safe_psql(
		'src', q{SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM t e}),
	't retyped: the rows are those dumped');
$node->safe_psql('retyped', 'CREATE EXTENSION IF NOT EXISTS amcheck');
check_heap_and_indexes($node, 'retyped', 't retyped',
	table => 't',
	indexes => ['t_pkey']);

$node->stop;
done_testing();
