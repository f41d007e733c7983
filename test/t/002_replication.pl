# zorder.optimize under replication.
#
# Logical replication: a full optimize is a rewrite, which a logical
# decoding slot does not see, so the subscriber's rows must not change at
# all (same xmin, same ctid).  An incremental optimize moves rows by a heap
# DELETE of the old version and an INSERT of a copy: the subscriber must
# apply exactly those, row for row, TOASTed values included, batch after
# batch, also with other sessions updating and deleting rows between the
# batches.  In the end its rows equal the publisher's.
#
# Two checks show that a move is refused where a publication would get only
# half of it: a table without a replica identity (the delete would be
# dropped, the subscriber would keep the row twice) and a publication of
# inserts only (the insert would be a duplicate key and stop the
# subscription).  The optimize refuses, as a DELETE on such a table does.
#
# Streaming replication: a standby that replayed a full and an incremental
# optimize returns the same rows as the primary, through a BRIN index too,
# and its heap and indexes pass amcheck.  Once promoted, it can optimize
# the table itself, fully and incrementally, without changing a row.
#
# About 25 seconds on two cores.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $db = 'postgres';

# The tables of both parts.  A row's "big" value goes to the TOAST table
# (200 md5 digests, 6,400 bytes that pglz cannot shrink by a quarter).
my $create_t = q(
CREATE TABLE t (id int PRIMARY KEY, a int, b int, s text, big text);
CREATE INDEX t_s ON t (s);
CREATE INDEX t_brin ON t USING brin (a, b) WITH (pages_per_range = 4);
);

# Rows from..to of t.
sub rows_sql
{
	my ($from, $to) = @_;
	return qq(
INSERT INTO t
  SELECT i, ((i::bigint * 7919) % 1000)::int, ((i::bigint * 104729) % 997)::int,
         md5(i::text),
         CASE WHEN i % 40 = 0 THEN
           (SELECT string_agg(md5(i::text || g::text), '')
              FROM generate_series(1, 200) g) END
  FROM generate_series($from, $to) i;
);
}

# The whole content of a table, and its row count.
sub content
{
	my ($node, $table) = @_;
	$table //= 't';
	return $node->safe_psql($db,
		"SELECT count(*) || ' ' || coalesce(md5(string_agg($table\::text, ',' ORDER BY $table\::text)), '-') FROM $table"
	);
}

# Where each row version of t is: (id, xmin, ctid), hashed.
sub placement
{
	my ($node) = @_;
	return $node->safe_psql($db,
		q(SELECT md5(string_agg(id || ':' || xmin || ':' || ctid, ',' ORDER BY id)) FROM t)
	);
}

sub last_history
{
	my ($node, $table) = @_;
	return $node->safe_psql($db,
		qq(SELECT mode || ' ' || rows_moved FROM zorder.optimize_history
		   WHERE "table" = '$table'::regclass ORDER BY started_at DESC LIMIT 1)
	);
}

sub heap_problems
{
	my ($node, $table) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) FROM verify_heapam('$table', check_toast => true)");
}

sub index_check
{
	my ($node, $what) = @_;
	foreach my $idx ('t_pkey', 't_s')
	{
		my ($ret, $out, $err) =
		  $node->psql($db, "SELECT bt_index_check('$idx', true)");
		ok($ret == 0 && $err eq '', "$what: bt_index_check passes for $idx")
		  or diag($err);
	}
	return;
}

# =====================================================================
# Logical replication
# =====================================================================

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->append_conf('postgresql.conf', "autovacuum = off\n");
$pub->start;

my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
$sub->append_conf('postgresql.conf', "autovacuum = off\n");
$sub->start;

