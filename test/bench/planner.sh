#!/usr/bin/env bash
# test/bench/planner.sh: does the planner, with default settings, pick the
# plan that reads fewer blocks on tables zorder lays out, and what does its
# support cost in planning time?
#
# Run as root on Debian 12, like test/bench/run.sh: builds and installs the
# extension, starts a throwaway cluster (BENCH_DIR, default /tmp/zorder-planner,
# port BENCH_PORT, default 54323) with zorder in shared_preload_libraries.
#
# Two tables of ROWS rows each (default 1,000,000), laid out by
# zorder.optimize, with a BRIN index over their keys (PPR pages per range,
# default 32):
#   orders (customer_id int uniform over 20,000 values, product_id int
#          skewed: a few values hold most rows), 2 keys;
#   events (country text, skewed, 200 values; ts timestamp over a year;
#          user_id int uniform over 100,000 values), 3 keys.
# 33 filters: equality on frequent and rare values, IN, short and long
# ranges, pairs and triples of keys, and wide filters where a scan should
# win.  For each, EXPLAIN (ANALYZE, BUFFERS) of the plan the planner picks
# with default settings, of the BRIN plan (enable_seqscan off) and of the
# scan (bitmap and index scans off): blocks read (shared hit + read), and
# chosen / min(BRIN, scan).  For the queries where the planner picks BRIN,
# the heap pages the estimate expected (zorder's DEBUG1 message) against
# those the scan read (exact + lossy heap blocks, no parallel workers).
#
# Then the same after ROUNDS (default 10) incremental rounds of 1 % appends
# to each table (each followed by CALL zorder.optimize, no ANALYZE), and on
# orders_p, orders partitioned by customer_id into 4 partitions.
#
# Planning time: single-row queries on the laid-out table
# (SELECT ... WHERE id = :id, a btree lookup, as pgbench -S; on orders_p,
# WHERE customer_id = :c AND id = :id, which prunes to one partition and
# costs its BRIN index), with the
# library preloaded and with the server restarted without it: pgbench
# EXPLAIN-only transactions per second (median of REPS runs of SECS
# seconds each way, alternating, default 5 x 5), and the instructions
# callgrind counts per plan over NPLAN plans (default 2000) in a
# single-user backend, both ways (after one plan, which in a preloaded
# backend reads the table's BRIN summaries once).
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/test/lib.sh"

ROWS=${ROWS:-1000000}
PPR=${PPR:-32}
ROUNDS=${ROUNDS:-10}
REPS=${REPS:-5}
SECS=${SECS:-5}
NPLAN=${NPLAN:-2000}

run_elsewhere test/bench/planner.sh "$@"
ensure_packages
command -v jq >/dev/null || apt-get install -y -qq jq >/dev/null
command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null
if [ -z "${BENCH_NO_BUILD:-}" ]; then
	build_install "$repo"
fi
dir=${BENCH_DIR:-/tmp/zorder-planner}
trap 'stop_cluster "$dir"' EXIT
conf="
shared_buffers = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min
autovacuum = off
jit = off
"
start_cluster "$dir" "${BENCH_PORT:-54323}" "$conf
shared_preload_libraries = 'zorder'"

q() { command psql -X -At -q -v ON_ERROR_STOP=1 "$@" || die "psql failed: $*"; }

echo "== loading $ROWS rows into orders, orders_p and events"
q <<SQL
CREATE EXTENSION zorder;
SELECT setseed(0.42);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int, product_id int,
	amount numeric(10, 2), note text);
INSERT INTO orders
SELECT g, (random() * 19999)::int, (power(random(), 4) * 5000)::int,
	round((random() * 500)::numeric, 2), repeat('n', 20)
FROM generate_series(1, $ROWS) g;
CREATE INDEX orders_brin ON orders USING brin (customer_id, product_id)
	WITH (pages_per_range = $PPR);
SELECT zorder.cluster_by('orders', 'customer_id', 'product_id');
CALL zorder.optimize('orders');

CREATE TABLE orders_p (id bigint, customer_id int, product_id int,
	amount numeric(10, 2), note text) PARTITION BY RANGE (customer_id);
