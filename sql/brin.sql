-- Skipping: zorder.clustering_information and zorder.ranges_touched agree
-- with counts made here from the heap itself and with what a real BRIN
-- scan reads; zorder.optimize creates one BRIN index when asked, once.
-- Layouts depend on the table's OID (the sample's seed), so figures are
-- checked against independent counts and bounds, not printed.
CREATE SCHEMA zbrin;
SET search_path = zbrin, public;
SELECT setseed(0.25);

CREATE TABLE ev (id int, a int, b int, ts timestamptz, pad text);
INSERT INTO ev
SELECT g, (random() * 10000)::int, (random() * 5000)::int,
	   '2026-01-01'::timestamptz + random() * interval '30 days', 'x'
FROM generate_series(1, 40000) g;
CREATE INDEX ev_brin ON ev USING brin (a, b) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('ev', 'a', 'b');

-- Per-range min/max of the heap, counted here: rng(ppr) has one row per
-- block range that holds rows.
CREATE FUNCTION rng(ppr int)
RETURNS TABLE (r int, amin int, amax int, bmin int, bmax int)
LANGUAGE sql AS $$
	SELECT (ctid::text::point)[0]::int / ppr, min(a), max(a), min(b), max(b)
	FROM ev GROUP BY 1
$$;
-- mean over every row of the ranges whose [min, max] holds its value
CREATE FUNCTION mean_touched(ppr int, col text) RETURNS float8
LANGUAGE sql AS $$
	WITH r AS MATERIALIZED (SELECT * FROM rng(ppr))
	SELECT avg(CASE col
				 WHEN 'a' THEN (SELECT count(*) FROM r WHERE e.a BETWEEN amin AND amax)
				 ELSE (SELECT count(*) FROM r WHERE e.b BETWEEN bmin AND bmax) END)
	FROM ev e
