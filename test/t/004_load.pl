# zorder.optimize under load: no row is lost, duplicated or changed.
#
# pgbench runs a mixed workload against one table for a fixed time: inserts,
# updates of non-key and of key columns, deletes, and point lookups of rows
# that no writer touches (by primary key, through the btree on a key column
# and through a BRIN index), each lookup failing the transaction if the row
# is not found exactly once.  Every write records what it did in a ledger
# table in the same statement (id, operation, the row's new values), so
# that at the end the table must equal its initial content with the ledger
# applied in order.  Meanwhile another session calls zorder.optimize on the
# table again and again: incremental, in batches of 200 rows that commit one
# by one, and once a full rewrite.
#
# Asserted: pgbench reports no failed and no aborted transaction (READ
# COMMITTED, one try), the table matches the ledger exactly (also after a
# last optimize), the TOASTed values of untouched rows are intact, the
# sorted runs do not overlap, verify_heapam finds nothing, bt_index_check
# passes with heapallindexed, and a BRIN scan returns what a sequential
# scan returns.  The optimize loop must have moved rows in several batches.
#
# The same workload runs first without the optimize loop, as the baseline
# for throughput; both figures are printed with diag().  The table is
# restored between the runs.
#
# About a minute: two runs of 20 seconds plus set-up and checks.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $duration = 20;    # seconds per pgbench run
my $clients = 4;
my $batch = 200;      # zorder.max_batch_size of the optimize loop
my $db = 'postgres';

# Autovacuum often, so that it marks pages all-visible (which incremental
# optimize skips inside the runs) and competes for the table's lock.
my $node = new_node(
	'load', conf => qq(
autovacuum_naptime = 1s
log_min_messages = warning
log_statement = none
max_connections = 30
));

# Rows 1..20000 are the writers'; rows 1000001..1002000 are read only
# (v = -1), and every 50th of them has a value stored out of line.
$node->safe_psql(
	$db, q(
CREATE TABLE t (id bigint PRIMARY KEY, a int NOT NULL, b int NOT NULL,
				v int NOT NULL, pad text);
CREATE INDEX t_a ON t (a);
CREATE INDEX t_b_brin ON t USING brin (b) WITH (pages_per_range = 4);
ALTER TABLE t SET (autovacuum_vacuum_scale_factor = 0.02,
				   autovacuum_vacuum_threshold = 200);
CREATE SEQUENCE t_newid START 20001;

-- one row per write, in the order the writes took their row locks
CREATE TABLE ledger (seq bigserial PRIMARY KEY, op "char" NOT NULL,
					 id bigint NOT NULL, a int, b int, v int);

CREATE TABLE t_initial (LIKE t);
INSERT INTO t_initial
  SELECT g, (g * 7919) % 1000, (g * 104729) % 1000, 0, NULL
  FROM generate_series(1, 20000) g;
INSERT INTO t_initial
  SELECT 1000000 + s, (s * 7919) % 1000, (s * 104729) % 1000, -1,
		 CASE WHEN s % 50 = 0 THEN
		   (SELECT string_agg(md5(s::text || g::text), '')
			  FROM generate_series(1, 100) g) END
  FROM generate_series(1, 2000) s;
SELECT zorder.cluster_by('t', 'a', 'b');
));

# Back to the initial content: writers' rows laid out by a full optimize,
# the read-only rows appended after it, outside the sorted run, so that
# the first incremental optimize moves them while they are being read.
sub reset_table
{
	$node->safe_psql(
		$db, q(
TRUNCATE t, ledger;
SELECT setval('t_newid', 20001, false);
INSERT INTO t SELECT * FROM t_initial WHERE id <= 20000;
));
	$node->safe_psql($db, q(CALL zorder.optimize('t', full => true)));
	$node->safe_psql(
		$db, q(
INSERT INTO t SELECT * FROM t_initial WHERE id > 20000;
VACUUM ANALYZE t;
));
	return;
}

# ---------------------------------------------------------------------
# The workload
# ---------------------------------------------------------------------

