#!/usr/bin/env bash
# upkeep.sh - what incremental upkeep costs, round after round.
#
# A table of ROWS rows (default 1,000,000) with two keys of different
# cardinality (a: 0 to 1,000,000; b: 0 to 1,000) and a text payload, a BRIN
# index with 16 pages per range, fillfactor BENCH_FILLFACTOR (default: none
# set, so zorder chooses the room, room.c), fully optimized once.  Then
# ROUNDS rounds
# (default 30) of
#     CHECKPOINT; append 1 % random rows; CHECKPOINT;
#     CALL zorder.optimize (incremental); VACUUM
# and after each round a fresh full optimize of the same rows (a copy with
# fillfactor 100: packed, the smallest) to compare with.  Per round and in total:
#   moved/arrived   rows the call moved per row appended since the last one
#   wal call/app    WAL of the call / WAL of the append (both right after a
#                   CHECKPOINT: every first touch of a page is a full image)
#   pages a, b      heap pages a point filter on that key column reads
#                   (mean BRIN ranges it cannot skip x pages per range),
#                   relative to the fresh full optimize
#   bytes/row       table bytes per row, relative to the fresh full optimize
# BENCH_WAL_COMPRESSION sets wal_compression for the benchmark's sessions
# (off by default: full-page images at their full size).
# BENCH_APPEND says what the appended rows look like: random (default:
# both keys uniform over the first rows' range), time (a grows with every
# round, beyond every value the table had: a time-ordered key), or hot
# (a falls in a band of 0.1 % of its range: new rows concentrated on a few
# values).
# BENCH_LOAD says how the first ROWS rows came, which is what zorder reads
# to choose the room of the first layout (arrivals.c): random (default:
# both keys uniform, in no order) or appends (as the appends come: for
# time, a grows with the row number; for hot, the last 5 % of the rows fall
# in the band, as if it had been hot for five rounds; for random, as
# random).
# BENCH_FULL_AFTER=k runs one full optimize after round k (not counted in
# the totals): the rewrite writes the room zorder chose from the rounds
# before (room.c), as a table at its default settings gets it at its
# first full rewrite after some growth.
# A call that zorder makes a full rewrite by itself, when spread appends
# have used up its room (room.c, zorder.auto_rewrite_limit), is marked
# "full" and counted in the calls' WAL and time, not in the rows moved per
# appended row or the most moved by one call, which are the incremental
# calls'.  At the end, the calls' time and WAL are set beside those of one
# full rewrite of the final table (made after a CHECKPOINT), and the first
# call's time beside the first fresh full optimize's.
# BENCH_FRESH_EVERY=k compares with a fresh full optimize only every k
# rounds (and the last), for a quicker look.  Connection settings come from
# the environment; test/bench/run.sh sets up a throwaway cluster.
set -eu

ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-30}
FF=${BENCH_FILLFACTOR:-}
EVERY=${BENCH_FRESH_EVERY:-1}
MODE=${BENCH_APPEND:-random}
LOAD=${BENCH_LOAD:-random}
case $LOAD in random | appends) ;; *) echo "unknown BENCH_LOAD $LOAD" >&2; exit 1 ;; esac
APPEND=$((ROWS / 100))
PPR=16
[ -n "${BENCH_WAL_COMPRESSION:-}" ] &&
	export PGOPTIONS="${PGOPTIONS:-} -c wal_compression=$BENCH_WAL_COMPRESSION"

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

lsn() { q -c "SELECT pg_current_wal_insert_lsn()"; }
walbytes() { q -c "SELECT pg_wal_lsn_diff('$2', '$1')::bigint"; }

# mean heap pages a point filter on each key column reads: "a b"
pages() {
	q -F ' ' -c "SELECT string_agg(round((mean_ranges_touched * $PPR)::numeric, 1)::text, ' '
				 ORDER BY key_position)
		  FROM zorder.clustering_information('$1', probes => 500)"
}

bytes_per_row() {
	q -c "SELECT pg_relation_size('$1')::float8 / count(*) FROM $1"
}

