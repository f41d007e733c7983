# A temporary table that goes away without the sql_drop event trigger (ON
# COMMIT DROP, the end of its session) leaves its catalog rows behind.  Here
# the OID counter is really set back (pg_resetwal -o) so that a new table
# gets the dropped temporary table's OID: it must inherit neither keys nor
# layout, runs or history, and must start afresh when given keys.  Nor
# may the new table's owner, another role, compute keys under the dropped
# table's boundary sets (values sampled from its rows), before or after
# declaring keys.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $db = 'postgres';
my $node = PostgreSQL::Test::Cluster->new('oidreuse');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;
$node->safe_psql($db, 'CREATE EXTENSION zorder');
$node->safe_psql($db, q(
CREATE ROLE mallory LOGIN;
CREATE SCHEMA mallory AUTHORIZATION mallory;
));

# rows of every catalog table that name an OID
sub catalog_rows
{
	my ($oid) = @_;
	return $node->safe_psql($db, qq(
SELECT format('keys %s, layouts %s, runs %s, history %s, sets %s',
	(SELECT count(*) FROM zorder.tables WHERE relid = $oid),
	(SELECT count(*) FROM zorder.layouts WHERE relid = $oid),
	(SELECT count(*) FROM zorder.runs WHERE relid = $oid),
	(SELECT count(*) FROM zorder.history WHERE relid = $oid),
	(SELECT count(*) FROM zorder.boundary_sets WHERE relid::oid = $oid))));
}

# give the next table the OID $oid
sub reuse_oid
{
	my ($oid) = @_;
	$node->stop;
	command_ok([ 'pg_resetwal', '-o', $oid, $node->data_dir ],
		"pg_resetwal -o $oid");
	$node->start;
}

# what a new table with keys, layout, runs and history would show
sub inherited
{
	my ($table) = @_;
	return $node->safe_psql($db, qq(
SELECT (SELECT count(*) FROM zorder.clustered_tables WHERE "table" = '$table'::regclass)
	 + (SELECT count(*) FROM zorder.optimize_history WHERE "table" = '$table'::regclass)
	 + (SELECT count(*) FROM zorder.sorted_runs WHERE "table" = '$table'::regclass)));
}