CREATE TABLE orders_p1 PARTITION OF orders_p FOR VALUES FROM (0) TO (5000);
CREATE TABLE orders_p2 PARTITION OF orders_p FOR VALUES FROM (5000) TO (10000);
CREATE TABLE orders_p3 PARTITION OF orders_p FOR VALUES FROM (10000) TO (15000);
CREATE TABLE orders_p4 PARTITION OF orders_p FOR VALUES FROM (15000) TO (20000);
INSERT INTO orders_p SELECT * FROM orders ORDER BY random();
CREATE INDEX ON orders_p USING brin (customer_id, product_id)
	WITH (pages_per_range = $PPR);
-- single-row lookups by id (planning time), as on orders
CREATE INDEX ON orders_p (id);
SELECT zorder.cluster_by('orders_p', 'customer_id', 'product_id');
CALL zorder.optimize('orders_p');

CREATE TABLE events (id bigint PRIMARY KEY, country text, ts timestamp,
	user_id int, payload text);
INSERT INTO events
SELECT g, 'c' || (power(random(), 5) * 199)::int,
	'2025-01-01'::timestamp + random() * interval '365 days',
	(random() * 99999)::int, repeat('p', 30)
FROM generate_series(1, $ROWS) g;
CREATE INDEX events_brin ON events USING brin (country, ts, user_id)
	WITH (pages_per_range = $PPR);
SELECT zorder.cluster_by('events', 'country', 'ts', 'user_id');
CALL zorder.optimize('events');
VACUUM ANALYZE orders, orders_p, events;
SQL

# name|table placeholder T (orders or orders_p) or events|filter
read -r -d '' QUERIES <<'Q'
o eq uniform|O|customer_id = 4242
o eq uniform 2|O|customer_id = 17
o eq most frequent|O|product_id = 0
o eq frequent|O|product_id = 3
o eq rare|O|product_id = 4000
o in uniform|O|customer_id IN (10, 5000, 15000)
o in frequent|O|product_id IN (5, 6, 7)
o short range|O|customer_id BETWEEN 100 AND 140
o range 1.5%|O|customer_id BETWEEN 100 AND 400
o range 10%|O|customer_id BETWEEN 1000 AND 3000
o range skewed|O|product_id BETWEEN 2000 AND 2100
o pair eq|O|customer_id = 4242 AND product_id = 0
o pair range|O|customer_id BETWEEN 100 AND 400 AND product_id < 10
o wide|O|customer_id > 2000
o wide skewed|O|product_id > 1
o half|O|customer_id BETWEEN 0 AND 10000
e eq most frequent|E|country = 'c0'
e eq frequent|E|country = 'c1'
e eq rare|E|country = 'c150'
e in|E|country IN ('c5', 'c6', 'c7')
e day|E|ts >= '2025-03-01' AND ts < '2025-03-02'
e week|E|ts >= '2025-06-01' AND ts < '2025-06-08'
e two months|E|ts >= '2025-07-01' AND ts < '2025-09-01'
e user eq|E|user_id = 4242
e user range|E|user_id BETWEEN 1000 AND 1100
e user in|E|user_id IN (1, 2, 3, 50000)
e country+day|E|country = 'c0' AND ts >= '2025-03-01' AND ts < '2025-03-02'
e country+users|E|country = 'c3' AND user_id < 1000
e user+month|E|user_id = 4242 AND ts >= '2025-05-01' AND ts < '2025-06-01'
e triple|E|country = 'c2' AND ts >= '2025-06-01' AND ts < '2025-06-08' AND user_id < 50000
e wide ts|E|ts > '2025-02-01'
e wide country|E|country >= 'c1'
e wide users|E|user_id > 10000
Q

blocks() {	# settings; query -> blocks read, and the plan's node types
	local json
	json=$(q -c "$1" -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) $2" | tail -n +1) || return 1
	json=$(echo "$json" | sed -n '/^\[/,$p')
	echo "$(echo "$json" | jq '.[0].Plan | ."Shared Hit Blocks" + ."Shared Read Blocks"') $(echo "$json" | jq -r '[.. | objects | ."Node Type"? | select(. != null)] | map(select(test("Bitmap Heap|Seq Scan|Index"))) | first // "other"' | tr ' ' '_')"
}

