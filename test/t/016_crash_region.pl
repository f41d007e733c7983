# Kill the server in the middle of the incremental optimize that opens a
# region for time-ordered keys (new rows beyond every t the table had) and
# places its new rows there, batch by batch.  The region, the shifted keys
# of the ranges before it and the first batch's moves commit together: after
# the restart the table has exactly its rows, the heap and indexes pass
# amcheck, the ranges do not overlap and count the rows the heap holds,
# every row lies on a range of the region its t gives, and the next calls
# put every row into a range.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $db = 'postgres';
my $node = new_node('region', conf => "autovacuum = off\n");
# an index expression that is slow in the optimizing session keeps each
# move long enough to be caught
install_slow_function($node, $db, 0.0005);
install_wait_written($node, $db, 't', 0.01);

$node->safe_psql($db, q(
CREATE TABLE t (id int PRIMARY KEY, ts bigint, b int, pad text)
	WITH (fillfactor = 90);
INSERT INTO t SELECT g, g * 10, (g::bigint * 104729) % 1009, md5(g::text)
FROM generate_series(1, 20000) g;
CREATE INDEX t_brin ON t USING brin (ts, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('t', 'ts', 'b');
CALL zorder.optimize('t');
VACUUM t;
INSERT INTO t SELECT g, g * 10, (g::bigint * 104729) % 1009, md5(g::text)
FROM generate_series(20001, 23000) g;
CREATE INDEX t_slow ON t (slow(b));
CREATE TABLE t_copy AS SELECT * FROM t;
));
is($node->safe_psql($db,
		q(SELECT region_keys IS NULL FROM zorder.layouts WHERE relid = 't'::regclass)),
	't', 'before: no region');

# batches of at most 300 rows: crash after a few committed
my $bg = $node->background_psql($db, on_error_stop => 0);
$bg->query_until(qr/started/,
	"SET zorder.max_batch_size = 300;\nSET ztest.slow = on;\n\\echo started\nCALL zorder.optimize('t');\n");
# frozen where the count is seen: the rest of the call takes about two
# seconds, which a psql round trip and pg_ctl can take on a busy machine
my ($written, $pid) = freeze_written($node, $db, 900);
ok($written >= 900, "crashed mid-way through the call: $written rows moved");
crash_frozen($node, $pid);
eval { $bg->quit; };
$node->start;

sub rows_outside
{
	return rows_outside_runs($node, $db, 't');
}

# rows of a range (not newer than it: new rows that INSERT put there wait
# to be placed) whose keys start in another region than the row's ts gives
# (a bigint's start is kept as the value itself)
sub rows_on_another_region
{
	return $node->safe_psql(
		$db, q(
WITH r AS (
	SELECT first_block, nblocks, created_xid,
		   floor((key_lo::numeric + 9223372036854775808) / 72057594037927936)::int AS region
	FROM zorder.runs WHERE relid = 't'::regclass AND run = 0),
s AS (SELECT region_starts FROM zorder.layouts WHERE relid = 't'::regclass)
SELECT count(*) FILTER (WHERE r.region <> (
			SELECT count(*) FROM unnest(s.region_starts) st WHERE t.ts > st))
FROM t, r, s
WHERE (t.ctid::text::point)[0] >= r.first_block
  AND (t.ctid::text::point)[0] < r.first_block + r.nblocks
  AND t.xmin::text::bigint <= r.created_xid::text::bigint));
}

sub check
{
	my ($what) = @_;
	check_same_rows($node, $db, $what, 't', 'SELECT * FROM t_copy');
	check_heap_and_indexes($node, $db, $what, indexes => [ 't_pkey', 't_slow' ]);
	check_runs_do_not_overlap($node, $db, $what);
	check_catalog_matches_heap($node, $db, $what, 't');
	is(rows_on_another_region(), '0',
		"$what: every row on a range of its region");
	return;
}

check('after the crash');
is( $node->safe_psql(
		$db, q(
SELECT region_keys = '{1}' AND region_starts = '{200000}'
FROM zorder.layouts WHERE relid = 't'::regclass)),
	't',
	'after the crash: the region committed with the first batch, from the highest ts before');
cmp_ok(rows_outside(), '>', 0,
	'after the crash: the rest of the new rows still wait');

my $calls = 0;
while (rows_outside() ne '0' && $calls < 10)
{
	$node->safe_psql($db, 'VACUUM t');
	$node->safe_psql($db, 'CALL zorder.optimize(\'t\')');
	$calls++;
}
note("$calls calls after the crash placed the rest");
check('after the next calls');
is(rows_outside(), '0', 'after the next calls: every row is in a range');
is( $node->safe_psql(
		$db, q(SELECT cardinality(region_keys) FROM zorder.layouts WHERE relid = 't'::regclass)),
	'1', 'after the next calls: still one region');

$node->stop;
done_testing();
