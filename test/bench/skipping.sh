#!/usr/bin/env bash
# skipping.sh - how many BRIN block ranges a filter on a key column reads,
# for each way of laying a table out.
#
# 1. The seed example (Delta Lake's Z-order glossary): 200,000 rows,
#    customer_id 0-10,000 and product_id 0-5,000 at random, a BRIN index
#    whose pages_per_range gives 11 ranges.  Delta read 4 of 11 files for
#    customer_id = 4242 and 6 of 11 for product_id = 777 after Z-ordering.
# 2. 2 and 3 key columns on ROWS rows (default 1,000,000), four
#    distributions (uniform; skewed: Pareto, log-uniform with heavy hitters,
#    exponential; correlated; 20 Gaussian blobs), five layouts: random
#    order, CLUSTER on a btree over the keys, CLUSTER on a btree over
#    zorder.zorder_key(keys), zorder.optimize curve 'z' and 'hilbert'.  For
#    each key column: the mean number of ranges "col = v" reads, for PROBES
#    values drawn from the rows (default 1000), against the ideal
#    n^((d-1)/d) for n ranges of PPR pages (default 16).  A value held by
#    c rows fills c / (rows per range) ranges on its own, on top of the
#    ideal: "floor" is the mean over rows of ideal + c / (rows per range),
#    which differs from the ideal only where values repeat a lot.
# 3. pages_per_range: measured ranges read, pages read and index size for
#    PPR 1 .. 128 on the uniform 2-key Hilbert layout, beside
#    zorder.suggest_pages_per_range's estimate, and the time of a point
#    query (mean over 200 values, best of REPS rounds) relative to PPR 16.
# 4. Real queries: EXPLAIN (ANALYZE, BUFFERS) of a point filter, a range
#    filter (1 % of product_id's domain), a mixed filter (customer_id and a
#    7-day window) and the 7-day window alone, on events appended in time
#    order, before and after zorder.optimize over (customer_id, product_id,
#    ts); heap blocks read and the median time of REPS runs (default 5),
#    as ratios.  The BRIN plan is forced (enable_seqscan = off) so that
#    before and after read through the same plan; the plan the planner picks
#    unforced is shown too.
#
# PARTS (default "1 2 3 4") picks the parts to run.  Connection settings
# come from the environment; test/bench/run.sh sets up a throwaway cluster.
# Tables are dropped at the end unless KEEP=1.
set -eu

ROWS=${ROWS:-1000000}
PPR=${PPR:-16}
PROBES=${PROBES:-1000}
REPS=${REPS:-5}
KEEP=${KEEP:-0}
PARTS=${PARTS:-1 2 3 4}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
show() { psql -X -q -v ON_ERROR_STOP=1 -P footer=off "$@"; }

q >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS zorder;
DROP TABLE IF EXISTS sk_results, sk_seed, sk_base, sk_t, sk_events, sk_ev, sk_ppr, sk_q, sk_probe;
CREATE TABLE sk_results (
	part text, dist text, d int, method text, col text, pos int,
	ranges bigint, mean float8, ideal float8, floor float8, one_a bigint,
	one_b bigint
);

-- EXPLAIN (ANALYZE, BUFFERS) figures of a query: heap blocks and time.
CREATE OR REPLACE FUNCTION sk_explain(query text,
	OUT lossy int, OUT exact int, OUT buffers bigint, OUT ms float8,
	OUT node text)
LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON, TIMING OFF) ' || query INTO plan;
	lossy := coalesce(jsonb_path_query_first(plan, 'strict $.**."Lossy Heap Blocks"')::int, 0);
	exact := coalesce(jsonb_path_query_first(plan, 'strict $.**."Exact Heap Blocks"')::int, 0);
	buffers := (plan->0->'Plan'->>'Shared Hit Blocks')::bigint +
			   (plan->0->'Plan'->>'Shared Read Blocks')::bigint;
	ms := (plan->0->>'Execution Time')::float8;
	node := jsonb_path_query_first(plan, 'strict $.**."Node Type" ? (@ like_regex "Scan")')#>>'{}';
END
$$;
SQL

# ------------------------------------------------------------------
# 1. The seed example
# ------------------------------------------------------------------
if part 1; then
echo
echo "== 1. seed example: 200,000 rows, about 11 block ranges"
q >/dev/null <<'SQL'
SELECT setseed(0.42);
CREATE TABLE sk_seed AS
SELECT (random() * 10000)::int AS customer_id,
	   (random() * 5000)::int AS product_id,
	   random() AS amount
