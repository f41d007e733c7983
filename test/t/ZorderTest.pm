# ZorderTest: helpers shared by the TAP tests of zorder (test/t/*.pl).
#
# The tests check the same things in many places: that a table still has
# exactly the rows of a copy, that its heap and indexes pass amcheck, that
# the sorted runs recorded in the catalog match the heap, and they wait for
# an optimize to reach a given point before they crash or cancel it.  Those
# pieces live here once, so that a check means the same in every test.
#
# Every sub takes the node (a PostgreSQL::Test::Cluster) and the database
# first; the ones whose name starts with "check_" or "is_" run Test::More
# assertions and prefix their names with $what.  Tests load the module
# with
#
#	use FindBin;
#	use lib $FindBin::RealBin;
#	use ZorderTest;
#
# which works however prove is run (PGXS's installcheck, by hand, or from
# the copy of the tree test/suite.sh makes).

package ZorderTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use POSIX ();
use Time::HiRes ();

our @EXPORT = qw(
  install_batch_gate
  new_node
  check_heap_and_indexes
  check_same_rows
  check_runs_do_not_overlap
  check_catalog_matches_heap
  rows_outside_runs
  install_slow_function
  install_wait_written
  wait_written
  freeze_written
  install_wait_phase
  wait_phase
  freeze_at_phase
  thaw
  crash_frozen
  start_full_optimize
  lost_connection
  list_dir
  files_by_filenode
  orphan_filenodes
  records
  write_pgbench_scripts
  check_pgbench
  check_ledger_matches
  online_layout_table
  online_layout_under_load
);

=pod

=head1 NAME

ZorderTest - helpers of the zorder TAP tests

=head1 SUBROUTINES

=over

=item new_node($name, %opts)

A new node, initialized (with $opts{init}, a hash of arguments of
PostgreSQL::Test::Cluster::init), with $opts{conf} appended to its
postgresql.conf, started, and with the extensions of $opts{extensions}
(default: zorder and amcheck) created in database $opts{db} (default
postgres).  Give extensions => [] for a node without them.

=cut

sub new_node
{
	my ($name, %opts) = @_;
	my $db = $opts{db} // 'postgres';
	my $extensions = $opts{extensions} // [ 'zorder', 'amcheck' ];
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opts{init} // {} });
	$node->append_conf('postgresql.conf', $opts{conf}) if defined $opts{conf};
	$node->start;
	$node->safe_psql($db,
		join('', map { "CREATE EXTENSION $_;\n" } @$extensions))
	  if @$extensions;
	return $node;
}

=item check_heap_and_indexes($node, $db, $what, %opts)

verify_heapam finds nothing in table $opts{table} (default t; with
$opts{check_toast}, in its TOAST table too), and bt_index_check with
heapallindexed passes, with nothing on stderr, for each index of
$opts{indexes} (default none).  One assertion for the heap, one per index.

=cut

