
# Crash and error safety of a full zorder.optimize.
#
# The server is stopped in immediate mode (no shutdown checkpoint, backends
# killed) while a full optimize is scanning the table, sorting it with
# spills to temporary files, writing the new heap and rebuilding the
# indexes.  After the restart the table must be exactly as before and pass
# amcheck, the relation files the crashed rewrite created must be on disk
# until zorder.cleanup() (or the next optimize) removes them, no file that a
# relation uses (even one invisible in pg_class because its transaction is
# still running) may be removed, and the sort's temporary files must be
# gone.  Two more crashes: one right after zorder.cleanup() (before any
# checkpoint), one on a quiet server whose WAL buffers are not flushed
# before the crash, so that the crashed transaction's id is lost and handed
# out again after the restart.  An optimize ended by an ERROR
# (statement_timeout, a cancel) must leave no relation file, no
# temporary file and no record behind.
#
# The whole file takes about a minute on two cores, twice that when the
# machine is busy.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

# maintenance_work_mem is tiny so that the sorter (and the index builds)
# spill to temporary files.  Autovacuum off: nothing but the test touches
# the tables, so the list of relation files is stable.
my $node = new_node(
	'crash', conf => qq(
maintenance_work_mem = 1MB
autovacuum = off
log_min_messages = warning
log_statement = none
));

my $db = 'postgres';
my $nrows = 500000;

# Waits for the optimize to reach a phase (see ZorderTest::wait_phase).
install_wait_phase($node, $db);

$node->safe_psql(
	$db, qq(
-- The table to optimize: three indexes so that rebuilding them takes a
-- while, some values stored out of line in the TOAST table, update chains
-- and dead rows.
CREATE TABLE t (id int PRIMARY KEY, a int, b float8, s text, big text);
INSERT INTO t
  SELECT i, ((i::bigint * 7919) % 100000)::int, (i % 997) * 1.5,
         repeat(md5(i::text), 3),
         CASE WHEN i % 1000 = 0 THEN
           (SELECT string_agg(md5(i::text || g::text), '')
              FROM generate_series(1, 200) g) END
  FROM generate_series(1, $nrows) i;
CREATE INDEX t_ab ON t (a, b);
CREATE INDEX t_s ON t (s);
UPDATE t SET b = b + 1 WHERE id % 100 = 0;
DELETE FROM t WHERE id % 250 = 1;
SELECT zorder.cluster_by('t', 'a', 'b');

-- A separate copy to compare contents with.
CREATE TABLE t_copy AS TABLE t;

-- A table that a later session truncates and refills in an open
-- transaction while zorder.cleanup runs.
CREATE TABLE other (id int, s text);
INSERT INTO other SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
));

my $dboid =
  $node->safe_psql($db, "SELECT oid FROM pg_database WHERE datname = '$db'");
my $toid = $node->safe_psql($db, "SELECT 't'::regclass::oid");
my $nlive = $node->safe_psql($db, 'SELECT count(*) FROM t');
my $heap_blocks = $node->safe_psql($db, "SELECT pg_relation_size('t') / 8192");
my $dbdir = $node->data_dir . "/base/$dboid";
my $tmpdir = $node->data_dir . '/base/pgsql_tmp';

# ---------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------

# Contents of t equal those of t_copy, t passes amcheck, and so do all of
# its indexes (and the TOAST index).
sub check_table
{
	my ($what) = @_;

	check_same_rows($node, $db, $what, 't', 'SELECT * FROM t_copy');
	is($node->safe_psql($db, 'SELECT count(*) FROM t'),
		$nlive, "$what: t has its $nlive rows");

	my @indexes = split /\n/, $node->safe_psql(
		$db, q(
SELECT indexrelid::regclass FROM pg_index
WHERE indrelid IN ('t'::regclass,
                   (SELECT reltoastrelid FROM pg_class WHERE oid = 't'::regclass))
ORDER BY indexrelid));
	is(scalar(@indexes), 4, "$what: t has its three indexes and a TOAST index");
	check_heap_and_indexes($node, $db, $what,
		check_toast => 1,
		indexes => \@indexes);
	return;
}

sub start_optimize
{
	return start_full_optimize($node, $db, 't');
}

# ---------------------------------------------------------------------
# Crashes
# ---------------------------------------------------------------------

my $filenode_before = $node->safe_psql($db, "SELECT pg_relation_filenode('t')");
is(scalar(orphan_filenodes($node, $db)), 0, 'no orphan files at the start');

