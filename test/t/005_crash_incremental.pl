# Kill the server in the middle of an incremental optimize: some batches
# have committed, one is half done.  After the restart the table has
# exactly its rows, the heap and indexes pass amcheck, the sorted runs in
# the catalog do not overlap, and the next optimize puts every row into a
# run.  Then the same in the middle of a merge into the main run: the
# catalog matches the heap after the crash, and the next call finishes the
# merge.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $db = 'postgres';
# first a call that makes a cube; a merge into the main run comes after
my $node = new_node('inc',
	conf => "autovacuum = off\nzorder.merge_threshold = 1\nzorder.placement = off\n");
# an index expression that is slow in the optimizing session keeps each
# move long enough to be caught
install_slow_function($node, $db, 0.0005);
install_wait_written($node, $db, 't', 0.01);

$node->safe_psql($db, q(
CREATE TABLE t (id int PRIMARY KEY, a int, b int, pad text);
INSERT INTO t SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 10009, md5(g::text)
FROM generate_series(1, 20000) g;
SELECT zorder.cluster_by('t', 'a', 'b');
CALL zorder.optimize('t');
VACUUM t;
INSERT INTO t SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 10009, md5(g::text)
FROM generate_series(20001, 24000) g;
CREATE INDEX t_slow ON t (slow(a));
CREATE TABLE t_copy AS SELECT * FROM t;
));

# batches of 500: wait until two have committed, then crash in the third
my $bg = $node->background_psql($db, on_error_stop => 0);
$bg->query_until(qr/started/,
	"SET zorder.max_batch_size = 500;\nSET ztest.slow = on;\n\\echo started\nCALL zorder.optimize('t');\n");
# frozen where the count is seen (the rest of the call takes two or three
# seconds, less than a psql round trip and pg_ctl can take on a busy machine)
my ($written, $pid) = freeze_written($node, $db, 1100);
ok($written >= 1100 && $written < 4000,
	"crashed mid-way: $written of 4000 rows moved");
crash_frozen($node, $pid);
eval { $bg->quit; };
$node->start;

# Rows on no page of a sorted run.
sub rows_outside
{
	return rows_outside_runs($node, $db, 't');
}

# What the catalog records is what the heap holds: as many rows in the
# runs as it says (rows that came into a run after it was written aside).
sub catalog_matches
{
	my ($what) = @_;
	check_catalog_matches_heap($node, $db, $what, 't');
	return;
}

sub same_rows
{
	my ($what) = @_;
	check_same_rows($node, $db, $what, 't', 'SELECT * FROM t_copy');
	check_heap_and_indexes($node, $db, $what, indexes => [ 't_pkey', 't_slow' ]);
	check_runs_do_not_overlap($node, $db, $what);
	return;
}

same_rows('after the crash');

# the moves of the committed batches are there, recorded in a run with
# them (every batch saves the runs); the half-done batch is not
my $outside = rows_outside();
ok($outside > 0 && $outside <= 3000,
	"after the crash: the committed batches' rows are in a run, the rest outside ($outside)");
catalog_matches('after the crash');

# the next call finishes the job
$node->safe_psql($db, 'CALL zorder.optimize(\'t\')');
same_rows('after the next optimize');
is( rows_outside(),
	'0',
	'after the next optimize: every row is in a sorted run');

# --- a crash in the middle of a merge into the main run ---------------------

$node->safe_psql($db, q(
INSERT INTO t SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 10009, md5(g::text)
FROM generate_series(24001, 25000) g;
DROP TABLE t_copy;
CREATE TABLE t_copy AS SELECT * FROM t;
VACUUM t;
));
$bg = $node->background_psql($db, on_error_stop => 0);
$bg->query_until(qr/started/,
	"SET zorder.merge_threshold = 0;\nSET zorder.max_batch_size = 1000;\nSET ztest.slow = on;\n\\echo started\nCALL zorder.optimize('t');\n"
);
($written, $pid) = freeze_written($node, $db, 6000);
ok($written >= 6000 && $written < 26000,
	"merge: crashed mid-way: $written rows moved");
crash_frozen($node, $pid);
eval { $bg->quit; };
$node->start;

same_rows('merge, after the crash');
isnt($node->safe_psql($db,
		q(SELECT merge_cursor FROM zorder.layouts WHERE relid = 't'::regclass)),
	'', 'merge, after the crash: the merge is recorded as under way');
# the batches that committed saved the runs with their moves
catalog_matches('merge, after the crash');

# the next call finishes the merge
$node->safe_psql($db, 'VACUUM t');
$node->safe_psql($db, 'CALL zorder.optimize(\'t\')');
same_rows('merge, after the next optimize');
is( $node->safe_psql(
		$db, q(
SELECT merge_cursor IS NULL FROM zorder.layouts WHERE relid = 't'::regclass)),
	't', 'merge, after the next optimize: the merge is done');
is( rows_outside(),
	'0',
	'merge, after the next optimize: every row is in a sorted run');
is($node->safe_psql($db, 'SELECT count(DISTINCT run) FROM zorder.sorted_runs'),
	'1', 'merge, after the next optimize: one run');

$node->stop;
done_testing();
