# zorder on a Citus cluster: a coordinator and two workers on one machine.
#
# What holds (issue #28 goes on from here):
# - on the coordinator, zorder.cluster_by declares the keys of a
#   hash-distributed (or single-shard) table, and zorder.optimize lays out
#   every shard on the node that holds it, each in a transaction of its own
#   there, the keys going with the call: rows identical, amcheck clean on
#   every shard, fewer block ranges read, a NOTICE per shard; an
#   incremental call after appends through the coordinator moves about the
#   appended rows; zorder.clear_keys forgets the keys on every shard;
# - the node checks the caller's rights on each shard again: a shard the
#   caller does not own there fails, the others are laid out, and the call
#   ends with an error naming the shard; a role that does not own the table
#   is refused on the coordinator before any node is reached;
# - a table whose shards have two copies is refused with the reason;
# - every other public function given a table Citus distributes (hash
#   distributed, single-shard, reference, Citus local; a distributed
#   partitioned table and its partitions) refuses it with SQLSTATE 0A000 and
#   the reason, on the coordinator and on a worker that has Citus's
#   metadata, instead of working on the empty shell and changing nothing;
# - an ordinary table beside them still works on the coordinator;
# - a shard table, on the worker that holds it, is laid out as any table;
#   a reference table's copies by run_command_on_placements;
# - CREATE INDEX ... USING brin on the distributed table reaches every
#   shard; CREATE EXTENSION zorder on the coordinator is looked at on the
#   workers (the test says what Citus did) and made present on every node.
#
# The nodes are PostgreSQL::Test::Cluster nodes listening on localhost TCP
# ports, as Citus's documentation runs a cluster on one machine, joined with
# citus_set_coordinator_host and citus_add_node.  Citus is built in the
# chroots of 17 and 18 by test/citus.sh; elsewhere, or when the build is
# missing, the test is skipped with the reason.  When the build is still
# under way (test/run.sh starts it in the background), the test waits for
# it on the build's lock.

use strict;
use warnings;
use Fcntl qw(:flock);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $pkglibdir = `pg_config --pkglibdir`;
my $sharedir = `pg_config --sharedir`;
my $version = `pg_config --version`;
chomp($pkglibdir, $sharedir, $version);
my ($major) = $version =~ /(\d+)/;
my $state = $ENV{ZORDER_CITUS_STATE} // '/var/lib/zorder-citus';

sub citus_installed
{
	return -f "$pkglibdir/citus.so" && -f "$sharedir/extension/citus.control";
}

# A build under way holds the lock: wait for it to end (an hour at most).
if (open(my $lock, '<', "$state/lock"))
{
	my $ok = eval {
		local $SIG{ALRM} = sub { die "timeout\n" };
		alarm 3600;
		flock($lock, LOCK_SH);
		alarm 0;
		1;
	};
	diag("waited an hour for the Citus build; giving up") unless $ok;
	close $lock;
}
if (!citus_installed())
{
	my $why = "Citus is not installed for PostgreSQL $major ($pkglibdir)";
	if (open(my $fh, '<', "$state/why"))
	{
		my $line = <$fh>;
		chomp $line if defined $line;
		$why .= ": $line" if $line;
		close $fh;
	}
	else
	{
		$why .= "; test/citus.sh builds it in the chroots of 17 and 18";
	}
	plan skip_all => $why;
}

# Debian packages pg_cron for 17 and 18.
my $have_cron = -f "$sharedir/extension/pg_cron.control";

my $db = 'postgres';
my $conf = q(
shared_preload_libraries = 'citus, zorder'
listen_addresses = 'localhost'
max_prepared_transactions = 10
max_connections = 60
autovacuum = off
citus.shard_count = 4
);

my @nodes;
foreach my $name ('coordinator', 'worker1', 'worker2')
{
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', $conf);
	# pg_cron on the coordinator, where the upkeep is scheduled
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'citus, pg_cron, zorder'\ncron.database_name = '$db'\n"
		  . "cron.host = '" . $node->host . "'\n")
	  if $name eq 'coordinator' && $have_cron;
	$node->start;
	$node->safe_psql($db, 'CREATE EXTENSION citus');
	push @nodes, $node;
}
my ($coord, $w1, $w2) = @nodes;
my %node_by_port = map { ($_->port => $_) } @nodes;

$coord->safe_psql($db,
	"SELECT citus_set_coordinator_host('localhost', " . $coord->port . ')');
foreach my $w ($w1, $w2)
{
	$coord->safe_psql($db,
		"SELECT citus_add_node('localhost', " . $w->port . ')');
}
is( $coord->safe_psql(
		$db, 'SELECT count(*) FROM citus_get_active_worker_nodes()'),
	'2',
	'two active workers');

# zorder and amcheck on the coordinator: does Citus send CREATE EXTENSION
# to the workers?  Whatever it does, every node must have them.
$coord->safe_psql($db, 'CREATE EXTENSION zorder; CREATE EXTENSION amcheck');
foreach my $w ($w1, $w2)
{
	foreach my $ext ('zorder', 'amcheck')
	{
		my $there = $w->safe_psql($db,
			"SELECT extversion FROM pg_extension WHERE extname = '$ext'");
		note($w->name
			  . ": CREATE EXTENSION $ext on the coordinator "
			  . ($there ne '' ? "reached it (version $there)" : 'did not reach it'));
		# Citus refuses extension DDL on a worker ("operation is not
		# allowed on this node") unless told it is not to propagate it.
		$w->safe_psql($db,
			"SET citus.enable_ddl_propagation = off; CREATE EXTENSION $ext")
		  if $there eq '';
	}
}
foreach my $node (@nodes)
{
	is( $node->safe_psql(
			$db, "SELECT count(*) FROM pg_extension WHERE extname = 'zorder'"),
		'1',
		$node->name . ': zorder is installed');
}

# The tables: one of each kind Citus has, and a local one.
my $rows = q(SELECT i, ((i::bigint * 7919) % 1000)::int AS a,
	((i::bigint * 104729) % 997)::int AS b, md5(i::text) AS s
	FROM generate_series(%d, %d) i);
$coord->safe_psql(
	$db, sprintf(
		qq(
CREATE TABLE dist (id int PRIMARY KEY, a int, b int, s text);
SELECT create_distributed_table('dist', 'id');
INSERT INTO dist $rows;
CREATE TABLE single (id int, a int, b int);
SELECT create_distributed_table('single', NULL);
CREATE TABLE ref (id int PRIMARY KEY, a int, b int);
SELECT create_reference_table('ref');
CREATE TABLE loc (id int PRIMARY KEY, a int, b int);
SELECT citus_add_local_table_to_metadata('loc');
CREATE TABLE pdist (id int, a int, b int) PARTITION BY RANGE (id);
CREATE TABLE pdist_1 PARTITION OF pdist FOR VALUES FROM (0) TO (1000);
SELECT create_distributed_table('pdist', 'id');
CREATE TABLE plain (id int PRIMARY KEY, a int, b int);
INSERT INTO plain SELECT i, i %% 100, i %% 97 FROM generate_series(1, 5000) i;
), 1, 40000));

is( $coord->safe_psql(
		$db,
		q(SELECT string_agg(table_name::text || ':' || citus_table_type, ' ' ORDER BY table_name::text)
		  FROM citus_tables)),
	'dist:distributed loc:local pdist:distributed pdist_1:distributed ref:reference single:distributed',
	'the tables Citus knows');

# BRIN on the distributed table: Citus sends it to every shard.
$coord->safe_psql($db,
	'CREATE INDEX dist_ab ON dist USING brin (a, b) WITH (pages_per_range = 4)'
);

# The shards of dist and where they are.
my @shards = map { [ split /\|/ ] } split /\n/,
  $coord->safe_psql(
	$db,
	q(SELECT shard_name, nodeport FROM citus_shards
	  WHERE table_name = 'dist'::regclass ORDER BY shardid));
is(scalar(@shards), 4, 'dist has 4 shards');
my %ports = map { ($_->[1] => 1) } @shards;
is_deeply([ sort keys %ports ], [ sort($w1->port, $w2->port) ],
	'the shards are on both workers');

# Citus hides shards from catalog queries of ordinary sessions on the
# workers (citus.override_table_visibility): show them.
my $show = "SET citus.override_table_visibility = off;\n";
foreach my $sh (@shards)
{
	my ($shard, $port) = @$sh;
	is( $node_by_port{$port}->safe_psql(
			$db, $show . qq(
SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_am am ON am.oid = c.relam
 WHERE i.indrelid = '$shard'::regclass AND am.amname = 'brin')),
		'1',
		"CREATE INDEX USING brin reached shard $shard");
}