FROM generate_series(1, 200000);
SQL
seed_pages=$(q -c "SELECT pg_relation_size('sk_seed') / 8192")
seed_ppr=$(( (seed_pages + 10) / 11 ))
for m in random z hilbert; do
	q >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS sk_t;
CREATE TABLE sk_t AS SELECT * FROM sk_seed;
SELECT zorder.cluster_by('sk_t', 'customer_id', 'product_id');
$(if [ $m != random ]; then echo "CALL zorder.optimize('sk_t', curve => '$m');"; fi)
CREATE INDEX sk_t_brin ON sk_t USING brin (customer_id, product_id)
	WITH (pages_per_range = $seed_ppr);
INSERT INTO sk_results
SELECT 'seed', 'uniform', 2, '$m', column_name, key_position, total_ranges,
	   mean_ranges_touched, ideal_ranges_touched, NULL,
	   zorder.ranges_touched('sk_t', column_name,
							 CASE column_name WHEN 'customer_id' THEN '4242' ELSE '777' END),
	   NULL
FROM zorder.clustering_information('sk_t', probes => 0);
SQL
done
show <<SQL
SELECT method AS layout, max(ranges) AS ranges,
	   max(one_a) FILTER (WHERE pos = 1) || ' of ' || max(ranges) AS "customer_id = 4242",
	   max(one_a) FILTER (WHERE pos = 2) || ' of ' || max(ranges) AS "product_id = 777",
	   round(max(mean) FILTER (WHERE pos = 1)::numeric, 2) AS "mean customer_id",
	   round(max(mean) FILTER (WHERE pos = 2)::numeric, 2) AS "mean product_id",
	   round(max(ideal)::numeric, 2) AS "sqrt n",
	   round(max(mean / ideal) FILTER (WHERE pos = 1)::numeric, 2) AS "ratio cust",
	   round(max(mean / ideal) FILTER (WHERE pos = 2)::numeric, 2) AS "ratio prod"
FROM sk_results WHERE part = 'seed'
GROUP BY method ORDER BY array_position(ARRAY['random', 'z', 'hilbert'], method);
SQL
echo "(pages_per_range = $seed_ppr over $seed_pages pages; means over every row as a value; Delta Lake: 4 of 11 and 6 of 11)"

fi

# ------------------------------------------------------------------
# 2. Distributions x layouts
# ------------------------------------------------------------------
gen_sql() {
	local dist=$1
	case $dist in
		uniform) echo "
			SELECT (random() * 1e6)::bigint AS k1, (random() * 1e6)::bigint AS k2,
				   (random() * 1e6)::bigint AS k3
			FROM generate_series(1, $ROWS)" ;;
		skewed) echo "
			SELECT (1000 * power(1 - random(), -1 / 1.16))::bigint AS k1,
				   power(1e6, random())::bigint AS k2,
				   (-ln(1 - random()) * 1e5)::bigint AS k3
			FROM generate_series(1, $ROWS)" ;;
		correlated) echo "
			SELECT k1, k2, ((k1 + k2) / 2 + 5e4 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::bigint AS k3
			FROM (SELECT k1, (k1 + 5e4 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::bigint AS k2
				  FROM (SELECT (random() * 1e6)::bigint AS k1 FROM generate_series(1, $ROWS)) a) b" ;;
		blobs) echo "
			SELECT (c.x + 2e4 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::bigint AS k1,
				   (c.y + 2e4 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::bigint AS k2,
				   (c.z + 2e4 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::bigint AS k3
			FROM (SELECT floor(random() * 20)::int AS cid FROM generate_series(1, $ROWS)) r
			JOIN (SELECT i AS cid, random() * 1e6 AS x, random() * 1e6 AS y, random() * 1e6 AS z
				  FROM generate_series(0, 19) i) c USING (cid)" ;;
	esac
}

layout_sql() {
	local m=$1 keys=$2
	case $m in
		random) ;;
		lexicographic) echo "CREATE INDEX sk_t_lex ON sk_t ($keys); CLUSTER sk_t USING sk_t_lex; DROP INDEX sk_t_lex;" ;;
		zorder_key) echo "CREATE INDEX sk_t_zk ON sk_t (zorder.zorder_key($keys)); CLUSTER sk_t USING sk_t_zk; DROP INDEX sk_t_zk;" ;;
		z|hilbert) echo "CALL zorder.optimize('sk_t', curve => '$m');" ;;
	esac
}

