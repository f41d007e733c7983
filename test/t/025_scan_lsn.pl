# The scan for newcomers inside the sorted runs reads only the pages written
# since the last call that went to the end, incremental or full
# (zorder.layouts.scan_lsn, issue #27): a call with nothing new reads none
# of them, and a row written into a run's page since (an UPDATE that stays
# on its page, before the call or between two of its batches) is still
# found.  The position is recorded only where it holds: not by a call in a
# REPEATABLE READ transaction, not for an unlogged table, not by a full
# rewrite under wal_level minimal or one that copied rows newer than
# itself, and not across a rewrite by another command.
# The call's DEBUG1 message (server log) says what the scan read; the
# history says what the call found.

use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZorderTest;

my $db = 'postgres';
# no checkpoint of its own: after one, with data checksums (the default
# from 18 on) the first hint bit set on a page writes its image to the WAL
# and moves its LSN, so that the next call reads it again, and the counts
# of pages read below would vary
my $node = new_node('scan_lsn',
	conf => "autovacuum = off\ncheckpoint_timeout = 1d\nmax_wal_size = 4GB\n");
install_slow_function($node, $db, 0.001);
install_batch_gate($node, $db);

# t: 20,000 rows with room in every page (fillfactor 80), laid out;
# u: the same, unlogged
my $gen = sub {
	my ($from, $to) = @_;
	return "SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 9973, "
	  . "repeat('x', 40) FROM generate_series($from, $to) g";
};
$node->safe_psql($db, qq(
CREATE TABLE t (id int PRIMARY KEY, a int, b int, pad text) WITH (fillfactor = 80);
INSERT INTO t @{[ $gen->(1, 20000) ]};
CREATE INDEX t_brin ON t USING brin (a, b) WITH (pages_per_range = 4);
CREATE INDEX t_slow ON t (slow(b));
SELECT zorder.cluster_by('t', 'a', 'b');
CALL zorder.optimize('t');
CREATE UNLOGGED TABLE u (id int PRIMARY KEY, a int, b int, pad text) WITH (fillfactor = 80);
INSERT INTO u @{[ $gen->(1, 20000) ]};
CREATE INDEX u_brin ON u USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('u', 'a', 'b');
CALL zorder.optimize('u');
));

my $scan_lsn = sub {
	my ($table) = @_;
	return $node->safe_psql($db,
		"SELECT coalesce(scan_lsn::text, 'none') FROM zorder.layouts WHERE relid = '$table'::regclass"
	);
};
my $arrived = sub {
	my ($table) = @_;
	return $node->safe_psql($db,
		"SELECT rows_arrived FROM zorder.optimize_history WHERE \"table\" = '$table'::regclass "
		  . "ORDER BY started_at DESC LIMIT 1");
};

# The rows of t a call that read every page would take for newcomers:
# those outside every run and those newer than their run; but for the rows
# the UPDATE below leaves in place, which a call finds once and leaves
# where they are, in their range's keys (place.c's stayers).  No other row
# stays so: the other newcomers are appended, after the runs.
my $stayers = '11, 222, 3333, 4444, 15555';
my $newcomers = qq(
SELECT count(*) FROM t LEFT JOIN zorder.runs r
  ON r.relid = 't'::regclass
 AND (t.ctid::text::point)[0] >= r.first_block
 AND (t.ctid::text::point)[0] < r.first_block + r.nblocks
WHERE (r.relid IS NULL OR t.xmin::text::bigint > r.created_xid::text::bigint)
  AND t.id NOT IN ($stayers));

# Runs $sql (an incremental call) in a session that logs at DEBUG1 and
# returns what its last scan for newcomers said: pages read, left unread
# as not written since, the position, all-frozen pages.
sub scan
{
	my ($sql) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql($db, "SET log_min_messages = debug1;\n$sql");
	my $log = slurp_file($node->logfile, $offset);
	my @m = $log =~
	  /scan for newcomers in the runs: (\d+) pages read, (\d+) not written since (\S+), (\d+) all-frozen/g;
	return undef unless @m;
	return { read => $m[-4], unchanged => $m[-3], since => $m[-2], frozen => $m[-1] };
}

# the node runs at wal_level minimal (the TAP default), where a full
# rewrite writes the new file without WAL: its pages show no LSN
is($scan_lsn->('t'), 'none',
	'wal_level minimal: a full optimize records no position');

# the first incremental call reads every page of the run, and records one
$node->safe_psql($db, "INSERT INTO t @{[ $gen->(20001, 20200) ]}");
my $s = scan("CALL zorder.optimize('t')");
ok(defined $s && $s->{read} > 0 && $s->{unchanged} == 0,
	'the first call reads every page of the run');
is($arrived->('t'), '200', 'the first call finds the 200 new rows');
my $pages = $s->{read};
my $lsn1 = $scan_lsn->('t');
isnt($lsn1, 'none', 'the first call records a position');