my $dir = PostgreSQL::Test::Utils::tempdir;
my %scripts = (
	# a new row
	'insert' => q(
\set a random(0, 999)
\set b random(0, 999)
WITH i AS (INSERT INTO t (id, a, b, v) VALUES (nextval('t_newid'), :a, :b, 0)
		   RETURNING id, a, b, v)
INSERT INTO ledger (op, id, a, b, v) SELECT 'i', id, a, b, v FROM i;
),
	# a non-key column of an existing (or already deleted) row
	'update' => q(
\set id random(1, 24000)
WITH u AS (UPDATE t SET v = v + 1 WHERE id = :id RETURNING id, a, b, v)
INSERT INTO ledger (op, id, a, b, v) SELECT 'u', id, a, b, v FROM u;
),
	# both key columns: the row's place on the curve changes
	'update_key' => q(
\set id random(1, 24000)
\set a random(0, 999)
\set b random(0, 999)
WITH u AS (UPDATE t SET a = :a, b = :b, v = v + 1 WHERE id = :id
		   RETURNING id, a, b, v)
INSERT INTO ledger (op, id, a, b, v) SELECT 'u', id, a, b, v FROM u;
),
	'delete' => q(
\set id random(1, 24000)
WITH d AS (DELETE FROM t WHERE id = :id RETURNING id)
INSERT INTO ledger (op, id) SELECT 'd', id FROM d;
),
	# a read-only row must be found exactly once by each access path; a
	# miss divides by zero, which aborts the client
	'select' => q(
\set s random(1, 2000)
\set sa (:s * 7919) % 1000
\set sb (:s * 104729) % 1000
SELECT count(*) AS by_pkey FROM t WHERE id = 1000000 + :s \gset
SELECT count(*) AS by_btree FROM t WHERE a = :sa AND id + 0 = 1000000 + :s \gset
SELECT count(*) AS by_brin FROM t WHERE b = :sb AND id + 0 = 1000000 + :s \gset
\if :by_pkey != 1 OR :by_btree != 1 OR :by_brin != 1
SELECT 1 / 0 AS row_not_found;
\endif
SELECT count(*) FROM t WHERE a = :sa;
),);
my %weights = (
	insert => 3,
	update => 3,
	update_key => 2,
	delete => 1,
	select => 3);
my @script_args = write_pgbench_scripts($dir, \%scripts, \%weights);

# Start pgbench in the background.  Index scans are forced (no sequential
# scans) so that lookups go through the indexes the moves maintain.
sub start_pgbench
{
	my ($out, $err) = @_;
	local $ENV{PGOPTIONS} = '-c enable_seqscan=off';
	my @cmd = (
		'pgbench', '-n', '-M', 'prepared', '-c', $clients, '-j', 2,
		'-T', $duration, '-P', 1, @script_args, $node->connstr($db));
	return IPC::Run::start(\@cmd, '>', $out, '2>', $err);
}

