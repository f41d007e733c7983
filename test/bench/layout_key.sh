#!/bin/sh
#
# layout_key.sh - cost of zorder.layout_key per row, against hilbert_key on
# the same columns.
#
# Builds a table of ROWS rows (default 3,000,000): a bigint, a double
# precision with a heavy value (a quarter of the rows), and a text column.
# Declares keys and runs a full zorder.optimize, whose boundary set the
# layout_key calls use.  Then times, side by side in one session, the median
# of REPS runs (default 5) of
#     SELECT count(*)                                  -- baseline
#     SELECT count(zorder.hilbert_key(a, b))           -- and (a, b, c)
#     SELECT count(zorder.layout_key(set, a, b))       -- and (a, b, c)
# and prints each median, the layout_key / hilbert_key ratio of the whole
# query and of the cost above the baseline (the function's own per-row
# cost).  Parallel query and JIT are off: per-row work on one core.
#
# Connection settings come from the environment (PGHOST, PGPORT, PGUSER,
# PGDATABASE).  The tables are dropped at the end unless KEEP=1.
#
set -eu

ROWS=${ROWS:-3000000}
REPS=${REPS:-5}
KEEP=${KEEP:-0}

psql -X -q -v ON_ERROR_STOP=1 -v rows="$ROWS" -v reps="$REPS" -v keep="$KEEP" <<'EOF'
\pset footer off
SET max_parallel_workers_per_gather = 0;
SET jit = off;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS zorder;

DROP TABLE IF EXISTS lk_bench2, lk_bench3;
CREATE TABLE lk_bench2 AS
    SELECT (random() * 1e12)::int8 AS a,
           CASE WHEN random() < 0.25 THEN 42.0 ELSE random() * 1e6 - 5e5 END AS b,
           md5(random()::text) AS c
    FROM generate_series(1, :rows);
CREATE TABLE lk_bench3 AS SELECT * FROM lk_bench2;
SELECT zorder.cluster_by('lk_bench2', 'a', 'b');
SELECT zorder.cluster_by('lk_bench3', 'a', 'b', 'c');
SET zorder.create_brin = off;
CALL zorder.optimize('lk_bench2', true);
CALL zorder.optimize('lk_bench3', true);
VACUUM ANALYZE lk_bench2, lk_bench3;
SELECT boundary_set AS set2 FROM zorder.layouts WHERE relid = 'lk_bench2'::regclass \gset
SELECT boundary_set AS set3 FROM zorder.layouts WHERE relid = 'lk_bench3'::regclass \gset
SELECT count(*) FROM lk_bench2 \g /dev/null
SELECT count(*) FROM lk_bench3 \g /dev/null

-- median wall time in milliseconds of REPS executions of each query, the
-- queries taking turns so that drift hits them alike
CREATE FUNCTION pg_temp.bench(queries text[], reps int)
RETURNS TABLE (query text, median_ms numeric)
LANGUAGE plpgsql AS $$
DECLARE
    times float8[] := array_fill(NULL::float8, ARRAY[array_length(queries, 1), reps]);
    t0 timestamptz;
    r int;
    i int;
BEGIN
    FOR r IN 1 .. reps LOOP
        FOR i IN 1 .. array_length(queries, 1) LOOP
            t0 := clock_timestamp();
            EXECUTE queries[i];
            times[i][r] := extract(epoch FROM clock_timestamp() - t0) * 1000;
        END LOOP;
    END LOOP;
    FOR i IN 1 .. array_length(queries, 1) LOOP
        query := queries[i];
        SELECT round(percentile_disc(0.5) WITHIN GROUP (ORDER BY t)::numeric, 1)
            INTO median_ms
            FROM unnest(times[i:i][1:reps]) t;
        RETURN NEXT;
    END LOOP;
END
$$;

SELECT format('%s rows, median of %s runs', :rows, :reps) AS bench;
CREATE TEMP TABLE b AS
    SELECT row_number() OVER () AS n, * FROM pg_temp.bench(ARRAY[
        'SELECT count(*) FROM lk_bench2',
        'SELECT count(zorder.hilbert_key(a, b)) FROM lk_bench2',
        format('SELECT count(zorder.layout_key(%s, a, b)) FROM lk_bench2', :set2),
        'SELECT count(*) FROM lk_bench3',
        'SELECT count(zorder.hilbert_key(a, b, c)) FROM lk_bench3',
        format('SELECT count(zorder.layout_key(%s, a, b, c)) FROM lk_bench3', :set3)],
        :reps);
SELECT query, median_ms FROM b ORDER BY n;
SELECT cols,
       round(l.median_ms / h.median_ms, 2) AS ratio_query,
       round((l.median_ms - z.median_ms) / (h.median_ms - z.median_ms), 2)
           AS ratio_per_row_cost
FROM (VALUES ('a, b', 1), ('a, b, c', 4)) v(cols, base)
JOIN b z ON z.n = v.base
JOIN b h ON h.n = v.base + 1
JOIN b l ON l.n = v.base + 2;

SELECT :keep = 0 AS drop_it \gset
\if :drop_it
DROP TABLE lk_bench2, lk_bench3;
\endif
EOF