# Stop the server in immediate mode while an optimize is in $phase with
# its counter at least $minval.  Returns the number of orphan files.
#
# The optimize's backend is frozen the moment it is seen in the phase (see
# ZorderTest::freeze_at_phase), so the crash finds it there however fast
# the machine is.  Unless $quiet, only once its sort has spilled: the index
# builds of "rebuilding index" write their first temporary file some
# milliseconds into each index, and a freeze in those first milliseconds
# (one run in five, polling every 10 ms) found none.
#
# Unless $quiet, the WAL is flushed just before the freeze: the optimize's
# transaction id is then on disk, as it is on any server where other
# sessions commit.  With $quiet the WAL the optimize wrote (with wal_level =
# minimal only the catalog rows of the new heap) is likely still in the WAL
# buffers and lost.
sub crash_during
{
	my ($what, $phase, $minval, $quiet) = @_;

	my $bg = start_optimize();
	my ($reached, $pid) = freeze_at_phase($node, $db, $toid, $phase, $minval,
		flush => !$quiet, spilled => !$quiet);
	is($reached, $phase, "$what: froze the optimize in phase $phase");
	my @tmp = list_dir($tmpdir);
	ok(@tmp > 0,
		"$what: the run has temporary files (" . scalar(@tmp) . ')')
	  unless $quiet;
	crash_frozen($node, $pid);

	ok(lost_connection($bg), "$what: the optimize session lost its connection");
	unlike($bg->{stdout}, qr/optimize done/,
		"$what: the optimize did not complete");
	$bg->{run}->finish;

	is(scalar(list_dir($tmpdir)), scalar(@tmp),
		"$what: the crash left the temporary files")
	  unless $quiet;
	ok(records($node) > 0, "$what: the crashed run left its record");

	$node->start;
	note "$what: records " . join(' ', records($node)) . ', snapshot after restart '
	  . $node->safe_psql($db, 'SELECT pg_current_snapshot()');

	is(scalar(list_dir($tmpdir)), 0,
		"$what: temporary files are gone after the restart");
	is($node->safe_psql($db, "SELECT pg_relation_filenode('t')"),
		$filenode_before, "$what: t still uses its old file");
	check_table("$what, before cleanup");

	my @orphans = orphan_filenodes($node, $db);
	note "$what: orphan filenodes @orphans";
	return scalar(@orphans);
}

# Remove the files of the given filenodes with the server stopped, so that
# orphans a failed check leaves behind do not spill into later checks.
sub remove_by_hand
{
	my @filenodes = @_;
	return unless @filenodes;
	my %fn = map { $_ => 1 } @filenodes;
	$node->stop;
	foreach my $f (list_dir($dbdir))
	{
		next unless $f =~ /^(\d+)(?:_(?:fsm|vm|init))?(?:\.\d+)?$/;
		unlink("$dbdir/$f") or die "could not remove $dbdir/$f: $!"
		  if $fn{$1};
	}
	$node->start;
	return;
}

# zorder.cleanup() after a crash removes the $norphans orphans, all of them
# and nothing else.  With $crash_after the server crashes again right after
# the cleanup, before any checkpoint.
sub cleanup_after_crash
{
	my ($what, $norphans, $crash_after, @also_used) = @_;

	my $removed = $node->safe_psql($db, 'SELECT zorder.cleanup()');
	is($removed, $norphans,
		"$what: zorder.cleanup() removed the $norphans orphan relation files");
	if ($crash_after)
	{
		$node->stop('immediate');
		$node->start;
		$what .= ' and a crash after cleanup';
	}
	my @left = orphan_filenodes($node, $db, @also_used);
	is(scalar(@left), 0, "$what: no orphan files after cleanup")
	  or diag("left: @left");
	is(scalar(records($node)), 0, "$what: no record after cleanup");
	remove_by_hand(@left);
	is($node->safe_psql($db, 'SELECT zorder.cleanup()'),
		'0', "$what: a second cleanup finds nothing");
	check_table("$what, after cleanup");
	return;
}

# 1. During the heap scan, once a quarter of it is read (the sorter has
# spilled runs by then).
my $n =
  crash_during('crash in scan', 'seq scanning heap', int($heap_blocks / 4));
# the new heap, its TOAST table and the TOAST index exist already
ok($n >= 3, "crash in scan: orphan files exist ($n)");
cleanup_after_crash('crash in scan', $n);

# 2. During the sort of the spilled runs.  After the cleanup the server
# crashes again at once: the files must not come back as orphans.
$n = crash_during('crash in sort', 'sorting tuples', 0);
ok($n >= 3, "crash in sort: orphan files exist ($n)");
cleanup_after_crash('crash in sort', $n, 1);

