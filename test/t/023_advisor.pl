# The key advisor, zorder.recommend_keys, set up as its documentation says
# (pg_qualstats in shared_preload_libraries), against brute force: a
# workload of nine filter shapes run at different frequencies is recorded,
# the advisor ranks the key sets of one to three of the five filtered
# columns, and then each of those sets is laid out by a real optimize and
# the workload run against it, counting the heap blocks its BRIN scans
# read.  The advisor's first choice must read at most 1.15 times what the
# best set reads.  Then automatic keys, what it says where Z-ordering is
# the wrong tool, and whom it shows what.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ZorderTest;

# pg_qualstats is Debian's postgresql-NN-pg-qualstats, which test/lib.sh,
# test/cassert.sh and test/chroot.sh install where Debian packages it.
{
	my $probe = PostgreSQL::Test::Cluster->new('probe');
	my $lib = $probe->config_data('--pkglibdir');
	plan skip_all =>
	  "pg_qualstats is not installed for this major ($lib/pg_qualstats.so is missing): Debian does not package it for this release"
	  unless -f "$lib/pg_qualstats.so";
}

my $node = ZorderTest::new_node(
	'advisor',
	conf => "shared_preload_libraries = 'zorder, pg_qualstats, pg_stat_statements'\n"
	  . "pg_qualstats.sample_rate = 1\nautovacuum = off\n",
	extensions => [ 'zorder', 'pg_qualstats', 'amcheck' ]);

# Without any record yet: what to do about it
my ($ret, $out, $err) = $node->psql('postgres',
	q{CREATE TABLE nothing (a int);
	  SELECT * FROM zorder.recommend_keys('nothing')});
like($err, qr/no recorded filters on table "nothing"/,
	'no filter recorded: says so');

# 100000 rows in time order; the other columns unrelated to it
$node->safe_psql('postgres', q{
CREATE TABLE ev (id bigint, ts timestamptz, dev int, region int,
	price numeric, kind text, pad text);
INSERT INTO ev SELECT g, '2024-01-01'::timestamptz + g * interval '30 s',
	(g * 7919) % 1000, (g * 104729) % 20, ((g * 31337) % 10000) / 100.0,
	'k' || ((g * 13) % 7), repeat('x', 20)
FROM generate_series(1::bigint, 100000) g;
CREATE INDEX ev_brin ON ev USING brin (ts, dev, region, price, kind)
	WITH (pages_per_range = 4);
ANALYZE ev;
SELECT pg_qualstats_reset();
});

# The workload: [shape, calls], each call with constants of its own.
my @workload;
# literal times, as pg_qualstats records the constants of custom plans
sub ts_at
{
	my ($h) = @_;
	return sprintf("'2024-01-%02d %02d:00+00'", 1 + int($h / 24), $h % 24);
}
push @workload, "ts >= " . ts_at(17 * $_) . " AND ts < " . ts_at(17 * $_ + 6)
  foreach 1 .. 24;
push @workload, "dev = " . ((37 * $_) % 1000) foreach 1 .. 16;
push @workload,
  "region = " . ($_ % 20) . " AND price BETWEEN " . (7 * $_) . " AND " . (7 * $_ + 5)
  foreach 1 .. 12;
push @workload, "region IN (" . ($_ % 20) . ", " . (($_ + 7) % 20) . ")"
  foreach 1 .. 6;
push @workload, "dev BETWEEN " . (90 * $_) . " AND " . (90 * $_ + 20)
  foreach 1 .. 10;
push @workload, "kind = 'k" . ($_ % 7) . "' AND region = " . (3 * $_ % 20)
  foreach 1 .. 6;
push @workload, "price > " . (98 + $_ / 10) foreach 1 .. 4;
push @workload,
  "ts >= " . ts_at(100 * $_) . " AND ts < " . ts_at(100 * $_ + 24) . " AND dev = " . (11 * $_)
  foreach 1 .. 4;
