#!/usr/bin/env bash
# citus.sh - zorder on a Citus cluster against the same rows in one table.
#
# Starts three throwaway clusters on this machine (a coordinator on
# BENCH_PORT, default 56100, and two workers on the next two ports) under a
# temporary directory, joins them with Citus, and removes them on exit.
# Settings are the defaults but for what a cluster needs: citus and zorder
# preloaded, localhost TCP, shared_buffers 256MB per node,
# max_prepared_transactions for Citus's two-phase commits,
# citus.shard_count 8.
#
# ROWS rows (default 2,000,000) arrive in id order with keys spread over
# their ranges (a, b, c: independent hashes of id, 0 to 2^20) and an md5
# payload: once into `dist`, hash-distributed on id in 8 shards over the two
# workers (through the coordinator), and once into `local`, a plain table
# on worker 1.  Each gets a BRIN index on its key columns (default
# pages_per_range).  Then two passes, keys (a, b) and then keys (a, b, c)
# (the second pass re-keys the tables the first laid out, and its index is
# on (a, b, c)):
#   full     CALL zorder.optimize(..., "full" => true): the coordinator's
#            call on dist (every shard on its worker, the two workers in
#            parallel) against the call on local, BENCH_REPS times each
#            (default 3), alternating, after a CHECKPOINT on every node;
#            the ratio of the medians (goal: at most 1.3)
#   skipping ratio_to_ideal of zorder.clustering_information for every
#            shard on its worker and every key column, the worst of them
#            (goal: at most 1.25), against local's worst; and the block
#            ranges a point filter reads on dist (summed over its shards)
#            against local's, which hash distribution makes about 8^(1/d)
#            for d keys whatever the layout (8 shards of n/8 rows, each
#            read at the ideal (n/8)^((d-1)/d), against n^((d-1)/d))
#   incr     1 % more rows (ROWS / 100, the next ids) through the
#            coordinator and into local, then an incremental
#            CALL zorder.optimize on each: rows moved per row appended,
#            from zorder.optimize_history on the workers (summed over the
#            shards), and the calls' times (goal: dist moves at most
#            1.1 x the appended rows plus what local moved beyond its
#            appends); and the rows of dist and local compared again
#   move     then one shard moves from worker 1 to worker 2
#            (citus_move_shard_placement, block_writes), 1 % more rows come
#            in, and an incremental call: the rows it moved on the moved
#            shard per row appended to it (goal: at most 1.1), and the
#            block ranges point filters read there, every row a probe,
#            after against before the move (goal: at most 1.05)
# A table of the figures ends the run.
#
# Run as an ordinary user (not root: initdb refuses it) where PostgreSQL
# 17 or 18 with Citus and zorder installed is on PATH, or name its bin
# directory in PGBIN, e.g. in the Debian chroot the tests use:
#   PGBIN=/usr/lib/postgresql/17/bin ROWS=2000000 test/bench/citus.sh
# ROWS=200000 gives a quick look in a few seconds.  BENCH_PPR sets the
# BRIN indexes' pages_per_range (default: PostgreSQL's, 128), to see the
# skipping figures with more ranges per shard.  BENCH_DIR names the
# parent of the temporary directory (default $TMPDIR or /tmp).
set -eu

ROWS=${ROWS:-2000000}
REPS=${BENCH_REPS:-3}
PPR=${BENCH_PPR:-}
PORT=${BENCH_PORT:-56100}
APP=$((ROWS / 100))
[ -n "${PGBIN:-}" ] && PATH=$PGBIN:$PATH
PC=$PORT PW1=$((PORT + 1)) PW2=$((PORT + 2))

die() { echo "citus.sh: $*" >&2; exit 1; }
[ "$(id -u)" != 0 ] || die "run as an ordinary user (initdb refuses root), e.g. su postgres"
command -v initdb >/dev/null || die "initdb is not on PATH; set PGBIN"
pkglib=$(pg_config --pkglibdir)
[ -f "$pkglib/citus.so" ] || die "Citus is not installed in $pkglib"
[ -f "$pkglib/zorder.so" ] || die "zorder is not installed in $pkglib"