if part 2; then
methods="random lexicographic zorder_key z hilbert"
echo
echo "== 2. $ROWS rows, pages_per_range = $PPR, $PROBES probe values per column"
for dist in uniform skewed correlated blobs; do
	q -c "SET client_min_messages = warning" -c "SELECT setseed(0.7)" -c "DROP TABLE IF EXISTS sk_base" \
		-c "CREATE TABLE sk_base AS SELECT g.*, '2026-01-01'::timestamptz + random() * interval '365 days' AS ts, md5(random()::text) AS payload FROM ($(gen_sql $dist)) g" >/dev/null
	for d in 2 3; do
		keys=$( [ $d = 2 ] && echo "k1, k2" || echo "k1, k2, k3" )
		qkeys=$( [ $d = 2 ] && echo "'k1', 'k2'" || echo "'k1', 'k2', 'k3'" )
		for m in $methods; do
			start=$(date +%s.%N)
			q >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS sk_t;
CREATE TABLE sk_t AS SELECT * FROM sk_base;
SELECT zorder.cluster_by('sk_t', $qkeys);
$(layout_sql $m "$keys")
CREATE INDEX sk_t_brin ON sk_t USING brin ($keys) WITH (pages_per_range = $PPR);
VACUUM ANALYZE sk_t;
CREATE TEMP TABLE info AS SELECT * FROM zorder.clustering_information('sk_t', $PROBES);
INSERT INTO sk_results
SELECT 'grid', '$dist', $d, '$m', i.column_name, i.key_position, i.total_ranges,
	   i.mean_ranges_touched, i.ideal_ranges_touched, NULL, NULL, NULL
FROM info i;
SQL
			end=$(date +%s.%N)
			awk -v s="$start" -v e="$end" -v t="$dist d=$d $m" 'BEGIN { printf "  %-32s %6.1f s\n", t, e - s }' >&2
		done
		# the floor set by values that fill many ranges on their own
		q >/dev/null <<SQL
WITH rpr AS (SELECT reltuples / greatest(relpages, 1) * $PPR AS rows_per_range,
					ceil(relpages / $PPR::float8) AS n
			 FROM pg_class WHERE oid = 'sk_t'::regclass)
UPDATE sk_results r SET floor = f.floor
FROM (SELECT 'k1' AS col, avg(power(n, ($d - 1.0) / $d) + c / rows_per_range) AS floor
	  FROM (SELECT count(*) OVER (PARTITION BY k1) AS c FROM sk_base) x, rpr
	  UNION ALL
	  SELECT 'k2', avg(power(n, ($d - 1.0) / $d) + c / rows_per_range)
	  FROM (SELECT count(*) OVER (PARTITION BY k2) AS c FROM sk_base) x, rpr
	  UNION ALL
	  SELECT 'k3', avg(power(n, ($d - 1.0) / $d) + c / rows_per_range)
	  FROM (SELECT count(*) OVER (PARTITION BY k3) AS c FROM sk_base) x, rpr) f
WHERE r.part = 'grid' AND r.dist = '$dist' AND r.d = $d AND r.col = f.col;
SQL
	done
done

echo
echo "-- mean ranges read by col = v, as a ratio to the ideal n^((d-1)/d)"
echo "-- (goal: hilbert <= 1.25 for d = 2, <= 1.3 for d = 3; 'worst' is the worst key column)"
show <<'SQL'
SELECT dist, d, max(ranges) AS ranges, round(max(ideal)::numeric, 1) AS ideal,
	   method,
	   string_agg(round((mean / ideal)::numeric, 2)::text, ' / ' ORDER BY pos) AS "ratio per key",
	   round(max(mean / ideal)::numeric, 2) AS worst,
	   round(max(mean / floor)::numeric, 2) AS "worst vs floor"
FROM sk_results WHERE part = 'grid'
GROUP BY dist, d, method
ORDER BY array_position(ARRAY['uniform', 'skewed', 'correlated', 'blobs'], dist), d,
		 array_position(ARRAY['random', 'lexicographic', 'zorder_key', 'z', 'hilbert'], method);
SQL
show <<'SQL'
SELECT dist, d, string_agg(col || ' ' || round((floor / ideal)::numeric, 2), ', ' ORDER BY pos) AS "floor / ideal per key, where above 1.01"
FROM sk_results WHERE part = 'grid' AND method = 'hilbert' AND floor > ideal * 1.01
GROUP BY dist, d ORDER BY 1, 2;
SQL

fi