push @workload, "kind LIKE '%" . $_ . "'" foreach 1 .. 2;

$node->safe_psql('postgres',
	join('', map { "SELECT count(*) FROM ev WHERE $_;\n" } @workload));

my %advice = map { my ($r, $k, $est) = split /\|/; ($k => [ $r, $est ]) } split /\n/,
  $node->safe_psql('postgres',
	q{SELECT rank, array_to_string(keys, ','), round(ranges_read::numeric, 1)
	  FROM zorder.recommend_keys('ev', 3)});
is(scalar(keys %advice), 25, 'every set of 1 to 3 of the 5 filtered columns is ranked');
my ($first) = grep { $advice{$_}[0] == 1 } keys %advice;
my $report = $node->safe_psql('postgres',
	q{SELECT jsonb_array_length(workload), reason,
	   (SELECT sum((s->>'calls')::int) FROM jsonb_array_elements(workload) s),
	   (SELECT s->>'note' FROM jsonb_array_elements(workload) s
		WHERE s->>'filter' = 'kind ~~ ?'),
	   (SELECT s->'columns'->>'price' FROM jsonb_array_elements(workload) s
		WHERE s->>'filter' = 'region = ? AND price BETWEEN ? AND ?'),
	   (SELECT s->'columns'->>'region' FROM jsonb_array_elements(workload) s
		WHERE s->>'filter' = 'region IN (?)')
	  FROM zorder.recommend_keys('ev', 3) WHERE rank = 1});
my ($nshapes, $reason, $calls, $like_note, $price_how, $in_how) = split /\|/, $report;
is($nshapes, 9, 'the report lists the nine filter shapes');
is($calls, scalar(@workload), 'with the calls of each');
like($reason, qr/^The 84 recorded filter calls would read about \d+ block ranges in all, against \d+ with today's layout \([\d.]+ times fewer\)/,
	'the reason compares the first choice with today');
like($like_note, qr/no layout helps this filter/, 'LIKE: no layout helps it');
is($price_how, 'range', 'BETWEEN is a range');
is($in_how, 'IN', 'IN is a list');

# Brute force: each set laid out by a real optimize, the workload run on it.
$node->safe_psql('postgres', q{
CREATE TABLE workload (q text, calls int);
CREATE FUNCTION blocks_read() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	w record;
	line text;
	total bigint := 0;
	blocks bigint;
	m text[];
BEGIN
	SET LOCAL enable_seqscan = off;
	FOR w IN SELECT * FROM workload LOOP
		blocks := NULL;
		FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || w.q LOOP
			m := regexp_match(line, 'lossy=(\d+)');
			IF m IS NOT NULL THEN blocks := coalesce(blocks, 0) + m[1]::bigint; END IF;
			m := regexp_match(line, 'exact=(\d+)');
			IF m IS NOT NULL THEN blocks := coalesce(blocks, 0) + m[1]::bigint; END IF;
		END LOOP;
		-- no BRIN scan (LIKE): the whole table
		total := total + w.calls * coalesce(blocks,
			pg_relation_size('ev') / current_setting('block_size')::int);
	END LOOP;
	RETURN total;
END $$;
});
$node->safe_psql('postgres',
	join('', map { my $q = "SELECT count(*) FROM ev WHERE $_"; $q =~ s/'/''/g;
		"INSERT INTO workload VALUES ('$q', 1);\n" } @workload));

my %measured;
foreach my $keys (sort keys %advice)
{
	my $cols = join(', ', map { "'$_'" } split /,/, $keys);
	$measured{$keys} = $node->safe_psql('postgres', qq{
SELECT zorder.cluster_by('ev', $cols);
CALL zorder.optimize('ev', "full" => true);
SELECT blocks_read();});
}
my ($best) = sort { $measured{$a} <=> $measured{$b} } keys %measured;
note sprintf("%-20s %4s %10s %10s", 'keys', 'rank', 'estimated', 'measured');
note sprintf("%-20s %4d %10s %10d (%.2fx the best)", $_, $advice{$_}[0],
	$advice{$_}[1], $measured{$_}, $measured{$_} / $measured{$best})
  foreach sort { $advice{$a}[0] <=> $advice{$b}[0] } keys %advice;