dir=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/zorder-citus.XXXXXX")
cleanup() {
	local n
	for n in coord w1 w2; do
		[ -f "$dir/$n/postmaster.pid" ] && pg_ctl -D "$dir/$n" -m immediate stop >/dev/null 2>&1
	done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_node() { # name port
	initdb -D "$dir/$1" -A trust -U postgres --no-sync >"$dir/$1.initdb.log" 2>&1 ||
		{ cat "$dir/$1.initdb.log"; die "initdb $1 failed"; }
	cat >>"$dir/$1/postgresql.conf" <<EOF
port = $2
listen_addresses = 'localhost'
unix_socket_directories = '$dir'
shared_preload_libraries = 'citus, zorder'
shared_buffers = 256MB
max_connections = 100
max_prepared_transactions = 100
citus.shard_count = 8
EOF
	pg_ctl -D "$dir/$1" -l "$dir/$1.log" -w start >/dev/null ||
		{ tail -n 20 "$dir/$1.log"; die "$1 did not start"; }
}

# psql on a port; on a worker, with the shards visible
qp() { local p=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -h "$dir" -p "$p" -U postgres -d postgres "$@"; }
qc() { qp "$PC" "$@"; }
qw() { local p=$1; shift; PGOPTIONS="-c citus.override_table_visibility=off" qp "$p" "$@"; }

ms() { echo $(($(date +%s%N) / 1000000)); }
# median of the numbers given
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "-"; else printf "%.2f", a / b }'; }
checkpoint() { local p; for p in $PC $PW1 $PW2; do qp "$p" -c CHECKPOINT; done; }

t_begin=$(ms)
echo "== cluster in $dir: coordinator $PC, workers $PW1 $PW2; $(postgres --version)"
start_node coord "$PC"
start_node w1 "$PW1"
start_node w2 "$PW2"
for p in $PC $PW1 $PW2; do qp "$p" -c "CREATE EXTENSION citus"; done
qc -c "SELECT citus_set_coordinator_host('localhost', $PC)" >/dev/null
qc -c "SELECT citus_add_node('localhost', $PW1)" >/dev/null
qc -c "SELECT citus_add_node('localhost', $PW2)" >/dev/null
qc -c "CREATE EXTENSION zorder"
for p in $PW1 $PW2; do
	# whether Citus sent CREATE EXTENSION to the worker or not, it needs it
	[ -n "$(qp "$p" -c "SELECT 1 FROM pg_extension WHERE extname = 'zorder'")" ] ||
		qp "$p" -c "SET citus.enable_ddl_propagation = off; CREATE EXTENSION zorder"
done
echo "citus $(qc -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")," \
	"zorder $(qc -c "SELECT extversion FROM pg_extension WHERE extname = 'zorder'")," \
	"workers: $(qc -c 'SELECT count(*) FROM citus_get_active_worker_nodes()')"

# row g: keys independent and spread, arriving in id order
cols="g, (hashint8extended(g, 1) & 1048575)::int, (hashint8extended(g, 2) & 1048575)::int,
      (hashint8extended(g, 3) & 1048575)::int, md5(g::text)"
rows() { echo "SELECT $cols FROM generate_series($1::bigint, $2) g"; }
table_ddl="(id bigint NOT NULL, a int, b int, c int, payload text)"

echo "== loading $ROWS rows into dist (8 shards) and local (worker 1)"
t0=$(ms)
qc <<SQL
SET client_min_messages = warning;
CREATE TABLE dist $table_ddl;
SELECT create_distributed_table('dist', 'id') \g /dev/null
INSERT INTO dist $(rows 1 "$ROWS");
VACUUM ANALYZE dist;
SQL
t1=$(ms)
qp "$PW1" <<SQL
CREATE TABLE local $table_ddl;
INSERT INTO local $(rows 1 "$ROWS");
VACUUM ANALYZE local;
SQL
t2=$(ms)
echo "loaded: dist $((t1 - t0)) ms, local $((t2 - t1)) ms"
qc -F ' ' -c "SELECT shard_name, nodeport, pg_size_pretty(shard_size) FROM citus_shards
			  WHERE table_name = 'dist'::regclass ORDER BY shardid"