$pub->safe_psql($db,
	"CREATE EXTENSION zorder; CREATE EXTENSION amcheck; $create_t"
	  . rows_sql(1, 4000)
	  . q(
-- a table without a primary key: its deletes cannot be replicated
CREATE TABLE nopk (a int, b int);
INSERT INTO nopk SELECT i % 97, i % 89 FROM generate_series(1, 2000) i;
SELECT zorder.cluster_by('t', 'a', 'b'), zorder.cluster_by('nopk', 'a', 'b');
-- a row in it after an optimize makes catching up mean that the subscriber
-- has applied everything the optimize sent
CREATE TABLE marker (id int PRIMARY KEY);
CREATE PUBLICATION pub FOR TABLE t, nopk, marker;
));
ok( $pub->safe_psql($db,
		q(SELECT pg_relation_size(reltoastrelid) > 50 * 8192 FROM pg_class WHERE oid = 't'::regclass)
	) eq 't',
	't has values in its TOAST table');

$sub->safe_psql($db,
	"CREATE EXTENSION amcheck; $create_t
CREATE TABLE nopk (a int, b int);
CREATE TABLE marker (id int PRIMARY KEY);");
my $pubconn = $pub->connstr;
$sub->safe_psql($db,
	"CREATE SUBSCRIPTION sub CONNECTION '$pubconn dbname=$db' PUBLICATION pub");
$sub->wait_for_subscription_sync($pub, 'sub');
is(content($sub), content($pub), 'initial sync: the subscriber has the rows');

# --- full optimize: a rewrite, invisible to the subscriber ---------------

my $sub_placement = placement($sub);
my $filenode = $pub->safe_psql($db, "SELECT pg_relation_filenode('t')");
my $pub_content = content($pub);
$pub->safe_psql($db, "CALL zorder.optimize('t')");
isnt($pub->safe_psql($db, "SELECT pg_relation_filenode('t')"),
	$filenode, 'full optimize: the publisher rewrote t');
is(last_history($pub, 't'), 'full 4000', 'full optimize: history');
is(content($pub), $pub_content, 'full optimize: publisher rows unchanged');

# Commit a row on the publisher and wait until the subscriber has it.
my $marks = 0;
sub sync_sub
{
	$marks++;
	$pub->safe_psql($db, "INSERT INTO marker VALUES ($marks)");
	$pub->wait_for_catchup('sub');
	die "the subscriber did not apply marker $marks"
	  unless $sub->safe_psql($db, "SELECT count(*) FROM marker WHERE id = $marks") eq '1';
	return;
}

sync_sub();
is(content($sub), content($pub),
	'full optimize: subscriber rows equal the publisher\'s');
is(placement($sub), $sub_placement,
	'full optimize: no row of the subscriber was touched (same xmin and ctid)');

# --- incremental optimize in batches of 50 --------------------------------

# Free space inside the run, rows appended (some land in that free space),
# some updated and deleted, the old and the new ones.
$pub->safe_psql($db, 'DELETE FROM t WHERE id % 10 = 3; VACUUM t;');
$pub->safe_psql($db, rows_sql(4001, 5000));
$pub->safe_psql($db, q(
UPDATE t SET s = s || '!' WHERE id % 250 = 7;
UPDATE t SET big = big || 'x' WHERE id % 1000 = 0;
DELETE FROM t WHERE id % 500 = 11;
));
ok( $pub->safe_psql($db,
		q(SELECT count(*) > 0 FROM t, zorder.sorted_runs r
		  WHERE r."table" = 't'::regclass AND id > 4000
		    AND (ctid::text::point)[0] < r.first_block + r.nblocks)
	) eq 't',
	'incremental: some new rows landed in free space inside the run');
sync_sub();
is(content($sub), content($pub), 'before the incremental optimize: same rows');

# Which rows the optimize moves: on the publisher those whose ctid
# changes, on the subscriber those whose xmin changes (it applies a delete
# and an insert).
$pub->safe_psql($db, 'CREATE TABLE loc_before AS SELECT id, ctid AS loc FROM t');
$sub->safe_psql($db, 'CREATE TABLE xmin_before AS SELECT id, xmin::text AS x FROM t');
$pub_content = content($pub);
$pub->safe_psql($db,
	"SET zorder.merge_threshold = 1; SET zorder.max_batch_size = 50; CALL zorder.optimize('t')");
my ($mode, $moved) = split / /, last_history($pub, 't');
is($mode, 'incremental', 'incremental: history says incremental');
ok($moved >= 1000, "incremental: at least the 1000 new rows moved ($moved)");
is(content($pub), $pub_content, 'incremental: publisher rows unchanged');
sync_sub();
is(content($sub), content($pub),
	'incremental: subscriber rows equal the publisher\'s');

my $pub_moved = $pub->safe_psql($db,
	q(SELECT count(*) || ' ' || md5(string_agg(id::text, ',' ORDER BY id))
	  FROM t JOIN loc_before USING (id) WHERE t.ctid <> loc));
my $sub_moved = $sub->safe_psql($db,
	q(SELECT count(*) || ' ' || md5(string_agg(id::text, ',' ORDER BY id))
	  FROM t JOIN xmin_before USING (id) WHERE t.xmin::text <> x));
like($pub_moved, qr/^$moved /,
	'incremental: as many rows changed place as the history says');
is($sub_moved, $pub_moved,
	'incremental: the subscriber rewrote exactly the moved rows');
is( $pub->safe_psql($db,
		q(SELECT count(*) FROM pg_stat_replication WHERE application_name = 'sub' AND state = 'streaming')
	),
	'1',
	'incremental: the subscription is still streaming');
is(heap_problems($pub, 't'), '0', 'incremental: verify_heapam on the publisher');
is(heap_problems($sub, 't'), '0', 'incremental: verify_heapam on the subscriber');
index_check($sub, 'incremental, subscriber');

# --- a merge into the main run: every row moves, in batches ---------------

$pub->safe_psql($db, rows_sql(8001, 8200));
$pub_content = content($pub);
$pub->safe_psql($db,
	"SET zorder.merge_threshold = 0; SET zorder.max_batch_size = 400; CALL zorder.optimize('t')");
($mode, $moved) = split / /, last_history($pub, 't');
ok($mode eq 'merge' && $moved >= 4000, "merge: history says merge ($mode $moved)");
is(content($pub), $pub_content, 'merge: publisher rows unchanged');
sync_sub();
is(content($sub), content($pub), 'merge: subscriber rows equal the publisher\'s');
is(heap_problems($pub, 't'), '0', 'merge: verify_heapam on the publisher');
is(heap_problems($sub, 't'), '0', 'merge: verify_heapam on the subscriber');
index_check($sub, 'merge, subscriber');

# --- the same while other sessions change rows between the batches -------

# 2,000 new rows, moved in batches of 20; meanwhile two other sessions take
# turns at updating and deleting rows, new and old, one transaction at a
# time, each between two batches.  Nothing here depends on timing: an index
# on slow(id) makes every move of a new row take advisory lock 4242 for a
# moment, so the optimize cannot get past its next move while a session
# holds that lock.  The sessions hand the lock on: the optimize waits on it
# in a batch (holding its lock on t); the next session's change waits for
# that batch; the lock's holder lets go; the batch commits, the change runs
# and takes the lock before it commits, and the optimize waits on it again
# in its next batch, still at work.
$pub->safe_psql($db, q(
CREATE FUNCTION slow(int) RETURNS int IMMUTABLE LANGUAGE plpgsql
  AS $$BEGIN
    PERFORM pg_advisory_lock_shared(4242);
    PERFORM pg_advisory_unlock_shared(4242);
    RETURN $1;
  END$$;
CREATE INDEX t_slow ON t (slow(id)) WHERE id > 5000;
));
$pub->safe_psql($db, rows_sql(5001, 7000));

# whether session $pid waits for a lock of type $type
sub waits_for
{
	my ($pid, $type) = @_;
	return $pub->poll_query_until($db, qq(
SELECT EXISTS (SELECT 1 FROM pg_locks
               WHERE pid = $pid AND NOT granted AND locktype = '$type')));
}

my @turn = map { $pub->background_psql($db, on_error_stop => 0) } 0 .. 1;
my @turn_pid = map { my $p = $_->query_safe('SELECT pg_backend_pid()'); chomp $p; $p } @turn;
$turn[0]->query_safe('SELECT pg_advisory_lock(4242)');

my $bg = $pub->background_psql($db, on_error_stop => 0);
my $opt_pid = $bg->query_safe('SELECT pg_backend_pid()');
chomp $opt_pid;
$bg->query_until(qr/optimize started/,
	"\\echo optimize started\nSET zorder.placement = off;\nSET zorder.max_batch_size = 20;\nCALL zorder.optimize('t');\n\\echo optimize done\n"
);
ok(waits_for($opt_pid, 'advisory'), 'concurrent: the optimize waits in its first batch');
my $during = 0;
foreach my $k (1 .. 20)
{
	my ($cur, $prev) = ($turn[$k % 2], $turn[($k - 1) % 2]);
	my $id = 5000 + 97 * $k;
	my $old = 37 * $k;
	$cur->query_until(qr/change $k sent/, qq(\\echo change $k sent
BEGIN;
UPDATE t SET a = a + 1, s = 'changed $k' WHERE id = $id;
DELETE FROM t WHERE id = $id + 1;
UPDATE t SET big = repeat('y', 3000) WHERE id = $old;
SELECT pg_advisory_lock(4242);
COMMIT;
\\echo change $k done
));
	# the change waits for the batch, which waits for the lock
	waits_for($turn_pid[$k % 2], 'relation')
	  or die "change $k does not wait for the optimize's batch";
	$prev->query_safe('SELECT pg_advisory_unlock(4242)');
	pump_until($cur->{run}, $cur->{timeout}, \$cur->{stdout}, qr/change $k done/)
	  or die "change $k did not finish";
	$cur->{stdout} = '';
	# the optimize is still at work: waiting in its next batch
	$during += waits_for($opt_pid, 'advisory')
	  && $pub->safe_psql($db,
		"SELECT count(*) FROM pg_stat_progress_cluster WHERE relid = 't'::regclass") eq '1';
}
$turn[0]->query_safe('SELECT pg_advisory_unlock(4242)');
ok(pump_until($bg->{run}, $bg->{timeout}, \$bg->{stdout}, qr/optimize done/),
	'concurrent: the optimize completes');
is($during, 20,
	"concurrent: every change was made between two batches of the optimize");
is($turn[0]->{stderr} . $turn[1]->{stderr}, '', 'concurrent: the changes report no error');
$_->quit foreach @turn;
is($bg->{stderr}, '', 'concurrent: the optimize reports no error');
$bg->quit;
($mode, $moved) = split / /, last_history($pub, 't');
ok(($mode eq 'incremental' || $mode eq 'merge') && $moved >= 1900,
	"concurrent: the optimize was incremental and moved the new rows ($mode $moved)");
is( $pub->safe_psql($db,
		q(SELECT count(*) || ' ' || count(*) FILTER (WHERE s LIKE 'changed %')
		  FROM t WHERE id BETWEEN 5001 AND 7000)),
	'1980 20',
	'concurrent: every update and delete took effect');
sync_sub();
is(content($sub), content($pub),
	'concurrent: subscriber rows equal the publisher\'s');
is(heap_problems($pub, 't'), '0', 'concurrent: verify_heapam on the publisher');
is(heap_problems($sub, 't'), '0', 'concurrent: verify_heapam on the subscriber');
index_check($pub, 'concurrent, publisher');
index_check($sub, 'concurrent, subscriber');
$pub->safe_psql($db, 'DROP INDEX t_slow');

# --- publications that would see half of a move -----------------------------

# A DELETE on nopk fails on the publisher ("does not have a replica
# identity and publishes deletes").  A move must not slip past that check:
# pgoutput drops a delete without an old key, the subscriber gets only the
# insert, and the row twice.  Either the optimize refuses, or the
# subscriber ends with the publisher's rows.
{
	$pub->safe_psql($db, "CALL zorder.optimize('nopk')");
	$pub->safe_psql($db,
		'INSERT INTO nopk SELECT i % 97, i % 89 FROM generate_series(1, 300) i');
	my ($ret, $out, $err) = $pub->psql($db, "CALL zorder.optimize('nopk')");
	note "incremental optimize of nopk: ret $ret, $err";
	sync_sub();
	ok( ($ret != 0 && $err =~ /replica identity/)
		  || content($sub, 'nopk') eq content($pub, 'nopk'),
		'no replica identity: the optimize refuses, or the subscriber has the same rows'
	  )
	  or diag('publisher '
		  . content($pub, 'nopk')
		  . ', subscriber '
		  . content($sub, 'nopk'));
}

# A publication of inserts only (an append-only table copied to an
# analytics server): the subscriber would get each moved row as a new
# insert, a duplicate key, and its apply worker would fail on it again and
# again.  Either the optimize refuses, or the subscription goes on.
{
	$pub->safe_psql($db, q(
CREATE TABLE ins (id int PRIMARY KEY, a int, b int);
INSERT INTO ins SELECT i, i % 97, i % 89 FROM generate_series(1, 1000) i;
SELECT zorder.cluster_by('ins', 'a', 'b');
CALL zorder.optimize('ins');
CREATE PUBLICATION pub_ins FOR TABLE ins WITH (publish = 'insert');
));
	$sub->safe_psql($db, 'CREATE TABLE ins (id int PRIMARY KEY, a int, b int)');
	$sub->safe_psql($db,
		"CREATE SUBSCRIPTION sub_ins CONNECTION '$pubconn dbname=$db' PUBLICATION pub_ins"
	);
	$sub->wait_for_subscription_sync($pub, 'sub_ins');
	$pub->safe_psql($db,
		'INSERT INTO ins SELECT i, i % 97, i % 89 FROM generate_series(1001, 1200) i'
	);
	my $offset = -s $sub->logfile;
	my ($ret, $out, $err) = $pub->psql($db, "CALL zorder.optimize('ins')");
	note "incremental optimize of ins: ret $ret, $err";
	$pub->safe_psql($db, 'INSERT INTO ins VALUES (99999, 0, 0)');

	# the last row arrives, or the apply worker fails
	my $state = 'timeout';
	foreach (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		if ($sub->safe_psql($db, 'SELECT count(*) FROM ins WHERE id = 99999') eq '1')
		{
			$state = 'applied';
			last;
		}
		if ($sub->log_contains(qr/duplicate key value violates unique constraint "ins_pkey"/, $offset))
		{
			$state = 'apply failed with a duplicate key';
			last;
		}
		usleep(100_000);
	}
	note "subscription of inserts only: $state";
	ok( ($ret != 0 && $err =~ /publication/)
		  || ($state eq 'applied' && content($sub, 'ins') eq content($pub, 'ins')),
		'inserts only: the optimize refuses, or the subscriber has the same rows'
	) or diag("subscription: $state");
	$sub->safe_psql($db, 'DROP SUBSCRIPTION sub_ins');
}

$sub->stop;
$pub->stop;

# =====================================================================
# Streaming replication
# =====================================================================

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "autovacuum = off\n");
$primary->start;
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

