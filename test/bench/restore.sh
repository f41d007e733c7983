#!/usr/bin/env bash
# restore.sh - what the first zorder.optimize after pg_dump and pg_restore
# moves, and the skipping it keeps.
#
# Two tables of ROWS rows (default 1,000,000) with two random integer keys
# and a text payload, a BRIN index at PostgreSQL's default pages_per_range,
# laid out by a full zorder.optimize at zorder's defaults:
#   whole:  dumped as the full call left it;
#   placed: 1 % more rows appended and placed by an incremental call first,
#           so that the dump holds rows placed into the room of their ranges.
# Both are dumped (pg_dump -Fc) and restored into a new database; 1 % more
# rows are appended there and one zorder.optimize runs.  Reported per
# table: the call's mode, rows it moved against the rows appended since the
# restore (goal: at most 1.1), and the ranges a point filter on each key
# reads (400 values, summed over the keys) after the call against before
# the dump (goal: at most 1.05).  A full rewrite would move every row.
# Connection settings come from the environment; test/bench/run.sh sets up
# a throwaway cluster.
set -eu

ROWS=${ROWS:-1000000}
APPEND=$((ROWS / 100))
bin=${PGBIN:+$PGBIN/}
dump=$(mktemp)
trap 'rm -f "$dump"' EXIT

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

rows() {
	echo "SELECT g, (g::bigint * 7919) % 1000003, (g::bigint * 104729) % 999983,
	              repeat('x', 40) FROM generate_series($1, $2) g"
}

# ranges a point filter on a or b reads, summed over 400 values of each
skipping() {
	q -d "$1" -c "SELECT sum(zorder.ranges_touched('$2', 'a', ((g::bigint * 7919) % 1000003)::text))
	                   + sum(zorder.ranges_touched('$2', 'b', ((g::bigint * 104729) % 999983)::text))
	              FROM generate_series(1, 4000, 10) g"
}

q -c "DROP DATABASE IF EXISTS restore_src" -c "DROP DATABASE IF EXISTS restore_dst" \
	-c "CREATE DATABASE restore_src" -c "CREATE DATABASE restore_dst"
q -d restore_src -c "CREATE EXTENSION zorder"
for t in whole placed; do
	q -d restore_src \
		-c "CREATE TABLE $t (id bigint PRIMARY KEY, a int, b int, pad text)" \
		-c "INSERT INTO $t $(rows 1 "$ROWS")" \
		-c "CREATE INDEX ON $t USING brin (a, b)" \
		-c "SELECT zorder.cluster_by('$t', 'a', 'b')" \
		-c "CALL zorder.optimize('$t')"
done
q -d restore_src -c "INSERT INTO placed $(rows $((ROWS + 1)) $((ROWS + APPEND)))"
q -d restore_src -c "CALL zorder.optimize('placed')"
declare -A before
for t in whole placed; do before[$t]=$(skipping restore_src $t); done
placed_before=$(q -d restore_src -c "SELECT rows_moved FROM zorder.optimize_history
	WHERE \"table\" = 'placed'::regclass ORDER BY started_at DESC LIMIT 1")

"${bin}pg_dump" -Fc -d restore_src -f "$dump"
"${bin}pg_restore" --exit-on-error -d restore_dst "$dump"
for t in whole placed; do
	q -d restore_dst -c "INSERT INTO $t $(rows $((2 * ROWS + 1)) $((2 * ROWS + APPEND)))"
	q -d restore_dst -c "CALL zorder.optimize('$t')"
done

echo "== figures: $ROWS rows, $APPEND appended after the restore ($placed_before placed before the dump in placed)"
printf '%-8s %-12s %-28s %s\n' table mode "rows moved / appended" "ranges read, after / before the dump"
for t in whole placed; do
	IFS='|' read -r mode moved < <(q -d restore_dst -c "SELECT mode, rows_moved FROM zorder.optimize_history
		WHERE \"table\" = '$t'::regclass ORDER BY started_at DESC LIMIT 1")
	after=$(skipping restore_dst $t)
	printf '%-8s %-12s %-28s %s\n' "$t" "$mode" \
		"$(awk -v m="$moved" -v a="$APPEND" 'BEGIN { printf "%.2f (%d / %d)", m / a, m, a }')" \
		"$(awk -v x="$after" -v y="${before[$t]}" 'BEGIN { printf "%.3f (%d / %d)", x / y, x, y }')"
done
q -c "DROP DATABASE restore_src" -c "DROP DATABASE restore_dst"