sub check_heap_and_indexes
{
	my ($node, $db, $what, %opts) = @_;
	my $table = $opts{table} // 't';
	my $toast = $opts{check_toast} ? ', check_toast => true' : '';
	is( $node->safe_psql($db,
			"SELECT count(*) FROM verify_heapam('$table'$toast)"),
		'0',
		"$what: verify_heapam finds nothing in $table");
	foreach my $idx (@{ $opts{indexes} // [] })
	{
		my ($ret, $out, $err) =
		  $node->psql($db, "SELECT bt_index_check('$idx'::regclass, true)");
		ok($ret == 0 && $err eq '', "$what: bt_index_check passes for $idx")
		  or diag($err);
	}
	return;
}

=item check_same_rows($node, $db, $what, $table, $expected)

Table $table holds exactly the rows of the query $expected, duplicates
counted: two assertions, "no row changed or added" and "no row lost".

=cut

sub check_same_rows
{
	my ($node, $db, $what, $table, $expected) = @_;
	# EXCEPT ALL hashes; a big table spills with the default work_mem
	my $set = "SET work_mem = '64MB';\n";
	is( $node->safe_psql($db,
			"${set}SELECT count(*) FROM (SELECT * FROM $table EXCEPT ALL $expected) d"),
		'0',
		"$what: no row changed or added");
	is( $node->safe_psql($db,
			"${set}SELECT count(*) FROM ($expected EXCEPT ALL SELECT * FROM $table) d"),
		'0',
		"$what: no row lost");
	return;
}

=item check_runs_do_not_overlap($node, $db, $what)

No two sorted runs of a table (zorder.sorted_runs) share a block.

=cut

sub check_runs_do_not_overlap
{
	my ($node, $db, $what) = @_;
	is( $node->safe_psql(
			$db, q(
SELECT count(*) FROM zorder.sorted_runs r1 JOIN zorder.sorted_runs r2
  ON r1."table" = r2."table" AND r1.first_block < r2.first_block
 AND r1.first_block + r1.nblocks > r2.first_block)),
		'0',
		"$what: sorted runs do not overlap");
	return;
}

=item check_catalog_matches_heap($node, $db, $what, $table)

The rows the catalog counts in the runs of $table are the rows the heap
holds on their pages (rows written after a run aside).

=cut

sub check_catalog_matches_heap
{
	my ($node, $db, $what, $table) = @_;
	is( $node->safe_psql(
			$db, qq(
SELECT coalesce((SELECT sum(rows) FROM zorder.runs
				 WHERE relid = '$table'::regclass), 0) = count(*)
FROM $table t JOIN zorder.runs c
  ON c.relid = '$table'::regclass
 AND (t.ctid::text::point)[0] >= c.first_block
 AND (t.ctid::text::point)[0] < c.first_block + c.nblocks
WHERE t.xmin::text::bigint <= c.created_xid::text::bigint)),
		't',
		"$what: the runs in the catalog match the heap");
	return;
}

=item rows_outside_runs($node, $db, $table)

How many rows of $table are on no page of one of its sorted runs.

=cut

sub rows_outside_runs
{
	my ($node, $db, $table) = @_;
	return $node->safe_psql(
		$db, qq(
SELECT count(*) FROM $table WHERE NOT EXISTS (
  SELECT FROM zorder.sorted_runs r
  WHERE r."table" = '$table'::regclass
    AND (ctid::text::point)[0] >= r.first_block
    AND (ctid::text::point)[0] < r.first_block + r.nblocks)));
}

=item install_slow_function($node, $db, $seconds)

Creates slow(int), an immutable identity that sleeps $seconds in a session
that has set ztest.slow = on: an index on slow(column) keeps each move of
an optimize long enough to be caught.

=cut

sub install_slow_function
{
	my ($node, $db, $seconds) = @_;
	$node->safe_psql(
		$db, qq(
CREATE FUNCTION slow(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
\$\$ BEGIN
  IF current_setting('ztest.slow', true) = 'on' THEN
    PERFORM pg_sleep($seconds);
  END IF;
  RETURN \$1;
END \$\$;
));
	return;
}

=item install_batch_gate($node, $db)

Makes slow(int) (install_slow_function) a gate as well: in a session that
has set ztest.slow = on, once that session's optimize has moved 20 rows
(pg_stat_progress_cluster), each move also waits for advisory lock 4242
while another session holds it.  A call in small batches then stops in the
middle of a batch, holding the table's lock, until the test lets it go:
a command sent meanwhile queues for the lock and runs when that batch
commits, between two batches.

=cut

sub install_batch_gate
{
	my ($node, $db) = @_;
	$node->safe_psql(
		$db, q{
CREATE OR REPLACE FUNCTION slow(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF current_setting('ztest.slow', true) = 'on' THEN
    PERFORM pg_sleep(0.001);
    PERFORM pg_stat_clear_snapshot();
    IF (SELECT heap_tuples_written FROM pg_stat_progress_cluster
        WHERE pid = pg_backend_pid()) >= 20 THEN
      PERFORM pg_advisory_lock_shared(4242);
      PERFORM pg_advisory_unlock_shared(4242);
    END IF;
  END IF;
  RETURN $1;
END $$;
});
	return;
}

=item install_wait_written($node, $db, $table, $poll)

Creates wait_written(minval, stop_there), which polls (every $poll seconds,
150 seconds at most) until an optimize of $table has written at least
minval tuples (pg_stat_progress_cluster) and returns that count (written,
-1 if it timed out) and the optimize's backend (pid).  With stop_there it
stops that backend with SIGSTOP the moment it sees the count, as
wait_phase does (same caveats: nothing may read the frozen backend's
progress or activity afterwards).

=item wait_written($node, $db, $minval)

Calls it and returns the count.

=item freeze_written($node, $db, $minval)

Calls it with stop_there and returns the count and the frozen backend's
pid (0 if it timed out).  crash_frozen($node, $pid) then crashes the server
with the optimize where the count was seen, however long the psql round
trip and the start of pg_ctl take on a busy machine.

=cut

sub install_wait_written
{
	my ($node, $db, $table, $poll) = @_;
	$node->safe_psql(
		$db, qq(
CREATE FUNCTION wait_written(minval bigint, stop_there bool DEFAULT false,
                             OUT written bigint, OUT pid int)
LANGUAGE plpgsql AS \$\$
DECLARE
  deadline timestamptz := clock_timestamp() + interval '150 s';
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    SELECT c.heap_tuples_written, c.pid INTO written, pid
      FROM pg_stat_progress_cluster c
     WHERE c.relid = '$table'::regclass;
    IF written >= minval THEN
      IF stop_there THEN
        EXECUTE format('COPY (SELECT 1 WHERE false) TO PROGRAM %L',
                       'kill -STOP ' || pid);
      END IF;
      RETURN;
    END IF;
    IF clock_timestamp() > deadline THEN
      written := -1;
      RETURN;
    END IF;
    PERFORM pg_sleep($poll);
  END LOOP;
END \$\$;
));
	return;
}

sub wait_written
{
	my ($node, $db, $minval) = @_;
	return $node->safe_psql($db, "SELECT written FROM wait_written($minval)");
}

sub freeze_written
{
	my ($node, $db, $minval) = @_;
	my $r = $node->safe_psql($db,
		"SELECT written || '|' || coalesce(pid, 0) FROM wait_written($minval, true)");
	return split /\|/, $r;
}

=item install_wait_phase($node, $db)

Creates wait_phase(rel, target, minval), which polls every 10 ms (150
seconds at most) until the full optimize of rel is in phase target with
that phase's progress counter (heap blocks scanned, tuples written,
indexes rebuilt) at least minval.  It returns the phase, or says why it is
not there (missed, already in a later phase; missed, the optimize ended;
timed out).

With stop_there it stops the optimize's backend with SIGSTOP (through
COPY TO PROGRAM, so that no round trip to the client lies between seeing
the phase and stopping there), after flushing the WAL first if flush_wal is
set.  It returns the phase and the backend's pid.  With spilled it stops
only once the server's temporary directory (pg_ls_tmpdir) holds a file as
well: a sort that is in the phase has not always spilled yet (an index
build of "rebuilding index" writes its first temporary file some
milliseconds after the counter of rebuilt indexes goes up).

A crash or a cancel sent to the frozen backend then finds it in the phase
the test asked for, however fast the machine is: without the freeze the
optimize could finish the phase in the moment between the poll and the
signal.  Nothing may read the frozen backend's progress or activity
afterwards (pg_stat_activity, pg_stat_progress_cluster): a reader waits
for a backend that was stopped while updating its entry.

=item wait_phase($node, $db, $reloid, $phase, $minval)

Calls it without stop_there and returns the phase.

=item freeze_at_phase($node, $db, $reloid, $phase, $minval, flush => 1, spilled => 1)

Calls it with stop_there (and flush_wal, spilled as given) and returns the
phase and the frozen backend's pid.
thaw($pid) lets it go on; crash_frozen($node, $pid) stops the server in
immediate mode.

=item crash_frozen($node, $pid)

Stops the server in immediate mode while the backend $pid is frozen.  The
backend is thawed once the postmaster's SIGQUIT is pending for it, so it
exits before running on: without the thaw the postmaster would wait five
seconds before it sends SIGKILL.  With $pid 0 (nothing was frozen) it only
stops the server in immediate mode.

=cut

sub install_wait_phase
{
	my ($node, $db) = @_;
	$node->safe_psql(
		$db, q(
CREATE FUNCTION wait_phase(rel oid, target text, minval bigint,
                           stop_there bool DEFAULT false,
                           flush_wal bool DEFAULT false,
                           spilled bool DEFAULT false,
                           OUT phase text, OUT pid int)
LANGUAGE plpgsql AS $$
DECLARE
  phases text[] := ARRAY['initializing', 'seq scanning heap',
    'index scanning heap', 'sorting tuples', 'writing new heap',
    'swapping relation files', 'rebuilding index',
    'performing final cleanup'];
  p record;
  seen bool := false;
  counter bigint;
  deadline timestamptz := clock_timestamp() + interval '150 s';
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    SELECT c.phase, c.pid, c.heap_blks_scanned, c.heap_tuples_written,
           c.index_rebuild_count
      INTO p FROM pg_stat_progress_cluster c WHERE c.relid = rel;
    IF FOUND THEN
      seen := true;
      counter := CASE target
           WHEN 'seq scanning heap' THEN p.heap_blks_scanned
           WHEN 'writing new heap' THEN p.heap_tuples_written
           WHEN 'rebuilding index' THEN p.index_rebuild_count
           ELSE 0 END;
      IF p.phase = target AND counter >= minval
         AND (NOT spilled OR EXISTS (SELECT FROM pg_ls_tmpdir())) THEN
        IF stop_there THEN
          IF flush_wal THEN
            PERFORM pg_switch_wal();
          END IF;
          EXECUTE format('COPY (SELECT 1 WHERE false) TO PROGRAM %L',
                         'kill -STOP ' || p.pid);
        END IF;
        phase := p.phase;
        pid := p.pid;
        RETURN;
      END IF;
      IF array_position(phases, p.phase) > array_position(phases, target)
      THEN
        phase := 'missed, already in ' || p.phase;
        RETURN;
      END IF;
    ELSIF seen THEN
      phase := 'missed, optimize ended';
      RETURN;
    END IF;
    IF clock_timestamp() > deadline THEN
      phase := 'timed out in ' || coalesce(p.phase, 'no optimize');
      RETURN;
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
END
$$;
));
	return;
}

sub wait_phase
{
	my ($node, $db, $reloid, $phase, $minval) = @_;
	return $node->safe_psql($db,
		"SELECT phase FROM wait_phase($reloid, '$phase', $minval)");
}

sub freeze_at_phase
{
	my ($node, $db, $reloid, $phase, $minval, %opts) = @_;
	my $flush = $opts{flush} ? 'true' : 'false';
	my $spilled = $opts{spilled} ? 'true' : 'false';
	my $r = $node->safe_psql($db,
		"SELECT phase || '|' || coalesce(pid, 0) FROM wait_phase($reloid, '$phase', $minval, true, $flush, $spilled)"
	);
	return split /\|/, $r;
}

sub thaw
{
	my ($pid) = @_;
	kill 'CONT', $pid;
	return;
}

# Whether signal $sig (a number) is pending for process $pid, as Linux
# shows it in /proc/$pid/status.
sub signal_pending
{
	my ($pid, $sig) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return 0;
	my $status = do { local $/; <$fh> };
	close $fh;
	foreach my $mask ($status =~ /^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$/mg)
	{
		return 1 if hex(substr($mask, -8)) & (1 << ($sig - 1));
	}
	return 0;
}

sub crash_frozen
{
	my ($node, $pid) = @_;
	# nothing was frozen (the wait timed out or missed): a plain crash
	return $node->stop('immediate') unless $pid;
	my $child = fork();
	die "fork: $!" unless defined $child;
	if ($child == 0)
	{
		# SIGQUIT is 3 on Linux; stop waiting once the backend is gone
		foreach (1 .. 3000)
		{
			last unless kill 0, $pid;
			if (signal_pending($pid, 3))
			{
				kill 'CONT', $pid;
				last;
			}
			select(undef, undef, undef, 0.005);
		}
		POSIX::_exit(0);
	}
	$node->stop('immediate');
	waitpid($child, 0);
	return;
}

=item start_full_optimize($node, $db, $table)

Starts CALL zorder.optimize($table, full => true) in a background psql
session and returns the session once the call is sent.  Its stdout says
"optimize done" when the call has returned.

=cut

sub start_full_optimize
{
	my ($node, $db, $table) = @_;
	my $bg = $node->background_psql($db, on_error_stop => 0);
	$bg->query_until(qr/optimize started/,
		"\\echo optimize started\nCALL zorder.optimize('$table', full => true);\n\\echo optimize done\n"
	);
	return $bg;
}

=item lost_connection($bg)

Waits until the background session $bg reports that its server went away
(true), or times out (false).

=cut

sub lost_connection
{
	my ($bg) = @_;
	return pump_until(
		$bg->{run}, $bg->{timeout}, \$bg->{stderr},
		qr/server closed the connection unexpectedly|connection to server was lost|terminating connection/
	);
}

=item list_dir($dir)

The sorted entries of a directory (none if it does not exist).

=cut

sub list_dir
{
	my ($dir) = @_;
	return () unless -d $dir;
	opendir(my $dh, $dir) or die "could not open $dir: $!";
	my @e = sort grep { $_ ne '.' && $_ ne '..' } readdir($dh);
	closedir($dh);
	return @e;
}

=item files_by_filenode($node, $db)

The relation files (all forks and segments) in the directory of database
$db on $node, as a hash from filenode to the list of file names.

=cut

sub files_by_filenode
{
	my ($node, $db) = @_;
	my $dboid = $node->safe_psql($db,
		"SELECT oid FROM pg_database WHERE datname = current_database()");
	my %files;
	foreach my $f (list_dir($node->data_dir . "/base/$dboid"))
	{
		next unless $f =~ /^(\d+)(?:_(?:fsm|vm|init))?(?:\.\d+)?$/;
		push @{ $files{$1} }, $f;
	}
	return %files;
}

=item orphan_filenodes($node, $db, @also_used)

Filenodes with files in the database directory that no pg_class row of
the database uses, @also_used aside (filenodes of relations that the test
knows of but pg_class does not show yet, being uncommitted).  A dropped
relation's main fork is only truncated at once and unlinked by the next
checkpoint (so that its number is not reused before), hence a CHECKPOINT
first.

=cut

sub orphan_filenodes
{
	my ($node, $db, @also_used) = @_;
	my %used = map { $_ => 1 } @also_used;
	$node->safe_psql($db, 'CHECKPOINT');
	$used{$_} = 1 foreach split /\n/,
	  $node->safe_psql($db,
		'SELECT pg_relation_filenode(oid) FROM pg_class '
		  . 'WHERE pg_relation_filenode(oid) IS NOT NULL');
	my %files = files_by_filenode($node, $db);
	# an array: a sort in scalar context is undefined
	my @orphans = sort { $a <=> $b } grep { !$used{$_} } keys %files;
	return @orphans;
}

=item records($node)

The records of rewrites (pg_zorder/<database>-<xid>) in $node's data
directory.

=cut

sub records
{
	my ($node) = @_;
	my @r = grep { /^\d+-\d+$/ } list_dir($node->data_dir . '/pg_zorder');
	return @r;
}

=item write_pgbench_scripts($dir, \%scripts, \%weights)

Writes each script of %scripts to $dir/<name>.sql and returns pgbench's
arguments for them, each with its weight (-f file@weight).

=cut

sub write_pgbench_scripts
{
	my ($dir, $scripts, $weights) = @_;
	my @args;
	foreach my $name (sort keys %$scripts)
	{
		my $file = "$dir/$name.sql";
		open(my $fh, '>', $file) or die "could not write $file: $!";
		print $fh $scripts->{$name};
		close($fh);
		push @args, '-f', "$file\@$weights->{$name}";
	}
	return @args;
}

=item check_pgbench($name, $h, \$out, \$err)

Waits for the pgbench started as IPC::Run handle $h, whose stdout and
stderr go to $out and $err; asserts that it exits with status 0, that it
processed transactions and that none failed.  Returns the number
processed.

=cut

sub check_pgbench
{
	my ($name, $h, $out, $err) = @_;
	$h->finish;
	is($h->result(0), 0, "$name: pgbench exits with status 0")
	  or diag("stdout:\n$$out\nstderr:\n$$err");
	my ($processed) =
	  $$out =~ /number of transactions actually processed: (\d+)/;
	my ($failed) = $$out =~ /number of failed transactions: (\d+)/;
	ok(defined $processed && $processed > 0,
		"$name: pgbench processed transactions");
	is($failed, 0, "$name: no failed transactions");
	return $processed // 0;
}

=item check_ledger_matches($node, $db, $name)

Table t equals its initial content (table t_initial) with the writes that
table ledger records (seq, op i/u/d, id, a, b, v) applied in order, in
columns id, a, b, v.

=cut

sub check_ledger_matches
{
	my ($node, $db, $name) = @_;
	my $diff = $node->safe_psql(
		$db, q(
WITH last AS (
	SELECT DISTINCT ON (id) id, op, a, b, v FROM ledger ORDER BY id, seq DESC
), expected AS (
	SELECT i.id, i.a, i.b, i.v FROM t_initial i
	WHERE NOT EXISTS (SELECT FROM last l WHERE l.id = i.id)
	UNION ALL
	SELECT id, a, b, v FROM last WHERE op <> 'd'
)
SELECT (SELECT count(*) FROM (SELECT * FROM expected
							  EXCEPT ALL SELECT id, a, b, v FROM t) x)
	   || ' ' ||
	   (SELECT count(*) FROM (SELECT id, a, b, v FROM t
							  EXCEPT ALL SELECT * FROM expected) x)
));
	is($diff, '0 0', "$name: table matches the ledger (missing, extra)");
	return;
}

=item online_layout_table($node, $db, $rows)

The table of the online layout tests (010_pg_repack.pl,
012_repack_concurrently.pl): t (id, a, b, v, pad) with a btree on a and a
BRIN index on (a, b), $rows rows in random order of a skewed key (a
quarter share one value of a), a copy t_initial, a ledger, the flag table
ctl that keeps the writers writing, the sequence t_newid of new ids, and
t clustered by (a, b).  Placement is off in the database: what these tests
assert is the run the recognition records and the rows outside it, moved
as newcomers into a cube (placement is tested in incremental_placement.sql
and 013_crash_split.pl).

=cut

sub online_layout_table
{
	my ($node, $db, $rows) = @_;
	$node->safe_psql($db, "ALTER DATABASE $db SET zorder.placement = off");
	$node->safe_psql(
		$db, qq(
CREATE TABLE t (id bigint PRIMARY KEY, a int NOT NULL, b int NOT NULL,
				v int NOT NULL, pad text);
CREATE INDEX t_a ON t (a);
CREATE INDEX t_ab_brin ON t USING brin (a, b) WITH (pages_per_range = 8);
CREATE SEQUENCE t_newid START 1000001;
-- writers write while this says so: until the layout step returns
CREATE TABLE ctl (active boolean NOT NULL);
INSERT INTO ctl VALUES (true);
CREATE TABLE ledger (seq bigserial PRIMARY KEY, op "char" NOT NULL,
					 id bigint NOT NULL, a int, b int, v int);
-- a skewed key: a quarter of the rows share one value of a
CREATE TABLE t_initial AS
  SELECT g::bigint AS id,
		 CASE WHEN g % 4 = 0 THEN 500 ELSE (g::bigint * 7919) % 100000 END::int AS a,
		 ((g::bigint * 104729) % 1000)::int AS b, 0 AS v, repeat('x', 40) AS pad
  FROM generate_series(1, $rows) g;
INSERT INTO t SELECT * FROM t_initial ORDER BY random();
VACUUM ANALYZE t;
SELECT zorder.cluster_by('t', 'a', 'b');
));
	return;
}

=item online_layout_under_load(%args)

The common part of the online layout tests, on the table of
online_layout_table.  pgbench runs inserts, updates (of non-key and of key
columns), deletes and primary-key lookups with $args{clients} clients for
$args{duration} seconds, every write recorded in the ledger in the same
statement.  Three seconds in, $args{layout}->() lays the table out (by
boundary set $args{set}, ordering by zorder.layout_key) and returns the
exit code of that step and what it printed, and the writers stop.  $args{tool}
names the step in the test names.

Asserted: the layout step succeeds; pgbench reports no failed transaction;
the table equals its initial content with the ledger applied and passes
amcheck (after the step, after recognition, after the next call); the next
zorder.optimize says the table is laid out by the set, that the rows
written during or after the step are outside the run, and moves exactly
those; the run the catalog records is in key order in the heap; the
ranges a point filter on each key column reads (zorder.clustering_information,
over every row) are within 1.05 times those of the same rows in the order a
full optimize with the set writes, plus one for each range that holds rows
placed after the run (how many rows arrive during the step depends on how
long it takes, so only this bound holds on a loaded machine); and the next incremental call
moves only the rows that arrived since, and no row of the run.

=cut

sub online_layout_under_load
{
	my (%args) = @_;
	my ($node, $db, $set, $tool) = @args{qw(node db set tool)};
	my $clients = $args{clients};

	my $dir = PostgreSQL::Test::Utils::tempdir;
	my %scripts = (
		'insert' => q(
SELECT active FROM ctl \gset
\if :active
\set a random(0, 99999)
\set b random(0, 999)
WITH i AS (INSERT INTO t (id, a, b, v) VALUES (nextval('t_newid'), :a, :b, 0)
		   RETURNING id, a, b, v)
INSERT INTO ledger (op, id, a, b, v) SELECT 'i', id, a, b, v FROM i;
\endif
),
		'update' => q(
SELECT active FROM ctl \gset
\if :active
\set id random(1, 300000)
WITH u AS (UPDATE t SET v = v + 1 WHERE id = :id RETURNING id, a, b, v)
INSERT INTO ledger (op, id, a, b, v) SELECT 'u', id, a, b, v FROM u;
\endif
),
		'update_key' => q(
SELECT active FROM ctl \gset
\if :active
\set id random(1, 300000)
\set a random(0, 99999)
\set b random(0, 999)
WITH u AS (UPDATE t SET a = :a, b = :b, v = v + 1 WHERE id = :id
		   RETURNING id, a, b, v)
INSERT INTO ledger (op, id, a, b, v) SELECT 'u', id, a, b, v FROM u;
\endif
),
		'delete' => q(
SELECT active FROM ctl \gset
\if :active
\set id random(1, 300000)
WITH d AS (DELETE FROM t WHERE id = :id RETURNING id)
INSERT INTO ledger (op, id) SELECT 'd', id FROM d;
\endif
),
		'select' => q(
\set id random(1, 300000)
SELECT count(*) FROM t WHERE id = :id;
),);
	my %weights = (
		insert => 3,
		update => 3,
		update_key => 1,
		delete => 1,
		select => 3);
	my @script_args = write_pgbench_scripts($dir, \%scripts, \%weights);

	my ($bout, $berr) = ('', '');
	my $pgbench = IPC::Run::start(
		[
			'pgbench', '-n', '-c', $clients, '-j', 2, '-T', $args{duration},
			'-R', 200, @script_args, $node->connstr($db)
		],
		'>', \$bout, '2>', \$berr);
	sleep(3);

	my $started = Time::HiRes::time();
	my ($layout_rc, $lout, $lerr) = $args{layout}->();
	my $layout_secs = Time::HiRes::time() - $started;
	$node->safe_psql($db, 'UPDATE ctl SET active = false');
	is($layout_rc, 0, "$tool with the layout key succeeds")
	  or diag("stdout:\n$lout\nstderr:\n$lerr");
	my $processed = check_pgbench('the writers', $pgbench, \$bout, \$berr);

	my $check = sub {
		my ($name) = @_;
		check_ledger_matches($node, $db, $name);
		check_heap_and_indexes($node, $db, $name,
			indexes => [ 't_pkey', 't_a' ]);
	};
	$check->("after $tool");

	# rows the writers wrote in all: an upper bound on what came in during
	# and after the layout step
	my $written = $node->safe_psql($db,
		q(SELECT count(*) FROM ledger WHERE op IN ('i', 'u')));

	# Recognition
	my ($rc, $out, $err) = $node->psql($db, q(CALL zorder.optimize('t')));
	is($rc, 0, 'the next zorder.optimize succeeds') or diag($err);
	like($err, qr/NOTICE:  table "t" is laid out by boundary set $set/,
		'it recognises the layout of the prepared set');
	my ($in_run, $total, $outside) =
	  $err =~ /DETAIL:  (\d+) of its (\d+) rows are in key order .* the other (\d+) rows are outside it/;
	ok(defined $in_run, 'it says how many rows are in the run and outside it')
	  or diag($err);
	$outside //= -1;
	cmp_ok($outside, '>', 0,
		"rows written during $tool are outside the run");
	cmp_ok($outside, '<=', $written,
		'no more rows are outside it than the writers wrote');
	cmp_ok($in_run, '>=', 0.9 * $total, "the run holds the rows $tool copied");

	my $moved = $node->safe_psql($db,
		q(SELECT rows_moved FROM zorder.history WHERE relid = 't'::regclass
		  ORDER BY started_at DESC LIMIT 1));
	is($moved, $outside,
		'the incremental call moved exactly the rows outside the run')
	  or diag($err);

	is( $node->safe_psql(
			$db, qq(
SELECT count(*) FILTER (WHERE k < prev)
FROM (SELECT k, lag(k) OVER (ORDER BY ctid) AS prev
	  FROM (SELECT ctid, zorder.layout_key($set, a, b) AS k FROM t
			WHERE (ctid::text::point)[0] < (SELECT nblocks FROM zorder.runs
											 WHERE relid = 't'::regclass AND run = 0)) s) s)),
		'0',
		'the run recorded is in key order in the heap');
	$check->('after recognition');

	# Skipping against the same rows in the order a full optimize with the
	# same boundary set writes (sql/layout.sql shows that order is ORDER BY
	# layout_key): what the online procedure is measured against, free of
	# the noise of another sample.  An independent full optimize of a
	# copy, with its own sample, is reported too.
	$node->safe_psql(
		$db, qq(
CREATE TABLE t_same (LIKE t INCLUDING ALL);
INSERT INTO t_same SELECT * FROM t ORDER BY zorder.layout_key($set, a, b);
SELECT zorder.cluster_by('t_same', 'a', 'b');
CREATE TABLE t_full (LIKE t INCLUDING ALL);
INSERT INTO t_full SELECT * FROM t ORDER BY random();
SELECT zorder.cluster_by('t_full', 'a', 'b');
CALL zorder.optimize('t_full', full => true);
VACUUM ANALYZE t, t_same, t_full;
));
	# A point filter reads each BRIN range whose summary covers its value,
	# so every range holding rows outside the run can add at most one range
	# to a filter: the rows that arrived during the step cost that much,
	# however many the load made, and the rest must match the full layout.
	my $ratios = $node->safe_psql(
		$db, qq(
SELECT string_agg(format('%s %s %s %s %s %s %s', r.column_name,
						 round(r.mean_ranges_touched::numeric, 2),
						 round(s.mean_ranges_touched::numeric, 2),
						 (SELECT count(DISTINCT (ctid::text::point)[0]::int / r.pages_per_range)
						  FROM t
						  WHERE (ctid::text::point)[0] >= (SELECT nblocks FROM zorder.runs
													  WHERE relid = 't'::regclass AND run = 0)),
						 round(r.ratio_to_ideal::numeric, 3),
						 round(s.ratio_to_ideal::numeric, 3),
						 round(f.ratio_to_ideal::numeric, 3)), ',' ORDER BY r.key_position)
FROM zorder.clustering_information('t', probes => 0) r
JOIN zorder.clustering_information('t_same', probes => 0) s USING (key_position)
JOIN zorder.clustering_information('t_full', probes => 0) f USING (key_position)));
	foreach my $col (split /,/, $ratios)
	{
		my ($name, $touched, $touched_same, $outside_ranges, $repacked, $same,
			$full)
		  = split / /, $col;
		cmp_ok($touched, '<=', 1.05 * $touched_same + $outside_ranges,
			"skipping on $name: a filter reads $touched ranges, within 1.05x of the"
			  . " $touched_same of a full layout with the set, plus the"
			  . " $outside_ranges ranges that hold rows placed after the run"
			  . " (ratio to ideal $repacked, $same; independent full optimize: $full)");
	}

	# The next incremental call moves only what arrived since
	my $run0_sql = q(SELECT first_block || ' ' || nblocks || ' ' || rows
		FROM zorder.runs WHERE relid = 't'::regclass AND run = 0);
	my $run0_before = $node->safe_psql($db, $run0_sql);
	my $cube_rows = $node->safe_psql($db,
		q(SELECT coalesce(sum(rows), 0) FROM zorder.runs
		  WHERE relid = 't'::regclass AND run > 0));
	$node->safe_psql(
		$db, q(
WITH i AS (INSERT INTO t (id, a, b, v)
		   SELECT nextval('t_newid'), (g * 31) % 100000, g % 1000, 0
		   FROM generate_series(1, 700) g RETURNING id, a, b, v)
INSERT INTO ledger (op, id, a, b, v) SELECT 'i', id, a, b, v FROM i;
));
	($rc, $out, $err) = $node->psql($db, q(CALL zorder.optimize('t')));
	is($rc, 0, 'the following zorder.optimize succeeds') or diag($err);
	unlike($err, qr/laid out by|not in the order/,
		'and does not check the heap again');
	my $moved2 = $node->safe_psql($db,
		q(SELECT rows_moved FROM zorder.history WHERE relid = 't'::regclass
		  ORDER BY started_at DESC LIMIT 1));
	# the 700 newcomers, and perhaps the rows of the cube of the layout
	# step's newcomers, which a new cube as large merges (see incremental.c)
	ok($moved2 >= 700 && $moved2 <= 700 + $cube_rows,
		"it moves the 700 rows that arrived since ($moved2, cube of $cube_rows before)");
	is($node->safe_psql($db, $run0_sql),
		$run0_before, 'and no row of the repacked run');
	$check->('after the next incremental call');

	diag(sprintf(
			"%s: %.1f s under %d clients (%d transactions); run %d of %d rows, "
			  . "%d outside; skipping (column, ranges a filter reads repacked and "
			  . "in full layout with the set, ranges after the run, ratio to "
			  . "ideal repacked, with the set, independent full optimize): %s",
			$tool, $layout_secs, $clients, $processed, $in_run // 0,
			$total // 0, $outside, $ratios));
	return;
}

=back

=cut

1;
