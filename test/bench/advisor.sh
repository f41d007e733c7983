#!/usr/bin/env bash
# advisor.sh - zorder.recommend_keys against brute force, and its speed.
#
# A table of ROWS rows (default 1,000,000) in time order with six filtered
# columns and a BRIN index over them (PPR pages per range, default 16);
# a workload of ten filter shapes run at different frequencies (CALLS
# times the base, default 1), recorded by pg_qualstats.  Then:
#   1. the time of recommend_keys with max_keys 3 and 4;
#   2. brute force: every set of 1 to 3 of the six columns laid out by a
#      real full optimize, the workload run on it with EXPLAIN ANALYZE, and
#      the heap blocks its BRIN scans read summed (a filter with no BRIN
#      scan reads the table); the advisor's estimate (ranges times
#      pages_per_range) beside it, and its first choice against the best
#      (left out with SPEED_ONLY=1, for the time on a large table).
# Needs pg_qualstats for the server (Debian postgresql-NN-pg-qualstats).
# PGBIN may name a private copy of the server (see test/lib.sh).
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/test/lib.sh"

ROWS=${ROWS:-1000000}
PPR=${PPR:-16}
CALLS=${CALLS:-1}

run_elsewhere test/bench/advisor.sh "$@"
ensure_packages
if [ -z "${BENCH_NO_BUILD:-}" ]; then
	build_install "$repo"
fi
dir=${BENCH_DIR:-/tmp/zorder-advisor}
trap 'stop_cluster "$dir"' EXIT
start_cluster "$dir" "${BENCH_PORT:-54324}" "
shared_buffers = 512MB
max_wal_size = 8GB
autovacuum = off
jit = off
shared_preload_libraries = 'zorder, pg_qualstats'
pg_qualstats.sample_rate = 1"

q() { command psql -X -At -q -v ON_ERROR_STOP=1 "$@" || die "psql failed: $*"; }

q -c "CREATE EXTENSION zorder; CREATE EXTENSION pg_qualstats;
CREATE TABLE big (id bigint, ts timestamptz, dev int, region int,
	price numeric, kind text, site int, pad text);
INSERT INTO big SELECT g, '2024-01-01'::timestamptz + g * interval '3 s',
	(g * 7919) % 1000, (g * 104729) % 20, ((g * 31337) % 10000) / 100.0,
	'k' || ((g * 13) % 7), (g * 37) % 300, repeat('x', 20)
FROM generate_series(1::bigint, $ROWS) g;
CREATE INDEX big_brin ON big USING brin (ts, dev, region, price, kind, site)
	WITH (pages_per_range = $PPR);
ANALYZE big;
CREATE TABLE workload (q text);"

# ten shapes; calls per shape: 24 12 10 8 6 6 4 4 3 2, times CALLS
days=$((ROWS * 3 / 86400))
w=()
# literal times: pg_qualstats records the values of constants only
for i in $(seq $((24 * CALLS))); do
	day=$(date -u -d "2024-01-01 + $((i % days)) days" +%F); h=$((i % 18))
	w+=("ts >= '$day $h:00+00' AND ts < '$day $((h + 6)):00+00'")
done
for i in $(seq $((12 * CALLS))); do w+=("dev = $((37 * i % 1000))"); done
for i in $(seq $((10 * CALLS))); do w+=("region = $((i % 20)) AND price BETWEEN $((7 * i % 95)) AND $((7 * i % 95 + 5))"); done
for i in $(seq $((8 * CALLS))); do w+=("region IN ($((i % 20)), $(((i + 7) % 20)))"); done
for i in $(seq $((6 * CALLS))); do w+=("dev BETWEEN $((90 * i % 980)) AND $((90 * i % 980 + 20))"); done
for i in $(seq $((6 * CALLS))); do w+=("kind = 'k$((i % 7))' AND region = $((3 * i % 20))"); done
for i in $(seq $((4 * CALLS))); do w+=("price > 99.$i"); done
for i in $(seq $((4 * CALLS))); do w+=("site = $((i * 7 % 300)) AND dev BETWEEN $((100 * i % 900)) AND $((100 * i % 900 + 100))"); done
for i in $(seq $((3 * CALLS))); do w+=("site BETWEEN $((i * 40)) AND $((i * 40 + 10))"); done
for i in $(seq $((2 * CALLS))); do w+=("kind LIKE '%$i'"); done

sql=""
for f in "${w[@]}"; do
	sql+="SELECT count(*) FROM big WHERE $f;"$'\n'
	esc=${f//\'/\'\'}
	sql+="INSERT INTO workload VALUES ('SELECT count(*) FROM big WHERE $esc');"$'\n'
done
q -c "SELECT pg_qualstats_reset()" >/dev/null
printf '%s' "$sql" | q >/dev/null

t3=$(q -c '\timing on' -c "SELECT count(*) FROM zorder.recommend_keys('big', 3)" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
t4=$(q -c '\timing on' -c "SELECT count(*) FROM zorder.recommend_keys('big', 4)" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
echo "recommend_keys on $ROWS rows, 6 columns, ${#w[@]} filter calls: max_keys 3: $t3 ms, max_keys 4: $t4 ms"
# SPEED_ONLY=1: the time alone (the brute force lays the table out 41 times)
[ -n "${SPEED_ONLY:-}" ] && exit 0

q -c "CREATE TABLE advice AS SELECT rank, array_to_string(keys, ',') AS keys,
	ranges_read * $PPR AS est FROM zorder.recommend_keys('big', 3);
CREATE FUNCTION blocks_read() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE w record; line text; total bigint := 0; b bigint; m text[];
BEGIN
	SET LOCAL enable_seqscan = off;
	FOR w IN SELECT * FROM workload LOOP
		b := NULL;
		FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || w.q LOOP
			m := regexp_match(line, 'lossy=(\d+)');
			IF m IS NOT NULL THEN b := coalesce(b, 0) + m[1]::bigint; END IF;
			m := regexp_match(line, 'exact=(\d+)');
			IF m IS NOT NULL THEN b := coalesce(b, 0) + m[1]::bigint; END IF;
		END LOOP;
		total := total + coalesce(b, pg_relation_size('big') / 8192);
	END LOOP;
	RETURN total;
END \$\$;
CREATE TABLE measured (keys text, blocks bigint);"
for keys in $(q -c "SELECT keys FROM advice ORDER BY rank"); do
	cols="'${keys//,/\', \'}'"
	q -c "SELECT zorder.cluster_by('big', $cols)" >/dev/null
	q -c "CALL zorder.optimize('big', \"full\" => true)"
	q -c "INSERT INTO measured SELECT '$keys', blocks_read()"
done
q -c "SELECT rank, a.keys, round(est) AS estimated_blocks, m.blocks AS measured_blocks,
	round(m.blocks::numeric / min(m.blocks) OVER (), 2) AS vs_best
FROM advice a JOIN measured m USING (keys) ORDER BY rank" | column -t -s'|'
