# The full rewrite's sort, when the table is bigger than a budget of at
# least 64 MB, compresses its spilled runs on a worker thread of libzstd
# while the backend goes on loading, and decompresses them on a thread of
# its own ("zorder decode") while merging.  Here, on a table of about 100 MB
# with maintenance_work_mem = 64MB: both threads exist while the optimize
# runs, the rewritten table has exactly its rows and passes amcheck, and a
# cancel in the middle of the sort, or of the merge, leaves no thread, no
# temporary file and a backend that optimizes again.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $db = 'postgres';
my $node = new_node(
	'sortworker', conf => qq(
autovacuum = off
maintenance_work_mem = '64MB'
max_parallel_maintenance_workers = 0
));

$node->safe_psql($db, q(
CREATE TABLE t (id int PRIMARY KEY, a int, b int, c float8, pad text);
INSERT INTO t
  SELECT g, (g::bigint * 7919) % 100003, (g::bigint * 104729) % 99991,
         (g % 997) / 7.0, md5(g::text) || md5((g * 3)::text)
  FROM generate_series(1, 800000) g;
CREATE TABLE t_copy AS SELECT * FROM t;
SELECT zorder.cluster_by('t', 'a', 'b', 'c');
));
my $size = $node->safe_psql($db, q(SELECT pg_relation_size('t')));
ok($size > 80 * 1024 * 1024, "the table is bigger than the budget ($size bytes)");

my $tmpdir = $node->data_dir . '/base/pgsql_tmp';

# names of a backend's threads, from /proc (undef if it is gone)
sub thread_names
{
	my ($pid) = @_;
	opendir(my $dh, "/proc/$pid/task") or return undef;
	my @names;
	foreach my $tid (grep { !/^\./ } readdir($dh))
	{
		open(my $fh, '<', "/proc/$pid/task/$tid/comm") or next;
		my $comm = <$fh>;
		close($fh);
		push @names, defined $comm ? $comm : '';
	}
	closedir($dh);
	return \@names;
}

sub threads
{
	my $names = thread_names($_[0]);
	return defined $names ? scalar(@$names) : -1;
}

# threads named "zorder decode"
sub decoders
{
	my $names = thread_names($_[0]);
	return defined $names ? scalar(grep { /^zorder decode/ } @$names) : -1;
}

sub temp_files
{
	return 0 unless -d $tmpdir;
	opendir(my $dh, $tmpdir) or die "cannot read $tmpdir: $!";
	my $n = grep { !/^\./ } readdir($dh);
	closedir($dh);
	return $n;
}

# --- a full optimize, watched from outside -------------------------------

my $bg = $node->background_psql($db, on_error_stop => 0);
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
chomp $pid;
is(threads($pid), 1, 'before: the backend has one thread');
$bg->query_until(qr/started/,
	"\\echo started\nCALL zorder.optimize('t', full => true);\n\\echo optimize done\n");
my $most = 1;
my $decoding = 0;
while (1)
{
	my $n = threads($pid);
	$most = $n if $n > $most;
	$decoding = 1 if decoders($pid) > 0;
	last if $bg->{stdout} =~ /optimize done/;
	$bg->{run}->pump_nb;
	last if $bg->{stdout} =~ /optimize done/;
	select(undef, undef, undef, 0.005);
}
ok($most >= 2, "during the sort: a compression thread ran ($most threads)");
ok($decoding, 'during the merge: the decoder thread ran');
is($bg->{stderr}, '', 'the optimize reports no error');
is(threads($pid), 1, 'after: the thread is gone');
$bg->quit;

is( $node->safe_psql(
		$db, q(SELECT sort_runs > 0 AND temp_bytes > 0
			   FROM zorder.layouts WHERE relid = 't'::regclass)),
	't', 'the sort spilled compressed runs');
check_same_rows($node, $db, 'after the optimize', 't', 'SELECT * FROM t_copy');
check_heap_and_indexes($node, $db, 'after the optimize', indexes => ['t_pkey']);
is(temp_files(), 0, 'no temporary file is left');

# --- a cancel in the middle of the sort, and of the merge -----------------

# Start an optimize, cancel it once $ready->($pid) holds, then check that
# nothing is left behind and the same backend optimizes again.
#
# The backend is stopped (SIGSTOP) the moment $ready holds, and held there
# until the cancel is sent: the psql that sends it takes a while to start,
# and the decoder thread lives only a few hundred milliseconds of a merge
# that ends the optimize about a second later (probe on PG 15: decoder
# 2.15-2.49 s, end 3.69 s), so on a busy machine the cancel came after the
# merge, or after the optimize.  SIGSTOP stops the threads as well.
sub cancel_when
{
	my ($what, $ready) = @_;

	my $bg = $node->background_psql($db, on_error_stop => 0);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	my $seen = 0;

	# A phase that passed between two looks (a busy machine) is waited for
	# in the next optimize: up to five, each to its end.
	for (my $attempt = 1; !$seen && $attempt <= 5; $attempt++)
	{
		my $deadline = time + 180;

		$bg->{stdout} = '';
		$bg->{stderr} = '';
		$bg->query_until(qr/started/,
			"\\echo started\nCALL zorder.optimize('t', full => true);\n\\echo optimize done\n");
		while (time < $deadline)
		{
			if ($ready->($pid))
			{
				kill 'STOP', $pid;
				# still there once stopped, or it ended in between: go on
				if ($ready->($pid))
				{
					$seen = 1;
					last;
				}
				kill 'CONT', $pid;
			}
			$bg->{run}->pump_nb;
			last if $bg->{stdout} =~ /optimize done/;
			select(undef, undef, undef, 0.002);
		}
		note("$what: attempt $attempt " . ($seen ? 'caught the phase' : 'missed it'));
	}
	ok($seen, "$what: the thread started");
	# SIGINT, as pg_cancel_backend sends it, from here: a new session could
	# wait on a lock the stopped backend holds
	kill 'INT', $pid;
	thaw($pid);
	pump_until($bg->{run}, $bg->{timeout}, \$bg->{stdout}, qr/optimize done/);
	like($bg->{stderr}, qr/canceling statement due to user request/,
		"$what: the cancel stopped the optimize");
	is(threads($pid), 1, "$what: no thread is left");
	is(temp_files(), 0, "$what: no temporary file is left");
	$bg->{stderr} = '';
	$bg->query_safe(q(CALL zorder.optimize('t', full => true)));
	is($bg->{stderr}, '', "$what: the same backend optimizes again");
	is(threads($pid), 1, "$what: and ends with one thread");
	$bg->quit;
	check_same_rows($node, $db, $what, 't', 'SELECT * FROM t_copy');
	check_heap_and_indexes($node, $db, $what);
}

# the compression thread is there while the table is scanned and sorted
cancel_when('cancel while sorting', sub { threads($_[0]) >= 2 });
cancel_when('cancel while merging', sub { decoders($_[0]) > 0 });

$node->stop;
done_testing();
