# Laying out a live table online: zorder.prepare_layout, then the real
# pg_repack ordered by zorder.layout_key while writers run, then
# zorder.optimize recognises the repacked heap as one sorted run.
#
# pg_repack is the Debian package of the server's version, installed as its
# documentation says (CREATE EXTENSION pg_repack in the database, its
# client from the server's bin directory); the test is skipped only where
# no pg_repack is installed for the server under test.
#
# pgbench runs inserts, updates (of non-key and of key columns), deletes and
# primary-key lookups with 4 clients, every write recorded in a ledger in
# the same statement.  A few seconds in, the pg_repack command line that
# prepare_layout returned runs through a shell, as a user would paste it.
#
# Asserted: pgbench reports no failed transaction and pg_repack succeeds;
# the table equals its initial content with the ledger applied; amcheck is
# clean; the next zorder.optimize says the table is laid out by the set
# and that the rows written during or after the repack are outside the run,
# and moves exactly those; the heap's run is in key order; the skipping of
# each key column (zorder.clustering_information's ratio to the ideal, over
# every row) is within 1.05 times that of a full zorder.optimize of the same
# rows (in a copy: its own sample, so the comparison carries the noise of
# two samples); and the
# next incremental call moves only the rows that arrived since.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $db = 'postgres';

my $node = new_node(
	'repack', conf => qq(
log_min_messages = warning
max_connections = 30
autovacuum = off
));

my $bindir = $node->config_data('--bindir');
my $sharedir = $node->config_data('--sharedir');
if (!-x "$bindir/pg_repack" || !-f "$sharedir/extension/pg_repack.control")
{
	plan skip_all => "pg_repack is not installed for this server version";
}

$node->safe_psql($db, 'CREATE EXTENSION pg_repack;');
online_layout_table($node, $db, 300000);

# ---------------------------------------------------------------------
# prepare_layout
# ---------------------------------------------------------------------

my $prep = $node->safe_psql($db,
	q(SELECT boundary_set || '|' || order_by || '|' || pg_repack
	  FROM zorder.prepare_layout('t')));
my ($set, $order_by, $repack_cmd) = split /\|/, $prep, 3;
like($order_by, qr/^zorder\.layout_key\($set, a, b\)$/,
	'prepare_layout gives the order_by expression');
like($repack_cmd, qr/^pg_repack --dbname='postgres' --table='public\.t' --order-by='\Q$order_by\E'$/,
	'and the pg_repack command line');

# ---------------------------------------------------------------------
# pgbench with a ledger; pg_repack in the middle; the checks
# ---------------------------------------------------------------------

online_layout_under_load(
	node => $node,
	db => $db,
	set => $set,
	tool => 'pg_repack',
	clients => 4,
	duration => 20,
	# the command line as a user would paste it into a shell
	layout => sub {
		my ($rout, $rerr) = ('', '');
		local $ENV{PGHOST} = $node->host;
		local $ENV{PGPORT} = $node->port;
		local $ENV{PATH} = "$bindir:$ENV{PATH}";
		IPC::Run::run([ 'sh', '-c', $repack_cmd ], '>', \$rout, '2>', \$rerr);
		return ($? >> 8, $rout, $rerr);
	});

$node->stop;
done_testing();
