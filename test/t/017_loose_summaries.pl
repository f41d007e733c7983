# A BRIN summary made while rows that left its range were still visible to
# some snapshot covers their values too, and VACUUM never makes a
# summarized range's summary tight again.  An incremental call that moves
# rows while another session holds an older snapshot lists such ranges in
# zorder.layouts.loose_ranges, and the next call summarizes them again:
# then every summary is no wider than the rows of its range.  A snapshot
# that goes within a second of the call's end does not leave them loose:
# the call waits for it and summarizes them again itself.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $db = 'postgres';
my $node = new_node('loose', conf => "autovacuum = off\n",
	extensions => [ 'zorder', 'amcheck', 'pageinspect' ]);

$node->safe_psql($db, q(
CREATE TABLE t (id int PRIMARY KEY, a int, b int, pad text)
	WITH (fillfactor = 75);
INSERT INTO t SELECT g, (g::bigint * 7919) % 100003, (g::bigint * 104729) % 1009, md5(g::text)
FROM generate_series(1, 50000) g;
CREATE INDEX t_brin ON t USING brin (a, b) WITH (pages_per_range = 8);
SELECT zorder.cluster_by('t', 'a', 'b');
CALL zorder.optimize('t');
VACUUM t;
INSERT INTO t SELECT g, (g::bigint * 7919) % 100003, (g::bigint * 104729) % 1009, md5(g::text)
FROM generate_series(50001, 50500) g;
CREATE TABLE t_copy AS SELECT * FROM t;
));

# BRIN ranges whose summary of a is wider than the values of their rows
my $wider = q(
WITH pages AS (
	SELECT p FROM generate_series(1, (pg_relation_size('t_brin') / 8192)::int - 1) p
	WHERE brin_page_type(get_raw_page('t_brin', p)) = 'regular'),
items AS (
	SELECT i.blknum, i.value
	FROM pages, LATERAL brin_page_items(get_raw_page('t_brin', p), 't_brin') i
	WHERE i.attnum = 1 AND NOT i.allnulls),
summary AS (
	SELECT blknum, substring(value from '^\{(-?\d+) ')::int AS lo,
		   substring(value from ' (-?\d+)\}$')::int AS hi
	FROM items),
heap AS (
	SELECT (ctid::text::point)[0]::int / 8 * 8 AS blk, min(a) AS lo, max(a) AS hi
	FROM t GROUP BY 1)
SELECT count(*) FILTER (WHERE summary.lo < heap.lo OR summary.hi > heap.hi)
FROM heap JOIN summary ON summary.blknum = heap.blk);

# another session holds a snapshot from before the call
my $old = $node->background_psql($db);
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$old->query_safe('SELECT count(*) FROM t');

$node->safe_psql($db, 'CALL zorder.optimize(\'t\')');
$node->safe_psql($db, 'VACUUM t');
cmp_ok($node->safe_psql($db, $wider), '>', 0,
	'with an older snapshot held: a summary covers the rows that left');
is( $node->safe_psql($db,
		q(SELECT cardinality(loose_ranges) > 0 FROM zorder.layouts WHERE relid = 't'::regclass)),
	't', 'the call listed its loose ranges');

# the snapshot goes; VACUUM alone leaves the summaries as they are
$old->query_safe('COMMIT');
$old->quit;
$node->safe_psql($db, 'VACUUM t');
cmp_ok($node->safe_psql($db, $wider), '>', 0,
	'VACUUM leaves a loose summary loose');

# the next call summarizes them again
$node->safe_psql($db, 'CALL zorder.optimize(\'t\')');
is($node->safe_psql($db, $wider), '0',
	'after the next call: no summary wider than its rows');
is( $node->safe_psql($db,
		q(SELECT loose_ranges IS NULL FROM zorder.layouts WHERE relid = 't'::regclass)),
	't', 'after the next call: none listed');

# a snapshot that goes while the call ends: the call waits for it (up to a
# second), and no summary is left loose
$node->safe_psql($db, q(
INSERT INTO t SELECT g, (g::bigint * 7919) % 100003, (g::bigint * 104729) % 1009, md5(g::text)
FROM generate_series(50501, 51000) g;
INSERT INTO t_copy SELECT * FROM t WHERE id > 50500;
));
# The session with the snapshot ends it as soon as the call waits at its
# end (wait event "Extension"), polled every 10 ms: it goes within the
# second however busy the machine is.
my $short = $node->background_psql($db);
$short->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$short->query_safe('SELECT count(*) FROM t');
$short->query_until(qr/watching/, q(\echo watching
DO $$
DECLARE
  deadline timestamptz := clock_timestamp() + interval '150 s';
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity
                      WHERE query LIKE 'CALL zorder.optimize%'
                        AND wait_event_type = 'Extension');
    IF clock_timestamp() > deadline THEN
      RAISE EXCEPTION 'the call never waited at its end';
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
COMMIT;
\echo snapshot gone
));
$node->safe_psql($db, 'CALL zorder.optimize(\'t\')');
ok(pump_until($short->{run}, $short->{timeout}, \$short->{stdout}, qr/snapshot gone/),
	'a snapshot that goes: it went while the call waited');
is($short->{stderr}, '', 'a snapshot that goes: the session saw the call wait');
$short->quit;
is( $node->safe_psql($db,
		q(SELECT rows_moved >= 500 FROM zorder.optimize_history
		  WHERE "table" = 't'::regclass ORDER BY started_at DESC LIMIT 1)),
	't', 'a snapshot that goes: the call moved the new rows');
is($node->safe_psql($db, $wider), '0',
	'a snapshot that goes: no summary wider than its rows');
is( $node->safe_psql($db,
		q(SELECT loose_ranges IS NULL FROM zorder.layouts WHERE relid = 't'::regclass)),
	't', 'a snapshot that goes: none listed');

check_same_rows($node, $db, 'after the calls', 't', 'SELECT * FROM t_copy');
check_heap_and_indexes($node, $db, 'after the calls', indexes => [ 't_pkey' ]);

$node->stop;
done_testing();