$$;
CREATE FUNCTION lossy_blocks(query text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query
		INTO plan;
	RETURN jsonb_path_query_first(plan, 'strict $.**."Lossy Heap Blocks"')::int;
END
$$;

-- Random order: a point filter on either key reads (almost) every range.
SELECT column_name, brin_index, pages_per_range,
	   total_ranges = ceil(pg_relation_size('ev') / 8192 / 4.0) AS all_ranges,
	   unsummarized_ranges, probes_used,
	   mean_ranges_touched > 0.9 * total_ranges AS reads_nearly_all,
	   abs(mean_ranges_touched - mean_touched(4, column_name)) < 1e-9 AS matches_heap,
	   keys, curve, optimized_at IS NULL AS never_optimized, unclustered_share
FROM zorder.clustering_information('ev', probes => 0);

CALL zorder.optimize('ev');

-- After: below half of the ranges on each key, and within 2x the ideal
-- sqrt(n) (the benchmark measures how close; this only catches a broken
-- layout).  The figures equal the count made from the heap, for every row
-- as a probe.
SELECT column_name, brin_index, pages_per_range, unsummarized_ranges,
	   total_ranges = (SELECT count(*) FROM rng(4)) AS all_ranges,
	   ideal_ranges_touched = sqrt(total_ranges) AS ideal_is_sqrt_n,
	   mean_ranges_touched < 0.5 * total_ranges AS below_half,
	   ratio_to_ideal < 2 AS near_ideal,
	   abs(mean_ranges_touched - mean_touched(4, column_name)) < 1e-9 AS matches_heap,
	   abs(ratio_to_ideal - mean_ranges_touched / ideal_ranges_touched) < 1e-9 AS ratio_ok,
	   curve, optimized_at IS NOT NULL AS optimized, unclustered_share
FROM zorder.clustering_information('ev', probes => 0);

-- With the default sample of 500 rows: close to the exact mean.
SELECT column_name, probes_used,
	   abs(mean_ranges_touched - mean_touched(4, column_name)) < 0.2 * mean_ranges_touched AS close
FROM zorder.clustering_information('ev');

-- Overlaps, depths and their histogram, counted here from the heap.
CREATE TABLE r4 AS SELECT * FROM rng(4);
CREATE TABLE depths AS
SELECT 'a' AS col, x.r,
	   (SELECT count(*) FROM r4 s WHERE s.r <> x.r AND s.amin <= x.amax AND s.amax >= x.amin) AS n_overlaps,
	   (SELECT max((SELECT count(*) FROM r4 c WHERE p.amin BETWEEN c.amin AND c.amax))
		FROM r4 p WHERE p.amin BETWEEN x.amin AND x.amax) AS depth
FROM r4 x
UNION ALL
SELECT 'b', x.r,
	   (SELECT count(*) FROM r4 s WHERE s.r <> x.r AND s.bmin <= x.bmax AND s.bmax >= x.bmin),
	   (SELECT max((SELECT count(*) FROM r4 c WHERE p.bmin BETWEEN c.bmin AND c.bmax))
		FROM r4 p WHERE p.bmin BETWEEN x.bmin AND x.bmax)
FROM r4 x;
SELECT i.column_name,
	   abs(i.average_overlaps - d.n_overlaps) < 1e-9 AS overlaps_match,
	   abs(i.average_depth - d.depth) < 1e-9 AS depth_matches,
	   i.depth_histogram = d.histogram AS histogram_matches,
	   i.average_depth >= 1 AND i.average_depth <= i.total_ranges AS depth_in_bounds
FROM zorder.clustering_information('ev', probes => 10) i
JOIN (SELECT col, avg(n_overlaps) AS n_overlaps, avg(depth) AS depth,
			 (SELECT jsonb_object_agg(lpad(bucket::text, 5, '0'), n)
			  FROM (SELECT CASE WHEN depth <= 16 THEN depth
							   ELSE 2 ^ ceil(log(2, depth)) END::int AS bucket,
						   count(*) AS n
					FROM depths d2 WHERE d2.col = d1.col GROUP BY 1) h) AS histogram
	  FROM depths d1 GROUP BY col) d ON d.col = i.column_name;

-- One value at a time: ranges_touched equals the count from the heap, and
-- a real BRIN bitmap scan reads exactly the pages of those ranges.
SET enable_seqscan = off;
SET max_parallel_workers_per_gather = 0;
SELECT a AS va, b AS vb, pg_relation_size('ev') / 8192 AS nblocks FROM ev WHERE id = 4242 \gset
SELECT zorder.ranges_touched('ev', 'a', :'va') AS touched_a,
	   zorder.ranges_touched('ev', 'b', :'vb') AS touched_b \gset
SELECT :touched_a = (SELECT count(*) FROM r4 WHERE :va BETWEEN amin AND amax) AS a_matches_heap,
	   :touched_b = (SELECT count(*) FROM r4 WHERE :vb BETWEEN bmin AND bmax) AS b_matches_heap,
	   :touched_a < (SELECT count(*) FROM r4) / 2 AS a_below_half,
	   :touched_b < (SELECT count(*) FROM r4) / 2 AS b_below_half;
SELECT lossy_blocks(format('SELECT count(*) FROM ev WHERE a = %s', :va)) =
	   (SELECT sum(least(4, :nblocks - r * 4)) FROM r4 WHERE :va BETWEEN amin AND amax) AS a_scan_reads_those,
	   lossy_blocks(format('SELECT count(*) FROM ev WHERE b = %s', :vb)) <= :touched_b * 4 AS b_scan_within;
-- a range filter, and an empty interval
SELECT zorder.ranges_touched('ev', 'a', '1000', '1100') =
	   (SELECT count(*) FROM r4 WHERE amin <= 1100 AND amax >= 1000) AS range_matches_heap,
	   zorder.ranges_touched('ev', 'a', '1100', '1000') AS empty_interval,
	   zorder.ranges_touched('ev', 'a', '-1') AS below_every_value;
RESET enable_seqscan;

-- Another range size is computed from the heap (no index has it).
SELECT column_name, brin_index, pages_per_range,
	   total_ranges = (SELECT count(*) FROM rng(8)) AS all_ranges,
	   abs(mean_ranges_touched - mean_touched(8, column_name)) < 1e-9 AS matches_heap
FROM zorder.clustering_information('ev', 0, with_pages_per_range => 8);
SELECT zorder.ranges_touched('ev', 'a', :'va', pages_per_range => 8) =
	   (SELECT count(*) FROM rng(8) WHERE :va BETWEEN amin AND amax) AS matches_heap;

-- Rows appended after the optimize land in new, unsummarized ranges: every
-- filter reads those, and they count as outside the sorted run.
SELECT pg_relation_size('ev') / 8192 AS old_blocks \gset
INSERT INTO ev
SELECT g, (random() * 10000)::int, (random() * 5000)::int, now(), 'x'
FROM generate_series(40001, 43000) g;
TRUNCATE r4;
INSERT INTO r4 SELECT * FROM rng(4);
SELECT column_name,
	   unsummarized_ranges = total_ranges - ceil(:old_blocks / 4.0) AS new_ranges_unsummarized,
	   unsummarized_ranges > 0 AS some_unsummarized,
	   abs(mean_ranges_touched -
		   (SELECT avg(CASE column_name
						 WHEN 'a' THEN (SELECT count(*) FROM r4 WHERE e.a BETWEEN amin AND amax AND r < ceil(:old_blocks / 4.0))
						 ELSE (SELECT count(*) FROM r4 WHERE e.b BETWEEN bmin AND bmax AND r < ceil(:old_blocks / 4.0)) END
					   + unsummarized_ranges)
			FROM ev e)) < 1e-9 AS matches_heap,
	   abs(unclustered_share -
		   (SELECT count(*) FILTER (WHERE (ctid::text::point)[0] >= :old_blocks)::float8 /
				   (count(*) FILTER (WHERE (ctid::text::point)[0] >= :old_blocks) +
					(SELECT sum(rows) FROM zorder.sorted_runs WHERE "table" = 'ev'::regclass))
			FROM ev)) < 1e-9 AS share_ok,
	   unclustered_share > 0 AS some_unclustered
FROM zorder.clustering_information('ev', probes => 0);
SELECT brin_summarize_new_values('ev_brin') > 0 AS summarized;
SELECT column_name, unsummarized_ranges,
	   abs(mean_ranges_touched - mean_touched(4, column_name)) < 1e-9 AS matches_heap
FROM zorder.clustering_information('ev', probes => 0);

-- The jsonb form carries the same figures.
SELECT j->'keys' AS keys, j->>'curve' AS curve, jsonb_array_length(j->'columns') AS ncolumns,
	   (j->'columns'->0->>'total_ranges')::bigint =
	   (SELECT total_ranges FROM zorder.clustering_information('ev') WHERE key_position = 1) AS same_ranges,
	   (j->'columns'->1->>'column') AS second
FROM zorder.clustering_information_json('ev') j;

-- Text keys are compared with their collation, from the index summaries.
CREATE TABLE words (w text COLLATE "C", n int);
INSERT INTO words
SELECT md5(g::text), (random() * 1000)::int FROM generate_series(1, 20000) g;
CREATE INDEX words_brin ON words USING brin (w, n) WITH (pages_per_range = 2);
SELECT zorder.cluster_by('words', 'w', 'n');
CALL zorder.optimize('words');
SELECT i.column_name, i.brin_index,
	   abs(i.mean_ranges_touched -
		   (SELECT avg((SELECT count(*) FROM
						  (SELECT min(w) AS lo, max(w) AS hi FROM words
						   GROUP BY (ctid::text::point)[0]::int / 2) r
						WHERE x.w BETWEEN r.lo AND r.hi))
			FROM words x)) < 1e-9 AS matches_heap
FROM zorder.clustering_information('words', 0) i WHERE column_name = 'w';

-- Choosing pages_per_range: index size against pages a point filter reads.
SELECT pages_per_range, block_ranges = ceil(pg_relation_size('ev') / 8192.0 / pages_per_range) AS ranges_ok,
	   abs(ranges_read - sqrt(block_ranges)) < 1e-9 AS ideal_read,
	   index_pages >= 3 AS has_meta_revmap_data, recommended
FROM zorder.suggest_pages_per_range('ev') WHERE pages_per_range IN (1, 4, 128);
SELECT count(*) FILTER (WHERE recommended) AS one_recommended,
	   bool_and(index_pages >= 3) AS sizes_ok
FROM zorder.suggest_pages_per_range('ev');

-- Creating the index.  Off by default: nothing is created.
CREATE TABLE c1 (a int, b int, j jsonb);
INSERT INTO c1 SELECT g % 1000, g % 777, jsonb_build_object('g', g % 10) FROM generate_series(1, 5000) g;
SELECT zorder.cluster_by('c1', 'a', 'b');
CALL zorder.optimize('c1');
SELECT count(*) AS brin_indexes FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'c1'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'brin');
SELECT pages_per_range FROM zorder.layouts WHERE relid = 'c1'::regclass;
-- without an index, ranges are sized as a new index would be
SELECT column_name, brin_index, pages_per_range =
	   (SELECT pages_per_range FROM zorder.suggest_pages_per_range('c1') WHERE recommended) AS sized_as_suggested