for my $case ('on commit drop', 'end of session')
{
	my $oid;
	if ($case eq 'on commit drop')
	{
		$oid = $node->safe_psql($db, q(
BEGIN;
CREATE TEMP TABLE tmp (a int, b int) ON COMMIT DROP;
INSERT INTO tmp SELECT g % 13, g % 11 FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('tmp', 'b', 'a');
CALL zorder.optimize('tmp', full => true);
SELECT count(*) FROM zorder.prepare_layout('tmp');
SELECT 'tmp'::regclass::oid;
COMMIT;
));
	}
	else
	{
		$oid = $node->safe_psql($db, q(
CREATE TEMP TABLE tmp (a int, b int);
INSERT INTO tmp SELECT g % 13, g % 11 FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('tmp', 'b', 'a');
CALL zorder.optimize('tmp', full => true);
SELECT count(*) FROM zorder.prepare_layout('tmp');
SELECT 'tmp'::regclass::oid;
));
	}
	$oid = (split /\n/, $oid)[-1];
	is(catalog_rows($oid), 'keys 1, layouts 1, runs 1, history 1, sets 2',
		"$case: the temporary table's rows are left behind");
	my $set = $node->safe_psql($db,
		"SELECT max(id) FROM zorder.boundary_sets WHERE relid::oid = $oid");

	# the session that made it drops a temporary table as it exits, after
	# psql has returned: wait for that, or VACUUM may come first
	$node->poll_query_until($db,
		"SELECT NOT EXISTS (SELECT FROM pg_class WHERE oid = $oid)")
	  or die "the temporary table $oid was not dropped";
	# a dead catalog entry keeps its OID from being handed out again
	$node->safe_psql($db, 'VACUUM pg_class, pg_type, pg_attribute, pg_depend');
	reuse_oid($oid);
	$node->safe_psql($db, q(
SET ROLE mallory;
CREATE TABLE mallory.heir (a int, b int);
INSERT INTO mallory.heir SELECT g % 13, g % 11 FROM generate_series(1, 1000) g;
));
	is($node->safe_psql($db, q(SELECT 'mallory.heir'::regclass::oid)),
		$oid, "$case: the new table has the dropped table's OID");
	is(inherited('mallory.heir'), '0', "$case: the views show nothing of the old table");
	# an index of the new owner's names the old set: an empty table
	# computes no key, so nothing is checked yet
	$node->safe_psql($db, qq(
SET ROLE mallory;
CREATE TABLE mallory.probe (a int, b int);
CREATE INDEX ON mallory.probe (zorder.layout_key($set, a, b));
));
	my $probe = qq(SET ROLE mallory; SELECT zorder.layout_key($set, 5, 7));
	my ($ret, $out, $err) = $node->psql($db, $probe);
	like($err,
		qr/boundary set $set belongs to a table that no longer exists/,
		"$case: the new table's owner computes no key under the old table's set");
	($ret, $out, $err) =
	  $node->psql($db, q(SET ROLE mallory; CALL zorder.optimize('mallory.heir')));
	like($err, qr/table "heir" has no clustering keys/,
		"$case: the new table has no keys");

	$node->safe_psql($db,
		q(SET ROLE mallory; SELECT zorder.cluster_by('mallory.heir', 'a')));
	is(catalog_rows($oid), 'keys 1, layouts 0, runs 0, history 0, sets 0',
		"$case: declaring keys starts afresh");
	is( $node->safe_psql($db,
			"SELECT relid::oid FROM zorder.boundary_sets WHERE id = $set"),
		'0',
		"$case: the set an index of the new owner names is left to no table");
	($ret, $out, $err) = $node->psql($db, $probe);
	like($err,
		qr/boundary set $set belongs to a table that no longer exists/,
		"$case: and no key is computed under it");
	($ret, $out, $err) = $node->psql($db,
		q(SET ROLE mallory; INSERT INTO mallory.probe VALUES (5, 7)));
	like($err,
		qr/boundary set $set belongs to a table that no longer exists/,
		"$case: not by the index either");
	$node->safe_psql($db, q(SET ROLE mallory; CALL zorder.optimize('mallory.heir')));
	is( $node->safe_psql($db,
			q(SELECT string_agg(mode, ',') FROM zorder.optimize_history
			  WHERE "table" = 'mallory.heir'::regclass)),
		'full',
		"$case: the first optimize is a full one");
	is($node->safe_psql($db, q(SELECT count(*), sum(a), sum(b) FROM mallory.heir)),
		'1000|6006|5005', "$case: the rows are all there");
	$node->safe_psql($db, 'DROP TABLE mallory.heir, mallory.probe');
	is( $node->safe_psql($db,
			"SELECT count(*) FROM zorder.boundary_sets WHERE id = $set"),
		'0', "$case: the set goes when the index that named it goes");
}

# While its temporary table lives, a set serves that table's session only,
# as the table's rows do.
my $bg = $node->background_psql($db);
$bg->query_safe(q(
CREATE TEMP TABLE live (a int, b int);
INSERT INTO live SELECT g % 13, g % 11 FROM generate_series(1, 1000) g;
SELECT zorder.cluster_by('live', 'a', 'b');
));
# (older minors' BackgroundPsql leave the newline on the output)
my $live = $bg->query_safe(
	q(SELECT boundary_set FROM zorder.prepare_layout('live')));
$live =~ s/\s+$//;
my $key = $bg->query_safe("SELECT zorder.layout_key($live, 5, 7) IS NOT NULL");
$key =~ s/\s+$//;
is($key, 't', "a live temporary table's set serves its own session");
my ($ret, $out, $err) =
  $node->psql($db, "SELECT zorder.layout_key($live, 5, 7)");
like($err,
	qr/boundary set $live can be used only in the session of its temporary table/,
	"and no other session");
$bg->quit;

$node->stop;
done_testing();
