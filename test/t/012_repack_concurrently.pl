# Laying out a live table online on PostgreSQL 19 and later: the index
# zorder.prepare_layout describes (a btree on zorder.layout_key), built
# with CREATE INDEX CONCURRENTLY, then REPACK (CONCURRENTLY) ... USING
# INDEX while writers run; then zorder.optimize recognises the repacked
# heap as one sorted run.  The same write load, ledger and assertions as
# 010_pg_repack.pl: pgbench (inserts, updates of non-key and key columns,
# deletes, lookups; 4 clients) reports no failed transaction; the table
# equals its initial content with the ledger applied; amcheck is clean;
# the next zorder.optimize says the table is laid out by the set, leaves
# the rows written during or after the repack outside the run and moves
# exactly those; the run is in key order; each key column's skipping is
# within 1.05 times that of the same rows in the order of a full optimize
# with the set; and the next incremental call moves only what arrived.
# Skipped before 19.

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
	'repack19',
	init => { allows_streaming => 'logical' },
	conf => qq(
log_min_messages = warning
max_connections = 30
autovacuum = off
));

if ($node->safe_psql($db, 'SHOW server_version_num') < 190000)
{
	plan skip_all => 'REPACK (CONCURRENTLY) is there from PostgreSQL 19 on';
}

online_layout_table($node, $db, 300000);

# ---------------------------------------------------------------------
# prepare_layout
# ---------------------------------------------------------------------

my $prep = $node->safe_psql($db,
	q(SELECT boundary_set || '|' || order_by || '|' || create_index || '|' || repack
	  FROM zorder.prepare_layout('t')));
my ($set, $order_by, $create_index, $repack_sql) = split /\|/, $prep, 4;
like($order_by, qr/^zorder\.layout_key\($set, a, b\)$/,
	'prepare_layout gives the order_by expression');
like($create_index, qr/^CREATE INDEX CONCURRENTLY (\S+) ON public\.t USING btree \(\Q$order_by\E\)$/,
	'the index to order by');
like($repack_sql, qr/^REPACK \(CONCURRENTLY\) public\.t USING INDEX \S+$/,
	'and the REPACK statement');

# ---------------------------------------------------------------------
# pgbench with a ledger; the index and REPACK in the middle; the checks
# ---------------------------------------------------------------------

online_layout_under_load(
	node => $node,
	db => $db,
	set => $set,
	tool => 'REPACK (CONCURRENTLY)',
	clients => 4,
	duration => 20,
	# the statements as prepare_layout gives them, while the writers go on
	layout => sub {
		my ($rc, $out, $err) = $node->psql($db, $create_index);
		is($rc, 0, 'CREATE INDEX CONCURRENTLY on the layout key succeeds')
		  or diag($err);
		return $node->psql($db, $repack_sql);
	});

$node->stop;
done_testing();
