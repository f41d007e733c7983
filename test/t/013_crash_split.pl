# Kill the server in the middle of an incremental optimize that places new
# rows into the ranges of the main run and splits full ones (the table has
# no reserved room: fillfactor 100, so every range its new rows go to
# splits).  After the restart the table has exactly its rows, the heap and
# indexes pass amcheck, the ranges in the catalog do not overlap and count
# the rows the heap holds, and the next calls put every row into a range.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $db = 'postgres';
my $node = PostgreSQL::Test::Cluster->new('split');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

$node->safe_psql($db, q(
CREATE EXTENSION zorder;
CREATE EXTENSION amcheck;
-- an index expression that is slow in the optimizing session keeps each
-- move long enough to be caught
CREATE FUNCTION slow(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
$$ BEGIN
  IF current_setting('ztest.slow', true) = 'on' THEN
    PERFORM pg_sleep(0.0005);
  END IF;
  RETURN $1;
END $$;
CREATE TABLE t (id int PRIMARY KEY, a int, b int, pad text);
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
CREATE FUNCTION wait_written(minval bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
  deadline timestamptz := clock_timestamp() + interval '150 s';
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    SELECT heap_tuples_written INTO n FROM pg_stat_progress_cluster
     WHERE relid = 't'::regclass;
    IF n >= minval THEN RETURN n; END IF;
    IF clock_timestamp() > deadline THEN RETURN -1; END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
));
my $ranges_before = $node->safe_psql($db,
	'SELECT count(*) FROM zorder.sorted_runs');

# batches of at most 300 rows besides a split: crash after a few committed
my $bg = $node->background_psql($db, on_error_stop => 0);
$bg->query_until(qr/started/,
	"SET zorder.max_batch_size = 300;\nSET ztest.slow = on;\n\\echo started\nCALL zorder.optimize('t');\n");
my $written = $node->safe_psql($db, 'SELECT wait_written(1500)');
ok($written >= 1500, "crashed mid-way through the splits: $written rows moved");
$node->stop('immediate');
eval { $bg->quit; };
$node->start;

sub rows_outside
{
	return $node->safe_psql(
		$db, q(
SELECT count(*) FROM t WHERE NOT EXISTS (
  SELECT FROM zorder.sorted_runs r
  WHERE (ctid::text::point)[0] >= r.first_block
    AND (ctid::text::point)[0] < r.first_block + r.nblocks)));
}

sub check
{
	my ($what) = @_;
	is( $node->safe_psql(
			$db,
			'SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL SELECT * FROM t_copy) d'),
		'0',
		"$what: no row changed or added");
	is( $node->safe_psql(
			$db,
			'SELECT count(*) FROM (SELECT * FROM t_copy EXCEPT ALL SELECT * FROM t) d'),
		'0',
		"$what: no row lost");
	is($node->safe_psql($db, 'SELECT count(*) FROM verify_heapam(\'t\')'),
		'0', "$what: verify_heapam finds nothing");
	foreach my $idx ('t_pkey', 't_slow')
	{
		my ($ret, $out, $err) =
		  $node->psql($db, "SELECT bt_index_check('$idx', true)");
		ok($ret == 0, "$what: bt_index_check passes for $idx") or diag($err);
	}
	is( $node->safe_psql(
			$db, q(
SELECT count(*) FROM zorder.sorted_runs r1, zorder.sorted_runs r2
WHERE r1.first_block < r2.first_block
  AND r1.first_block + r1.nblocks > r2.first_block)),
		'0',
		"$what: ranges do not overlap");
	is( $node->safe_psql(
			$db, q(
SELECT count(*) FROM zorder.sorted_runs
WHERE first_block % 4 <> 0 OR nblocks > 4)),
		'0',
		"$what: each range of the run is one BRIN range");
	# the catalog counts the rows each range holds (newer ones aside)
	is( $node->safe_psql(
			$db, q(
SELECT (SELECT sum(rows) FROM zorder.runs) = count(*)
FROM t JOIN zorder.runs c
  ON (t.ctid::text::point)[0] >= c.first_block
 AND (t.ctid::text::point)[0] < c.first_block + c.nblocks
WHERE t.xmin::text::bigint <= c.created_xid::text::bigint)),
		't', "$what: the ranges in the catalog match the heap");
	return;
}

check('after the crash');
ok($node->safe_psql($db, 'SELECT count(*) FROM zorder.sorted_runs')
	  > $ranges_before,
	'after the crash: the committed splits are recorded');
cmp_ok(rows_outside(), '>', 0,
	'after the crash: the rest of the new rows still wait');

# the next calls finish the job (each within its split budget)
for my $i (1 .. 10)
{
	last if rows_outside() eq '0';
	$node->safe_psql($db, 'VACUUM t');
	$node->safe_psql($db, 'CALL zorder.optimize(\'t\')');
}
check('after the next calls');
is(rows_outside(), '0', 'after the next calls: every row is in a range');
is($node->safe_psql($db, 'SELECT count(DISTINCT run) FROM zorder.sorted_runs'),
	'1', 'after the next calls: one run, no cube');

$node->stop;
done_testing();