FROM zorder.clustering_information('c1');

-- On: exactly one index over the keys, with the asked pages_per_range;
-- a second optimize creates nothing more.
SET zorder.create_brin = on;
SET zorder.brin_pages_per_range = 8;
CALL zorder.optimize('c1');
CALL zorder.optimize('c1');
SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'c1'::regclass;
SELECT pages_per_range FROM zorder.layouts WHERE relid = 'c1'::regclass;
SELECT column_name, brin_index, pages_per_range FROM zorder.clustering_information('c1');

-- An existing BRIN index on one key is respected: the new index covers
-- only the other key, with the same pages_per_range (ranges line up).
-- A partial BRIN index and an expression do not count.  A key whose type
-- has no BRIN operator class is left out.
CREATE TABLE c2 (a int, b int, j jsonb);
INSERT INTO c2 SELECT g % 1000, g % 777, jsonb_build_object('g', g % 10) FROM generate_series(1, 5000) g;
CREATE INDEX c2_a_multi ON c2 USING brin (a int4_minmax_multi_ops) WITH (pages_per_range = 16);
CREATE INDEX c2_b_partial ON c2 USING brin (b) WHERE b > 10;
CREATE INDEX c2_b_expr ON c2 USING brin ((b + 1));
SELECT zorder.cluster_by('c2', 'a', 'b', 'j');
RESET zorder.brin_pages_per_range;
CALL zorder.optimize('c2');
CALL zorder.optimize('c2');
SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'c2'::regclass ORDER BY 1;
SELECT pages_per_range FROM zorder.layouts WHERE relid = 'c2'::regclass;
-- a's index is minmax-multi: its summaries are not intervals, so a is
-- measured from the heap
SELECT column_name, brin_index, pages_per_range FROM zorder.clustering_information('c2');
RESET zorder.create_brin;

