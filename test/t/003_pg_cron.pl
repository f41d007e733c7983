# zorder.optimize run by pg_cron.
#
# The way to keep a table clustered while rows keep coming: a pg_cron job
# that calls the incremental optimize now and then.  The job's command must
# be the CALL alone.  pg_cron sends a job's command as one query string;
# with two statements in it PostgreSQL runs them in one implicit transaction
# block, where a procedure cannot commit: the optimize then does all its
# batches in one transaction and holds its lock (which makes writers wait)
# until the end, as inside BEGIN ... COMMIT.  The second job below shows it.
#
# pg_cron runs jobs through libpq connections to cron.host (the test node's
# socket directory).  The jobs are scheduled '@reboot' and the server is
# restarted: pg_cron runs each exactly once, as it starts, in every version
# (1.4 in Debian 12 and later).  A recurring schedule runs a job again when
# its time comes, whatever the test is doing: with '5 seconds' (pg_cron 1.5
# and later) the first run and the four psql calls that see both jobs end
# and unschedule them had to fit in the 5 seconds before the second run,
# which on a busy machine added an incremental call that moved nothing to
# the history; '* * * * *' (all 1.4 knows besides @reboot) waited up to a
# minute for its tick.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# Debian packages pg_cron for some majors only (not yet for 19).
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
plan skip_all => "pg_cron is not installed for this PostgreSQL ($sharedir)"
  unless -f "$sharedir/extension/pg_cron.control";

my $db = 'postgres';
my $node = PostgreSQL::Test::Cluster->new('cron');
$node->init;
my $host = $node->host;
$node->append_conf(
	'postgresql.conf', qq(
shared_preload_libraries = 'pg_cron, zorder'
cron.database_name = '$db'
cron.host = '$host'
autovacuum = off
# cubes only: the job must move exactly the new rows (merges into the main
# run are tested in sql/merge.sql)
zorder.merge_threshold = 1
zorder.placement = off
));
$node->start;

# t: 3,000 rows, optimized, then 500 appended.  t2: the same, for the job
# with two statements.
my $appended = 500;
foreach my $table ('t', 't2')
{
	$node->safe_psql(
		$db, qq(
CREATE EXTENSION IF NOT EXISTS pg_cron;
CREATE EXTENSION IF NOT EXISTS zorder;
CREATE TABLE $table (id int PRIMARY KEY, a int, b int, s text);
CREATE INDEX ON $table USING brin (a, b) WITH (pages_per_range = 4);
INSERT INTO $table
  SELECT i, ((i::bigint * 7919) % 1000)::int, ((i::bigint * 104729) % 997)::int,
         md5(i::text)
  FROM generate_series(1, 3000) i;
SELECT zorder.cluster_by('$table', 'a', 'b');
CALL zorder.optimize('$table');
INSERT INTO $table
  SELECT i, ((i::bigint * 7919) % 1000)::int, ((i::bigint * 104729) % 997)::int,
         md5(i::text)
  FROM generate_series(3001, 3000 + $appended) i;
));
}

# Batches of 50 for every session, the cron jobs' included (a SET in the
# job would make it two statements).
$node->safe_psql($db, "ALTER DATABASE $db SET zorder.max_batch_size = 50");

sub content
{
	my ($table) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) || ' ' || md5(string_agg($table\::text, ',' ORDER BY id)) FROM $table"
	);
}
my %before = map { $_ => content($_) } ('t', 't2');

my $cron_version = $node->safe_psql($db,
	"SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'");
note "pg_cron $cron_version";

# Both jobs run once, when pg_cron starts again with the server (a running
# pg_cron runs no @reboot job scheduled after it started).
my $schedule = '@reboot';
$node->safe_psql($db, qq(
BEGIN;
SELECT cron.schedule('zorder-t', '$schedule', \$\$CALL zorder.optimize('t')\$\$);
SELECT cron.schedule('zorder-t2', '$schedule', \$\$SELECT 1; CALL zorder.optimize('t2')\$\$);
COMMIT;
));
is($node->safe_psql($db, 'SELECT count(*) FROM cron.job'),
	'2', "both jobs are scheduled ('$schedule')");
$node->restart;

# Wait until each job has ended once, then unschedule it.  Returns the
# status and message of its first run (its only one: @reboot).
sub wait_job
{
	my ($job) = @_;
	my $query = qq(SELECT d.status || ' ' || coalesce(d.return_message, '')
	  FROM cron.job_run_details d JOIN cron.job j USING (jobid)
	  WHERE j.jobname = '$job' AND d.status IN ('succeeded', 'failed')
	  ORDER BY d.start_time LIMIT 1);
	my $deadline = time() + 150;
	my $res = '';
	while (time() < $deadline)
	{
		$res = $node->safe_psql($db, $query);
		last if $res ne '';
		usleep(250_000);
	}
	$node->safe_psql($db, "SELECT cron.unschedule('$job')");
	return $res eq '' ? 'no run within 150 s' : $res;
}

my $start = time();
my $t_run = wait_job('zorder-t');
my $t2_run = wait_job('zorder-t2');
note 'the jobs ran after ' . (time() - $start) . " s: [$t_run] [$t2_run]";

# --- the job with the CALL alone --------------------------------------------

like($t_run, qr/^succeeded/, 'zorder-t: the job succeeded');
is( $node->safe_psql($db,
		q(SELECT count(*) || ' ' || min(rows_moved) FROM zorder.optimize_history
		  WHERE "table" = 't'::regclass AND mode = 'incremental')),
	"1 $appended",
	"zorder-t: one incremental optimize, which moved the $appended new rows");
is( $node->safe_psql($db,
		q(SELECT count(*) FROM t,
		    (SELECT first_block FROM zorder.sorted_runs WHERE "table" = 't'::regclass
		     ORDER BY first_block DESC LIMIT 1) r
		  WHERE id > 3000 AND (ctid::text::point)[0] >= r.first_block)),
	$appended,
	'zorder-t: the new rows are in the newest sorted run');
is( $node->safe_psql($db,
		q(SELECT count(*) FROM zorder.sorted_runs WHERE "table" = 't'::regclass)),
	'2', 'zorder-t: the table has two sorted runs');
is(content('t'), $before{t}, 'zorder-t: rows unchanged');
# Each batch of 50 committed on its own: the moved rows carry the ids of
# ten transactions.
is( $node->safe_psql($db,
		q(SELECT count(DISTINCT xmin::text) FROM t WHERE id > 3000)),
	$appended / 50,
	'zorder-t: the batches committed one by one');

# --- the job with two statements --------------------------------------------

# It does not fail: the CALL runs in the implicit transaction block, all
# its batches in one transaction.
like($t2_run, qr/^succeeded/, 'zorder-t2: the job with two statements succeeded');
is( $node->safe_psql($db,
		q(SELECT count(*) || ' ' || min(rows_moved) FROM zorder.optimize_history
		  WHERE "table" = 't2'::regclass AND mode = 'incremental')),
	"1 $appended",
	"zorder-t2: one incremental optimize, which moved the $appended new rows");
is( $node->safe_psql($db,
		q(SELECT count(DISTINCT xmin::text) FROM t2 WHERE id > 3000)),
	'1',
	'zorder-t2: all batches went in one transaction');
is(content('t2'), $before{t2}, 'zorder-t2: rows unchanged');

is($node->safe_psql($db, 'SELECT count(*) FROM cron.job'),
	'0', 'both jobs are unscheduled');

$node->stop;
done_testing();
