# Kill the server in the middle of an incremental optimize that places new
# rows into the ranges of the main run and splits full ones (the table has
# no reserved room: its owner's fillfactor 100, which zorder leaves alone,
# so every range its new rows go to splits).  After the restart the table has exactly its rows, the heap and
# indexes pass amcheck, the ranges in the catalog do not overlap and count
# the rows the heap holds, and the next calls put every row into a range.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $db = 'postgres';
my $node = new_node('split', conf => "autovacuum = off\n");
# an index expression that is slow in the optimizing session keeps each
# move long enough to be caught
install_slow_function($node, $db, 0.0005);
install_wait_written($node, $db, 't', 0.01);

$node->safe_psql($db, q(
CREATE TABLE t (id int PRIMARY KEY, a int, b int, pad text)
	WITH (fillfactor = 100);
INSERT INTO t SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 10009, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX t_brin ON t USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('t', 'a', 'b');
CALL zorder.optimize('t');
VACUUM t;
INSERT INTO t SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 10009, md5(g::text)
FROM generate_series(20001, 21000) g;
CREATE INDEX t_slow ON t (slow(a));
CREATE TABLE t_copy AS SELECT * FROM t;
));
my $ranges_before = $node->safe_psql($db,
	'SELECT count(*) FROM zorder.sorted_runs');

# batches of at most 300 rows besides a split: crash after a few committed
my $bg = $node->background_psql($db, on_error_stop => 0);
$bg->query_until(qr/started/,
	"SET zorder.max_batch_size = 300;\nSET ztest.slow = on;\n\\echo started\nCALL zorder.optimize('t');\n");
# frozen where the count is seen, so that the crash comes before the call
# ends however long the psql round trip and pg_ctl take
my ($written, $pid) = freeze_written($node, $db, 1500);
ok($written >= 1500, "crashed mid-way through the splits: $written rows moved");
crash_frozen($node, $pid);
eval { $bg->quit; };
$node->start;

sub rows_outside
{
	return rows_outside_runs($node, $db, 't');
}

sub check
{
	my ($what) = @_;
	check_same_rows($node, $db, $what, 't', 'SELECT * FROM t_copy');
	check_heap_and_indexes($node, $db, $what, indexes => [ 't_pkey', 't_slow' ]);
	check_runs_do_not_overlap($node, $db, $what);
	is( $node->safe_psql(
			$db, q(
SELECT count(*) FROM zorder.sorted_runs
WHERE first_block % 4 <> 0 OR nblocks > 4)),
		'0',
		"$what: each range of the run is one BRIN range");
	# the catalog counts the rows each range holds (newer ones aside)
	check_catalog_matches_heap($node, $db, $what, 't');
	return;
}

check('after the crash');
ok($node->safe_psql($db, 'SELECT count(*) FROM zorder.sorted_runs')
	  > $ranges_before,
	'after the crash: the committed splits are recorded');
cmp_ok(rows_outside(), '>', 0,
	'after the crash: the rest of the new rows still wait');

# the next calls finish the job, each within its split budget: a call
# splits at least one range while new rows wait, so as many calls as
# there are ranges always do
my $ranges = $node->safe_psql($db, 'SELECT count(*) FROM zorder.sorted_runs');
my $calls = 0;
while (rows_outside() ne '0' && $calls < $ranges)
{
	$node->safe_psql($db, 'VACUUM t');
	$node->safe_psql($db, 'CALL zorder.optimize(\'t\')');
	$calls++;
}
note("$calls calls after the crash placed the rest");
check('after the next calls');
is(rows_outside(), '0', 'after the next calls: every row is in a range');
is($node->safe_psql($db, 'SELECT count(DISTINCT run) FROM zorder.sorted_runs'),
	'1', 'after the next calls: one run, no cube');

$node->stop;
done_testing();
