# DDL and other commands that get in between two batches of an incremental
# zorder.optimize.  Each batch commits and releases the table's lock; a
# command that was waiting for it gets the lock first and runs before the
# next batch takes it again.  Here such a command is sent while a call in
# batches of 5 rows is under way, held in the middle of a batch once it has
# moved 20 rows (see slow() below): ALTER COLUMN ... TYPE of a text key,
# VACUUM FULL, CLUSTER, TRUNCATE, and another session's incremental
# optimize.  After each, the
# call stops with a serialization failure (40001), never a crash, an
# internal error or a corruption error; the heap and its indexes pass
# amcheck, the rows are those of a copy taken before, the sorted runs in
# the catalog match the heap, and the next call works.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $db = 'postgres';
# cubes: one next call puts every row into a run (placement may leave new
# rows for later calls, past its split budget; its crash test is 013)
my $node = new_node('ddl', conf => "autovacuum = off\nzorder.placement = off\n");
# an index expression that is slow in the optimizing session
install_slow_function($node, $db, 0.001);
install_wait_written($node, $db, 't', 0.005);
# ... and that, once the call's progress says 20 rows moved (four batches
# of 5 done), waits at each move while the test holds the gate: the call
# stops in the middle of a batch, holding the table's lock, until the
# command has queued for that lock.  Without it the command was sent a psql
# round trip after the call was seen under way, and had to arrive before
# the call's last batch (5,000 moves of 1 ms).
install_batch_gate($node, $db);

$node->safe_psql($db, q(
CREATE TABLE t (id int PRIMARY KEY, k text, b int, pad text);
CREATE INDEX t_k ON t (k);
CREATE INDEX t_slow ON t (slow(b));
SELECT zorder.cluster_by('t', 'k', 'b');
));

# A freshly laid out table of 100,000 rows with 5,000 newcomers: an
# incremental call in batches of 5 rows takes 1,000 batches.  With $merge,
# 50 newcomers in a cube instead, for a merge into the main run in slices
# of about 5 rows.
sub prepare
{
	my ($merge) = @_;
	my $newcomers = $merge ? 50 : 5000;
	$node->safe_psql($db, qq(
TRUNCATE t;
ALTER TABLE t ALTER COLUMN k TYPE text;
INSERT INTO t SELECT g, ((g::bigint * 7919) % 100003)::text, g % 101, md5(g::text)
FROM generate_series(1, 100000) g;
CALL zorder.optimize('t', full => true);
VACUUM t;
INSERT INTO t SELECT g, ((g::bigint * 7919) % 100003)::text, g % 101, md5(g::text)
FROM generate_series(100001, 100000 + $newcomers) g;
));
	$node->safe_psql($db, q(CALL zorder.optimize('t'))) if $merge;
	$node->safe_psql($db, q(
DROP TABLE IF EXISTS t_copy;
CREATE TABLE t_copy AS SELECT * FROM t;
));
	return;
}

my $crashes = 0;

sub no_crash
{
	my ($what) = @_;
	my $log = slurp_file($node->logfile);
	my $n = () = $log =~ /terminated by signal/g;
	is($n, $crashes, "$what: no backend terminated by a signal");
	$crashes = $n;
	return;
}

# What the catalog records is what the heap holds.
sub runs_match
{
	my ($what) = @_;
	check_catalog_matches_heap($node, $db, $what, 't');
	is( $node->safe_psql(
			$db, q(
SELECT count(*) FROM zorder.sorted_runs
WHERE first_block + nblocks > pg_relation_size('t') / 8192)),
		'0', "$what: no sorted run beyond the end of the heap");
	check_runs_do_not_overlap($node, $db, $what);
	return;
}

# The heap and its indexes pass amcheck, and the rows are those of
# expected (a query).
sub same_rows
{
	my ($what, $expected) = @_;
	check_same_rows($node, $db, $what, 't', $expected);
	check_heap_and_indexes($node, $db, $what,
		indexes => [ 't_pkey', 't_k', 't_slow' ]);
	return;
}

# Whether session $pid waits for a lock of type $type.
sub waits_for
{
	my ($pid, $type) = @_;
	return $node->poll_query_until($db, qq(
SELECT EXISTS (SELECT FROM pg_locks
               WHERE pid = $pid AND NOT granted AND locktype = '$type')));
}

