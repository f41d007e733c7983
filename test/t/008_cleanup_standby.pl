
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

my $db = 'postgres';
my $nrows = 200000;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
# Small maintenance_work_mem so that the index builds take a while;
# autovacuum off so that nothing else creates or removes files.
$primary->append_conf(
	'postgresql.conf', qq(
maintenance_work_mem = 1MB
autovacuum = off
max_prepared_transactions = 2
log_min_messages = warning
));
$primary->start;

$primary->safe_psql(
	$db, qq(
CREATE EXTENSION zorder;
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
SELECT zorder.cluster_by('t', 'a', 'b');

-- Wait in the server until the optimize of rel has rebuilt at least
-- minval indexes, polling every 10 ms.  Returns the phase reached, or
-- says why it is not there.
CREATE FUNCTION wait_rebuild(rel oid, minval bigint)
RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
  p record;
  seen bool := false;
  deadline timestamptz := clock_timestamp() + interval '150 s';
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    SELECT phase, index_rebuild_count INTO p
      FROM pg_stat_progress_cluster WHERE relid = rel;
    IF FOUND THEN
      seen := true;
      IF p.phase = 'rebuilding index' AND p.index_rebuild_count >= minval THEN
        RETURN p.phase;
      END IF;
      IF p.phase = 'performing final cleanup' THEN
        RETURN 'missed, already in ' || p.phase;
      END IF;
    ELSIF seen THEN
      RETURN 'missed, optimize ended';
    END IF;
    IF clock_timestamp() > deadline THEN
      RETURN 'timed out in ' || coalesce(p.phase, 'no optimize');
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
END
\$\$;
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

my $dboid =
  $primary->safe_psql($db, "SELECT oid FROM pg_database WHERE datname = '$db'");
my $toid = $primary->safe_psql($db, "SELECT 't'::regclass::oid");
my $content_sql =
  "SELECT count(*) || ' ' || md5(string_agg(t::text, ',' ORDER BY id)) FROM t";
my $content = $primary->safe_psql($db, $content_sql);

sub list_dir
{
	my ($dir) = @_;
	return () unless -d $dir;
	opendir(my $dh, $dir) or die "could not open $dir: $!";
	my @e = sort grep { $_ ne '.' && $_ ne '..' } readdir($dh);
	closedir($dh);
	return @e;
}

# Files (all forks and segments) of the database directory of a node, by
# relation filenode.
sub files_by_filenode
{
	my ($node) = @_;
	my $dir = $node->data_dir . "/base/$dboid";
	my %files;
	foreach my $f (list_dir($dir))
	{
		next unless $f =~ /^(\d+)(?:_(?:fsm|vm|init))?(?:\.\d+)?$/;
		push @{ $files{$1} }, $f;
	}
	return %files;
}

# Filenodes with files on the primary that no relation uses.  A dropped
# relation's main fork is only truncated at once and unlinked by the next
# checkpoint, hence the CHECKPOINT first.
sub orphans_on_primary
{
	$primary->safe_psql($db, 'CHECKPOINT');
	my %used = map { $_ => 1 } split /\n/,
	  $primary->safe_psql($db,
		'SELECT pg_relation_filenode(oid) FROM pg_class '
		  . 'WHERE pg_relation_filenode(oid) IS NOT NULL');
	my %files = files_by_filenode($primary);
	return sort { $a <=> $b } grep { !$used{$_} } keys %files;
}

# Crash the primary while a full optimize rebuilds its second index, after
# the standby has replayed the creation of the new files; restart it and
# let the standby catch up.  Returns the orphan filenodes.
sub crash_in_rebuild
{
	my ($what) = @_;
	my $bg = $primary->background_psql($db, on_error_stop => 0);
	$bg->query_until(qr/optimize started/,
		"\\echo optimize started\nCALL zorder.optimize('t', full => true);\n"
	);
	my $reached =
	  $primary->safe_psql($db, "SELECT wait_rebuild($toid, 1)");
	is($reached, 'rebuilding index',
		"$what: the optimize is rebuilding the indexes");
	# a commit flushes the WAL, which then streams to the standby
	$primary->safe_psql($db, 'SELECT pg_current_xact_id()');
	$primary->wait_for_catchup($standby, 'replay',
		$primary->lsn('flush'));
	$primary->stop('immediate');
	ok( pump_until(
			$bg->{run}, $bg->{timeout}, \$bg->{stderr},
			qr/server closed the connection unexpectedly|connection to server was lost|terminating connection/
		),
		"$what: the optimize session lost its connection");
	$bg->{run}->finish;
	$primary->start;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	is($primary->safe_psql($db, $content_sql),
		$content, "$what: the primary's rows are unchanged");
	return orphans_on_primary();
}

# The orphans the standby has replayed, before and after the removal.
sub check_standby
{
	my ($what, $remove, @orphans) = @_;

	my %before = files_by_filenode($standby);
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
	my %after = files_by_filenode($standby);
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

sub records
{
	my @r = grep { /^\d+-\d+$/ } list_dir($primary->data_dir . '/pg_zorder');
	return @r;
}

# (the last file the crashed run created may not have reached the standby)
my %on_standby = files_by_filenode($standby);
my @on_standby = grep { $on_standby{$_} } @orphans;

# The orphans are all still on both servers, with one record.
sub still_there
{
	my ($what) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my %p = files_by_filenode($primary);
	my %s = files_by_filenode($standby);
	is(scalar(grep { $p{$_} } @orphans),
		scalar(@orphans), "$what: the orphans are still on the primary");
	is(scalar(grep { $s{$_} } @on_standby),
		scalar(@on_standby), "$what: and on the standby");
	is(scalar(records()), 1, "$what: the crashed run's record stays");
	return;
}

my ($crashed_record) = records();
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
is(scalar(records()), 1,
	'prepared: the prepared transaction has the record of its own');
isnt((records())[0], $crashed_record,
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
		is(scalar(records()), 0, 'committed prepared: no record left');
	},
	@orphans);

$standby->stop;
$primary->stop;
done_testing();