# ------------------------------------------------------------------
# 3. pages_per_range on the uniform 2-key Hilbert layout
# ------------------------------------------------------------------
if part 3; then
echo
echo "== 3. pages_per_range: uniform, 2 keys, hilbert"
q >/dev/null <<SQL
SET client_min_messages = warning;
SELECT setseed(0.7);
DROP TABLE IF EXISTS sk_t;
CREATE TABLE sk_t AS
SELECT g.*, '2026-01-01'::timestamptz + random() * interval '365 days' AS ts,
	   md5(random()::text) AS payload
FROM ($(gen_sql uniform)) g;
SELECT zorder.cluster_by('sk_t', 'k1', 'k2');
CALL zorder.optimize('sk_t');
VACUUM ANALYZE sk_t;
CREATE TABLE sk_ppr (ppr int, ranges bigint, mean float8, ideal float8,
					 index_pages bigint, est_index_pages bigint, ms float8);
SQL
q >/dev/null <<'SQL'
CREATE TABLE sk_probe AS
SELECT k1 FROM sk_t TABLESAMPLE BERNOULLI (1) REPEATABLE (3) LIMIT 200;
-- mean milliseconds of a point query "k1 = v" over the probe values
CREATE OR REPLACE FUNCTION sk_point_ms() RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	v bigint;
	c bigint;
BEGIN
	FOR v IN SELECT k1 FROM sk_probe LOOP
		EXECUTE 'SELECT count(*) FROM sk_t WHERE k1 = $1' INTO c USING v;
	END LOOP;
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000 / (SELECT count(*) FROM sk_probe);
END
$$;
SQL
for ppr in 1 2 4 8 16 32 64 128; do
	q >/dev/null <<SQL
SET client_min_messages = warning;
DROP INDEX IF EXISTS sk_t_brin;
CREATE INDEX sk_t_brin ON sk_t USING brin (k1, k2) WITH (pages_per_range = $ppr);
INSERT INTO sk_ppr (ppr, ranges, mean, ideal, index_pages, est_index_pages)
SELECT $ppr, total_ranges, mean_ranges_touched, ideal_ranges_touched,
	   pg_relation_size('sk_t_brin') / 8192,
	   (SELECT index_pages FROM zorder.suggest_pages_per_range('sk_t') WHERE pages_per_range = $ppr)
FROM zorder.clustering_information('sk_t', $PROBES) WHERE key_position = 1;
SQL
	# one warm-up round, then the best of REPS rounds (the least disturbed)
	q >/dev/null <<SQL
SET enable_seqscan = off;
SET max_parallel_workers_per_gather = 0;
SELECT sk_point_ms();
UPDATE sk_ppr SET ms = (SELECT min(sk_point_ms()) FROM generate_series(1, $REPS)) WHERE ppr = $ppr;
SQL
done
show <<'SQL'
SELECT p.ppr AS pages_per_range, p.ranges, round(p.mean::numeric, 1) AS "ranges read",
	   round((p.mean / p.ideal)::numeric, 2) AS ratio,
	   round((p.mean * p.ppr)::numeric) AS "heap pages read",
	   round((100 * p.mean * p.ppr / (SELECT relpages FROM pg_class WHERE oid = 'sk_t'::regclass))::numeric, 2) AS "% of table",
	   p.index_pages AS "index pages", p.est_index_pages AS "estimated",
	   round((p.ms / (SELECT ms FROM sk_ppr WHERE ppr = 16))::numeric, 2) AS "point query time vs 16",
	   s.recommended AS suggested
FROM sk_ppr p JOIN zorder.suggest_pages_per_range('sk_t') s ON s.pages_per_range = p.ppr
ORDER BY p.ppr;
SQL

fi

# ------------------------------------------------------------------
# 4. Real queries
# ------------------------------------------------------------------
if part 4; then
echo
echo "== 4. real queries: $ROWS events appended in time order, BRIN (customer_id, product_id, ts), pages_per_range = $PPR"
q >/dev/null <<SQL
SELECT setseed(0.9);
CREATE TABLE sk_events AS
SELECT (random() * 100000)::int AS customer_id,
	   (random() * 50000)::int AS product_id,
	   '2026-01-01'::timestamptz + g * (interval '365 days' / $ROWS) AS ts,
	   round((random() * 500)::numeric, 2) AS amount,
	   md5(g::text) AS note
FROM generate_series(1, $ROWS) g;
CREATE TABLE sk_q (layout text, name text, rep int, lossy int, exact int,
				   buffers bigint, ms float8, node text);