cmp_ok($measured{$first} / $measured{$best}, '<=', 1.15,
	"the first choice ($first) reads at most 1.15x the blocks of the best set ($best)");

# Automatic keys: the advisor's first choice declared, then weighed again
# by optimize as the workload changes, within its hysteresis.
$node->safe_psql('postgres', q{
CREATE TABLE au AS TABLE ev;
CREATE INDEX au_brin ON au USING brin (ts, dev, region, price, kind)
	WITH (pages_per_range = 4);
ANALYZE au;
CREATE TABLE au_copy AS TABLE au;
SELECT pg_qualstats_reset();
});
my @w_time = map { "ts >= " . ts_at(13 * $_) . " AND ts < " . ts_at(13 * $_ + 4) } 1 .. 30;
my @w_dev = map { "dev = " . ((41 * $_) % 1000) } 1 .. 20;
my @w_region = map {
	"region = " . ($_ % 20) . " AND price BETWEEN " . (3 * $_) . " AND " . (3 * $_ + 4)
} 1 .. 40;
sub run_on_au
{
	$node->safe_psql('postgres',
		join('', map { "SELECT count(*) FROM au WHERE $_;\n" } @_));
	return;
}
sub au_keys
{
	return $node->safe_psql('postgres',
		q{SELECT key_names FROM zorder.tables WHERE relid = 'au'::regclass});
}
sub au_changes
{
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM zorder.key_history WHERE "table" = 'au'::regclass});
}
run_on_au(@w_time, @w_dev);
my $advised = $node->safe_psql('postgres',
	q{SELECT keys FROM zorder.recommend_keys('au', 2) WHERE rank = 1});
is($node->safe_psql('postgres', q{SELECT zorder.cluster_by_auto('au', 2)}),
	$advised, "cluster_by_auto declares the advisor's first choice ($advised)");
is(au_keys(), $advised, 'as the keys of the table');
like($node->safe_psql('postgres', q{
	SELECT old_keys IS NULL, new_keys, ranges_new > 0, reason
	FROM zorder.key_history WHERE "table" = 'au'::regclass}),
	qr/^t\|\Q$advised\E\|t\|chosen by zorder\.cluster_by_auto: the 50 recorded filter calls would read about \d+ block ranges with \(.*\) laid out, against \d+ with today's layout$/,
	'the first choice is logged with its reason');
$node->safe_psql('postgres', q{CALL zorder.optimize('au', "full" => true)});

# The workload moves to region and price.  Within zorder.auto_keys_interval
# (a day by default) optimize does not weigh the keys again.
$node->safe_psql('postgres', 'SELECT pg_qualstats_reset()');
run_on_au(@w_region);
$node->safe_psql('postgres', q{CALL zorder.optimize('au')});
is(au_keys(), $advised, 'within the interval the keys are not weighed again');

# Weighed at every call, but with a gain no choice can clear: kept.
my ($ret2, $out2, $err2) = $node->psql('postgres', q{
SET zorder.auto_keys_interval = 0;
SET zorder.auto_keys_min_gain = 1;
CALL zorder.optimize('au');
SELECT auto_checked_at > now() - interval '1 min' FROM zorder.tables
WHERE relid = 'au'::regclass});
is($out2, 't', 'weighed at every call with zorder.auto_keys_interval 0');
is(au_keys(), $advised, 'a gain below zorder.auto_keys_min_gain keeps the keys');
is(au_changes(), 1, 'and logs no change');