-- Privileges: SELECT is enough, without it nothing.
CREATE ROLE zbrin_reader;
CREATE ROLE zbrin_nobody;
GRANT USAGE ON SCHEMA zbrin TO zbrin_reader, zbrin_nobody;
GRANT SELECT ON ev TO zbrin_reader;
SET ROLE zbrin_reader;
SELECT column_name, brin_index, mean_ranges_touched < total_ranges / 2 AS below_half,
	   curve, optimized_at IS NOT NULL AS optimized
FROM zorder.clustering_information('ev');
SELECT column_name, brin_index FROM zorder.clustering_information('ev', 100, 8);
SELECT zorder.ranges_touched('ev', 'a', :'va') =
	   (SELECT count(*) FROM rng(4) WHERE :va BETWEEN amin AND amax) AS matches_heap;
SELECT count(*) FROM zorder.suggest_pages_per_range('ev');
SELECT jsonb_typeof(zorder.clustering_information_json('ev')) AS json;
RESET ROLE;
SET ROLE zbrin_nobody;
\set VERBOSITY sqlstate
SELECT * FROM zorder.clustering_information('ev');
SELECT zorder.clustering_information_json('ev');
SELECT zorder.ranges_touched('ev', 'a', '1');
SELECT * FROM zorder.suggest_pages_per_range('ev');
RESET ROLE;

-- Bad input of these functions is in errors.sql.
\set VERBOSITY default

DROP SCHEMA zbrin CASCADE;
DROP ROLE zbrin_reader;
DROP ROLE zbrin_nobody;