$primary->safe_psql($db,
	"CREATE EXTENSION zorder; CREATE EXTENSION amcheck; $create_t"
	  . rows_sql(1, 6000)
	  . q(SELECT zorder.cluster_by('t', 'a', 'b');));

# Same rows, plans and results on both; amcheck on the standby.
sub compare_standby
{
	my ($what) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my $c = content($primary);
	is(content($standby), $c, "$what: the standby has the primary's rows");

	my $filter = q(SET enable_seqscan = off;
SELECT count(*) || ' ' || coalesce(sum(id), 0) FROM t WHERE a = 417;
SELECT count(*) || ' ' || coalesce(sum(id), 0) FROM t WHERE b = 23;
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE a = 417;);
	my $on_primary = $primary->safe_psql($db, $filter);
	like($on_primary, qr/Bitmap Index Scan on t_brin/,
		"$what: the point filter reads t_brin");
	like($on_primary, qr/^[1-9]\d* \d+\n[1-9]\d* \d+\n/,
		"$what: the point filters find rows");
	is($standby->safe_psql($db, $filter),
		$on_primary, "$what: the standby's point filters return the same");

	my $runs = q(SELECT string_agg(first_block || '+' || nblocks || ':' || rows, ' '
	  ORDER BY first_block) FROM zorder.sorted_runs);
	is($standby->safe_psql($db, $runs),
		$primary->safe_psql($db, $runs), "$what: the standby has the same sorted runs");

	is(heap_problems($standby, 't'), '0', "$what: verify_heapam on the standby");
	index_check($standby, "$what, standby");
	return;
}