# Start an incremental call in batches of 5 rows; once it has moved some,
# run $cmd in another session, and wait until both are done.  The command
# waits for the lock of the batch under way and gets it when that batch
# commits, before the call can take it again; on the call's side, that is
# between two batches.  The call waits in slow() (advisory lock 4242) from
# its 21st move until the command waits for the table.  Returns what the
# call printed on stderr.
sub between_batches
{
	my ($what, $cmd, $merge) = @_;
	my $gate = $node->background_psql($db);
	$gate->query_safe('SELECT pg_advisory_lock(4242)');
	my $call = $node->background_psql($db, on_error_stop => 0);
	my $call_pid = $call->query_safe('SELECT pg_backend_pid()');
	chomp $call_pid;
	$call->query_safe('SET zorder.max_batch_size = 5');
	$call->query_safe('SET zorder.merge_threshold = 0') if $merge;
	$call->query_safe('SET ztest.slow = on');
	$call->query_safe('\set VERBOSITY verbose');
	$call->query_until(qr/started/,
		"\\echo started\nCALL zorder.optimize('t');\n");
	ok(waits_for($call_pid, 'advisory'),
		"$what: the call waits in a batch after 20 moves");
	my $written = wait_written($node, $db, 20);
	ok($written >= 20 && $written < ($merge ? 100000 : 5000),
		"$what: the call is under way ($written rows moved)");

	my $other = $node->background_psql($db, on_error_stop => 0);
	my $other_pid = $other->query_safe('SELECT pg_backend_pid()');
	chomp $other_pid;
	$other->query_until(qr/other sent/,
		"\\echo other sent\n$cmd;\n\\echo other done\n");
	ok(waits_for($other_pid, 'relation'),
		"$what: the command waits for the batch's lock");
	$gate->query_safe('SELECT pg_advisory_unlock(4242)');
	$gate->quit;
	pump_until($other->{run}, $other->{timeout}, \$other->{stdout},
		qr/other done/);
	my $other_err = $other->{stderr};
	$call->query_until(qr/call done/, "\\echo call done\n");
	my $err = $call->{stderr};
	eval { $other->quit; };
	eval { $call->quit; };
	is($other_err, '', "$what: the command succeeded");
	unlike($err, qr/XX00[01]|terminated|server closed/,
		"$what: no internal error, corruption error or crash");
	return $err;
}

my @cases = (
	[
		'ALTER COLUMN TYPE',
		'ALTER TABLE t ALTER COLUMN k TYPE int USING k::int',
		'SELECT id, k::int, b, pad FROM t_copy'
	],
	[
		'ALTER COLUMN TYPE in a merge',
		'ALTER TABLE t ALTER COLUMN k TYPE int USING k::int',
		'SELECT id, k::int, b, pad FROM t_copy', 1
	],
	[ 'VACUUM FULL', 'VACUUM FULL t', 'SELECT * FROM t_copy' ],
	[ 'CLUSTER', 'CLUSTER t USING t_pkey', 'SELECT * FROM t_copy' ],
	[
		'another incremental call',
		"SET zorder.max_batch_size = 1000000;\nCALL zorder.optimize('t')",
		'SELECT * FROM t_copy'
	],
	[ 'TRUNCATE', 'TRUNCATE t', 'SELECT * FROM t_copy WHERE false' ]);

foreach my $case (@cases)
{
	my ($what, $cmd, $expected, $merge) = @$case;

	prepare($merge);
	my $err = between_batches($what, $cmd, $merge);
	like($err, qr/ERROR:  40001: table "t" changed between two batches of zorder.optimize/,
		"$what: the call stops with a serialization failure");
	no_crash($what);
	same_rows($what, $expected);
	runs_match($what);

	# the next call works and leaves every row in a sorted run
	my ($ret, $out, $cerr) = $node->psql($db, q(CALL zorder.optimize('t')));
	is($ret, 0, "$what: the next call works") or diag($cerr);
	no_crash("$what, next call");
	same_rows("$what, next call", $expected);
	runs_match("$what, next call");
	is(rows_outside_runs($node, $db, 't'),
		'0', "$what, next call: every row is in a sorted run");
}

$node->stop;
done_testing();