# the expression for a in row g of the first ROWS rows
load_a_expr() {
	case $LOAD/$MODE in
	random/* | appends/random) echo "(random() * 1e6)::int" ;;
	appends/time) echo "((g - 1 + random()) * (1e6 / $ROWS))::int" ;;
	appends/hot) echo "CASE WHEN g > $ROWS - $ROWS / 20 THEN 500000 + (random() * 1e3)::int
			   ELSE (random() * 1e6)::int END" ;;
	esac
}

q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS zorder;
DROP TABLE IF EXISTS up_t, up_full;
SELECT setseed(0.3);
CREATE TABLE up_t (id bigserial PRIMARY KEY, a int, b int, payload text)
	${FF:+WITH (fillfactor = $FF)};
INSERT INTO up_t (a, b, payload)
SELECT $(load_a_expr), (random() * 1e3)::int, md5(g::text)
FROM generate_series(1, $ROWS) g;
CREATE INDEX up_t_brin ON up_t USING brin (a, b) WITH (pages_per_range = $PPR);
SELECT zorder.cluster_by('up_t', 'a', 'b');
CALL zorder.optimize('up_t');
VACUUM up_t;
SQL

fresh_copy() {
	q >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS up_full;
CREATE TABLE up_full WITH (fillfactor = 100) AS SELECT * FROM up_t;
ALTER TABLE up_full ADD PRIMARY KEY (id);
CREATE INDEX up_full_brin ON up_full USING brin (a, b) WITH (pages_per_range = $PPR);
SELECT zorder.cluster_by('up_full', 'a', 'b');
SQL
	local t0
	t0=$(date +%s%N)
	q -c "CALL zorder.optimize('up_full')"
	fresh_ms=$((($(date +%s%N) - t0) / 1000000))
	q -c "VACUUM up_full"
}

# the expression for a in round i
a_expr() {
	case $MODE in
	random) echo "(random() * 1e6)::int" ;;
	time) echo "1000000 + ($1 - 1) * 10000 + (random() * 10000)::int" ;;
	hot) echo "500000 + (random() * 1e3)::int" ;;
	*) echo "unknown BENCH_APPEND $MODE" >&2; exit 1 ;;
	esac
}

echo "rows $ROWS loaded $LOAD, $ROUNDS rounds of 1 % ($APPEND rows, $MODE), fillfactor ${FF:-chosen by zorder}," \
	"wal_compression $(q -c 'SHOW wal_compression')"
printf '%5s %9s %9s %8s %8s %9s %7s %7s %9s %6s %s\n' round moved moved/arr \
	"call MB" "app MB" call/app "pages a" "pages b" bytes/row "ms" \
	"(pages a, b: table / fresh; unsummarized ranges)"
tot_moved=0 tot_app=0 tot_call=0 max_ratio=0 max_round=0
tot_ms=0 rewrites=0 rewrite_wal=0 inc_rounds=0 round1_ms=0 first_fresh_ms= first_fresh_round=0
worst_a=0 worst_b=0 worst_s=0 worst_a_r=0 worst_b_r=0 worst_s_r=0
for i in $(seq 1 "$ROUNDS"); do
	q -c "CHECKPOINT"
	l0=$(lsn)
	q -c "INSERT INTO up_t (a, b, payload)
		  SELECT $(a_expr "$i"), (random() * 1e3)::int, md5(random()::text)
		  FROM generate_series(1, $APPEND)"
	l1=$(lsn)
	q -c "CHECKPOINT"
	l2=$(lsn)
	t0=$(date +%s%N)
	q -c "CALL zorder.optimize('up_t')"
	t1=$(date +%s%N)
	l3=$(lsn)
	q -c "VACUUM up_t"
	app=$(walbytes "$l0" "$l1")
	call=$(walbytes "$l2" "$l3")
	read -r moved mode <<<"$(q -F ' ' -c "SELECT rows_moved, mode FROM zorder.optimize_history
				  WHERE \"table\" = 'up_t'::regclass ORDER BY started_at DESC LIMIT 1")"
	tot_ms=$((tot_ms + (t1 - t0) / 1000000))
	[ "$i" = 1 ] && round1_ms=$(((t1 - t0) / 1000000))
	if [ "$mode" = full ]; then
		rewrites=$((rewrites + 1))
		rewrite_wal=$((rewrite_wal + call))
		echo "  (round $i: an automatic full rewrite: $(q -c "SELECT room FROM zorder.optimize_history
			WHERE \"table\" = 'up_t'::regclass ORDER BY started_at DESC LIMIT 1"))"
	else
		tot_moved=$((tot_moved + moved))
		inc_rounds=$((inc_rounds + 1))
	fi
	if [ "$i" = "${BENCH_FULL_AFTER:-0}" ]; then
		q -c "CALL zorder.optimize('up_t', \"full\" => true)"
		q -c "VACUUM up_t"
		echo "  (full optimize: $(q -c "SELECT room FROM zorder.optimize_history
			WHERE \"table\" = 'up_t'::regclass ORDER BY started_at DESC LIMIT 1"))"
	fi
	tot_app=$((tot_app + app))
	tot_call=$((tot_call + call))
	pa=- pb=- sz=- ta=- fa=- tb=- fb=- unsum=-
	if [ $((i % EVERY)) = 0 ] || [ "$i" = "$ROUNDS" ]; then
		fresh_copy
		[ -n "$first_fresh_ms" ] || first_fresh_ms=$fresh_ms first_fresh_round=$i
		read -r ta tb <<<"$(pages up_t)"
		read -r fa fb <<<"$(pages up_full)"
		unsum=$(q -c "SELECT max(unsummarized_ranges)
					 FROM zorder.clustering_information('up_t', probes => 1)")
		ts=$(bytes_per_row up_t)
		fs=$(bytes_per_row up_full)
		pa=$(awk -v x="$ta" -v y="$fa" 'BEGIN { printf "%.2f", x / y }')
		pb=$(awk -v x="$tb" -v y="$fb" 'BEGIN { printf "%.2f", x / y }')
		sz=$(awk -v x="$ts" -v y="$fs" 'BEGIN { printf "%.2f", x / y }')
		awk -v x="$pa" -v w="$worst_a" 'BEGIN { exit !(x > w) }' && worst_a=$pa worst_a_r=$i
		awk -v x="$pb" -v w="$worst_b" 'BEGIN { exit !(x > w) }' && worst_b=$pb worst_b_r=$i
		awk -v x="$sz" -v w="$worst_s" 'BEGIN { exit !(x > w) }' && worst_s=$sz worst_s_r=$i
	fi
	ratio=$(awk -v m="$moved" -v a="$APPEND" 'BEGIN { printf "%.2f", m / a }')
	[ "$mode" = full ] ||
		{ awk -v x="$ratio" -v w="$max_ratio" 'BEGIN { exit !(x > w) }' && max_ratio=$ratio max_round=$i; } || true
	awk -v i="$i" -v m="$moved" -v r="$ratio" -v c="$call" -v a="$app" -v pa="$pa" \
		-v pb="$pb" -v sz="$sz" -v ms="$(((t1 - t0) / 1000000))" \
		-v detail="$ta/$fa $tb/$fb $unsum" 'BEGIN {
		printf "%5d %9d %9s %8.1f %8.1f %9.2f %7s %7s %9s %6d %s\n", i, m, r,
			c / 1048576, a / 1048576, c / a, pa, pb, sz, ms, detail
	}'
done
echo "last round: pages a $ta vs $fa, pages b $tb vs $fb, bytes/row $ts vs $fs"
q -c "SELECT mode, fillfactor, room FROM zorder.optimize_history
	  WHERE \"table\" = 'up_t'::regclass ORDER BY started_at DESC LIMIT 1"
q -c "CHECKPOINT"
l0=$(lsn)
t0=$(date +%s%N)
q -c "CALL zorder.optimize('up_t', \"full\" => true)"
t1=$(date +%s%N)
ref_wal=$(walbytes "$l0" "$(lsn)")
ref_ms=$(((t1 - t0) / 1000000))
awk -v m="$tot_moved" -v n="$((APPEND * inc_rounds))" -v c="$tot_call" -v a="$tot_app" \
	-v mr="$max_ratio" -v mri="$max_round" -v wa="$worst_a" -v wai="$worst_a_r" \
	-v wb="$worst_b" -v wbi="$worst_b_r" -v ws="$worst_s" -v wsi="$worst_s_r" \
	-v rw="$rewrites" -v rwal="$rewrite_wal" -v ms="$tot_ms" -v rms="$ref_ms" \
	-v rfw="$ref_wal" -v r1="$round1_ms" -v fr="$first_fresh_round" -v fms="$first_fresh_ms" 'BEGIN {
	printf "automatic full rewrites: %d (%.0f MB of the calls WAL)\n", rw, rwal / 1048576
	printf "total: rows moved per appended row %.2f, incremental calls (goal <= 4)\n", (n > 0 ? m / n : 0)
	printf "total: calls WAL / appends WAL %.2f (%.0f / %.0f MB; goal <= 6)\n", c / a, c / 1048576, a / 1048576
	printf "round 1: the call took %d ms; a fresh full optimize of the table at round %d took %d ms (goal for the call: <= 0.1 of a full optimize)\n", r1, fr, fms
	printf "total: calls time / a full rewrite %.2f (%.1f / %.1f s), calls WAL / its WAL %.2f (%.0f MB); goal at 20 M rows, 30 rounds: <= 3 each\n", ms / rms, ms / 1000, rms / 1000, c / rfw, rfw / 1048576
	printf "max rows moved in one call / rows arrived %s (round %d; goal <= 5)\n", mr, mri
	printf "worst round vs fresh full optimize: pages a %s (round %d), pages b %s (round %d), bytes/row %s (round %d); goals <= 1.2, 1.2, 1.3\n", wa, wai, wb, wbi, ws, wsi
}'
q -c "DROP TABLE up_t, up_full"
