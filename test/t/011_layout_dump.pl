# Boundary sets survive pg_dump and pg_restore: a table keyed on an enum
# on text under a collation of its own and on an array of the enum (all
# get new OIDs in the restored database), with a btree index on zorder.layout_key over a
# prepared set.
#
# Asserted: the restore succeeds (the index is built again, which loads the
# set under the restored types and collation); the restored set gives every
# row the key it had in the original database; rows can be inserted into
# the restored table; amcheck is clean on the restored index.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->start;

$node->safe_psql(
	'postgres', qq(
CREATE DATABASE src;
CREATE DATABASE dst;
));
for my $db ('src', 'dst')
{
	$node->safe_psql($db, 'CREATE EXTENSION amcheck;');
}
$node->safe_psql(
	'src', qq(
CREATE EXTENSION zorder;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'elated');
CREATE COLLATION mycoll (provider = libc, locale = 'C');
CREATE TABLE t (id int PRIMARY KEY, m mood, s text COLLATE mycoll, v mood[]);
INSERT INTO t SELECT g, (enum_range(NULL::mood))[1 + g % 4],
	md5((g % 700)::text),
	ARRAY[(enum_range(NULL::mood))[1 + g % 3], (enum_range(NULL::mood))[1 + g % 2]]
FROM generate_series(1, 20000) g;
SELECT zorder.cluster_by('t', 'm', 's', 'v');
));
my $create = $node->safe_psql('src',
	"SELECT replace(create_index, 'CONCURRENTLY ', '') FROM zorder.prepare_layout('t')");
$node->safe_psql('src', $create);
my $set = $node->safe_psql('src', 'SELECT max(id) FROM zorder.boundary_sets');
$node->safe_psql('src',
	"CREATE TABLE keys AS SELECT id, zorder.layout_key($set, m, s, v) AS k FROM t");

my $oids_src = $node->safe_psql('src',
	"SELECT 'mood'::regtype::oid || '/' || (SELECT oid FROM pg_collation WHERE collname = 'mycoll')");

my $dump = $node->basedir . '/src.dump';
$node->command_ok(
	[ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ],
	'pg_dump of the database');
# objects in dst first so that the restored ones get other OIDs
$node->safe_psql('dst',
	"CREATE TYPE filler AS ENUM ('x'); CREATE COLLATION filler (provider = libc, locale = 'C');"
);
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore rebuilds the index on zorder.layout_key');

my $oids_dst = $node->safe_psql('dst',
	"SELECT 'mood'::regtype::oid || '/' || (SELECT oid FROM pg_collation WHERE collname = 'mycoll')");
isnt($oids_dst, $oids_src, 'the enum and the collation have new OIDs');

is( $node->safe_psql(
		'dst',
		"SELECT count(*) FROM t JOIN keys USING (id) WHERE zorder.layout_key($set, m, s, v) <> keys.k"
	),
	'0',
	'the restored set gives every row its key');
is($node->safe_psql('dst', 'SELECT count(*) FROM keys'), '20000', 'all keys compared');

$node->safe_psql('dst',
	"INSERT INTO t VALUES (20001, 'ok', 'abc', ARRAY['ok'::mood, 'sad']), (20002, 'elated', 'zzz', NULL)");
is( $node->safe_psql(
		'dst',
		"SELECT count(*) FROM (SELECT bt_index_check(indexrelid, true) FROM pg_index WHERE indrelid = 't'::regclass) c"
	),
	'2',
	'amcheck is clean on the restored indexes after inserts');

$node->stop;
done_testing();