# 3. While writing the new heap, a tenth of it written.  Cleanup then runs
# while another session has created and filled a table and truncated and
# refilled another in a transaction still open: their new files are in no
# pg_class row that cleanup can see, and must survive.
$n = crash_during('crash in write', 'writing new heap', int($nlive / 10));
ok($n >= 3, "crash in write: orphan files exist ($n)");
{
	my %committed = map { $_ => 1 } split /\n/,
	  $node->safe_psql($db,
		'SELECT pg_relation_filenode(oid) FROM pg_class '
		  . 'WHERE pg_relation_filenode(oid) IS NOT NULL');
	my $other = $node->background_psql($db);
	$other->query_safe(
		q(
BEGIN;
CREATE TABLE fresh (id int PRIMARY KEY, s text);
INSERT INTO fresh SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
TRUNCATE other;
INSERT INTO other SELECT g, md5(g::text) FROM generate_series(1, 3000) g;
));
	my @uncommitted = grep { !$committed{$_} } split /\n/,
	  $other->query_safe(
		'SELECT pg_relation_filenode(oid) FROM pg_class '
		  . 'WHERE pg_relation_filenode(oid) IS NOT NULL');
	# fresh, its TOAST table and index, fresh_pkey; other's new file and
	# its new TOAST table and index
	is(scalar(@uncommitted), 7, 'the open transaction made 7 new files');

	# they are not in pg_class for others: orphans to the eye
	my %seen = map { $_ => 1 } orphan_filenodes($node, $db);
	is(scalar(grep { $seen{$_} } @uncommitted),
		7, 'files of the open transaction are not in pg_class yet');

	cleanup_after_crash('crash in write', $n, 0, @uncommitted);
	foreach my $fn (@uncommitted)
	{
		ok(-e "$dbdir/$fn",
			"file $fn of the open transaction survives cleanup");
	}
	$other->query_safe('COMMIT');
	$other->quit;

	is( $node->safe_psql(
			$db, 'SELECT count(*), count(DISTINCT s) FROM fresh'),
		'20000|20000',
		'rows of the table created during cleanup are there');
	is($node->safe_psql($db, 'SELECT count(*) FROM other'),
		'3000', 'rows of the table refilled during cleanup are there');
	# tables written during cleanup are intact
	check_heap_and_indexes($node, $db, 'written during cleanup',
		table => 'fresh',
		check_toast => 1,
		indexes => ['fresh_pkey']);
	check_heap_and_indexes($node, $db, 'written during cleanup',
		table => 'other',
		check_toast => 1);
	is(scalar(orphan_filenodes($node, $db)), 0, 'no orphans after that commit');
}