echo "local: $(qp "$PW1" -c "SELECT pg_size_pretty(pg_relation_size('local'))")"

# "shard port" lines
mapfile -t shards < <(qc -F ' ' -c "SELECT shard_name, nodeport FROM citus_shards
									WHERE table_name = 'dist'::regclass ORDER BY shardid")
[ "${#shards[@]}" = 8 ] || die "dist has ${#shards[@]} shards, not 8"
shards_on() { # port: its shards, comma-separated
	local s out=""
	for s in "${shards[@]}"; do
		[ "${s#* }" = "$1" ] && out="$out${out:+,}${s% *}"
	done
	echo "$out"
}

# worst ratio_to_ideal over the keys of one table on one node:
# "ratio column total_ranges mean_ranges_touched_summed_over_keys fillfactor"
worst_of() { # port table
	qw "$1" -F ' ' -c "SELECT round(max(ratio_to_ideal)::numeric, 3),
		   (array_agg(column_name ORDER BY ratio_to_ideal DESC))[1],
		   max(total_ranges), round(sum(mean_ranges_touched)::numeric, 2),
		   coalesce(max(fillfactor)::text, '-')
		  FROM zorder.clustering_information('$2')"
}

# rows moved and arrived, calls and their summed duration (ms) on the
# tables named (comma-separated) of one node since the time given
history() { # port tables since
	qw "$1" -F ' ' -c "SELECT coalesce(sum(rows_moved), 0), coalesce(sum(rows_arrived), 0), count(*),
		   coalesce(round(extract(epoch FROM sum(duration)) * 1000), 0),
		   coalesce(string_agg(DISTINCT mode, '/'), '-')
		  FROM zorder.optimize_history
		  WHERE \"table\"::text = ANY (string_to_array('$2', ',')) AND started_at >= '$3'"
}

# the rows are all there
same_rows() {
	local sum="SELECT count(*) || ' ' || sum(id) || ' ' || sum(hashtext(payload || a || b || c))"
	local nd nl
	nd=$(qc -c "$sum FROM dist") nl=$(qp "$PW1" -c "$sum FROM local")
	[ "$nd" = "$nl" ] || echo "!! dist's rows differ from local's: count, sum(id), sum(hash) $nd against $nl"
}

declare -A F # figures by pass and name
next_id=$((ROWS + 1))
passes="a,b a,b,c"
for keys in $passes; do
	k=d$(($(tr -cd , <<<"$keys" | wc -c) + 1))
	qkeys="'${keys//,/\', \'}'"
	echo "== keys ($keys)"
	for t in dist local; do
		[ $t = dist ] && p=$PC || p=$PW1
		qp "$p" -c "SET client_min_messages = warning" -c "DROP INDEX IF EXISTS ${t}_brin" \
			-c "CREATE INDEX ${t}_brin ON $t USING brin ($keys)${PPR:+ WITH (pages_per_range = $PPR)}" \
			-c "SELECT zorder.cluster_by('$t', $qkeys)" >/dev/null
	done

	# full optimize, alternating
	td=() tl=()
	for r in $(seq 1 "$REPS"); do
		for t in dist local; do
			[ $((r % 2)) = 0 ] && t=$([ $t = dist ] && echo local || echo dist)
			checkpoint
			t0=$(ms)
			if [ $t = dist ]; then
				qc -c "SET client_min_messages = warning" -c "CALL zorder.optimize('dist', \"full\" => true)"
				td+=($(($(ms) - t0)))
			else
				qp "$PW1" -c "SET client_min_messages = warning" -c "CALL zorder.optimize('local', \"full\" => true)"
				tl+=($(($(ms) - t0)))
			fi
		done
	done
	md=$(median "${td[@]}") ml=$(median "${tl[@]}")
	echo "full optimize ms: dist ${td[*]} (median $md), local ${tl[*]} (median $ml): $(ratio "$md" "$ml")x"
	F[$k,full_d]=$md F[$k,full_l]=$ml F[$k,full_r]=$(ratio "$md" "$ml")

	same_rows

	# skipping, shard by shard
	printf '%-14s %6s %7s %7s %7s %10s %s\n' shard port ranges worst column fillfactor \
		"mean ranges touched, summed over keys"
	worst=0 worst_at="" touched_d=0
	for s in "${shards[@]}"; do
		read -r rt col nr mt ff <<<"$(worst_of "${s#* }" "${s% *}")"
		printf '%-14s %6s %7s %7s %7s %10s %s\n' "${s% *}" "${s#* }" "$nr" "$rt" "$col" "$ff" "$mt"
		worst_at=$(awk -v r="$rt" -v w="$worst" -v s="${s% *}.$col" -v o="$worst_at" 'BEGIN { print (r > w) ? s : o }')
		worst=$(awk -v r="$rt" -v w="$worst" 'BEGIN { print (r > w) ? r : w }')
		touched_d=$(awk -v a="$touched_d" -v b="$mt" 'BEGIN { print a + b }')
	done
	read -r rt col nr mt ff <<<"$(worst_of "$PW1" local)"
	printf '%-14s %6s %7s %7s %7s %10s %s\n' local "$PW1" "$nr" "$rt" "$col" "$ff" "$mt"
	echo "dist as a whole, from the coordinator:" \
		"$(qc -F ' ' -c "SELECT string_agg(column_name || ' ' || round(ratio_to_ideal::numeric, 3), ', ' ORDER BY key_position)
						 FROM zorder.clustering_information('dist')")"
	F[$k,skip_d]=$worst F[$k,skip_at]=$worst_at F[$k,skip_l]=$rt
	F[$k,touch]=$(ratio "$touched_d" "$mt")

	# incremental: 1 % more rows through the coordinator, and into local
	last=$((next_id + APP - 1))
	qc -c "INSERT INTO dist $(rows "$next_id" "$last")"
	qp "$PW1" -c "INSERT INTO local $(rows "$next_id" "$last")"
	next_id=$((last + 1))
	checkpoint
	since=$(qc -c "SELECT now()")
	t0=$(ms)
	qc -c "SET client_min_messages = warning" -c "CALL zorder.optimize('dist')"
	t1=$(ms)
	qp "$PW1" -c "SET client_min_messages = warning" -c "CALL zorder.optimize('local')"
	t2=$(ms)
	read -r m1 a1 c1 d1 mo1 <<<"$(history "$PW1" "$(shards_on "$PW1")" "$since")"
	read -r m2 a2 c2 d2 mo2 <<<"$(history "$PW2" "$(shards_on "$PW2")" "$since")"
	read -r ml al cl dl mol <<<"$(history "$PW1" local "$since")"
	md=$((m1 + m2))
	echo "incremental: appended $APP; dist moved $md (worker 1 $m1, worker 2 $m2), arrived $((a1 + a2))," \
		"$((c1 + c2)) shard calls ($mo1 $mo2), $((t1 - t0)) ms (shards' own $((d1 + d2)) ms);" \
		"local moved $ml, arrived $al ($mol), $((t2 - t1)) ms"
	same_rows
	F[$k,inc_d]=$(ratio "$md" "$APP") F[$k,inc_l]=$(ratio "$ml" "$APP")
	F[$k,inc_goal]=$(awk -v d="$md" -v l="$ml" -v n="$APP" \
		'BEGIN { x = l - n; if (x < 0) x = 0; g = 1.1 * n + x; printf "%.2f %s", d / g, (d <= g) ? "met" : "NOT met" }')
	F[$k,inc_t]="$((t1 - t0)) / $((t2 - t1)) ms"
	F[$k,inc_tr]=$(ratio $((t1 - t0)) $((t2 - t1)))
done

# a shard moved to the other worker: the next call after 1 % more rows
# (keys a, b, c, as the last pass left them)
read -r mv_id mv_name mv_from <<<"$(qc -F ' ' -c "SELECT shardid, shard_name, nodeport FROM citus_shards
	WHERE table_name = 'dist'::regclass AND nodeport = $PW1 ORDER BY shardid LIMIT 1")"
touched() { # port shard: mean ranges touched summed over the keys, every row a probe
	qw "$1" -c "SELECT round(sum(mean_ranges_touched)::numeric, 2) FROM zorder.clustering_information('$2', 0)"
}
mv_before=$(touched "$PW1" "$mv_name")
t0=$(ms)
qc -c "SELECT citus_move_shard_placement($mv_id, 'localhost', $PW1, 'localhost', $PW2, 'block_writes')" >/dev/null
t1=$(ms)
last=$((next_id + APP - 1))
qc -c "INSERT INTO dist $(rows "$next_id" "$last")"
qp "$PW1" -c "INSERT INTO local $(rows "$next_id" "$last")"
next_id=$((last + 1))
mv_app=$(qw "$PW2" -c "SELECT count(*) FROM $mv_name WHERE id > $((next_id - APP - 1))")
since=$(qc -c "SELECT now()")
t2=$(ms)
qc -c "SET client_min_messages = warning" -c "CALL zorder.optimize('dist')"
t3=$(ms)
read -r mv_moved mv_arr mv_calls mv_ms mv_mode <<<"$(history "$PW2" "$mv_name" "$since")"
mv_after=$(touched "$PW2" "$mv_name")
echo "moved $mv_name from $PW1 to $PW2 in $((t1 - t0)) ms; then $APP rows appended ($mv_app to it)," \
	"and the call ($((t3 - t2)) ms) on it: $mv_mode, moved $mv_moved, arrived $mv_arr;" \
	"ranges a point filter reads, summed over the keys: $mv_before before the move, $mv_after after"
same_rows
F[mv_rows]="$(ratio "$mv_moved" "$mv_app") ($mv_moved / $mv_app, $mv_mode)"
F[mv_skip]="$(ratio "$mv_after" "$mv_before") ($mv_after / $mv_before)"

t_end=$(ms)
echo
echo "== figures: $ROWS rows${PPR:+, pages_per_range $PPR}, 8 shards on 2 workers, against one table on worker 1 (run took $(((t_end - t_begin) / 1000)) s)"
row() { printf '%-56s %-20s %-20s %s\n' "$@"; }
row figure "keys a, b" "keys a, b, c" goal
row "full optimize: dist / local (median ms)" \
	"${F[d2,full_r]} (${F[d2,full_d]} / ${F[d2,full_l]})" \
	"${F[d3,full_r]} (${F[d3,full_d]} / ${F[d3,full_l]})" "<= 1.3"
row "skipping: worst ratio_to_ideal, any shard, any key" "${F[d2,skip_d]}" "${F[d3,skip_d]}" "<= 1.25"
row "  where" "${F[d2,skip_at]}" "${F[d3,skip_at]}" ""
row "skipping: worst ratio_to_ideal, local" "${F[d2,skip_l]}" "${F[d3,skip_l]}" ""
row "ranges a point filter reads: dist / local" "${F[d2,touch]}" "${F[d3,touch]}" "(hash: 8^(1/d): 2.83, 2.00)"
row "incremental: rows moved / appended, dist" "${F[d2,inc_d]}" "${F[d3,inc_d]}" ""
row "incremental: rows moved / appended, local" "${F[d2,inc_l]}" "${F[d3,inc_l]}" ""
row "incremental: dist moved / (1.1 x app + local's extra)" "${F[d2,inc_goal]}" "${F[d3,inc_goal]}" "<= 1"
row "incremental call: dist / local" "${F[d2,inc_tr]} (${F[d2,inc_t]})" \
	"${F[d3,inc_tr]} (${F[d3,inc_t]})" ""
row "after a shard move: rows moved / appended to it" "" "${F[mv_rows]}" "<= 1.1"
row "after a shard move: ranges read, after / before" "" "${F[mv_skip]}" "<= 1.05"
