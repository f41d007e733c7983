#!/usr/bin/env bash
#
# online_layout.sh - laying out a live table, side by side in one run:
#   layout_repack   pg_repack --order-by the zorder.layout_key of a
#                   prepared boundary set (zorder.prepare_layout)
#   optimize_full   CALL zorder.optimize(t, full => true)
#   plain_repack    pg_repack -o 'a,b,c' (lexicographic order)
#   repack19        CREATE INDEX CONCURRENTLY on the layout key, then
#                   REPACK (CONCURRENTLY) ... USING INDEX (PostgreSQL 19 on)
# Methods whose tool is missing on the server (pg_repack, REPACK) are left
# out, and said so.
#
# Each method starts from the same ROWS rows (default 5,000,000; three
# integer keys, skewed: a tenth of the rows share one value of a) in
# random order, with a primary key and a minmax BRIN index on (a, b, c),
# while WRITERS pgbench clients (default 2) update and insert rows at
# RATE transactions a second in all (default 100), each transaction
# recording how long it took.  Reported per method: wall time; the longest
# time a writer's transaction took while it ran (its wait for the
# rewrite's locks); the temporary bytes (pg_stat_database) and WAL bytes
# written meanwhile (the writers' own WAL included, the same load for
# every method); and for each key column the skipping, as
# zorder.clustering_information's ratio of block ranges a point filter
# reads to the ideal, over every row, at pages_per_range PPR (default 32),
# measured right after the rewrite (the rows written meanwhile included).
#
# Connection settings come from the environment (PGHOST, PGPORT, PGUSER,
# PGDATABASE); the user must be a superuser (pg_repack).  The tables are
# dropped at the end unless KEEP=1.
#
set -eu