# With the default gain, optimize changes them to the new first choice.
my $advised2 = $node->safe_psql('postgres',
	q{SELECT keys FROM zorder.recommend_keys('au', 2) WHERE rank = 1});
isnt($advised2, $advised, "the workload's first choice is now $advised2");
($ret2, $out2, $err2) = $node->psql('postgres', q{
SET zorder.auto_keys_interval = 0;
CALL zorder.optimize('au');});
is($ret2, 0, 'the optimize that changes the keys succeeds');
like($err2,
	qr/NOTICE:  zorder\.optimize changed the automatic keys of table "au" from \(.*\) to \(.*\)\nDETAIL:  The 40 recorded filter calls would read \d+ % fewer block ranges\./,
	'and says so');
is(au_keys(), $advised2, 'the keys are the new first choice');
like($node->safe_psql('postgres', q{
	SELECT old_keys, new_keys, ranges_new <= 0.8 * ranges_old, reason
	FROM zorder.key_history WHERE "table" = 'au'::regclass
	ORDER BY changed_at DESC LIMIT 1}),
	qr/^\Q$advised\E\|\Q$advised2\E\|t\|the 40 recorded filter calls would read about \d+ block ranges with \(.*\) laid out, against \d+ with \(.*\): \d+ % fewer, more than zorder\.auto_keys_min_gain \(20 %\)$/,
	'the change is logged with both figures and its reason');

# The new keys need no rewrite; a full one lays the rows out along them,
# every row kept.
$node->safe_psql('postgres', q{CALL zorder.optimize('au', "full" => true)});
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT * FROM au EXCEPT ALL SELECT * FROM au_copy) x}) .
   $node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT * FROM au_copy EXCEPT ALL SELECT * FROM au) x}),
	'00', 'the rows are those of the table before');
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM verify_heapam('au')}), '0',
	'verify_heapam finds nothing');

# Keys declared by hand are never changed.
$node->safe_psql('postgres', q{SELECT zorder.cluster_by('au', 'kind')});
$node->safe_psql('postgres',
	q{SET zorder.auto_keys_interval = 0; CALL zorder.optimize('au')});
is(au_keys(), '{kind}', 'keys declared by hand stay');
is(au_changes(), 2, 'with no change logged');

# Refusals
($ret2, $out2, $err2) = $node->psql('postgres', q{
CREATE TABLE aup (a int, b int) PARTITION BY RANGE (a);
SELECT zorder.cluster_by_auto('aup')});
like($err2, qr/automatic keys are not supported for partitioned tables/,
	'a partitioned table: refused');
($ret2, $out2, $err2) = $node->psql('postgres',
	q{SELECT zorder.cluster_by_auto('au', 5)});
like($err2, qr/max_keys must be between 1 and 4/, 'max_keys out of range: refused');
($ret2, $out2, $err2) = $node->psql('postgres',
	q{SELECT zorder.cluster_by_auto('nothing')});
like($err2, qr/the key advisor has no keys to choose for table "nothing"\nDETAIL:  It found nothing to choose from: pg_qualstats has recorded no filter on the table\./,
	'no workload: refused, and why');

# Too small to matter
$node->safe_psql('postgres', q{
CREATE TABLE small (a int, b int);
INSERT INTO small SELECT g, g % 10 FROM generate_series(1, 500) g;
SELECT count(*) FROM small WHERE a = 5;
SELECT count(*) FROM small WHERE b BETWEEN 2 AND 3;
});
is($node->safe_psql('postgres',
	q{SELECT rank, keys, reason ~ 'too few for skipping to matter'
	  FROM zorder.recommend_keys('small')}),
	'1|{}|t', 'a table too small: no keys, and why');

