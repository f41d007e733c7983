
# Removal of a crashed rewrite's files reaches streaming standbys.
#
# A full optimize creates a new heap, its TOAST table and index, and a new
# file per rebuilt index; the standby replays their creation.  When the
# primary crashes in the middle, neither server deletes them by itself.
# zorder.cleanup() (and, the second time, the next optimize) removes them
# on the primary the way DROP TABLE removes a table's storage: at commit,
# named in the commit record, so the standby removes them when it replays
# that record.  Checked on the standby's data directory: the orphan files
# are there before the cleanup and gone after it, all forks, and the
# standby still returns the primary's rows.  A cleanup in a subtransaction
# rolled back, or in a prepared transaction rolled back, removes nothing
# and leaves the orphans to a later cleanup; COMMIT PREPARED removes them.
#
# About 30 seconds on two cores.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $db = 'postgres';
my $nrows = 200000;

# Small maintenance_work_mem so that the index builds take a while;
# autovacuum off so that nothing else creates or removes files.
my $primary = new_node(
	'primary',
	init => { allows_streaming => 1 },
	extensions => ['zorder'],
	conf => qq(
maintenance_work_mem = 1MB
autovacuum = off
max_prepared_transactions = 2
log_min_messages = warning
));
# Waits for the optimize to reach a phase (see ZorderTest::wait_phase).
install_wait_phase($primary, $db);
# slow(id), indexed last: while ztest.slow is on, its rebuild holds the
# optimize in the index phase until the crash, however fast the machine.
install_slow_function($primary, $db, 1);

$primary->safe_psql(
	$db, qq(
CREATE TABLE t (id int PRIMARY KEY, a int, b float8, s text, big text);
INSERT INTO t
  SELECT i, ((i::bigint * 7919) % 100000)::int, (i % 997) * 1.5,
         repeat(md5(i::text), 3),
         CASE WHEN i % 500 = 0 THEN
           (SELECT string_agg(md5(i::text || g::text), '')
              FROM generate_series(1, 200) g) END
  FROM generate_series(1, $nrows) i;
CREATE INDEX t_ab ON t (a, b);
CREATE INDEX t_s ON t (s);
CREATE INDEX t_slow ON t (slow(id));
SELECT zorder.cluster_by('t', 'a', 'b');
));

# A physical slot keeps the WAL the standby still needs across the
# primary's crashes: when a crash cuts a record that spans two segments, the
# standby asks again from the start of the older segment, which the
# end-of-recovery checkpoint would otherwise have removed.
$primary->safe_psql($db,
	"SELECT pg_create_physical_replication_slot('standby', true)");
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', "primary_slot_name = 'standby'");
$standby->start;

my $toid = $primary->safe_psql($db, "SELECT 't'::regclass::oid");
my $content_sql =
  "SELECT count(*) || ' ' || md5(string_agg(t::text, ',' ORDER BY id)) FROM t";
my $content = $primary->safe_psql($db, $content_sql);

# Filenodes with files on the primary that no relation uses.
sub orphans_on_primary
{
	return orphan_filenodes($primary, $db);
}

# Crash the primary while a full optimize rebuilds its second index, after
# the standby has replayed the creation of the new files; restart it and
# let the standby catch up.  Returns the orphan filenodes.
sub crash_in_rebuild
{
	my ($what) = @_;
	$primary->safe_psql($db, "ALTER DATABASE $db SET ztest.slow = on");
	my $bg = start_full_optimize($primary, $db, 't');
	my $reached = wait_phase($primary, $db, $toid, 'rebuilding index', 1);
	is($reached, 'rebuilding index',
		"$what: the optimize is rebuilding the indexes");
	# Crash only once it sleeps in slow(), building t_slow: its file, the
	# last one the run creates, is recorded by then.  (PostgreSQL creates
	# an index's new file a moment before zorder can record it; a crash in
	# that moment leaves the empty file unrecorded, so the test must not
	# crash at a time chosen by the machine's speed.)
	ok( $primary->poll_query_until(
			$db, qq(
SELECT a.wait_event = 'PgSleep' FROM pg_stat_activity a
JOIN pg_stat_progress_cluster p ON p.pid = a.pid WHERE p.relid = $toid)),
		"$what: the optimize is building the last index");
	# a commit flushes the WAL, which then streams to the standby
	$primary->safe_psql($db, 'SELECT pg_current_xact_id()');
	$primary->wait_for_catchup($standby, 'replay',
		$primary->lsn('flush'));
	$primary->stop('immediate');
	ok(lost_connection($bg), "$what: the optimize session lost its connection");
	$bg->{run}->finish;
	$primary->start;
	$primary->safe_psql($db, "ALTER DATABASE $db RESET ztest.slow");
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	is($primary->safe_psql($db, $content_sql),
		$content, "$what: the primary's rows are unchanged");
	return orphans_on_primary();
}