# the next call reads only the pages the first one wrote, the one after none
$s = scan("CALL zorder.optimize('t')");
ok($s->{read} > 0 && $s->{read} < $pages / 2 && $s->{read} + $s->{unchanged} >= $pages,
	"the second call reads only the pages the first wrote ($s->{read} of $pages)");
is($node->safe_psql($db, "SELECT '$s->{since}'::pg_lsn = '$lsn1'::pg_lsn"),
	't', 'it starts from the recorded position');
$s = scan("CALL zorder.optimize('t')");
is($s->{read}, '0', 'a call after a call that wrote nothing reads no page of the run');
is($arrived->('t'), '0', 'and finds nothing');

# rows written into the runs' pages since are found: an UPDATE that keeps
# its row on its page (the room of fillfactor 80) makes a newcomer there
$node->safe_psql($db, "UPDATE t SET pad = pad || 'u' WHERE id IN ($stayers)");
is( $node->safe_psql($db,
		"SELECT count(DISTINCT (ctid::text::point)[0]) FROM t WHERE id IN ($stayers)"),
	'5', 'the updated rows are on five pages');
$s = scan("CALL zorder.optimize('t')");
ok($s->{read} >= 5 && $s->{read} <= 10,
	"the call reads the pages the UPDATE wrote ($s->{read})");
is($arrived->('t'), '5', 'and finds the five updated rows');

# a REPEATABLE READ snapshot may be older than the call's lock: the call
# uses the position but records none
my $before = $scan_lsn->('t');
$node->safe_psql($db, "INSERT INTO t @{[ $gen->(20201, 20300) ]}");
$s = scan("BEGIN ISOLATION LEVEL REPEATABLE READ;\nCALL zorder.optimize('t');\nCOMMIT;");
is($arrived->('t'), '100', 'a call in a REPEATABLE READ transaction finds the new rows');
is($node->safe_psql($db, "SELECT '$s->{since}'::pg_lsn = '$before'::pg_lsn"),
	't', 'it starts from the recorded position');
is($scan_lsn->('t'), $before, 'and records no position of its own');

# an unlogged table's pages show no write in their LSN: no position
$node->safe_psql($db, "INSERT INTO u @{[ $gen->(20001, 20200) ]}");
$node->safe_psql($db, "CALL zorder.optimize('u')");
$node->safe_psql($db, "UPDATE u SET pad = pad || 'u' WHERE id IN (11, 222, 3333)");
$s = scan("CALL zorder.optimize('u')");
is($s->{unchanged}, '0', 'an unlogged table: every page of the runs is read');
is($arrived->('u'), '3', 'an unlogged table: the updated rows are found');
is($scan_lsn->('u'), 'none', 'an unlogged table: no position is recorded');

# Rows written between two batches of a call, on pages the call read
# before: 2,000 newcomers (a below 2,003) moved in batches of 5; the call
# holds in a batch after 20 moves until an UPDATE of rows in the run (a
# above 8,000, in ranges no newcomer goes to) waits for the table's lock,
# which it gets when that batch commits.
$node->safe_psql($db, "INSERT INTO t SELECT g, (g::bigint * 7919) % 2003, "
	  . "(g::bigint * 104729) % 9973, repeat('x', 40) FROM generate_series(20301, 22300) g");
$node->safe_psql($db, 'CREATE TABLE t_copy AS SELECT * FROM t');
# A snapshot held from before the UPDATE to the end keeps the rows it
# leaves on its pages: a read of the table would else prune them, which
# writes the page after the call that followed, and the next call would
# read it for that alone.
my $holder = $node->background_psql($db);
$holder->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$holder->query_safe('SELECT 1');
my $gate = $node->background_psql($db);
$gate->query_safe('SELECT pg_advisory_lock(4242)');
my $call = $node->background_psql($db, on_error_stop => 0);
my $call_pid = $call->query_safe('SELECT pg_backend_pid()');
chomp $call_pid;
$call->query_safe('SET zorder.max_batch_size = 5');
$call->query_safe('SET ztest.slow = on');
$call->query_until(qr/started/, "\\echo started\nCALL zorder.optimize('t');\n");
ok( $node->poll_query_until($db,
		"SELECT EXISTS (SELECT FROM pg_locks WHERE pid = $call_pid AND NOT granted AND locktype = 'advisory')"
	),
	'the call holds in a batch after 20 moves');
my @ids = split /\n/,
  $node->safe_psql($db, 'SELECT id FROM t WHERE a > 8000 ORDER BY id LIMIT 6');
my $ids = join(', ', @ids);
my $update = "UPDATE t SET pad = pad || 'b' WHERE id IN ($ids)";
my $other = $node->background_psql($db, on_error_stop => 0);
my $other_pid = $other->query_safe('SELECT pg_backend_pid()');
chomp $other_pid;
$other->query_until(qr/other sent/, "\\echo other sent\n$update;\n\\echo other done\n");
ok( $node->poll_query_until($db,
		"SELECT EXISTS (SELECT FROM pg_locks WHERE pid = $other_pid AND NOT granted AND locktype = 'relation')"
	),
	'the UPDATE waits for the batch\'s lock');