# The refusals: every public function that takes a table, on every kind of
# table Citus distributes, on the coordinator.
my @calls = (
	[ 'zorder.cluster_by', q(SELECT zorder.cluster_by('%s', 'a', 'b')) ],
	[ 'zorder.cluster_by_auto', q(SELECT zorder.cluster_by_auto('%s')) ],
	[ 'zorder.clear_keys', q(SELECT zorder.clear_keys('%s')) ],
	[ 'zorder.optimize', q(CALL zorder.optimize('%s')) ],
	[ 'zorder.optimize', q(CALL zorder.optimize('%s', "full" => true)) ],
	[ 'zorder.estimate', q(SELECT * FROM zorder.estimate('%s')) ],
	[
		'zorder.clustering_information',
		q(SELECT * FROM zorder.clustering_information('%s'))
	],
	[
		'zorder.clustering_information',
		q(SELECT zorder.clustering_information_json('%s'))
	],
	[
		'zorder.ranges_touched',
		q(SELECT zorder.ranges_touched('%s', 'a', '5'))
	],
	[
		'zorder.suggest_pages_per_range',
		q(SELECT * FROM zorder.suggest_pages_per_range('%s'))
	],
	[
		'zorder.prepare_layout',
		q(SELECT * FROM zorder.prepare_layout('%s'))
	],
	[
		'zorder.drop_unused_boundary_sets',
		q(SELECT zorder.drop_unused_boundary_sets('%s'))
	],);

# What the coordinator does for a hash-distributed or single-shard table.
my %driven = map { ($_ => 1) }
  ('zorder.cluster_by', 'zorder.clear_keys', 'zorder.optimize', 'zorder.clustering_information');

sub check_refusals
{
	my ($node, $table, $detail, $skip_driven) = @_;
	foreach my $c (@calls)
	{
		my ($fname, $sql) = @$c;
		next if $skip_driven && $driven{$fname};
		my $stmt = sprintf($sql, $table);
		my ($ret, $out, $err) =
		  $node->psql($db, "\\set VERBOSITY verbose\n$stmt");
		ok( $ret != 0
			  && $err =~ /ERROR:  0A000: table "\Q$table\E" is distributed by Citus/
			  && $err =~ /DETAIL:  $detail/
			  && $err =~ /\Q$fname\E/
			  && $err =~ /HINT:  /,
			$node->name . ": $stmt is refused")
		  or diag($err);
	}
	return;
}

check_refusals($coord, 'dist', 'Its rows are in shards', 1);
check_refusals($coord, 'single', 'Its rows are in shards', 1);
check_refusals($coord, 'pdist', 'Its rows are in shards');
check_refusals($coord, 'pdist_1', 'Its rows are in shards');
check_refusals($coord, 'ref', 'It is a Citus reference table');
check_refusals($coord, 'loc', 'It is a Citus local table');
# Citus syncs its metadata to the workers: the shell is there too, and
# the keys are declared on the coordinator.
check_refusals($w1, 'dist', 'Its rows are in shards');
like(($w1->psql($db, "SELECT zorder.cluster_by('dist', 'a')"))[2],
	qr/HINT:  Declare its keys and lay it out on the coordinator/,
	'worker1: the hint of cluster_by on the shell sends the caller to the coordinator');

# Nothing of it was recorded.
is($coord->safe_psql($db, 'SELECT count(*) FROM zorder.tables'),
	'0', 'the refusals left no catalog row');

# An ordinary table beside them works as before.
$coord->safe_psql(
	$db, q(
SELECT zorder.cluster_by('plain', 'a', 'b');
CALL zorder.optimize('plain');
));
is( $coord->safe_psql(
		$db, "SELECT sorted_runs FROM zorder.clustering_information('plain') LIMIT 1"),
	'1',
	'coordinator: a local table is laid out');

# A shard table, on the worker that holds it, is an ordinary table.
my ($shard, $port) = @{ $shards[0] };
my $w = $node_by_port{$port};
my $content = "SELECT count(*) || ' ' || md5(string_agg(t::text, ',' ORDER BY id)) FROM $shard t";
my $before = $w->safe_psql($db, $content);
my $touched = "SELECT round(mean_ranges_touched::numeric, 1) FROM zorder.clustering_information('$shard') WHERE column_name = 'b'";
my ($ret, $out, $err) = $w->psql($db, "SELECT zorder.cluster_by('$shard', 'a', 'b')");
is($ret, 0, $w->name . ": cluster_by on shard $shard") or diag($err);
my $in_arrival_order = $w->safe_psql($db, $touched);
($ret, $out, $err) = $w->psql($db, "CALL zorder.optimize('$shard')");
is($ret, 0, $w->name . ": optimize on shard $shard") or diag($err);
is($w->safe_psql($db, $content), $before, "$shard: the same rows after the layout");
check_heap_and_indexes($w, $db, $shard, table => $shard,
	indexes => [ $w->safe_psql($db, $show . "SELECT 'dist_pkey_' || substring('$shard' from '[0-9]+\$')") ]);
is( $w->safe_psql(
		$db, "SELECT sorted_runs FROM zorder.clustering_information('$shard') LIMIT 1"),
	'1',
	"$shard: one sorted run");
my $after_full = $w->safe_psql($db, $touched);
note("$shard: a point filter on b reads $in_arrival_order block ranges in arrival order, $after_full laid out");
cmp_ok($after_full, '<', $in_arrival_order / 2,
	"$shard: a point filter on b reads fewer than half the block ranges it read");

# Rows inserted through the coordinator reach the shard; an incremental
# call on the worker places them.
$coord->safe_psql($db, sprintf("INSERT INTO dist $rows", 40001, 44000));
$before = $w->safe_psql($db, $content);
($ret, $out, $err) = $w->psql($db, "CALL zorder.optimize('$shard')");
is($ret, 0, $w->name . ": incremental optimize on shard $shard") or diag($err);
is($w->safe_psql($db, $content), $before, "$shard: the same rows after the incremental call");
check_heap_and_indexes($w, $db, "$shard, incremental", table => $shard);
is( $coord->safe_psql($db, "SELECT count(*) FROM dist"),
	'44000', 'the coordinator still reads every row of dist');

# From the coordinator: the keys are declared on the distributed table,
# and zorder.optimize lays out every shard on its node.  The shards are
# owned by alice, as the table is (Citus sends ALTER TABLE ... OWNER and
# CREATE ROLE to the workers).
$coord->safe_psql($db, q(
CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
ALTER TABLE dist OWNER TO alice;
ALTER TABLE single OWNER TO alice;
));
my $as_alice = "SET ROLE alice;\n";
my $digest = "SELECT count(*) || ' ' || md5(string_agg(t::text, ',' ORDER BY id)) FROM %s t";
my $ranges = "SELECT total_ranges || ' ' || round(mean_ranges_touched::numeric, 1) FROM zorder.clustering_information('%s') WHERE column_name = '%s'";

# Without keys, the call says so, as on any table.
($ret, $out, $err) = $coord->psql($db, $as_alice . "CALL zorder.optimize('dist')");
like($err, qr/table "dist" has no clustering keys/,
	'coordinator: optimize of dist without keys asks for them') or diag($err);
# bob does not own dist: refused on the coordinator.
($ret, $out, $err) = $coord->psql($db, "SET ROLE bob;\nCALL zorder.optimize('dist')");
like($err, qr/must be owner of table dist/, 'coordinator: bob may not lay out dist');

$coord->safe_psql($db, $as_alice . "SELECT zorder.cluster_by('dist', 'a', 'b')");
is($coord->safe_psql($db, q(SELECT keys::text FROM zorder.clustered_tables WHERE "table" = 'dist'::regclass)),
	'{a,b}', 'coordinator: cluster_by declares the keys of dist');