# The orphans the standby has replayed, before and after the removal.
sub check_standby
{
	my ($what, $remove, @orphans) = @_;

	my %before = files_by_filenode($standby, $db);
	my @there = grep { $before{$_} } @orphans;
	note "$what: orphans @orphans, on the standby @there: "
	  . join(' ', map { @{ $before{$_} } } @there);
	# the new heap, its TOAST table and TOAST index, and the first rebuilt
	# index at least
	ok(@there >= 4,
		"$what: the standby has the files of the crashed rewrite ("
		  . scalar(@there) . ')');

	$remove->();
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

	my @left_primary = orphans_on_primary();
	is(scalar(@left_primary), 0, "$what: no orphan files on the primary")
	  or diag("left: @left_primary");
	my %after = files_by_filenode($standby, $db);
	my @left = map { @{ $after{$_} } } grep { $after{$_} } @orphans;
	is(scalar(@left), 0, "$what: the standby removed them too")
	  or diag("left on the standby: @left");

	# nothing else went: every relation of the standby has its files
	my @missing = grep { !$after{$_} } split /\n/,
	  $standby->safe_psql($db,
		"SELECT pg_relation_filenode(oid) FROM pg_class "
		  . "WHERE pg_relation_filenode(oid) IS NOT NULL "
		  . "AND relpersistence = 'p' AND NOT relisshared "
		  . "AND relkind IN ('r', 'i', 't')");
	is(scalar(@missing), 0, "$what: no file in use on the standby went")
	  or diag("missing: @missing");
	is($standby->safe_psql($db, $content_sql),
		$primary->safe_psql($db, $content_sql),
		"$what: the standby returns the primary's rows");
	return;
}

# 1. zorder.cleanup()
my @orphans = crash_in_rebuild('crash, then cleanup');
ok(@orphans >= 4, 'crash, then cleanup: orphans on the primary ('
	  . scalar(@orphans) . ')');
check_standby(
	'crash, then cleanup',
	sub {
		is($primary->safe_psql($db, 'SELECT zorder.cleanup()'),
			scalar(@orphans), 'zorder.cleanup() removes every orphan');
	},
	@orphans);
is($primary->safe_psql($db, 'SELECT zorder.cleanup()'),
	'0', 'a second cleanup finds nothing');

# 2. the next optimize removes them
@orphans = crash_in_rebuild('crash, then optimize');
ok(@orphans >= 4, 'crash, then optimize: orphans on the primary ('
	  . scalar(@orphans) . ')');
check_standby(
	'crash, then optimize',
	sub {
		$primary->safe_psql($db, "CALL zorder.optimize('t', full => true)");
	},
	@orphans);

# 3. Cleanups that do not commit, then one that commits through PREPARE.
@orphans = crash_in_rebuild('crash, then 2PC');
ok(@orphans >= 4, 'crash, then 2PC: orphans on the primary ('
	  . scalar(@orphans) . ')');

# (the last file the crashed run created may not have reached the standby)
my %on_standby = files_by_filenode($standby, $db);
my @on_standby = grep { $on_standby{$_} } @orphans;

# The orphans are all still on both servers, with one record.
sub still_there
{
	my ($what) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my %p = files_by_filenode($primary, $db);
	my %s = files_by_filenode($standby, $db);
	is(scalar(grep { $p{$_} } @orphans),
		scalar(@orphans), "$what: the orphans are still on the primary");
	is(scalar(grep { $s{$_} } @on_standby),
		scalar(@on_standby), "$what: and on the standby");
	is(scalar(records($primary)), 1, "$what: the crashed run's record stays");
	return;
}

my ($crashed_record) = records($primary);
is( $primary->safe_psql(
		$db, q(
BEGIN;
SAVEPOINT s;
SELECT zorder.cleanup();
ROLLBACK TO s;
COMMIT;
)), scalar(@orphans), 'cleanup in a subtransaction');
still_there('subtransaction rolled back');

$primary->safe_psql(
	$db, q(
BEGIN;
SELECT zorder.cleanup();
PREPARE TRANSACTION 'c1';
));
is(scalar(records($primary)), 1,
	'prepared: the prepared transaction has the record of its own');
isnt((records($primary))[0], $crashed_record,
	'prepared: the crashed run\'s record went');
is($primary->safe_psql($db, 'SELECT zorder.cleanup()'),
	'0', 'prepared: another cleanup leaves the files to it');
$primary->safe_psql($db, "ROLLBACK PREPARED 'c1'");
still_there('prepared transaction rolled back');

check_standby(
	'crash, then 2PC',
	sub {
		$primary->safe_psql(
			$db, q(
BEGIN;
SELECT zorder.cleanup();
PREPARE TRANSACTION 'c2';
COMMIT PREPARED 'c2';
));
		is($primary->safe_psql($db, 'SELECT zorder.cleanup()'),
			'0', 'committed prepared: nothing left to clean up');
		is(scalar(records($primary)), 0, 'committed prepared: no record left');
	},
	@orphans);

$standby->stop;
$primary->stop;
done_testing();