$gate->query_safe('SELECT pg_advisory_unlock(4242)');
$gate->quit;
pump_until($other->{run}, $other->{timeout}, \$other->{stdout}, qr/other done/);
is($other->{stderr}, '', 'the UPDATE succeeded');
is( $node->safe_psql($db, qq(
SELECT count(*) FROM t WHERE id IN ($ids)
AND EXISTS (SELECT FROM zorder.sorted_runs r WHERE r."table" = 't'::regclass
            AND (ctid::text::point)[0] >= r.first_block
            AND (ctid::text::point)[0] < r.first_block + r.nblocks))),
	'6', 'the updated rows are on pages of the run');
$call->query_until(qr/call done/, "\\echo call done\n");
is($call->{stderr}, '', 'the call went to the end');
$other->quit;
$call->quit;
is($arrived->('t'), '2000', 'the call found the 2,000 new rows');
$node->safe_psql($db, "UPDATE t_copy SET pad = pad || 'b' WHERE id IN ($ids)");
my $expected = $node->safe_psql($db, $newcomers);
ok($expected >= 6, "rows a read of every page takes for newcomers: $expected");
$node->safe_psql($db, "CALL zorder.optimize('t')");
is($arrived->('t'), $expected,
	'the next call finds them all, the rows updated between two batches of the one before among them');
$holder->query_safe('COMMIT');
$holder->quit;

check_same_rows($node, $db, 'after the calls', 't', 'SELECT * FROM t_copy');
check_heap_and_indexes($node, $db, 'after the calls',
	indexes => [ 't_pkey', 't_slow' ]);

# a rewrite gives the table another file: the position was of the old one
my $old = $scan_lsn->('t');
$node->safe_psql($db, 'VACUUM FULL t');
$s = scan("CALL zorder.optimize('t')");
ok(defined $s && $s->{read} > 0 && $s->{unchanged} == 0,
	'the first call after VACUUM FULL reads every page of the runs');
is( $node->safe_psql($db,
		"SELECT mode FROM zorder.optimize_history WHERE \"table\" = 't'::regclass ORDER BY started_at DESC LIMIT 1"),
	'incremental', 'that call recognised the layout and went on incrementally');
my $new = $scan_lsn->('t');
ok($new ne 'none' && $new ne $old, 'and records a position of the new file');

# at wal_level replica a full rewrite records a position: every row it
# wrote is the run's, so the first call after it reads no page of the run
$node->append_conf('postgresql.conf', "wal_level = replica\nmax_wal_senders = 2\n");
$node->restart;
$node->safe_psql($db, "CALL zorder.optimize('t', full => true)");
my $lsn0 = $scan_lsn->('t');
isnt($lsn0, 'none', 'wal_level replica: a full optimize records a position');
$node->safe_psql($db, "CALL zorder.optimize('u', full => true)");
is($scan_lsn->('u'), 'none', 'but not for an unlogged table');
$node->safe_psql($db, "INSERT INTO t @{[ $gen->(22301, 22400) ]}");
$s = scan("CALL zorder.optimize('t')");
ok(defined $s && $s->{read} <= 1 && $s->{unchanged} > 0,
	"the first call after it reads no page of the run but its last, which the new rows may fill ($s->{read})");
is($arrived->('t'), '100', 'and finds the 100 new rows');
$node->safe_psql($db, "INSERT INTO t_copy @{[ $gen->(22301, 22400) ]}");

# rows inserted in a subtransaction of the rewrite's caller are newer than
# the run the rewrite writes them into: no position, so that the next call
# reads every page and finds them
$node->safe_psql($db, qq(
BEGIN;
SAVEPOINT s;
INSERT INTO t @{[ $gen->(22401, 22420) ]};
RELEASE s;
CALL zorder.optimize('t', full => true);
COMMIT;
));
$node->safe_psql($db, "INSERT INTO t_copy @{[ $gen->(22401, 22420) ]}");
is($scan_lsn->('t'), 'none',
	'a full optimize that writes rows newer than itself records no position');
$s = scan("CALL zorder.optimize('t')");
ok(defined $s && $s->{unchanged} == 0, 'the next call reads every page of the run');
is($arrived->('t'), '20', 'and finds the rows of the subtransaction');
check_same_rows($node, $db, 'at the end', 't', 'SELECT * FROM t_copy');
check_heap_and_indexes($node, $db, 'at the end',
	indexes => [ 't_pkey', 't_slow' ]);
check_same_rows($node, $db, 'after the rewrite', 't', 'SELECT * FROM t_copy');
check_heap_and_indexes($node, $db, 'after the rewrite',
	indexes => [ 't_pkey', 't_slow' ]);

$node->stop;
done_testing();
