#!/usr/bin/env bash
# test/demo.sh: what zorder does, on a throwaway cluster.
#
# Run as root on Debian 12.  Installs what it needs, builds and installs the
# extension, starts a PostgreSQL cluster in ./tmp_demo as the unprivileged
# "postgres" user, loads an events table in random order with a BRIN index,
# and shows how many block ranges point filters on two columns read before
# and after CALL zorder.optimize.  Stops the cluster at the end.  On the
# system's PostgreSQL 15 by default; PG_VERSION=16 to 19 picks another major
# (17 to 19 run in a Debian chroot, made the first time: see test/chroot.sh).
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/test/lib.sh"

rows=${DEMO_ROWS:-1000000}

# PG_VERSION=18 ./test/demo.sh: the demo on 18, in its chroot
run_elsewhere test/demo.sh "$@"
ensure_packages
build_install "$repo"

dir=$repo/tmp_demo
# the cluster's owner must be able to reach the folder
as_pg test -x "$repo" 2>/dev/null || dir=/tmp/zorder-demo
trap 'stop_cluster "$dir"' EXIT
# zorder preloaded, as the README's installation says: the planner then
# knows what the layout lets BRIN skip
start_cluster "$dir" 54321 "shared_preload_libraries = 'zorder'"

psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@" || die "a demo step failed"; }
say() { printf '\n== %s\n' "$*"; }

say "loading $rows events in random order, with a BRIN index (32 pages per range)"
psql <<SQL
CREATE EXTENSION zorder;
SELECT setseed(0.5);
CREATE TABLE events (
	customer_id int,
	product_id int,
	ts timestamptz,
	amount numeric(10, 2)
);
INSERT INTO events
SELECT (random() * 10000)::int, (random() * 5000)::int,
	   '2026-01-01'::timestamptz + random() * interval '300 days',
	   round((random() * 500)::numeric, 2)
FROM generate_series(1, $rows);
CREATE INDEX events_brin ON events
	USING brin (customer_id, product_id) WITH (pages_per_range = 32);
VACUUM ANALYZE events;
SQL

# Block ranges whose [min, max] contains a value, per column, for 200
# values drawn from the data: what a BRIN point filter cannot skip.
ranges_report() {
	psql <<'SQL'
\pset footer off
WITH r AS (
	SELECT (ctid::text::point)[0]::int / 32 AS range,
		   min(customer_id) AS cmin, max(customer_id) AS cmax,
		   min(product_id) AS pmin, max(product_id) AS pmax
	FROM events GROUP BY 1
), probes AS (
	SELECT customer_id, product_id FROM events TABLESAMPLE SYSTEM (5) REPEATABLE (7) LIMIT 200
)
SELECT (SELECT count(*) FROM r) AS block_ranges,
	   round(avg((SELECT count(*) FROM r WHERE p.customer_id BETWEEN cmin AND cmax)), 1)
		   AS "ranges read: customer_id = v",
	   round(avg((SELECT count(*) FROM r WHERE p.product_id BETWEEN pmin AND pmax)), 1)
		   AS "ranges read: product_id = v",
	   round(sqrt((SELECT count(*) FROM r))::numeric, 1) AS "ideal (sqrt n)"
FROM probes p;
SQL
}

plans() {
	psql <<'SQL'
-- default planner settings: the plans are the planner's own choice
SELECT 'customer_id = 4242' AS filter, count(*) AS rows FROM events WHERE customer_id = 4242
UNION ALL
SELECT 'product_id = 777', count(*) FROM events WHERE product_id = 777;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT count(*) FROM events WHERE customer_id = 4242;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT count(*) FROM events WHERE product_id = 777;
SQL
}

rowhash() { psql -At -c "SELECT count(*) || ' rows, hash ' || sum(hashtext(e::text)::bigint) FROM events e"; }
before=$(rowhash)

say "before: random order, so every block range holds almost every value"
ranges_report
plans

say "declaring the keys and optimizing"
psql <<'SQL'
\timing on
SELECT zorder.cluster_by('events', 'customer_id', 'product_id');
CALL zorder.optimize('events');
\timing off
ANALYZE events;
SELECT "table", keys, curve, rows_written, pages, duration
FROM zorder.clustered_tables;
SQL

say "after: each block range covers a small box of (customer_id, product_id)"
ranges_report
plans

say "same rows as before?"
after=$(rowhash)
echo "before: $before"
echo "after:  $after"
[ "$before" = "$after" ] || die "the rows differ"
echo
echo "Done; the cluster in $dir is stopped now."