# pgbench's report: exit status, transactions, failures (see ZorderTest),
# no client aborted, lookups ran; returns transactions, tps, the lowest tps
# of a one-second interval (-P 1) and the latency of each script.
sub check_load
{
	my ($name, $h, $out, $err) = @_;
	my $processed = check_pgbench($name, $h, $out, $err);
	unlike($$err, qr/aborted/, "$name: no client aborted");
	my ($tps) = $$out =~ /tps = ([\d.]+) \(without initial connection time\)/;
	my @intervals = $$err =~ /progress: [\d.]+ s, ([\d.]+) tps/g;
	# average latency of each script, in ms
	my %latency = $$out =~
	  m{SQL script \d+: \S*/(\w+)\.sql\n(?: - .*\n)*? - latency average = ([\d.]+) ms}g;
	my $latencies = join(', ',
		map { "$_ $latency{$_}" } sort keys %latency);
	my $min_tps = (sort { $a <=> $b } @intervals)[0] // 0;
	my ($lookups) = $$out =~
	  m{select\.sql\n - weight: \d+ \(targets [\d.]+% of total\)\n - (\d+) transactions};
	ok(defined $lookups && $lookups > 0, "$name: lookups ran");
	return ($processed, $tps // 0, $min_tps, $latencies);
}

# The table equals its initial content with the ledger applied.
sub check_ledger
{
	my ($name) = @_;
	check_ledger_matches($node, $db, $name);
	is( $node->safe_psql(
			$db, q(
SELECT count(*) FROM t JOIN t_initial i USING (id)
WHERE t.pad IS DISTINCT FROM i.pad)),
		'0',
		"$name: out-of-line values of untouched rows intact");
	return;
}

sub check_structure
{
	my ($name) = @_;
	check_heap_and_indexes($node, $db, $name, indexes => [ 't_pkey', 't_a' ]);
	# the BRIN index returns what a sequential scan returns
	my $brin = $node->safe_psql(
		$db, q(
SET enable_seqscan = off; SET enable_indexscan = off;
SELECT count(*) || ' ' || sum(id) FROM t WHERE b BETWEEN 100 AND 180;
SELECT count(*) || ' ' || sum(id) FROM t WHERE b = 777;
));
	my $seq = $node->safe_psql(
		$db, q(
SELECT count(*) || ' ' || sum(id) FROM t WHERE b + 0 BETWEEN 100 AND 180;
SELECT count(*) || ' ' || sum(id) FROM t WHERE b + 0 = 777;
));
	is($brin, $seq, "$name: BRIN scan finds the rows a sequential scan finds");
	check_runs_do_not_overlap($node, $db, $name);
	return;
}

sub ledger_summary
{
	return $node->safe_psql($db,
		q(SELECT string_agg(op::text || '=' || n, ' ' ORDER BY op)
		  FROM (SELECT op, count(*) AS n FROM ledger GROUP BY op) s));
}

reset_table();

# The lookups go through the btree on a and the BRIN index on b.
my $plans = $node->safe_psql(
	$db, q(
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE a = 7 AND id + 0 = 1000001;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE b = 7 AND id + 0 = 1000001;
));
like($plans, qr/Index Scan (using|on) t_a\b/, 'lookups by a use the btree');
like($plans, qr/Bitmap Index Scan on t_b_brin/, 'lookups by b use BRIN');

# ---------------------------------------------------------------------
# Run 1: the workload alone
# ---------------------------------------------------------------------

my ($out1, $err1) = ('', '');
my $h1 = start_pgbench(\$out1, \$err1);
my ($n1, $tps1, $min1, $lat1) = check_load('baseline', $h1, \$out1, \$err1);
check_ledger('baseline');
check_structure('baseline');
my $ops1 = ledger_summary();

# ---------------------------------------------------------------------
# Run 2: the workload while zorder.optimize runs in a loop
# ---------------------------------------------------------------------

reset_table();
my $since = $node->safe_psql($db, q(SELECT clock_timestamp()));
my ($out2, $err2) = ('', '');
my $started = time();
my $h2 = start_pgbench(\$out2, \$err2);
my ($calls, $errors, $full_done) = (0, 0, 0);
my $error_text = '';
while (time() < $started + $duration - 1)
{
	my $full = (!$full_done && time() > $started + $duration / 2);
	my $sql = $full
	  ? "CALL zorder.optimize('t', full => true);"
	  : "SET zorder.max_batch_size = $batch;\nCALL zorder.optimize('t');";
	my ($rc, $out, $err) = $node->psql($db, $sql);
	$calls++;
	$full_done = 1 if $full;
	if ($rc != 0)
	{
		$errors++;
		$error_text .= $err;
	}
	usleep(200_000);
}
my ($n2, $tps2, $min2, $lat2) = check_load('with optimize', $h2, \$out2, \$err2);
is($errors, 0, "the optimize loop ran without errors ($calls calls)")
  or diag($error_text);
ok($full_done, 'a full optimize ran during the load');

# the loop really moved rows, in several batches
my $moved = $node->safe_psql(
	$db, qq(
SELECT count(*) FILTER (WHERE mode <> 'full' AND rows_moved > 0)
	   || ' ' || coalesce(sum(rows_moved) FILTER (WHERE mode <> 'full'), 0)
	   || ' ' || coalesce(max(rows_moved) FILTER (WHERE mode <> 'full'), 0)
	   || ' ' || count(*) FILTER (WHERE mode = 'full' AND room NOT LIKE 'automatic full rewrite%')
	   || ' ' || count(*) FILTER (WHERE mode = 'full' AND room LIKE 'automatic full rewrite%')
FROM zorder.history WHERE relid = 't'::regclass AND started_at >= '$since'));
my ($incr_calls, $rows_moved, $max_moved, $full_calls, $auto_calls) = split / /, $moved;
my $merges = $node->safe_psql($db,
	"SELECT count(*) FROM zorder.history WHERE relid = 't'::regclass "
	  . "AND started_at >= '$since' AND mode = 'merge'");
cmp_ok($incr_calls, '>=', 3, 'several incremental optimizes (some merging) moved rows');
cmp_ok($max_moved, '>', $batch, 'one of them in more than one batch');
# The appends under load use up zorder's room quickly: calls may also have
# rewritten the table by themselves (room.c), which must lose nothing either.
is($full_calls, 1, 'the one full optimize asked for is in the history');

check_ledger('with optimize');
check_structure('with optimize');
my $ops2 = ledger_summary();

# once more, after a last incremental optimize on the quiet table
$node->safe_psql($db,
	"SET zorder.max_batch_size = $batch;\nCALL zorder.optimize('t');");
check_ledger('after a last optimize');
check_structure('after a last optimize');

diag(sprintf(
		"pgbench, %d clients, %d s, READ COMMITTED, prepared statements:",
		$clients, $duration));
diag(sprintf(
		"  without optimize: %.0f tps, worst second %.0f tps (%d transactions; ledger %s)",
		$tps1, $min1, $n1, $ops1));
diag("    latency (ms): $lat1");
diag(sprintf(
		"  with optimize loop: %.0f tps, worst second %.0f tps (%d transactions; ledger %s)",
		$tps2, $min2, $n2, $ops2));
diag("    latency (ms): $lat2");
diag(sprintf(
		"  optimize loop: %d calls, %d incremental ones (%d merging into the "
		  . "main run) moved %d rows (at most %d in one call, batches of %d), %d full, "
		  . "%d automatic full",
		$calls, $incr_calls, $merges, $rows_moved, $max_moved, $batch,
		$full_calls, $auto_calls));

# the machine may be busy with other work: say how busy
if (open(my $fh, '<', '/proc/loadavg'))
{
	my $load = <$fh>;
	close($fh);
	chomp $load;
	diag("  load average at the end: $load");
}

$node->stop;
done_testing();