estimate() {	# query -> estimated heap pages (sum over partitions), actual
	local err json est actual
	err=$(command psql -X -At -q -c "SET client_min_messages = debug1" \
		-c "SET max_parallel_workers_per_gather = 0" -c "SET enable_seqscan = off" \
		-c "EXPLAIN $1" 2>&1 >/dev/null)
	est=$(echo "$err" | sed -n 's/.*block ranges, \([0-9]*\) heap pages.*/\1/p' | awk '{s += $1} END {print s + 0}')
	json=$(q -c "SET max_parallel_workers_per_gather = 0" -c "SET enable_seqscan = off" \
		-c "EXPLAIN (ANALYZE, FORMAT JSON) $1" | sed -n '/^\[/,$p')
	actual=$(echo "$json" | jq '[.. | objects | select(."Node Type"? == "Bitmap Heap Scan") | (."Exact Heap Blocks" + ."Lossy Heap Blocks")] | add // 0')
	echo "$est $actual"
}

measure() {	# label, orders table
	local label=$1 otab=$2 line name t filter table query
	local n=0 bad=0 sum_chosen=0 sum_best=0 nbrin=0 nest_ok=0
	echo
	echo "== $label"
	printf '%-22s %-9s %9s %9s %9s %6s %9s %9s\n' query chosen blocks brin scan ratio est_pages heap_read
	while IFS='|' read -r name t filter; do
		[ -n "$name" ] || continue
		case $t in O) table=$otab ;; E) table=events ;; esac
		query="SELECT count(*), sum(length(ctid::text)) FROM $table WHERE $filter"
		read -r b_chosen plan < <(blocks "SET search_path = public" "$query")
		# run each twice: the first read warms the cache for the others
		read -r b_chosen plan < <(blocks "SET search_path = public" "$query")
		read -r b_brin _ < <(blocks "SET enable_seqscan = off" "$query")
		read -r b_seq _ < <(blocks "SET enable_bitmapscan = off; SET enable_indexscan = off" "$query")
		best=$((b_brin < b_seq ? b_brin : b_seq))
		ratio=$(awk -v c="$b_chosen" -v b="$best" 'BEGIN {printf "%.3f", c / (b > 0 ? b : 1)}')
		est=- act=-
		case $plan in
			Bitmap*)
				read -r est act < <(estimate "$query")
				nbrin=$((nbrin + 1))
				awk -v e="$est" -v a="$act" 'BEGIN {exit !(e <= 2 * a && a <= 2 * e)}' &&
					nest_ok=$((nest_ok + 1))
				;;
		esac
		awk -v r="$ratio" 'BEGIN {exit !(r > 1.25)}' && bad=$((bad + 1))
		n=$((n + 1))
		sum_chosen=$((sum_chosen + b_chosen))
		sum_best=$((sum_best + best))
		printf '%-22s %-9s %9s %9s %9s %6s %9s %9s\n' "$name" "${plan%%_*}" \
			"$b_chosen" "$b_brin" "$b_seq" "$ratio" "$est" "$act"
	done <<<"$QUERIES"
	echo "-- $label: $((n - bad))/$n queries within 1.25x of the better plan;" \
		"total $(awk -v c=$sum_chosen -v b=$sum_best 'BEGIN {printf "%.3f", c / b}')x" \
		"($sum_chosen blocks against $sum_best);" \
		"estimate within 2x for $nest_ok/$nbrin BRIN plans"
}

measure "after zorder.optimize" orders

pgbench_tps() {	# one run of SECS seconds -> transactions per second
	local f
	f=$(mktemp)
	printf '%s\n' '\set id random(1, '"$ROWS"')' '\set c random(0, 19999)' \
		"EXPLAIN $PQUERY;" >"$f"
	chmod 644 "$f"
	as_pg $PGBIN/pgbench -n -M simple -f "$f" -T 1 -h "$PGHOST" -p "$PGPORT" postgres >/dev/null 2>&1
	as_pg $PGBIN/pgbench -n -M simple -f "$f" -T "$SECS" -h "$PGHOST" -p "$PGPORT" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}

median() { sort -n | sed -n "$((($1 + 1) / 2))p"; }