# Nothing a layout can help
$node->safe_psql('postgres', q{
CREATE TABLE texts (t text);
INSERT INTO texts SELECT 'row ' || g FROM generate_series(1, 50000) g;
SELECT count(*) FROM texts WHERE t LIKE '%5';
SELECT count(*) FROM texts WHERE t <> 'row 7';
});
is($node->safe_psql('postgres',
	q{SELECT rank, keys, reason FROM zorder.recommend_keys('texts')}),
	'1|{}|Z-ordering is the wrong tool here: no recorded filter compares a column a layout can order.',
	'filters no layout helps: no keys, and why');

# Whom it shows what
$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT SELECT ON ev TO alice, bob;
CREATE TABLE secret (a int, b int);
INSERT INTO secret SELECT g, g FROM generate_series(1, 1000) g;
GRANT SELECT (a) ON secret TO bob;
});
$node->safe_psql('postgres',
	"SET ROLE alice; SELECT count(*) FROM ev WHERE dev = 5 AND kind = 'k1';");
($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE bob; SELECT count(*) FROM zorder.recommend_keys('ev')});
like($err, qr/no recorded filters on table "ev".*\n.*in the current user's queries/,
	"without pg_read_all_stats, other users' queries are not shown");
$node->safe_psql('postgres', 'GRANT pg_read_all_stats TO bob');
like($node->safe_psql('postgres',
	q{SET ROLE bob; SELECT workload::text FROM zorder.recommend_keys('ev') LIMIT 1}),
	qr/"filter": "dev = \? AND kind = \?"/,
	'with pg_read_all_stats, they are');
$node->safe_psql('postgres', q{SELECT count(*) FROM secret WHERE b = 3});
($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE bob; SELECT keys FROM zorder.recommend_keys('secret')});
is($out, '{}', 'a column the caller cannot read is never a key');
$node->safe_psql('postgres', q{
REVOKE SELECT ON ev FROM bob;
ALTER TABLE ev ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON ev USING (region = 1);
});
($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE bob; SELECT * FROM zorder.recommend_keys('ev')});
like($err, qr/permission denied for table ev/, 'no SELECT: refused');
($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE alice; SELECT * FROM zorder.recommend_keys('ev')});
like($err, qr/permission denied to read the block ranges of table "ev"/,
	'row-level security applies: refused');

# A key column's type that spies: the advisor reads the constants of the
# filters with the type's input function, and sorts its values, as the
# table's owner only
$node->safe_psql('postgres', q{
CREATE ROLE mallory LOGIN;
CREATE SCHEMA m AUTHORIZATION mallory;
SET ROLE mallory;
CREATE FUNCTION m.spy(int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	IF current_user <> 'mallory' THEN
		RAISE WARNING 'spy ran as %', current_user;
	END IF;
	RETURN true;
END $$;
CREATE DOMAIN m.d AS int CHECK (m.spy(VALUE));
CREATE TABLE m.t (k m.d, v int);
INSERT INTO m.t SELECT g % 1000, g FROM generate_series(1, 20000) g;
RESET ROLE;
SELECT count(*) FROM m.t WHERE k = 5;
SELECT count(*) FROM m.t WHERE k BETWEEN 10 AND 20 AND v > 100;
});
($ret, $out, $err) = $node->psql('postgres',
	q{SELECT keys FROM zorder.recommend_keys('m.t') WHERE rank = 1});
is($ret, 0, 'a superuser gets advice on the spied table');
unlike($err, qr/spy ran as/, "and the type's code never runs as the superuser");
($ret, $out, $err) = $node->psql('postgres', q{
SELECT zorder.cluster_by_auto('m.t');
SET zorder.auto_keys_interval = 0;
CALL zorder.optimize('m.t');
CALL zorder.optimize('m.t');});
is($ret, 0, 'a superuser declares automatic keys on it and optimizes it');
unlike($err, qr/could not weigh/, 'the keys are weighed');
unlike($err, qr/spy ran as/,
	"and the type's code never runs as the superuser when the keys are weighed");

# pg_stat_statements as the source, and neither: test/t/024_advisor_statements.pl

$node->stop;
done_testing();