ROWS=${ROWS:-5000000}
WRITERS=${WRITERS:-2}
RATE=${RATE:-100}
PPR=${PPR:-32}
KEEP=${KEEP:-0}
METHODS=${METHODS:-layout_repack optimize_full plain_repack repack19}

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
work=$(mktemp -d /tmp/zorder-online.XXXXXX)
chmod 755 "$work"
pgbench_pid=
cleanup() {
	[ -n "$pgbench_pid" ] && kill "$pgbench_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

version=$(q -c 'SHOW server_version_num')
bindir=$(dirname "$(command -v psql)")
have_pg_repack=no
if command -v pg_repack >/dev/null 2>&1 &&
	[ "$(q -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_repack'")" = 1 ]; then
	have_pg_repack=yes
fi

q <<EOF
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS zorder;
$( [ $have_pg_repack = yes ] && echo 'CREATE EXTENSION IF NOT EXISTS pg_repack;')
DROP TABLE IF EXISTS ol_base, ol_t, ol_waits;
CREATE TABLE ol_base AS
	SELECT g::bigint AS id,
		   CASE WHEN g % 10 = 0 THEN 500 ELSE (g::bigint * 7919) % 100000 END::int AS a,
		   ((g::bigint * 104729) % 10007)::int AS b,
		   ((g::bigint * 15485863) % 1000003)::int AS c,
		   repeat('x', 40) AS pad
	FROM generate_series(1, $ROWS) g ORDER BY random();
CREATE UNLOGGED TABLE ol_waits (method text, took interval);
EOF

# the writers: a non-key update and an insert, each timing itself
cat >"$work/update.sql" <<'EOF'
\set id random(1, :rows)
BEGIN;
UPDATE ol_t SET pad = md5(pad) WHERE id = :id;
INSERT INTO ol_waits SELECT current_setting('bench.method'), clock_timestamp() - transaction_timestamp();
COMMIT;
EOF
cat >"$work/insert.sql" <<'EOF'
\set a random(0, 99999)
BEGIN;
INSERT INTO ol_t (id, a, b, c, pad) VALUES (nextval('ol_newid'), :a, :a % 10007, :a * 7, 'new');
INSERT INTO ol_waits SELECT current_setting('bench.method'), clock_timestamp() - transaction_timestamp();
COMMIT;
EOF

printf '%-14s %9s %12s %9s %9s  %s\n' method seconds max_wait_ms temp_MB wal_MB \
	"ratio to ideal a, b, c (ppr $PPR)"
for m in $METHODS; do
	case $m in
		layout_repack | plain_repack)
			if [ $have_pg_repack = no ]; then
				echo "$m: skipped, no pg_repack for this server"
				continue
			fi ;;
		repack19)
			if [ "$version" -lt 190000 ]; then
				echo "$m: skipped, REPACK comes with PostgreSQL 19"
				continue
			fi ;;
	esac
	{
		q <<EOF
SET client_min_messages = warning;
DROP TABLE IF EXISTS ol_t;
DROP SEQUENCE IF EXISTS ol_newid;
CREATE TABLE ol_t (LIKE ol_base);
INSERT INTO ol_t SELECT * FROM ol_base;
ALTER TABLE ol_t ADD PRIMARY KEY (id);
CREATE INDEX ol_t_brin ON ol_t USING brin (a, b, c) WITH (pages_per_range = $PPR);
CREATE SEQUENCE ol_newid START $((ROWS + 1));
SELECT zorder.cluster_by('ol_t', 'a', 'b', 'c');
VACUUM ANALYZE ol_t;
CHECKPOINT;
EOF
	} >/dev/null
	# prepared before the clock starts: a sample, seconds at most
	prep=$(q -F '|' -c "SELECT order_by, create_index, repack FROM zorder.prepare_layout('ol_t')")
	order_by=$(echo "$prep" | cut -d'|' -f1)
	create_index=$(echo "$prep" | cut -d'|' -f2)
	repack=$(echo "$prep" | cut -d'|' -f3)

	PGOPTIONS="-c bench.method=$m" pgbench -n -c "$WRITERS" -j "$WRITERS" -T 100000 \
		-R "$RATE" -D rows="$ROWS" -f "$work/update.sql@3" -f "$work/insert.sql@1" \
		>"$work/pgbench.out" 2>&1 &
	pgbench_pid=$!
	sleep 3
	before=$(q -F ' ' -c "SELECT pg_current_wal_lsn(), temp_bytes FROM pg_stat_database WHERE datname = current_database()")
	t0=$(date +%s.%N)
	case $m in
		layout_repack)
			pg_repack -d "$(q -c 'SELECT current_database()')" \
				-t public.ol_t -o "$order_by" >"$work/tool.out" 2>&1 ;;
		plain_repack)
			pg_repack -d "$(q -c 'SELECT current_database()')" \
				-t public.ol_t -o 'a, b, c' >"$work/tool.out" 2>&1 ;;
		optimize_full)
			q -c "SET zorder.create_brin = off" -c "CALL zorder.optimize('ol_t', full => true)" \
				>"$work/tool.out" 2>&1 ;;
		repack19)
			{ q -c "$create_index" && q -c "$repack"; } >"$work/tool.out" 2>&1 ;;
	esac || { cat "$work/tool.out"; exit 1; }
	t1=$(date +%s.%N)
	sleep 3
	kill "$pgbench_pid" 2>/dev/null || true
	wait "$pgbench_pid" 2>/dev/null || true
	pgbench_pid=
	# temp bytes reach pg_stat_database when a backend reports them
	sleep 1
	after=$(q -F ' ' -c "SELECT pg_current_wal_lsn(), temp_bytes FROM pg_stat_database WHERE datname = current_database()")
	set -- $before $after
	figures=$(q -F ' ' -c "SELECT round(extract(epoch FROM max(took)) * 1000),
		round((pg_wal_lsn_diff('$3', '$1') / 1048576.0)::numeric, 0),
		round((($4 - $2) / 1048576.0)::numeric, 0)
		FROM ol_waits WHERE method = '$m'")
	set -- $figures
	skip=$(q -c "SELECT string_agg(round(ratio_to_ideal::numeric, 3)::text, ', ' ORDER BY key_position)
		FROM zorder.clustering_information('ol_t', probes => 0, with_pages_per_range => $PPR)")
	printf '%-14s %9.1f %12s %9s %9s  %s\n' "$m" "$(awk "BEGIN { print $t1 - $t0 }")" "$1" "$3" "$2" "$skip"
done

if [ "$KEEP" = 0 ]; then
	q -c "DROP TABLE ol_base, ol_t, ol_waits; DROP SEQUENCE ol_newid;"
fi
