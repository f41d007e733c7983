# The key advisor and automatic keys where pg_qualstats is not installed,
# on every major (Debian does not package pg_qualstats for all of them):
# the workload read from pg_stat_statements' texts, their constants
# unknown, set up as its documentation says (shared_preload_libraries,
# CREATE EXTENSION).  Then, with neither extension, what to do about it.
# test/t/023_advisor.pl does the same with pg_qualstats, against brute
# force.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

my $node = ZorderTest::new_node(
	'statements',
	conf => "shared_preload_libraries = 'zorder, pg_stat_statements'\n"
	  . "autovacuum = off\n",
	extensions => [ 'zorder', 'pg_stat_statements', 'amcheck' ]);
my $db = 'postgres';

# recommend_keys: the filters read from the texts, the most used key first
$node->safe_psql($db, q{
CREATE TABLE t (a int, b int, c text);
INSERT INTO t SELECT g, (g * 7919) % 1000, 'x' || g % 7
FROM generate_series(1, 100000) g;
SELECT pg_stat_statements_reset();
});
$node->safe_psql($db,
	join('', map { "SELECT count(*) FROM t WHERE b = $_;\n" } 1 .. 5)
	  . "SELECT count(*) FROM t x WHERE x.a BETWEEN 10 AND 500 AND c LIKE 'x1%';\n"
	  . "SELECT count(*) FROM t WHERE b IN (1, 2, 3);\n");
is($node->safe_psql($db, q{
	SELECT keys, (SELECT string_agg(s->>'filter' || ' ' || (s->>'calls'), '; '
						ORDER BY s->>'filter')
				  FROM jsonb_array_elements(workload) s)
	FROM zorder.recommend_keys('t', 1) WHERE rank = 1}),
	'{b}|a BETWEEN ? AND ? AND c ~~ ? 1; b = ? 5; b IN (?) 1',
	'pg_stat_statements: the filters read from the texts, the most used key first');

# Automatic keys from the same source: the first choice, then a change
# when the workload moves to another column.
$node->safe_psql($db, q{
CREATE TABLE u (a int, b int, c int, pad text);
INSERT INTO u SELECT (g::bigint * 7919) % 100000, (g::bigint * 104729) % 5000, g % 13,
	   repeat('x', 40)
FROM generate_series(1, 100000) g;
CREATE INDEX u_brin ON u USING brin (a, b) WITH (pages_per_range = 4);
CREATE TABLE u_copy AS TABLE u;
SELECT pg_stat_statements_reset();
});
$node->safe_psql($db,
	join('', map { "SELECT count(*) FROM u WHERE b = " . (37 * $_) . ";\n" } 1 .. 25));
is($node->safe_psql($db, q{SELECT zorder.cluster_by_auto('u', 1)}),
	'{b}', 'cluster_by_auto: the column the workload filters');
$node->safe_psql($db, q{CALL zorder.optimize('u', "full" => true)});
$node->safe_psql($db, 'SELECT pg_stat_statements_reset()');
$node->safe_psql($db,
	join('', map { "SELECT count(*) FROM u WHERE a BETWEEN " . (900 * $_) . " AND " . (900 * $_ + 50) . ";\n" } 1 .. 30));
my ($ret, $out, $err) = $node->psql($db, q{
SET zorder.auto_keys_interval = 0;
CALL zorder.optimize('u');
SELECT key_names FROM zorder.tables WHERE relid = 'u'::regclass});
is($out, '{a}', 'a later optimize changes the keys to the new first choice');
like($err,
	qr/NOTICE:  zorder\.optimize changed the automatic keys of table "u" from \(b\) to \(a\)/,
	'and says so');
is($node->safe_psql($db, q{
	SELECT string_agg(coalesce(old_keys::text, '-') || ' ' || new_keys::text
					  || ' ' || (reason <> ''), ', ' ORDER BY changed_at)
	FROM zorder.key_history WHERE "table" = 'u'::regclass}),
	'- {b} true, {b} {a} true', 'both choices are in the key history');
$node->safe_psql($db, q{CALL zorder.optimize('u', "full" => true)});
is($node->safe_psql($db, q{
	SELECT (SELECT count(*) FROM (SELECT * FROM u EXCEPT ALL SELECT * FROM u_copy) x)
		 + (SELECT count(*) FROM (SELECT * FROM u_copy EXCEPT ALL SELECT * FROM u) y)}),
	'0', 'the rows are those of the table before');
is($node->safe_psql($db, q{SELECT count(*) FROM verify_heapam('u')}),
	'0', 'verify_heapam finds nothing');

# Keys declared by hand while an optimize waits to weigh the automatic
# ones win: the optimize sees them once it has its lock, and keeps them.
$node->safe_psql($db, 'SELECT pg_stat_statements_reset()');
$node->safe_psql($db,
	join('', map { "SELECT count(*) FROM u WHERE b = " . (41 * $_) . ";\n" } 1 .. 25));
my $decl = $node->background_psql($db);
$decl->query_safe(q{BEGIN; SELECT zorder.cluster_by('u', 'c')});
my $opt = $node->background_psql($db, on_error_stop => 0);
$opt->query_until(qr/started/,
	"\\echo started\nSET zorder.auto_keys_interval = 0;\nCALL zorder.optimize('u');\n\\echo optimize done\n");
ok( $node->poll_query_until(
		$db, q{SELECT count(*) > 0 FROM pg_locks
			   WHERE relation = 'u'::regclass AND NOT granted}),
	'the optimize waits for the declaring transaction');
$decl->query_safe('COMMIT');
ok(pump_until($opt->{run}, $opt->{timeout}, \$opt->{stdout}, qr/optimize done/),
	'the optimize goes on once it commits');
unlike($opt->{stderr}, qr/changed the automatic keys/,
	'and does not weigh the keys declared by hand');
is($node->safe_psql($db,
	q{SELECT key_names, auto_max_keys IS NULL FROM zorder.tables WHERE relid = 'u'::regclass}),
	'{c}|t', 'the keys are those declared by hand, not automatic');
$decl->quit;
$opt->quit;

# With neither: how to get them
$node->safe_psql($db, 'CREATE DATABASE bare');
$node->safe_psql('bare', 'CREATE EXTENSION zorder; CREATE TABLE t (a int)');
($ret, $out, $err) = $node->psql('bare',
	q{SELECT * FROM zorder.recommend_keys('t')});
like($err, qr/no record of the queries on table "t".*\n.*\n.*HINT:  Add pg_qualstats \(or pg_stat_statements\) to shared_preload_libraries/,
	'recommend_keys without either: says how to enable them');
($ret, $out, $err) = $node->psql('bare',
	q{SELECT zorder.cluster_by_auto('t')});
like($err, qr/the key advisor has no keys to choose for table "t"\nDETAIL:  It found nothing to choose from: neither pg_qualstats nor pg_stat_statements is installed in the database\.\nHINT:  /,
	'cluster_by_auto without either: says so');

$node->stop;
done_testing();