callgrind() {	# preload -> instructions per plan: NPLAN + 1 plans less 1 plan
	local preload=$1 n ir0 ir1 sql
	as_pg $PGBIN/pg_ctl -D "$dir/data" -w stop >/dev/null
	for n in 0 "$NPLAN"; do
		sql=$(mktemp)
		# one plan more in both: the first builds the model, once a backend
		for i in $(seq $((n + 1))); do
			echo "EXPLAIN $PQUERY;" | sed "s/:id/$((i * 7919 % ROWS + 1))/; s/:c/$((i * 31 % 20000))/"
		done >"$sql"
		echo "SELECT 1;" >>"$sql"
		chmod 644 "$sql"
		as_pg valgrind --tool=callgrind --callgrind-out-file=/tmp/zorder-cg.$n \
			$PGBIN/postgres --single -D "$dir/data" \
			-c shared_preload_libraries="$preload" postgres <"$sql" >/dev/null 2>&1
		rm -f "$sql"
	done
	ir0=$(sed -n 's/^summary: //p' /tmp/zorder-cg.0)
	ir1=$(sed -n 's/^summary: //p' /tmp/zorder-cg.$NPLAN)
	rm -f /tmp/zorder-cg.0 /tmp/zorder-cg.$NPLAN
	as_pg $PGBIN/pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
	echo $(((ir1 - ir0) / NPLAN))
}

restart_with() {	# shared_preload_libraries
	as_pg $PGBIN/pg_ctl -D "$dir/data" -w stop >/dev/null
	as_pg $PGBIN/pg_ctl -D "$dir/data" -l "$dir/server.log" \
		-o "-c shared_preload_libraries='$1'" -w start >/dev/null
}

plan_figures() {	# label
	local with=() without=() i cg_with cg_without w wo
	echo
	echo "== planning: $1"
	# alternate, so that the machine's drift falls on both alike
	for i in $(seq "$REPS"); do
		restart_with zorder
		with+=("$(pgbench_tps)")
		restart_with ''
		without+=("$(pgbench_tps)")
	done
	restart_with zorder
	w=$(printf '%s\n' "${with[@]}" | median "$REPS")
	wo=$(printf '%s\n' "${without[@]}" | median "$REPS")
	cg_with=$(callgrind zorder)
	cg_without=$(callgrind '')
	echo "-- pgbench EXPLAIN-only tps (median of $REPS, alternating): preloaded $w" \
		"(${with[*]}), not loaded $wo (${without[*]}):" \
		"time per plan $(awk -v a="$w" -v b="$wo" 'BEGIN {printf "%.3f", b / a}')x"
	echo "-- callgrind instructions per plan: preloaded $cg_with, not loaded $cg_without:" \
		"$(awk -v a="$cg_with" -v b="$cg_without" 'BEGIN {printf "%.3f", a / b}')x"
}

PQUERY="SELECT id, amount FROM orders WHERE id = :id"
plan_figures "after zorder.optimize"

echo
echo "== $ROUNDS incremental rounds of 1 % appends"
for r in $(seq "$ROUNDS"); do
	q <<SQL
SELECT setseed(0.1 * $r / ($ROUNDS + 1));
INSERT INTO orders
SELECT g, (random() * 19999)::int, (power(random(), 4) * 5000)::int,
	round((random() * 500)::numeric, 2), repeat('n', 20)
FROM generate_series((SELECT max(id) + 1 FROM orders), (SELECT max(id) FROM orders) + $ROWS / 100) g;
INSERT INTO events
SELECT g, 'c' || (power(random(), 5) * 199)::int,
	'2025-01-01'::timestamp + random() * interval '365 days',
	(random() * 99999)::int, repeat('p', 30)
FROM generate_series((SELECT max(id) + 1 FROM events), (SELECT max(id) FROM events) + $ROWS / 100) g;
CALL zorder.optimize('orders');
CALL zorder.optimize('events');
SQL
done
measure "after $ROUNDS incremental rounds (no ANALYZE since)" orders
plan_figures "after $ROUNDS incremental rounds"

measure "partitioned (orders_p, 4 partitions; the events rows again)" orders_p
# a key filter prunes to one partition, where BRIN is costed beside the
# btree lookup that wins either way (the same plan, so the same work after)
PQUERY="SELECT id, amount FROM orders_p WHERE customer_id = :c AND id = :id"
plan_figures "partitioned (orders_p)"
