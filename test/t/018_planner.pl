# The planner support, set up as a user would (zorder in
# shared_preload_libraries): after zorder.optimize the planner picks the BRIN
# plan for selective filters with default settings, and its estimate of the
# heap pages read stays within 2x of what the scan reads after an append,
# an incremental optimize, VACUUM FULL, and a dump restored into another
# database.  In a database without the extension, the loaded library
# changes nothing: the same plans, with the same costs, as a server without
# it, and nothing in the log.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $node = ZorderTest::new_node(
	'planner',
	conf => "shared_preload_libraries = 'zorder'\nautovacuum = off\n");
is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'zorder', 'zorder is preloaded');

# 120000 rows, two keys of 2000 values in an order unrelated to both
$node->safe_psql('postgres', q{
CREATE TABLE ev (id int, a int, b int, pad text);
INSERT INTO ev SELECT g, (g::bigint * 7919) % 2000, (g::bigint * 104729) % 1999,
	repeat('x', 40)
FROM generate_series(1, 120000) g;
CREATE INDEX ev_brin ON ev USING brin (a, b) WITH (pages_per_range = 8);
ANALYZE ev;
});

# The plan's first line, the planner's estimate of the heap pages (from
# its DEBUG1 message) and the heap blocks the scan read.
sub plan_of
{
	my ($db, $query) = @_;
	my $plan = $node->safe_psql($db, "EXPLAIN (COSTS OFF) $query");
	my ($first) = split /\n/, $plan;
	$first =~ s/\s+on .*//;
	return $first;
}

sub estimate_and_actual
{
	my ($db, $query) = @_;
	my ($out, $err);
	$node->psql(
		$db,
		"SET client_min_messages = debug1; SET enable_seqscan = off;
		 EXPLAIN $query;",
		stdout => \$out,
		stderr => \$err);
	my ($est) = $err =~ /zorder: index \d+ reads \S+ of \S+ block ranges, (\d+) heap pages/;
	my $an = $node->safe_psql($db,
		"SET enable_seqscan = off; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $query");
	my ($lossy) = $an =~ /lossy=(\d+)/;
	my ($exact) = $an =~ /exact=(\d+)/;
	return ($est, ($lossy // 0) + ($exact // 0));
}

sub check_estimate
{
	my ($db, $what) = @_;
	foreach my $q ('SELECT * FROM ev WHERE a = 1234',
		'SELECT * FROM ev WHERE b BETWEEN 500 AND 520',
		'SELECT * FROM ev WHERE a IN (3, 700, 1500)')
	{
		my ($est, $actual) = estimate_and_actual($db, $q);
		ok(defined $est && $actual > 0
			  && $est <= 2 * $actual && $actual <= 2 * $est,
			"$what: estimated heap pages within 2x of those read ($q: "
			  . ($est // 'none') . " vs $actual)");
	}
}

# before a layout: PostgreSQL's own estimate (whose plan depends on the
# correlation ANALYZE's sample finds), never zorder's
{
	my ($est) = estimate_and_actual('postgres', 'SELECT * FROM ev WHERE a = 1234');
	ok(!defined $est, 'no layout yet: no zorder estimate');
}

$node->safe_psql('postgres', q{
SELECT zorder.cluster_by('ev', 'a', 'b');
CALL zorder.optimize('ev');
ANALYZE ev;
});
foreach my $q ('SELECT * FROM ev WHERE a = 1234',
	'SELECT * FROM ev WHERE b = 77',
	'SELECT * FROM ev WHERE a BETWEEN 10 AND 30 AND b < 1000')
{
	is(plan_of('postgres', $q), 'Bitmap Heap Scan', "optimized: BRIN for $q");
}
is(plan_of('postgres', 'SELECT * FROM ev WHERE a > 100'),
	'Seq Scan', 'optimized: the scan for a wide filter');
check_estimate('postgres', 'after a full optimize');

# 5 % appended, summarized, no ANALYZE: the new ranges are read by every
# filter, and the estimate says so
$node->safe_psql('postgres', q{
INSERT INTO ev SELECT g, (g::bigint * 7919) % 2000, (g::bigint * 104729) % 1999,
	repeat('x', 40)
FROM generate_series(120001, 126000) g;
SELECT brin_summarize_new_values('ev_brin');
});
check_estimate('postgres', 'after an append');

# the incremental optimize places them; its end invalidates the model
$node->safe_psql('postgres', q{CALL zorder.optimize('ev')});
check_estimate('postgres', 'after an incremental optimize');
is(plan_of('postgres', 'SELECT * FROM ev WHERE a = 1234'),
	'Bitmap Heap Scan', 'after an incremental optimize: BRIN');

$node->safe_psql('postgres', 'VACUUM FULL ev');
check_estimate('postgres', 'after VACUUM FULL');
is(plan_of('postgres', 'SELECT * FROM ev WHERE b = 77'),
	'Bitmap Heap Scan', 'after VACUUM FULL: BRIN');

# a dump restored into another database, not analyzed yet
my $dump = $node->basedir . '/ev.dump';
$node->command_ok(
	[ 'pg_dump', '-Fc', '-d', $node->connstr('postgres'), '-f', $dump ],
	'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'pg_restore', '-d', $node->connstr('restored'), $dump ],
	'pg_restore');
is($node->safe_psql('restored', 'SELECT count(*) FROM zorder.layouts'),
	'1', 'the layout is restored');
is(plan_of('restored', 'SELECT * FROM ev WHERE a = 1234'),
	'Bitmap Heap Scan', 'restored: BRIN');
check_estimate('restored', 'restored');

# A database without the extension, against a server without the library:
# the same plans and costs (30000 rows: ANALYZE reads them all, so the
# statistics are the same on both), and no error in the log.
my $bare = ZorderTest::new_node(
	'bare',
	conf => "shared_preload_libraries = ''\nautovacuum = off\n",
	extensions => []);
my $setup = q{
CREATE TABLE ev (id int, a int, b int, pad text);
INSERT INTO ev SELECT g, (g::bigint * 7919) % 2000, g % 1999, repeat('x', 40)
FROM generate_series(1, 30000) g ORDER BY g % 1999;
CREATE INDEX ev_brin ON ev USING brin (a, b) WITH (pages_per_range = 8);
CREATE TABLE other (a int PRIMARY KEY, v text);
INSERT INTO other SELECT g, 'v' FROM generate_series(1, 2000) g;
ANALYZE ev, other;
};
$node->safe_psql('postgres', 'CREATE DATABASE noext');
my $log_offset = -s $node->logfile;
$node->safe_psql('noext', $setup);
$bare->safe_psql('postgres', $setup);
foreach my $q ('SELECT * FROM ev WHERE a = 1234',
	'SELECT * FROM ev WHERE b = 77',
	'SELECT * FROM ev WHERE b BETWEEN 10 AND 30',
	'SELECT * FROM ev JOIN other USING (a) WHERE ev.b < 5')
{
	is($node->safe_psql('noext', "EXPLAIN $q"),
		$bare->safe_psql('postgres', "EXPLAIN $q"),
		"without the extension: the plan of a server without the library ($q)");
}
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/ERROR|WARNING|FATAL/, 'without the extension: nothing in the log');

$bare->stop;
$node->stop;
done_testing();