SQL
queries=(
	"point|SELECT count(*) FROM sk_ev WHERE customer_id = 4242"
	"range 1%|SELECT count(*) FROM sk_ev WHERE product_id BETWEEN 20000 AND 20499"
	"mixed|SELECT count(*) FROM sk_ev WHERE customer_id = 4242 AND ts >= '2026-06-01' AND ts < '2026-06-08'"
	"window alone|SELECT count(*) FROM sk_ev WHERE ts >= '2026-06-01' AND ts < '2026-06-08'"
)
for layout in before keys2 keys3; do
	q >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS sk_ev;
CREATE TABLE sk_ev AS SELECT * FROM sk_events;
CREATE INDEX sk_ev_brin ON sk_ev USING brin (customer_id, product_id, ts) WITH (pages_per_range = $PPR);
$(case $layout in
	keys2) echo "SELECT zorder.cluster_by('sk_ev', 'customer_id', 'product_id'); CALL zorder.optimize('sk_ev');" ;;
	keys3) echo "SELECT zorder.cluster_by('sk_ev', 'customer_id', 'product_id', 'ts'); CALL zorder.optimize('sk_ev');" ;;
esac)
VACUUM ANALYZE sk_ev;
SQL
	for r in $(seq 0 "$REPS"); do
		for qq in "${queries[@]}"; do
			q -c "SET enable_seqscan = off" -c "SET max_parallel_workers_per_gather = 0" \
				-c "INSERT INTO sk_q SELECT '$layout', '${qq%%|*}', $r, f.* FROM sk_explain(\$q\$${qq#*|}\$q\$) f" >/dev/null
		done
	done
	for qq in "${queries[@]}"; do
		q -c "SET max_parallel_workers_per_gather = 0" \
			-c "INSERT INTO sk_q SELECT '$layout', '${qq%%|*}', -1, f.* FROM sk_explain(\$q\$${qq#*|}\$q\$) f" >/dev/null
	done
	if [ $layout = keys2 ]; then
		echo "-- the point filter after optimize over (customer_id, product_id):"
		q -c "SET enable_seqscan = off" -c "SET max_parallel_workers_per_gather = 0" \
			-c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM sk_ev WHERE customer_id = 4242" |
			sed 's/^/    /'
	fi
done
show <<'SQL'
WITH m AS (
	SELECT layout, name, max(lossy + exact) AS blocks,
		   percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) AS ms
	FROM sk_q WHERE rep > 0 GROUP BY layout, name
)
SELECT b.name AS query, b.blocks AS "blocks before",
	   k2.blocks AS "keys (c, p)", k3.blocks AS "keys (c, p, ts)",
	   round(k2.blocks::numeric / greatest(b.blocks, 1), 3) AS "blocks ratio (c, p)",
	   round((k2.ms / b.ms)::numeric, 3) AS "time ratio (c, p)",
	   round(k3.blocks::numeric / greatest(b.blocks, 1), 3) AS "blocks ratio (c, p, ts)",
	   round((k3.ms / b.ms)::numeric, 3) AS "time ratio (c, p, ts)"
FROM m b JOIN m k2 ON k2.name = b.name AND k2.layout = 'keys2'
JOIN m k3 ON k3.name = b.name AND k3.layout = 'keys3'
WHERE b.layout = 'before'
ORDER BY array_position(ARRAY['point', 'range 1%', 'mixed', 'window alone'], b.name);
SQL
echo "(heap blocks: Lossy + Exact Heap Blocks of the Bitmap Heap Scan, forced; time: median Execution Time of $REPS runs, warm cache)"
echo "-- the plan the planner picks when not forced:"
show <<'SQL'
SELECT name AS query,
	   max(node) FILTER (WHERE layout = 'before') AS before,
	   max(node) FILTER (WHERE layout = 'keys2') AS "keys (c, p)",
	   max(node) FILTER (WHERE layout = 'keys3') AS "keys (c, p, ts)"
FROM sk_q WHERE rep = -1 GROUP BY name
ORDER BY array_position(ARRAY['point', 'range 1%', 'mixed', 'window alone'], name);
SQL
show -c "SELECT attname, round(correlation::numeric, 3) AS correlation FROM pg_stats WHERE tablename = 'sk_ev' AND attname IN ('customer_id', 'product_id', 'ts') ORDER BY 1"

fi

if [ "$KEEP" = 0 ]; then
	q -c "DROP TABLE IF EXISTS sk_results, sk_seed, sk_base, sk_t, sk_events, sk_ev, sk_ppr, sk_q, sk_probe" \
		-c "DROP FUNCTION IF EXISTS sk_explain(text)" -c "DROP FUNCTION IF EXISTS sk_point_ms()"
fi
