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

my $db = 'postgres';
my $node = PostgreSQL::Test::Cluster->new('inc');
$node->init;
# first a call that makes a cube; a merge into the main run comes after
$node->append_conf('postgresql.conf',
	"autovacuum = off\nzorder.merge_threshold = 1\nzorder.placement = off\n");
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
SELECT zorder.cluster_by('t', 'a', 'b');
CALL zorder.optimize('t');
VACUUM t;
INSERT INTO t SELECT g, (g::bigint * 7919) % 10007, (g::bigint * 104729) % 10009, md5(g::text)
FROM generate_series(20001, 24000) g;
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

my $toid = $node->safe_psql($db, "SELECT 't'::regclass::oid");

# batches of 500: wait until two have committed, then crash in the third
my $bg = $node->background_psql($db, on_error_stop => 0);
$bg->query_until(qr/started/,
	"SET zorder.max_batch_size = 500;\nSET ztest.slow = on;\n\\echo started\nCALL zorder.optimize('t');\n");
my $written = $node->safe_psql($db, 'SELECT wait_written(1100)');
ok($written >= 1100 && $written < 4000,
	"crashed mid-way: $written of 4000 rows moved");
$node->stop('immediate');
eval { $bg->quit; };
$node->start;

# Rows on no page of a sorted run.
sub rows_outside
{
	return $node->safe_psql(
		$db, q(
SELECT count(*) FROM t WHERE NOT EXISTS (
  SELECT FROM zorder.sorted_runs r
  WHERE (ctid::text::point)[0] >= r.first_block
    AND (ctid::text::point)[0] < r.first_block + r.nblocks)));
}

# What the catalog records is what the heap holds: as many rows in the
# runs as it says (rows that came into a run after it was written aside).
sub catalog_matches
{
	my ($what) = @_;
	is( $node->safe_psql(
			$db, q(
SELECT (SELECT sum(rows) FROM zorder.runs) = count(*)
FROM t JOIN zorder.runs c
  ON (t.ctid::text::point)[0] >= c.first_block
 AND (t.ctid::text::point)[0] < c.first_block + c.nblocks
WHERE t.xmin::text::bigint <= c.created_xid::text::bigint)),
		't', "$what: the runs in the catalog match the heap");
	return;
}

sub same_rows
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
		"$what: sorted runs do not overlap");
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
$written = $node->safe_psql($db, 'SELECT wait_written(6000)');
ok($written >= 6000 && $written < 26000,
	"merge: crashed mid-way: $written rows moved");
$node->stop('immediate');
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