# Before: the shards in arrival order (shard 0 was laid out above, on its
# node; the others not).
my %before_ranges;
foreach my $sh (@shards[ 1 .. $#shards ])
{
	my ($s, $p) = @$sh;
	$node_by_port{$p}->safe_psql($db, "SELECT zorder.cluster_by('$s', 'b')");
	$before_ranges{$s} = $node_by_port{$p}->safe_psql($db, sprintf($ranges, $s, 'b'));
}
# The report on the coordinator does not add up shards whose keys on their
# nodes are not the table's.
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n" . $as_alice . "SELECT * FROM zorder.clustering_information('dist')");
like($err, qr/ERROR:  55000: shard \S+ has other keys than its table/,
	'coordinator: the report refuses shards with other keys than dist') or diag($err);
# ... also when a shard's keys are the first of the table's (a, not a, b)
$node_by_port{ $_->[1] }->safe_psql($db, "SELECT zorder.cluster_by('$_->[0]', 'a')") foreach @shards;
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n" . $as_alice . "SELECT * FROM zorder.clustering_information('dist')");
like($err, qr/ERROR:  55000: shard \S+ has other keys than its table/,
	'coordinator: the report refuses shards keyed by a prefix of the keys of dist') or diag($err);
$before = $coord->safe_psql($db, sprintf($digest, 'dist'));
($ret, $out, $err) = $coord->psql($db, $as_alice . "CALL zorder.optimize('dist')");
is($ret, 0, 'coordinator: CALL zorder.optimize on dist') or diag($err);
my $laid_err = $err;
my %laid = $err =~ /NOTICE:  laid out shard (\S+) of table "dist" \((\d) of 4\)/g;
is(join(' ', sort map { s/^.*\.//r } keys %laid), join(' ', sort map { $_->[0] =~ s/^.*\.//r } @shards),
	'a NOTICE for each of the 4 shards') or diag($err);
is(join(' ', sort values %laid), '1 2 3 4', 'the NOTICEs count the shards');
is($coord->safe_psql($db, sprintf($digest, 'dist')), $before,
	'dist: the same rows after the layout from the coordinator');
foreach my $sh (@shards)
{
	my ($s, $p) = @$sh;
	my $node = $node_by_port{$p};
	is( $node->safe_psql(
			$db, qq(SELECT keys::text || ' ' || sorted_runs FROM zorder.clustering_information('$s') LIMIT 1)),
		'{a,b} 1',
		"$s: laid out on its node with the keys of dist");
	check_heap_and_indexes($node, $db, $s, table => $s);
	next unless $before_ranges{$s};
	my ($total, $arrival) = split / /, $before_ranges{$s};
	my (undef, $laid_out) = split / /, $node->safe_psql($db, sprintf($ranges, $s, 'b'));
	note("$s: a point filter on b reads $arrival of $total block ranges in arrival order, $laid_out laid out");
	cmp_ok($laid_out, '<', $arrival / 2,
		"$s: a point filter on b reads fewer than half the block ranges it read");
}

# One boundary set for the whole table, sampled from every shard: the
# coordinator keeps it, each worker keeps it under the same id as a set of
# the table's shell there, and every shard is laid out with it, so that an
# index on zorder.layout_key, which Citus sends to every shard unchanged,
# means the same on all of them.
my $set_of = q(SELECT id || ' ' || relid::text || ' ' || md5(columns::text || types::text || typmods::text
	|| collations::text || curve || bits || bounds::text) FROM zorder.boundary_sets
	WHERE relid = 'dist'::regclass AND origin = 'optimize' ORDER BY id DESC LIMIT 1);
my $table_set = $coord->safe_psql($db, $set_of);
my ($set_id) = split / /, $table_set;
like($table_set, qr/^\d+ dist [0-9a-f]{32}$/, "coordinator: dist has one set ($set_id)");
like($laid_err, qr/NOTICE:  table "dist" is laid out by boundary set \Q$set_id\E\n/, 'the call names the set');
foreach my $w ($w1, $w2)
{
	is($w->safe_psql($db, $set_of), $table_set, $w->name . ": the set of dist, under the same id");
	is( $w->safe_psql(
			$db, $show . q(SELECT string_agg(DISTINCT l.boundary_set::text, ',') FROM zorder.layouts l
			JOIN pg_class c ON c.oid = l.relid::oid WHERE c.relname ~ '^dist_[0-9]+$')),
		$set_id, $w->name . ": its shards are laid out with it");
}
# The set comes from every shard: each shard's own sample differs from it.
my %own_sample;
foreach my $sh (@shards)
{
	my ($s, $p) = @$sh;
	$own_sample{ $node_by_port{$p}->safe_psql($db, qq(SELECT md5((zorder._shard_sample_set('$s') -> 'bounds')::text))) } = 1;
}
my $merged = $coord->safe_psql($db, qq(SELECT md5(to_jsonb(bounds)::text) FROM zorder.boundary_sets WHERE id = $set_id));
ok(!$own_sample{$merged} && keys(%own_sample) == 4, 'the set is none of the shards\' own samples');
# An index on the layout key, made through the coordinator, computes the
# same key on every node.
$coord->safe_psql($db, $as_alice . "CREATE INDEX dist_layout ON dist (zorder.layout_key($set_id, a, b))");
my @keys = map { $_->safe_psql($db, "SELECT zorder.layout_key($set_id, 1234, 56789)::text || ' ' || zorder.layout_key($set_id, -5, 7)::text") } ($coord, $w1, $w2);
is(scalar(keys %{ { map { $_ => 1 } @keys } }), 1, "layout_key($set_id, ...) is the same on every node (@keys)");
foreach my $sh (@shards)
{
	my ($s, $p) = @$sh;
	my $node = $node_by_port{$p};
	my $idx = $node->safe_psql($db, $show . "SELECT 'dist_layout_' || substring('$s' from '[0-9]+\$')");
	check_heap_and_indexes($node, $db, $s, table => $s, indexes => [$idx]);
}
$coord->safe_psql($db, $as_alice . "DROP INDEX dist_layout");

# zorder.clustering_information on the coordinator: the whole table, from
# its shards.  With probes => 0 every row is a probe, so the figures are
# exact, and the sums are checked against each shard's own report.
my $info = q(SELECT total_ranges || ' ' || round(mean_ranges_touched::numeric, 6) || ' '
	|| round(ideal_ranges_touched::numeric, 6) || ' ' || table_pages || ' ' || sorted_runs
	FROM zorder.clustering_information('%s', probes => 0) WHERE column_name = '%s');
foreach my $col ('a', 'b')
{
	my @sum = (0, 0, 0, 0);
	my $runs = 0;
	foreach my $sh (@shards)
	{
		my ($s, $p) = @$sh;
		my @f = split / /, $node_by_port{$p}->safe_psql($db, sprintf($info, $s, $col));
		$sum[$_] += $f[$_] for 0 .. 3;
		$runs = $f[4] if $f[4] > $runs;
	}
	my @whole = split / /, $coord->safe_psql($db, $as_alice . sprintf($info, 'dist', $col));
	is("$whole[0] $whole[3] $whole[4]", "$sum[0] $sum[3] $runs",
		"clustering_information('dist'), $col: ranges and pages summed over the shards, the most sorted runs of any");
	ok(abs($whole[1] - $sum[1]) < 1e-4 && abs($whole[2] - $sum[2]) < 1e-4,
		"clustering_information('dist'), $col: ranges read and the ideal summed over the shards ($whole[1] of ideal $whole[2])")
	  or diag("@whole vs @sum");
}
# Each shard's own figures, the shards that skip worst first.
my %port_of = map { $_->[0] => $_->[1] } @shards;
my @each = map { [ split /\|/ ] } split /\n/, $coord->safe_psql($db, $as_alice
	  . q(SELECT shard, column_name, total_ranges, round(mean_ranges_touched::numeric, 6),
	             round(ratio_to_ideal::numeric, 6)
	      FROM zorder.shard_clustering_information('dist', 0)));
is(scalar(@each), 8, 'shard_clustering_information: a row for each of the 4 shards and 2 keys');
my @ratios = map { $_->[4] } @each;
is("@ratios", join(' ', sort { $b <=> $a } @ratios), 'shard_clustering_information: the worst ratio to the ideal first');
my $each_ok = 0;
foreach my $e (@each)
{
	my ($shard, $col, @fig) = @$e;
	$shard =~ s/^.*\.//;
	my $own = $node_by_port{ $port_of{$shard} }->safe_psql($db,
		qq(SELECT total_ranges || '|' || round(mean_ranges_touched::numeric, 6) || '|' || round(ratio_to_ideal::numeric, 6)
		   FROM zorder.clustering_information('$shard', 0) WHERE column_name = '$col'));
	$each_ok++ if $own eq join('|', @fig);
	diag("$shard $col: @fig on the coordinator, $own on its node") if $own ne join('|', @fig);
}
is($each_ok, 8, 'shard_clustering_information: each row is the shard\'s own report on its node');
# Another range size, as the README's Citus section suggests trying one
# before rebuilding the index: each shard measures it on its node.
my %ranges_now = map { ($_->[0] . ' ' . $_->[1]) => $_->[2] } @each;
my ($other_ok, $more_ranges) = (0, 0);
foreach my $e (map { [ split /\|/ ] } split /\n/, $coord->safe_psql($db, $as_alice
	  . q(SELECT shard, column_name, total_ranges, round(ratio_to_ideal::numeric, 6)
	      FROM zorder.shard_clustering_information('dist', 0, with_pages_per_range => 1))))
{
	my ($shard, $col, @fig) = @$e;
	$more_ranges++ if $fig[0] > $ranges_now{"$shard $col"};
	$shard =~ s/^.*\.//;
	my $own = $node_by_port{ $port_of{$shard} }->safe_psql($db,
		qq(SELECT total_ranges || '|' || round(ratio_to_ideal::numeric, 6)
		   FROM zorder.clustering_information('$shard', 0, 1) WHERE column_name = '$col'));
	$other_ok++ if $own eq join('|', @fig);
	diag("$shard $col, 1 page a range: @fig on the coordinator, $own on its node") if $own ne join('|', @fig);
}
is($other_ok, 8, 'shard_clustering_information with_pages_per_range: each shard measures that size on its node');
is($more_ranges, 8, '... which gives every shard more ranges than its index');
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\nSELECT * FROM zorder.shard_clustering_information('plain')");
like($err, qr/ERROR:  42809: table "plain" is not a distributed table zorder lays out shard by shard/,
	'shard_clustering_information refuses a local table') or diag($err);
is($coord->safe_psql($db, $as_alice . q(SELECT zorder.clustering_information_json('dist', 0) -> 'keys')),
	'["a", "b"]', 'clustering_information_json on the coordinator');
# Reading the report needs what reading the table needs, on the coordinator.
($ret, $out, $err) = $coord->psql($db, "SET ROLE bob;\nSELECT * FROM zorder.clustering_information('dist')");
like($err, qr/permission denied for table dist/, 'bob may not read the report of dist');
$coord->safe_psql($db, q(
GRANT SELECT ON dist TO bob;
SET ROLE alice;
ALTER TABLE dist ENABLE ROW LEVEL SECURITY;
CREATE POLICY small ON dist FOR SELECT TO bob USING (id < 100);
));
($ret, $out, $err) = $coord->psql($db, "SET ROLE bob;\nSELECT * FROM zorder.clustering_information('dist')");
like($err, qr/ERROR:  permission denied to read the block ranges of table "dist"\nDETAIL:  Row-level security applies/, 'row-level security on dist: the report is refused to bob')
  or diag($err);
$coord->safe_psql($db, $as_alice . 'DROP POLICY small ON dist; ALTER TABLE dist DISABLE ROW LEVEL SECURITY; REVOKE SELECT ON dist FROM bob');

# In a transaction block: refused, as each shard commits on its node.
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n" . $as_alice . "BEGIN;\nCALL zorder.optimize('dist');\nCOMMIT;");
like($err, qr/ERROR:  25001: zorder.optimize of a distributed table cannot run inside a transaction block/,
	'coordinator: optimize of dist in a transaction block is refused') or diag($err);
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n" . $as_alice . "BEGIN;\nSELECT zorder.clear_keys('dist');\nCOMMIT;");
like($err, qr/ERROR:  25001: zorder.clear_keys of a distributed table cannot run inside a transaction block/,
	'coordinator: clear_keys of dist in a transaction block is refused') or diag($err);
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n" . $as_alice
	  . "DO \$\$BEGIN CALL zorder.optimize('dist'); EXCEPTION WHEN division_by_zero THEN NULL; END\$\$;");
like($err, qr/ERROR:  25001: zorder.optimize of a distributed table cannot run inside a subtransaction/,
	'coordinator: optimize of dist in a subtransaction is refused') or diag($err);
is($coord->safe_psql($db, q(SELECT keys::text FROM zorder.clustered_tables WHERE "table" = 'dist'::regclass)),
	'{a,b}', 'coordinator: dist keeps its keys');

# 1 % more rows through the coordinator: the next call places them.
$coord->safe_psql($db, sprintf("INSERT INTO dist $rows", 44001, 44440));
$before = $coord->safe_psql($db, sprintf($digest, 'dist'));
($ret, $out, $err) = $coord->psql($db, $as_alice . "CALL zorder.optimize('dist')");
is($ret, 0, 'coordinator: an incremental call on dist') or diag($err);
unlike($err, qr/is laid out by boundary set/, 'an incremental call keeps the set of dist');
is($coord->safe_psql($db, sprintf($digest, 'dist')), $before,
	'dist: the same rows after the incremental call');
my ($arrived, $moved) = (0, 0);
foreach my $sh (@shards)
{
	my ($s, $p) = @$sh;
	my $node = $node_by_port{$p};
	my ($a, $m) = split /\|/, $node->safe_psql($db,
		qq(SELECT rows_arrived, rows_moved FROM zorder.optimize_history
		   WHERE "table" = '$s'::regclass ORDER BY started_at DESC LIMIT 1));
	$arrived += $a;
	$moved += $m;
	check_heap_and_indexes($node, $db, "$s, incremental", table => $s);
}
is($arrived, 440, 'the shards\' last calls saw the 440 appended rows arrive');
cmp_ok($moved, '<=', 1.1 * 440, "the incremental calls moved $moved rows for 440 appended");

# The node checks the caller's rights again: a shard alice does not own
# there fails, and the others are laid out.
my ($s1, $p1) = @{ $shards[1] };
$node_by_port{$p1}->safe_psql($db, "ALTER TABLE $s1 OWNER TO bob");
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n" . $as_alice . "CALL zorder.optimize('dist', \"full\" => true)");
like($err, qr/ERROR:  38000: zorder.optimize failed on 1 of the 4 shards of table "dist"/,
	'coordinator: the call fails when a shard fails') or diag($err);
like($err, qr/DETAIL:  On shard \S*\Q$s1\E: .*must be owner of table \Q$s1\E/,
	'the error names the shard and what its node said');
like($err, qr/HINT:  The other shards are done/, 'the hint says the others are done');
is(scalar(() = $err =~ /NOTICE:  00000: laid out shard/g), 3, 'the other three shards were laid out');
unlike($err, qr/localhost|port=|\Q$p1\E/, 'the error shows no node address');
$node_by_port{$p1}->safe_psql($db, "ALTER TABLE $s1 OWNER TO alice");

# The next call, incremental, finishes the full call that failed on one
# shard: that shard, still on the older set, is rewritten with the table's
# set, and the others go on incrementally.
($ret, $out, $err) = $coord->psql($db, $as_alice . "CALL zorder.optimize('dist')");
is($ret, 0, 'coordinator: the call after the failed full call') or diag($err);
{
	my %mode;
	foreach my $sh (@shards)
	{
		my ($s, $p) = @$sh;
		$mode{$s} = $node_by_port{$p}->safe_psql($db,
			qq(SELECT mode FROM zorder.optimize_history WHERE "table" = '$s'::regclass ORDER BY started_at DESC LIMIT 1));
	}
	is(join(' ', map { $mode{ $_->[0] } } @shards), join(' ', map { $_->[0] eq $s1 ? 'full' : 'incremental' } @shards),
		'... rewrites the shard the full call did not reach, and only it');
	my $sets = join(',', sort { $a <=> $b } keys %{ { map { $_ => 1 } map {
		my ($s, $p) = @$_;
		$node_by_port{$p}->safe_psql($db, "SELECT boundary_set FROM zorder.layouts WHERE relid = '$s'::regclass") } @shards } });
	my ($newest) = split / /, $coord->safe_psql($db, $set_of);
	is($sets, $newest, '... and every shard is on the table\'s newest set');
	check_heap_and_indexes($node_by_port{$p1}, $db, "$s1, resumed", table => $s1);
}
# Other keys: the next call samples a set for them, and each shard takes
# them in as one table does, incrementally; no shard is rewritten.
foreach my $keys ("'b', 'a'", "'a', 'b'")
{
	$coord->safe_psql($db, $as_alice . "SELECT zorder.cluster_by('dist', $keys)");
	($ret, $out, $err) = $coord->psql($db, $as_alice . "CALL zorder.optimize('dist')");
	is($ret, 0, "coordinator: a call after the keys became $keys") or diag($err);
	like($err, qr/NOTICE:  table "dist" is laid out by boundary set \d+/, '... samples a set for them');
	is( join(' ', map {
		my ($s, $p) = @$_;
		$node_by_port{$p}->safe_psql($db,
			qq(SELECT mode FROM zorder.optimize_history WHERE "table" = '$s'::regclass ORDER BY started_at DESC LIMIT 1)) } @shards),
		join(' ', ('incremental') x 4), '... and rewrites no shard');
}

# A node that cannot be reached: its shards fail, the others are laid
# out, and the error does not show the node's address.
# A full call gives the shards laid out new sets, which the coordinator
# records though the call fails.
$w2->stop;
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n" . $as_alice . "CALL zorder.optimize('dist', \"full\" => true)");
like($err, qr/ERROR:  38000: zorder.optimize failed on 2 of the 4 shards of table "dist"\nDETAIL:  On shard \S+: could not connect to the node that holds it/,
	'coordinator: a node that is down fails its shards, and the error says so') or diag($err);
is(scalar(() = $err =~ /NOTICE:  00000: laid out shard/g), 2, 'the shards of the other node were laid out');
{
	my $w1ids = $coord->safe_psql($db, sprintf(q(SELECT string_agg(s.shardid || ':' || s.set_id, ' ' ORDER BY s.shardid)
		FROM zorder.shard_sets s JOIN citus_shards c USING (shardid)
		WHERE s.relid = 'dist'::regclass AND c.nodeport = %d), $w1->port));
	my $w1sets = join(' ', map { my ($s) = @$_; $s =~ /_(\d+)$/; "$1:" . $w1->safe_psql($db,
		"SELECT boundary_set FROM zorder.layouts WHERE relid = '$s'::regclass") }
		sort { ($a->[0] =~ /(\d+)$/)[0] <=> ($b->[0] =~ /(\d+)$/)[0] } grep { $_->[1] == $w1->port } @shards);
	is($w1ids, $w1sets, 'coordinator: the new sets of the shards laid out are recorded, though the call failed');
}
my $w2port = $w2->port;
unlike($err, qr/localhost|127\.0\.0\.1|\Q$w2port\E/, 'the error shows no node address');
$w2->start;

# Each full call samples a new set for the table, under a new id; the
# sets no shard and no index is on any more go, on every node.
($ret, $out, $err) = $coord->psql($db, $as_alice . "CALL zorder.optimize('dist', \"full\" => true)");
is($ret, 0, 'coordinator: a full call on dist with both workers up') or diag($err);
my $new_set = $coord->safe_psql($db, $set_of);
my ($new_id) = split / /, $new_set;
cmp_ok($new_id, '>', $set_id, "the full calls sampled new sets for dist (now $new_id)");
foreach my $node ($coord, $w1, $w2)
{
	is( $node->safe_psql(
			$db, q(SELECT string_agg(id::text, ',') FROM zorder.boundary_sets
			WHERE relid = 'dist'::regclass AND origin = 'optimize')),
		$new_id, $node->name . ": dist keeps its newest set alone");
}
foreach my $w ($w1, $w2)
{
	is( $w->safe_psql(
			$db, $show . q(SELECT string_agg(DISTINCT l.boundary_set::text, ',') FROM zorder.layouts l
			JOIN pg_class c ON c.oid = l.relid::oid WHERE c.relname ~ '^dist_[0-9]+$')),
		$new_id, $w->name . ": its shards are laid out with the new set");
}
# A node takes a table's set only from the owner of the shard and of the
# table, and only under an id that is free or already that set.
{
	my ($s, $p) = @{ (grep { $_->[1] == $w1->port } @shards)[0] };
	my $doc = $coord->safe_psql($db, qq(SELECT (to_jsonb(b) - 'id' - 'relid' - 'keys' - 'owner' - 'created_at' - 'origin')::text
		FROM zorder.boundary_sets b WHERE id = $new_id));
	($ret, $out, $err) = $w1->psql($db, "SET ROLE bob;\nSELECT zorder._take_table_set('$s', 'dist', $new_id + 100, '$doc')");
	like($err, qr/must be owner of table \Q$s\E/, 'worker1: bob may not give a shard of dist a set') or diag($err);
	$w1->safe_psql($db, q(CREATE TABLE wlocal (a bigint, b int); ALTER TABLE wlocal OWNER TO alice;
		INSERT INTO wlocal SELECT g, g FROM generate_series(1, 100) g;
		SET ROLE alice; SELECT zorder.cluster_by('wlocal', 'a', 'b')));
	my $other = $w1->safe_psql($db, "SET ROLE alice; SELECT boundary_set FROM zorder.prepare_layout('wlocal')");
	($ret, $out, $err) = $w1->psql($db, "\\set VERBOSITY verbose\nSET ROLE alice;\nSELECT zorder._take_table_set('$s', 'dist', $other, '$doc')");
	like($err, qr/ERROR:  22023: boundary set \Q$other\E is not a distributed table's/,
		'worker1: a node\'s own set id is no distributed table\'s') or diag($err);
	cmp_ok($other, '<', $new_id, 'worker1: its own sets have ids below the table sets\'');
	(my $zdoc = $doc) =~ s/"curve": "hilbert"/"curve": "z"/;
	($ret, $out, $err) = $w1->psql($db, "\\set VERBOSITY verbose\nSET ROLE alice;\nSELECT zorder._take_table_set('$s', 'dist', $new_id, '$zdoc')");
	like($err, qr/ERROR:  55000: boundary set \Q$new_id\E is another set on this node/,
		'worker1: another set under a table set\'s id is refused') or diag($err);
	($ret, $out, $err) = $w1->psql($db, "SET ROLE bob;\nCALL zorder._optimize_with_set('wlocal', $new_id, false)");
	like($err, qr/must be owner of table wlocal/, 'worker1: bob may not lay out alice\'s table with a set') or diag($err);
	($ret, $out, $err) = $w1->psql($db, "SET ROLE alice;\nSELECT zorder._take_table_set('$s', 'wlocal', $new_id, '$doc')");
	like($err, qr/"wlocal" is not a Citus distributed table/, 'worker1: a set is taken only for a distributed table') or diag($err);
	($ret, $out, $err) = $w1->psql($db, "SET ROLE alice;\nCALL zorder._optimize_with_set('wlocal', $new_id, true)");
	like($err, qr/boundary set \Q$new_id\E does not fit table "wlocal"/, 'worker1: a set that does not fit a table is refused') or diag($err);
	# what a coordinator sends a shard takes an ordinary table only
	$w1->safe_psql($db, q(CREATE TABLE wparted (a bigint, b int) PARTITION BY RANGE (a);
		ALTER TABLE wparted OWNER TO alice));
	($ret, $out, $err) = $w1->psql($db, "\\set VERBOSITY verbose\nSET ROLE alice;\nSELECT zorder._shard_sample_set('wparted', NULL)");
	like($err, qr/ERROR:  42809: "wparted" is not an ordinary table/, 'worker1: no sample of a partitioned table') or diag($err);
	($ret, $out, $err) = $w1->psql($db, "\\set VERBOSITY verbose\nSET ROLE alice;\nCALL zorder._optimize_with_set('wparted', $new_id, true)");
	like($err, qr/ERROR:  42809: "wparted" is not an ordinary table/, 'worker1: no layout of a partitioned table with a set') or diag($err);
	$w1->safe_psql($db, "DROP TABLE wlocal, wparted");
}

# The coordinator may hold shards too: they take the set it made and
# committed before any shard was laid out (uncommitted, its own placements,
# on connections of their own, would wait for it).
$coord->safe_psql($db, "SELECT citus_set_node_property('localhost', " . $coord->port . ", 'shouldhaveshards', true)");
$coord->safe_psql($db, q(
CREATE TABLE cdist (id int, a int, b int);
SELECT create_distributed_table('cdist', 'id', shard_count => 6);
INSERT INTO cdist SELECT g, (g * 7919) % 1000, (g * 104729) % 997 FROM generate_series(1, 6000) g;
SELECT zorder.cluster_by('cdist', 'a', 'b');
));
my $cdigest = $coord->safe_psql($db, sprintf($digest, 'cdist'));
cmp_ok($coord->safe_psql($db, "SELECT count(*) FROM citus_shards WHERE table_name = 'cdist'::regclass AND nodeport = " . $coord->port),
	'>', 0, 'cdist has shards on the coordinator');
($ret, $out, $err) = $coord->psql($db, "SET statement_timeout = '60s';\nCALL zorder.optimize('cdist')");
is($ret, 0, 'coordinator: a table with shards on the coordinator is laid out') or diag($err);
is(scalar(() = $err =~ /NOTICE:  laid out shard/g), 6, '... every one of its 6 shards');
is($coord->safe_psql($db, sprintf($digest, 'cdist')), $cdigest, 'cdist: the same rows');
foreach my $node ($coord, $w1, $w2)
{
	foreach my $cs (split /\n/, $node->safe_psql($db, $show . q(SELECT c.oid::regclass FROM pg_class c WHERE c.relname ~ '^cdist_[0-9]+$')))
	{
		check_heap_and_indexes($node, $db, "$cs on " . $node->name, table => $cs);
	}
}
$coord->safe_psql($db, "DROP TABLE cdist; SELECT citus_set_node_property('localhost', " . $coord->port . ", 'shouldhaveshards', false)");

# Two copies of each shard: refused with the reason.
$coord->safe_psql($db, q(
SET citus.shard_replication_factor = 2;
CREATE TABLE rep (id int, a int, b int);
SELECT create_distributed_table('rep', 'id');
SELECT zorder.cluster_by('rep', 'a', 'b');
));
($ret, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\nCALL zorder.optimize('rep')");
like($err, qr/ERROR:  0A000: table "rep" keeps more than one copy of its shards/,
	'coordinator: a table with two copies of each shard is refused') or diag($err);

# A single-shard table, and zorder.clear_keys on every shard.
$coord->safe_psql($db, sprintf('INSERT INTO single SELECT i, a, b FROM (%s) r', sprintf($rows, 1, 3000)));
my ($single_shard, $single_port) = split /\|/, $coord->safe_psql($db,
	"SELECT shard_name, nodeport FROM citus_shards WHERE table_name = 'single'::regclass");
($ret, $out, $err) = $coord->psql($db, $as_alice . "SELECT zorder.cluster_by('single', 'b', 'a'); CALL zorder.optimize('single')");
is($ret, 0, 'coordinator: a single-shard table is laid out') or diag($err);
my $sn = $node_by_port{$single_port};
is($sn->safe_psql($db, "SELECT keys::text || ' ' || sorted_runs FROM zorder.clustering_information('$single_shard') LIMIT 1"),
	'{b,a} 1', "$single_shard: laid out on its node");
$coord->safe_psql($db, $as_alice . "SELECT zorder.clear_keys('single')");
is($sn->safe_psql($db, "SELECT count(*) FROM zorder.tables WHERE relid = '$single_shard'::regclass"),
	'0', "clear_keys on the coordinator: $single_shard forgot its keys");
is($coord->safe_psql($db, "SELECT count(*) FROM zorder.tables WHERE relid = 'single'::regclass"),
	'0', 'clear_keys on the coordinator: single forgot its keys');

# Under load through the coordinator: pgbench adds to accounts and appends
# new ones, each write recorded in a ledger in the same transaction, while
# the coordinator lays the table out again and again (incremental calls,
# and one full).  No transaction fails, the table equals the ledger, and
# amcheck is clean on every shard.
$coord->safe_psql($db, q(
CREATE TABLE acct (id bigint PRIMARY KEY, a int NOT NULL, b int NOT NULL, v bigint NOT NULL);
SELECT create_distributed_table('acct', 'id');
CREATE TABLE ledger (id bigint NOT NULL, op "char" NOT NULL, d int NOT NULL);
SELECT create_distributed_table('ledger', 'id', colocate_with => 'acct');
CREATE SEQUENCE acct_newid START 1000001;
CREATE INDEX acct_ab ON acct USING brin (a, b) WITH (pages_per_range = 4);
INSERT INTO acct SELECT g, (g * 7919) % 1000, (g * 104729) % 997, 0 FROM generate_series(1, 20000) g;
SELECT zorder.cluster_by('acct', 'a', 'b');
));
$coord->safe_psql($db, "CALL zorder.optimize('acct')");
my $initial_keys = $coord->safe_psql($db,
	'SELECT md5(string_agg(id || \':\' || a || \':\' || b, \',\' ORDER BY id)) FROM acct WHERE id <= 20000');
my $bench = PostgreSQL::Test::Utils::tempdir;
my @bench_args = write_pgbench_scripts(
	$bench,
	{
		add => q(
\set id random(1, 20000)
\set d random(1, 100)
BEGIN;
UPDATE acct SET v = v + :d WHERE id = :id;
INSERT INTO ledger VALUES (:id, 'u', :d);
END;
),
		append => q(
SELECT nextval('acct_newid') AS nid \gset
BEGIN;
INSERT INTO acct VALUES (:nid, (:nid::bigint * 7919) % 1000, (:nid::bigint * 104729) % 997, 0);
INSERT INTO ledger VALUES (:nid, 'i', 0);
END;
),
	},
	{ add => 1, append => 2 });
my ($bout, $berr) = ('', '');
my $bh = IPC::Run::start(
	[ 'pgbench', '-n', '-c', 4, '-j', 2, '-T', 15, @bench_args, $coord->connstr($db) ],
	'>', \$bout, '2>', \$berr);
my @calls_done;
foreach my $call (1 .. 4)
{
	sleep 2;
	my $full = $call == 3 ? ', "full" => true' : '';
	my ($r, $o, $e) = $coord->psql($db, "CALL zorder.optimize('acct'$full)");
	push @calls_done, $r == 0 ? 'ok' : "failed: $e";
}
check_pgbench('acct under load', $bh, \$bout, \$berr);
is(join(' ', @calls_done), 'ok ok ok ok', 'four calls on acct from the coordinator under load')
  or diag(join("\n", @calls_done));
is( $coord->safe_psql(
		$db, q(
SELECT count(*) FROM acct a
  FULL JOIN (SELECT id, sum(d) AS d, bool_or(op = 'i') AS ins FROM ledger GROUP BY id) l USING (id)
 WHERE a.id IS NULL OR (a.id > 20000 AND l.id IS NULL)
    OR a.v <> COALESCE(l.d, 0) OR (a.id > 20000) IS DISTINCT FROM COALESCE(l.ins, false))),
	'0',
	'acct equals the ledger after the calls under load');
is( $coord->safe_psql($db,
		'SELECT md5(string_agg(id || \':\' || a || \':\' || b, \',\' ORDER BY id)) FROM acct WHERE id <= 20000'),
	$initial_keys,
	'acct: the first rows keep their keys');
my $appended = $coord->safe_psql($db, "SELECT count(*) FROM ledger WHERE op = 'i'");
note("acct under load: " . $coord->safe_psql($db, "SELECT count(*) FROM ledger WHERE op = 'u'")
	  . " additions, $appended appended accounts");
cmp_ok($appended, '>', 0, 'pgbench appended accounts');
my ($calls_on_shards, $moved_on_shards) = (0, 0);
foreach my $sh (split /\n/, $coord->safe_psql($db,
	"SELECT shard_name || '|' || nodeport FROM citus_shards WHERE table_name = 'acct'::regclass ORDER BY shardid"))
{
	my ($s, $p) = split /\|/, $sh;
	my ($n, $m) = split /\|/, $node_by_port{$p}->safe_psql($db,
		qq(SELECT count(*), COALESCE(sum(rows_moved), 0) FROM zorder.optimize_history WHERE "table" = '$s'::regclass));
	$calls_on_shards += $n;
	$moved_on_shards += $m;
	check_heap_and_indexes($node_by_port{$p}, $db, "$s after the load", table => $s,
		indexes => [ $node_by_port{$p}->safe_psql($db, $show . "SELECT 'acct_pkey_' || substring('$s' from '[0-9]+\$')") ]);
}
is($calls_on_shards, 4 * 5, 'every shard of acct was laid out by each of the five calls');
cmp_ok($moved_on_shards, '>', 20000, "the calls moved $moved_on_shards rows on the shards");

# Cancelled: a shard whose call waits for a lock on its node (a reader
# holds the shard) makes the coordinator's call wait until its
# statement_timeout; the shards before it are laid out, Citus cancels the
# call on the node, and the next call does the rest.
$coord->safe_psql($db, q(
CREATE TABLE slow (id int PRIMARY KEY, a int, b int);
SELECT create_distributed_table('slow', 'id', colocate_with => 'none');
INSERT INTO slow SELECT g, (g::bigint * 7919) % 1000, (g::bigint * 104729) % 997 FROM generate_series(1, 40000) g;
CREATE INDEX slow_ab ON slow USING brin (a, b) WITH (pages_per_range = 1);
SELECT zorder.cluster_by('slow', 'a', 'b');
));
my @slow = map { [ split /\|/ ] } split /\n/, $coord->safe_psql($db,
	"SELECT shard_name, nodeport FROM citus_shards WHERE table_name = 'slow'::regclass ORDER BY shardid");
my ($held, $held_port) = @{ $slow[-1] };
my $reader = $node_by_port{$held_port}->background_psql($db);
$reader->query_safe("BEGIN; SELECT count(*) FROM $held;");
($ret, $out, $err) = $coord->psql($db, qq(SET statement_timeout = '3s';\nCALL zorder.optimize('slow', "full" => true)));
like($err, qr/canceling statement due to statement timeout/, 'coordinator: the call on slow is cancelled')
  or diag($err);
my $still = 'x';
foreach (1 .. 40)
{
	$still = $node_by_port{$held_port}->safe_psql($db,
		q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CALL zorder.optimize(%' AND pid <> pg_backend_pid()});
	last if $still eq '0';
	usleep(250_000);
}
is($still, '0', 'the shard call waiting on its node was cancelled');
$reader->query_safe('COMMIT');
$reader->quit;
my $laid_before = 0;
foreach my $sh (@slow)
{
	my ($s, $p) = @$sh;
	$laid_before += $node_by_port{$p}->safe_psql($db,
		qq(SELECT count(*) FROM zorder.clustered_tables WHERE "table" = '$s'::regclass AND optimized_at IS NOT NULL));
}
note("slow: $laid_before of 4 shards laid out before the cancel");
is($node_by_port{$held_port}->safe_psql($db,
		qq(SELECT count(*) FROM zorder.clustered_tables WHERE "table" = '$held'::regclass AND optimized_at IS NOT NULL)),
	'0', 'the held shard was not laid out');
($ret, $out, $err) = $coord->psql($db, "CALL zorder.optimize('slow')");
is($ret, 0, 'coordinator: the next call on slow') or diag($err);
foreach my $sh (@slow)
{
	my ($s, $p) = @$sh;
	is($node_by_port{$p}->safe_psql($db, "SELECT sorted_runs FROM zorder.clustering_information('$s') LIMIT 1"),
		'1', "$s: laid out after the call that followed the cancel");
	check_heap_and_indexes($node_by_port{$p}, $db, "$s after the cancel", table => $s);
}

# Shards made or moved since the last call: one shard of slow moves to the
# other worker, 1 % more rows come in, another shard splits in two.  The
# next call gives every shard the keys and lays it out on its node.  The
# moved one arrives in its old order but without zorder's rows about it:
# the coordinator gives it the set of its last layout, and its node
# recognises the layout and places only the newcomers.  The split's
# shards are new tables, laid out in full.
is($coord->safe_psql($db, "SELECT count(*) FROM zorder.shard_sets WHERE relid = 'slow'::regclass"),
	'4', 'the coordinator keeps the set of each shard of slow');
like($coord->safe_psql($db, "SELECT reloptions::text FROM pg_class WHERE oid = 'slow'::regclass"),
	qr/^\{fillfactor=\d+\}$/, 'slow, on the coordinator: the room zorder chose on its shards');
my ($move_id, $move_from) = split /\|/, $coord->safe_psql($db,
	"SELECT shardid, nodeport FROM citus_shards WHERE table_name = 'slow'::regclass ORDER BY shardid LIMIT 1");
my $move_to = $move_from == $w1->port ? $w2->port : $w1->port;
# Skipping on the shard, the same way before and after: the BRIN ranges
# that point filters on each key column cannot skip.
sub shard_skipping
{
	my ($node, $shard) = @_;
	return $node->safe_psql($db, qq{
SELECT sum(zorder.ranges_touched('$shard', 'a', ((g * 7919) % 1000)::text))
	 + sum(zorder.ranges_touched('$shard', 'b', ((g * 104729) % 997)::text))
FROM generate_series(1, 400, 7) g});
}
my $skipping_before = shard_skipping($node_by_port{$move_from}, "slow_$move_id");
$coord->safe_psql($db,
	"SELECT citus_move_shard_placement($move_id, 'localhost', $move_from, 'localhost', $move_to, 'block_writes')");
is($node_by_port{$move_to}->safe_psql($db, "SELECT count(*) FROM zorder.tables WHERE relid = 'slow_$move_id'::regclass"),
	'0', 'the moved shard arrives on its new node without zorder\'s rows');
is($node_by_port{$move_to}->safe_psql($db, $show . "SELECT reloptions::text FROM pg_class WHERE oid = 'slow_$move_id'::regclass"),
	$coord->safe_psql($db, "SELECT reloptions::text FROM pg_class WHERE oid = 'slow'::regclass"),
	'the moved shard has the room zorder gave the distributed table');
$coord->safe_psql($db, "INSERT INTO slow SELECT g, (g::bigint * 7919) % 1000, (g::bigint * 104729) % 997 FROM generate_series(40001, 40400) g");
my $appended_moved = $node_by_port{$move_to}->safe_psql($db, "SELECT count(*) FROM slow_$move_id WHERE id > 40000");
my $slow_digest = $coord->safe_psql($db, sprintf($digest, 'slow'));
my ($split_id, $split_at) = split /\|/, $coord->safe_psql($db,
	q(SELECT shardid, ((shardminvalue::bigint + shardmaxvalue::bigint) / 2)::text FROM pg_dist_shard
	  WHERE logicalrelid = 'slow'::regclass ORDER BY shardid DESC LIMIT 1));
$coord->safe_psql($db, qq(
SELECT citus_split_shard_by_split_points($split_id, ARRAY['$split_at'],
	ARRAY(SELECT nodeid FROM pg_dist_node WHERE nodeport IN (${\ $w1->port}, ${\ $w2->port}) ORDER BY nodeport), 'block_writes')));
my @slow_now = map { [ split /\|/ ] } split /\n/, $coord->safe_psql($db,
	"SELECT shard_name, nodeport FROM citus_shards WHERE table_name = 'slow'::regclass ORDER BY shardid");
is(scalar(@slow_now), 5, 'slow has 5 shards after the split');
my ($moved_name) = map { $_->[0] } grep { $_->[0] =~ /_$move_id\z/ } @slow_now;
# The report on the coordinator: the new shards have no keys on their nodes
# yet, so the table is not laid out, and their pages count.
my $slow_pages = 0;
$slow_pages += $node_by_port{$_->[1]}->safe_psql($db,
	"SELECT pg_relation_size('$_->[0]') / current_setting('block_size')::int")
  foreach @slow_now;
is($coord->safe_psql($db, "SELECT (optimized_at IS NULL) || ' ' || table_pages FROM zorder.clustering_information('slow') LIMIT 1"),
	"true $slow_pages", 'slow after the split: not laid out, and every shard\'s pages counted');
is($coord->safe_psql($db, q(SELECT string_agg(DISTINCT (optimized_at IS NULL)::text, ',') FROM (
	SELECT optimized_at FROM zorder.shard_clustering_information('slow') LIMIT 4) s)),
	'true', 'shard_clustering_information: the shards without a layout come first');
($ret, $out, $err) = $coord->psql($db, "CALL zorder.optimize('slow')");
is($ret, 0, 'coordinator: the call after the move and the split') or diag($err);
is(scalar(() = $err =~ /NOTICE:  laid out shard/g), 5, 'every shard of slow was laid out');
my ($moved_mode, $moved_rows) = split /\|/, $node_by_port{$move_to}->safe_psql($db,
	qq(SELECT mode, rows_moved FROM zorder.optimize_history WHERE "table" = '$moved_name'::regclass ORDER BY started_at DESC LIMIT 1));
is($moved_mode, 'incremental', "$moved_name, moved: its layout recognised on its new node, not rewritten");
# Citus wrote the copy with the distributed table's fillfactor, which
# zorder set to the room it chose on the shards: the pages kept their
# room, and the appended rows go into it.
cmp_ok($moved_rows, '<=', 1.1 * $appended_moved,
	"$moved_name, moved: the call moved $moved_rows rows for $appended_moved appended since the move");
my $skipping_after = shard_skipping($node_by_port{$move_to}, $moved_name);
cmp_ok($skipping_after, '<=', 1.05 * $skipping_before,
	"$moved_name, moved: skipping within 1.05 x of before the move ($skipping_after ranges against $skipping_before)");
like($node_by_port{$move_to}->safe_psql($db,
		qq(SELECT fillfactor || ': ' || room FROM zorder.optimize_history WHERE "table" = '$moved_name'::regclass ORDER BY started_at DESC LIMIT 1)),
	qr/^\d+: (?!the table's own fillfactor)/, "$moved_name, moved: its fillfactor is zorder's to change on its new node");
is($coord->safe_psql($db, "SELECT count(*) FROM zorder.shard_sets WHERE relid = 'slow'::regclass"),
	'5', 'the coordinator keeps the set of each of the 5 shards, not of the split one');
is($coord->safe_psql($db, sprintf($digest, 'slow')), $slow_digest,
	'slow: the same rows after the move, the split and the call');
foreach my $sh (@slow_now)
{
	my ($s, $p) = @$sh;
	is($node_by_port{$p}->safe_psql($db,
			"SELECT keys::text || ' ' || sorted_runs FROM zorder.clustering_information('$s') LIMIT 1"),
		'{a,b} 1', "$s: has the keys of slow and is laid out on its node");
	check_heap_and_indexes($node_by_port{$p}, $db, "$s after the move and the split", table => $s);
}
like($coord->safe_psql($db, "SELECT (optimized_at IS NOT NULL) || ' ' || curve FROM zorder.clustering_information('slow') LIMIT 1"),
	qr/^true hilbert$/, 'slow after the call: laid out, with one curve');

# zorder.clear_keys on the coordinator: every shard forgets its keys.
$coord->safe_psql($db, "SELECT zorder.clear_keys('slow')");
my $slow_keyed = 0;
$slow_keyed += $node_by_port{$_->[1]}->safe_psql($db,
	"SELECT count(*) FROM zorder.tables WHERE relid = '$_->[0]'::regclass")
  foreach @slow_now;
is($slow_keyed, 0, 'clear_keys on slow: no shard has keys left');
is($coord->safe_psql($db, "SELECT count(*) FROM zorder.tables WHERE relid = 'slow'::regclass"),
	'0', 'clear_keys on slow: the coordinator forgot the keys');
is($coord->safe_psql($db, "SELECT count(*) FROM zorder.shard_sets WHERE relid = 'slow'::regclass"),
	'0', 'clear_keys on slow: the coordinator forgot the shards\' sets');
# The fillfactor zorder gave the distributed table goes with the keys:
# nothing would tell it from the owner's afterwards.  (So does a shard's
# that is still the one it came with; one that a call on the shard chose
# is zorder's by the history of its calls, which stays.)
is($coord->safe_psql($db, "SELECT coalesce(reloptions::text, 'none') FROM pg_class WHERE oid = 'slow'::regclass"),
	'none', 'clear_keys on slow: the fillfactor zorder gave it is gone');

# pg_cron on the coordinator schedules the upkeep of a distributed table.
SKIP:
{
	skip "pg_cron is not installed for PostgreSQL $major", 5 unless $have_cron;
	# Citus would send CREATE EXTENSION pg_cron to the workers, where
	# pg_cron is not loaded: it is the coordinator's alone.
	$coord->safe_psql($db, q(
SET citus.enable_ddl_propagation = off;
CREATE EXTENSION pg_cron;
RESET citus.enable_ddl_propagation;
CREATE TABLE cronned (id int PRIMARY KEY, a int, b int);
SELECT create_distributed_table('cronned', 'id');
INSERT INTO cronned SELECT g, (g * 7919) % 1000, (g * 104729) % 997 FROM generate_series(1, 8000) g;
SELECT zorder.cluster_by('cronned', 'a', 'b');
SELECT cron.schedule('zorder-cronned', '2 seconds', $$CALL zorder.optimize('cronned')$$);
));
	my $run = '';
	foreach (1 .. 240)
	{
		$run = $coord->safe_psql($db, q(SELECT d.status || ' ' || coalesce(d.return_message, '')
			FROM cron.job_run_details d JOIN cron.job j USING (jobid)
			WHERE j.jobname = 'zorder-cronned' AND d.status IN ('succeeded', 'failed')
			ORDER BY d.start_time LIMIT 1));
		last if $run ne '';
		usleep(250_000);
	}
	$coord->safe_psql($db, "SELECT cron.unschedule('zorder-cronned')");
	like($run, qr/^succeeded/, 'pg_cron on the coordinator: the job succeeded') or diag($run);
	foreach my $sh (split /\n/, $coord->safe_psql($db,
		"SELECT shard_name || '|' || nodeport FROM citus_shards WHERE table_name = 'cronned'::regclass ORDER BY shardid"))
	{
		my ($s, $p) = split /\|/, $sh;
		is($node_by_port{$p}->safe_psql($db, "SELECT sorted_runs FROM zorder.clustering_information('$s') LIMIT 1"),
			'1', "$s: laid out by the pg_cron job");
	}
}

# run_command_on_placements runs a command on every copy of a reference
# table, on a connection and in a transaction of its own each.
sub on_shards
{
	my ($fn, $table, $cmd) = @_;
	return $coord->safe_psql($db,
		    "SELECT bool_and(success) || ' ' || count(*) || ' ' || string_agg(DISTINCT result, ',') "
		  . "FROM $fn('$table', \$cmd\$$cmd\$cmd\$)");
}

# A reference table: a copy on every node (the coordinator's too), each
# laid out by run_command_on_placements.
$coord->safe_psql($db,
	sprintf('INSERT INTO ref SELECT i, a, b FROM (%s) r', sprintf($rows, 1, 3000)));
$before = $coord->safe_psql($db, sprintf($digest, 'ref'));
is(on_shards('run_command_on_placements', 'ref', q(SELECT zorder.cluster_by('%s', 'a', 'b'))),
	'true 3 ', 'run_command_on_placements: cluster_by on every copy of ref');
is(on_shards('run_command_on_placements', 'ref', q(CALL zorder.optimize('%s'))),
	'true 3 CALL', 'run_command_on_placements: CALL zorder.optimize on every copy of ref');
my ($ref_shard) = $coord->safe_psql($db,
	"SELECT shard_name FROM citus_shards WHERE table_name = 'ref'::regclass LIMIT 1");
foreach my $node (@nodes)
{
	is( $node->safe_psql(
			$db, "SELECT sorted_runs FROM zorder.clustering_information('$ref_shard') LIMIT 1"),
		'1',
		$node->name . ": $ref_shard laid out");
	is($node->safe_psql($db, sprintf($digest, $ref_shard)), $before,
		$node->name . ": $ref_shard has the rows of ref");
	check_heap_and_indexes($node, $db, $node->name . " $ref_shard", table => $ref_shard);
}

# A Citus local table: its shard is on the coordinator.
$coord->safe_psql($db,
	sprintf('INSERT INTO loc SELECT i, a, b FROM (%s) r', sprintf($rows, 1, 3000)));
my ($loc_shard) = $coord->safe_psql($db,
	"SELECT shard_name FROM citus_shards WHERE table_name = 'loc'::regclass");
$before = $coord->safe_psql($db, sprintf($digest, 'loc'));
($ret, $out, $err) = $coord->psql(
	$db, qq(
\\set ON_ERROR_STOP 1
SELECT zorder.cluster_by('$loc_shard', 'a', 'b');
CALL zorder.optimize('$loc_shard');
));
is($ret, 0, "coordinator: cluster_by and optimize on $loc_shard, the shard of loc")
  or diag($err);
is($coord->safe_psql($db, sprintf($digest, 'loc')), $before,
	'loc: the same rows after the layout of its shard');
check_heap_and_indexes($coord, $db, $loc_shard, table => $loc_shard);

# On a worker, zorder.clustered_tables lists the shards laid out there,
# though Citus hides shards from ordinary sessions' catalog queries.
foreach my $w ($w1, $w2)
{
	my $n = grep { $_->[1] == $w->port } @shards;
	is( $w->safe_psql(
			$db, q(SELECT count(*) FROM zorder.clustered_tables
			       WHERE "table"::text ~ '^dist_[0-9]+$' AND optimized_at IS NOT NULL)),
		$n,
		$w->name . ": zorder.clustered_tables lists its $n shards of dist");
}

# DROP TABLE on the coordinator drops the shards on the workers, where
# zorder's sql_drop trigger forgets them: only the copy of ref is left.
# Citus drops the placements a move or a split left behind later
# (citus_cleanup_orphaned_resources), and zorder forgets them then.
$coord->safe_psql($db, 'DROP TABLE dist, acct, ledger, slow');
$coord->safe_psql($db, 'DROP TABLE cronned') if $have_cron;
$coord->safe_psql($db, 'CALL citus_cleanup_orphaned_resources()');
is($coord->safe_psql($db, 'SELECT count(*) FROM zorder.shard_sets'), '0',
	'coordinator: the dropped tables\' shard sets are forgotten');
foreach my $w ($w1, $w2)
{
	is( $w->safe_psql($db, 'SELECT string_agg(relid::text, \' \') FROM zorder.tables'),
		$ref_shard,
		$w->name . ': the dropped shards are forgotten');
}

# A node whose zorder catalog is older (0.7: the library was updated, and
# ALTER EXTENSION zorder UPDATE has not run there yet): its shards are
# laid out without their sets going to and from the coordinator; those of
# the other node with.  After the update there, all of them.
$w2->safe_psql($db, q(
SET citus.enable_ddl_propagation = off;
DROP EXTENSION zorder CASCADE;
CREATE EXTENSION zorder VERSION '0.7';
));
$coord->safe_psql($db, sprintf(q(
CREATE TABLE ver (id int, a int, b int);
SELECT create_distributed_table('ver', 'id', shard_count => 4);
INSERT INTO ver SELECT i, a, b FROM (%s) r;
SELECT zorder.cluster_by('ver', 'a', 'b');
), sprintf($rows, 1, 8000)));
my %ver_on = map { my ($id, $port) = split /\|/; ($id => $port) } split /\n/,
  $coord->safe_psql($db, q(SELECT shardid, nodeport FROM citus_shards
	  WHERE table_name = 'ver'::regclass ORDER BY shardid));
my $ver_w1 = join(' ', sort grep { $ver_on{$_} == $w1->port } keys %ver_on);
isnt($ver_w1, '', 'ver has shards on worker 1');
isnt(scalar(grep { $ver_on{$_} == $w2->port } keys %ver_on), 0, 'ver has shards on worker 2');
foreach my $call ('full', 'incremental')
{
	($ret, $out, $err) = $coord->psql($db, "CALL zorder.optimize('ver', \"full\" => "
		  . ($call eq 'full' ? 'true' : 'false') . ')');
	is($ret, 0, "coordinator: a $call call on ver with a 0.7 catalog on worker 2 succeeds") or diag($err);
	is(scalar(() = $err =~ /NOTICE:  laid out shard/g), 4, "$call call: the 4 shards are laid out");
}
is($w2->safe_psql($db, q(SELECT extversion FROM pg_extension WHERE extname = 'zorder')),
	'0.7', 'worker 2 still has the 0.7 catalog');
is( $w2->safe_psql($db, q(SELECT count(*) FROM zorder.clustered_tables
	  WHERE "table"::text ~ '^ver_[0-9]+$' AND optimized_at IS NOT NULL)),
	scalar(grep { $ver_on{$_} == $w2->port } keys %ver_on),
	'worker 2: its shards of ver are laid out');
is( $coord->safe_psql($db, q(SELECT string_agg(shardid::text, ' ' ORDER BY shardid::text)
	  FROM zorder.shard_sets WHERE relid = 'ver'::regclass)),
	$ver_w1, 'coordinator: sets recorded for the shards of worker 1 only');
$w2->safe_psql($db, 'SET citus.enable_ddl_propagation = off; ALTER EXTENSION zorder UPDATE');
($ret, $out, $err) = $coord->psql($db, "CALL zorder.optimize('ver')");
is($ret, 0, 'coordinator: a call after the update on worker 2 succeeds') or diag($err);
is($coord->safe_psql($db, q(SELECT count(*) FROM zorder.shard_sets WHERE relid = 'ver'::regclass)),
	'4', 'coordinator: after the update, sets recorded for all 4 shards');
check_heap_and_indexes($w2, $db, $_, table => $_)
  foreach map { $coord->safe_psql($db, "SELECT shard_name FROM citus_shards WHERE shardid = $_") }
  grep { $ver_on{$_} == $w2->port } sort keys %ver_on;
is($coord->safe_psql($db, 'SELECT count(*), sum(a), sum(b) FROM ver'),
	$coord->safe_psql($db, sprintf('SELECT count(*), sum(a), sum(b) FROM (%s) r', sprintf($rows, 1, 8000))),
	'coordinator: ver has its rows');
$coord->safe_psql($db, 'DROP TABLE ver');

$_->stop foreach reverse @nodes;
done_testing();