my $content = content($primary);
$primary->safe_psql($db, "CALL zorder.optimize('t')");
is(last_history($primary, 't'), 'full 6000', 'primary: full optimize');
is(content($primary), $content, 'primary: full optimize kept the rows');
compare_standby('after the full optimize');

$primary->safe_psql($db, rows_sql(6001, 7000));
$primary->safe_psql($db, q(UPDATE t SET s = s || '!' WHERE id % 300 = 5));
$content = content($primary);
$primary->safe_psql($db,
	"SET zorder.merge_threshold = 1; SET zorder.max_batch_size = 50; CALL zorder.optimize('t')");
($mode, $moved) = split / /, last_history($primary, 't');
# the 1,000 new rows and 20 updated ones, but for those already where they
# belong: here the updated rows, which stay on their pages (updated in the
# room zorder keeps there), and 60 new rows at the run's end
ok($mode eq 'incremental' && $moved >= 900,
	"primary: incremental optimize ($mode $moved)");
is(content($primary), $content, 'primary: the incremental optimize kept the rows');
compare_standby('after the incremental optimize');

# a merge into the main run moves every row, reusing the pages it empties
$primary->safe_psql($db, rows_sql(7501, 7800));
$content = content($primary);
$primary->safe_psql($db,
	"SET zorder.merge_threshold = 0; SET zorder.max_batch_size = 300; CALL zorder.optimize('t')");
