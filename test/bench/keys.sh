#!/bin/sh
#
# keys.sh - cost of zorder_key / hilbert_key per row, against plain arithmetic.
#
# Builds a table of ROWS rows (default 3,000,000) with a bigint and a double
# precision column, then times, in the same session, the median of REPS runs
# (default 3) of
#     SELECT count(a + b) FROM zk_bench                    -- baseline
#     SELECT count(zorder.zorder_key(a, b)) FROM zk_bench
#     SELECT count(zorder.hilbert_key(a, b)) FROM zk_bench
# and prints each median and its ratio to the baseline.  Parallel query and
# JIT are off so that the figures are per-row work on one core.
#
# Connection settings come from the environment (PGHOST, PGPORT, PGUSER,
# PGDATABASE); the database needs the zorder extension installed.  The table
# is dropped at the end unless KEEP=1.
#
set -eu

ROWS=${ROWS:-3000000}
REPS=${REPS:-3}
KEEP=${KEEP:-0}

psql -X -q -v ON_ERROR_STOP=1 -v rows="$ROWS" -v reps="$REPS" -v keep="$KEEP" <<'EOF'
\pset footer off
SET max_parallel_workers_per_gather = 0;
SET jit = off;
CREATE EXTENSION IF NOT EXISTS zorder;

DROP TABLE IF EXISTS zk_bench;
CREATE TABLE zk_bench AS
    SELECT (random() * 1e12)::int8 AS a, random() * 1e6 - 5e5 AS b
    FROM generate_series(1, :rows);
VACUUM ANALYZE zk_bench;
SELECT count(*) FROM zk_bench \g /dev/null

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
WITH b AS (
    SELECT row_number() OVER () AS n, * FROM pg_temp.bench(ARRAY[
        'SELECT count(a + b) FROM zk_bench',
        'SELECT count(zorder.zorder_key(a, b)) FROM zk_bench',
        'SELECT count(zorder.hilbert_key(a, b)) FROM zk_bench',
        'SELECT count(*) FROM zk_bench'], :reps))
SELECT query, median_ms,
       round(median_ms / (SELECT median_ms FROM b WHERE n = 1), 2) AS ratio
FROM b ORDER BY n;

SELECT :keep = 0 AS drop_it \gset
\if :drop_it
DROP TABLE zk_bench;
\endif
EOF