# 4. A crash on a quiet server: nothing flushes the WAL between the start
# of the optimize and the crash (the WAL writer only writes full pages and
# is made to sleep; the background writer is off).  The crashed run's
# transaction id may then be missing from the WAL, and after the restart
# the server hands it out again.  Cleanup must still remove the files, also
# when a transaction that has since committed got the same id.
{
	$node->safe_psql(
		$db, q(
ALTER SYSTEM SET wal_writer_delay = '10s';
ALTER SYSTEM SET bgwriter_lru_maxpages = 0;
SELECT pg_reload_conf();
));
	my $n = crash_during('quiet crash', 'seq scanning heap', 0, 1);
	ok($n >= 3, "quiet crash: orphan files exist ($n)");

	my @rec = records($node);
	my ($xmax) = split /:/,
	  $node->safe_psql($db, 'SELECT pg_current_snapshot()');
	my ($recxid) = ($rec[0] // '') =~ /-(\d+)$/;
	note "quiet crash: record $rec[0], next xid after restart $xmax; "
	  . "the crashed xid "
	  . ($recxid >= $xmax ? 'was lost with the WAL' : 'reached the WAL');

	# a committed transaction takes the next transaction id
	$node->safe_psql($db,
		'CREATE TABLE after_quiet_crash AS SELECT 1 AS i');
	cleanup_after_crash('quiet crash', $n);
	$node->safe_psql(
		$db, q(
ALTER SYSTEM RESET wal_writer_delay;
ALTER SYSTEM RESET bgwriter_lru_maxpages;
SELECT pg_reload_conf();
));
}

# 5. While rebuilding the second or third index.  This time the orphans are
# left for the next optimize, which removes them before it starts.
$n = crash_during('crash in index rebuild', 'rebuilding index', 1);
# heap, TOAST table, TOAST index, and the first index's new file at least
ok($n >= 4, "crash in index rebuild: orphan files exist ($n)");

# ---------------------------------------------------------------------
# A later optimize succeeds.  While it writes, zorder.cleanup() in another
# session must leave the files of the running optimize alone.
# ---------------------------------------------------------------------
{
	my $bg = start_optimize();
	# frozen while the records are counted: the rest of the optimize takes
	# two seconds, and once it commits the crashed run's record is gone
	my ($reached, $pid) = freeze_at_phase($node, $db, $toid,
		'writing new heap', int($nlive / 10));
	is($reached, 'writing new heap', 'second session: optimize is writing');
	# the crashed run's record goes when the optimize that removes its
	# files commits
	is(scalar(records($node)), 2,
		'the running optimize has a record, the crashed run still has one');
	# (thawed first: the cleanup waits for the lock the optimize took to
	# remove the crashed run's files, until the optimize commits)
	thaw($pid);
	is($node->safe_psql($db, 'SELECT zorder.cleanup()'),
		'0', 'cleanup during a running optimize removes nothing');
	ok( pump_until(
			$bg->{run}, $bg->{timeout}, \$bg->{stdout}, qr/optimize done/),
		'the optimize completes');
	is($bg->{stderr}, '', 'the optimize reports no error');
	$bg->quit;
}
isnt($node->safe_psql($db, "SELECT pg_relation_filenode('t')"),
	$filenode_before, 'the optimize gave t a new file');
is(scalar(orphan_filenodes($node, $db)), 0,
	'no orphan files after the optimize (it removed those of the crash)');
is(scalar(records($node)), 0, 'no record after the optimize');
is(scalar(list_dir($tmpdir)), 0, 'no temporary files after the optimize');
ok( $node->safe_psql(
		$db,
		"SELECT sort_runs > 1 AND temp_bytes > 0 FROM zorder.layouts WHERE relid = $toid"
	) eq 't',
	'the optimize spilled its sort to temporary files');
check_table('after optimize');

# ---------------------------------------------------------------------
# Errors: the transaction aborts, PostgreSQL removes the files itself, and
# the record goes with them.
# ---------------------------------------------------------------------
$filenode_before = $node->safe_psql($db, "SELECT pg_relation_filenode('t')");

sub check_after_error
{
	my ($what) = @_;
	is($node->safe_psql($db, "SELECT pg_relation_filenode('t')"),
		$filenode_before, "$what: t still uses its old file");
	is(scalar(orphan_filenodes($node, $db)), 0, "$what: no orphan files");
	is(scalar(records($node)), 0, "$what: no record");
	is(scalar(list_dir($tmpdir)), 0, "$what: no temporary files");
	check_table($what);
	return;
}

# statement_timeout, about one second in: scanning or sorting
{
	my ($ret, $out, $err) = $node->psql($db,
		"SET statement_timeout = '1s'; CALL zorder.optimize('t', full => true)");
	like(
		$err,
		qr/canceling statement due to statement timeout/,
		'statement_timeout cancels the optimize');
	check_after_error('statement_timeout');
}

# A cancel while writing the new heap, then while rebuilding an
# index.
foreach my $case (
	[ 'cancel in write', 'writing new heap', int($nlive / 10) ],
	[ 'cancel in index rebuild', 'rebuilding index', 1 ])
{
	my ($what, $phase, $minval) = @$case;
	my $bg = start_optimize();
	# frozen, so that the cancel arrives in the phase
	my ($reached, $pid) = freeze_at_phase($node, $db, $toid, $phase, $minval);
	is($reached, $phase, "$what: optimize reached phase $phase");
	# SIGINT, as pg_cancel_backend sends it, from here: a new session could
	# wait on a lock the frozen backend holds (a WAL insertion lock, say)
	is(kill('INT', $pid), 1, "$what: the cancel (SIGINT) is sent");
	thaw($pid);
	ok( pump_until(
			$bg->{run}, $bg->{timeout}, \$bg->{stderr},
			qr/canceling statement due to user request/),
		"$what: the optimize is canceled");
	$bg->quit;
	check_after_error($what);
}

# And a last optimize after all that.
$node->safe_psql($db, "CALL zorder.optimize('t', full => true, curve => 'z')");
is(scalar(orphan_filenodes($node, $db)), 0, 'final optimize: no orphan files');
is(scalar(records($node)), 0, 'final optimize: no record');
check_table('final optimize');

$node->stop;
done_testing();