($mode, $moved) = split / /, last_history($primary, 't');
ok($mode eq 'merge' && $moved >= 7000, "primary: merge ($mode $moved)");
is(content($primary), $content, 'primary: the merge kept the rows');
compare_standby('after the merge');

# --- a standby refuses, with a clear error --------------------------------

foreach my $call ("CALL zorder.optimize('t')",
	"CALL zorder.optimize('t', full => true)",
	"SELECT zorder.cluster_by('t', 'b', 'a')")
{
	my ($ret, $out, $err) = $standby->psql($db, $call);
	ok($ret != 0 && $err =~ /cannot execute zorder\.\w+ during recovery/,
		"standby: $call is refused") or diag($err);
}

# --- the promoted standby optimizes on its own ----------------------------

$standby->promote;
$standby->poll_query_until($db, 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby did not leave recovery';
$content = content($standby);
$filenode = $standby->safe_psql($db, "SELECT pg_relation_filenode('t')");
$standby->safe_psql($db, "CALL zorder.optimize('t', full => true)");
isnt($standby->safe_psql($db, "SELECT pg_relation_filenode('t')"),
	$filenode, 'promoted: full optimize rewrote t');
is(last_history($standby, 't'), 'full ' . $content =~ s/ .*//r,
	'promoted: history of the full optimize');
is(content($standby), $content, 'promoted: full optimize kept the rows');

$standby->safe_psql($db, rows_sql(7001, 7500));
$content = content($standby);
$standby->safe_psql($db,
	"SET zorder.merge_threshold = 1; SET zorder.placement = off; SET zorder.max_batch_size = 50; CALL zorder.optimize('t')");
is(last_history($standby, 't'), 'incremental 500',
	'promoted: the incremental optimize moved the 500 new rows');
is(content($standby), $content, 'promoted: incremental optimize kept the rows');
is(heap_problems($standby, 't'), '0', 'promoted: verify_heapam');
index_check($standby, 'promoted');

$standby->stop;
$primary->stop;
done_testing();
