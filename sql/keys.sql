--
-- zorder_key / hilbert_key: order-preserving curve keys over raw values.
--
-- Checks are written as counts of violations, so that the expected output
-- stays small and any regression shows up as a non-zero count.
--
SET search_path = zorder, public;
SET extra_float_digits = 0;

-- Exact bytes of a few keys pin the layout: null flag bit, then the value
-- (int2 1 = 0x8001 with the sign bit flipped), bit levels interleaved.
SELECT zorder_key(1::int2) AS z1, hilbert_key(1::int2) AS h1,
       zorder_key(NULL::int4) AS znull,
       zorder_key(1::int2, 2::int2) AS z12, hilbert_key(1::int2, 2::int2) AS h12;
-- lengths: ceil(d * (1 + 8 * widest) / 8) bytes
SELECT length(zorder_key(true)) AS bool1, length(zorder_key(1::int8)) AS int8_1,
       length(zorder_key(1::int4, 1::int8)) AS mixed2,
       length(hilbert_key('x'::text, 1::int2, 1::int8)) AS mixed3,
       length(zorder_key(1, 2, 3, 4, 5, 6, 7, 8)) AS int4_8;

--
-- check_keys(tab): for a table tab(x) of values of one type, sort by x
-- (NULLS LAST, with the given collation) and compare each value with the
-- next:  ord = key decreases;  eq = equal values with different keys;
-- strict = different values with equal keys (counted only when the type's
-- encoding is strict);  d1 = hilbert_key differs from zorder_key (both are
-- the identity with one argument).
--
CREATE FUNCTION check_keys(tab text, strict bool, coll text DEFAULT NULL,
                           OUT n bigint, OUT ord bigint, OUT eq bigint,
                           OUT strict_bad bigint, OUT d1 bigint)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format($q$
        SELECT count(*),
               count(*) FILTER (WHERE zk > nzk OR hk > nhk),
               count(*) FILTER (WHERE same AND (zk <> nzk OR hk <> nhk)),
               count(*) FILTER (WHERE $1 AND NOT same AND (zk >= nzk OR hk >= nhk)),
               count(*) FILTER (WHERE zk <> hk)
        FROM (SELECT x IS NOT DISTINCT FROM nx AS same, zk, hk, nzk, nhk
              FROM (SELECT x %2$s AS x, lead(x %2$s) OVER w AS nx,
                           zk, lead(zk) OVER w AS nzk,
                           hk, lead(hk) OVER w AS nhk,
                           row_number() OVER w AS rn
                    FROM (SELECT x, zorder_key(x) AS zk, hilbert_key(x) AS hk
                          FROM %1$I) s
                    WINDOW w AS (ORDER BY x %2$s NULLS LAST)) s
              WHERE rn < (SELECT count(*) FROM %1$I)) s
        $q$, tab, coalesce('COLLATE ' || quote_ident(coll), ''))
    INTO n, ord, eq, strict_bad, d1
    USING strict;
    n := n + 1;                 -- pairs were counted; report rows
END
$$;

SELECT setseed(0.42);

-- smallint: every value
CREATE TEMP TABLE t_int2 AS
    SELECT g::int2 AS x FROM generate_series(-32768, 32767) g
    UNION ALL VALUES (NULL), (NULL), (0::int2);
SELECT * FROM check_keys('t_int2', true);

-- integer: extremes, a dense middle, random values
CREATE TEMP TABLE t_int4 AS
    SELECT x::int4 FROM (VALUES (-2147483648), (-2147483647), (-1), (0), (1),
                                (2147483646), (2147483647), (NULL)) v(x)
    UNION ALL SELECT g FROM generate_series(-300, 300) g
    UNION ALL SELECT (floor(random() * 4294967296) - 2147483648)::int4
              FROM generate_series(1, 5000);
SELECT * FROM check_keys('t_int4', true);

-- bigint: extremes, random values and their neighbours
CREATE TEMP TABLE t_int8 AS
    SELECT x::int8 FROM (VALUES (-9223372036854775808), (-9223372036854775807),
                                (-1), (0), (1), (9223372036854775806),
                                (9223372036854775807), (NULL)) v(x)
    UNION ALL SELECT (r + d)::int8
              FROM (SELECT floor((random() - 0.5) * 1.8e19)::numeric AS r
                    FROM generate_series(1, 3000)) s,
                   (VALUES (-1), (0), (1)) d(d);
SELECT * FROM check_keys('t_int8', true);

-- oid: unsigned
CREATE TEMP TABLE t_oid AS
    SELECT x::oid FROM (VALUES (0), (1), (2147483647), (2147483648),
                               (4294967295), (NULL)) v(x)
    UNION ALL SELECT floor(random() * 4294967296)::int8::oid
              FROM generate_series(1, 3000);
SELECT * FROM check_keys('t_oid', true);

-- boolean
CREATE TEMP TABLE t_bool AS
    SELECT x FROM (VALUES (true), (false), (NULL), (true), (false)) v(x);
SELECT * FROM check_keys('t_bool', true);

-- double precision: -0 = 0, NaN (also with the sign bit set) above
-- Infinity, denormals, neighbours one ulp apart, random magnitudes
CREATE TEMP TABLE t_float8 AS
    SELECT x::float8 FROM (VALUES ('-Infinity'), ('-1.7976931348623157e308'),
                                  ('-1'), ('-2.2250738585072014e-308'),
                                  ('-4.9406564584124654e-324'), ('-0'), ('0'),
                                  ('4.9406564584124654e-324'),
                                  ('2.2250738585072009e-308'),
                                  ('2.2250738585072014e-308'), ('1'),
                                  ('1.0000000000000002'), ('0.9999999999999999'),
                                  ('1.7976931348623157e308'), ('Infinity'),
                                  ('NaN'), (NULL)) v(x)
    UNION ALL SELECT -'NaN'::float8
    UNION ALL SELECT (random() - 0.5) * 10 ^ (random() * 600 - 300)
              FROM generate_series(1, 5000)
    UNION ALL SELECT (random() - 0.5) * 1000 FROM generate_series(1, 2000);
-- the negative NaN really has its sign bit set
SELECT float8send(-'NaN'::float8) AS neg_nan, float8send('NaN') AS nan;
SELECT * FROM check_keys('t_float8', true);
SELECT zorder_key('-0'::float8) = zorder_key('0'::float8) AS zero_eq,
       zorder_key(-'NaN'::float8) = zorder_key('NaN'::float8) AS nan_eq,
       zorder_key('Infinity'::float8) < zorder_key('NaN'::float8) AS inf_lt_nan;

-- real
CREATE TEMP TABLE t_float4 AS
    SELECT x::float4 FROM (VALUES ('-Infinity'), ('-3.4028235e38'), ('-1'),
                                  ('-1e-45'), ('-0'), ('0'), ('1e-45'),
                                  ('1.1754942e-38'), ('1.1754944e-38'), ('1'),
                                  ('1.0000001'), ('3.4028235e38'),
                                  ('Infinity'), ('NaN'), (NULL)) v(x)
    UNION ALL SELECT -'NaN'::float4
    UNION ALL SELECT ((random() - 0.5) * 10 ^ (random() * 70 - 35))::float4
              FROM generate_series(1, 5000);
SELECT * FROM check_keys('t_float4', true);

-- numeric: through double precision, so order holds but distinct values
-- may share a key (beyond the double range, or closer than its precision)
CREATE TEMP TABLE t_numeric AS
    SELECT x::numeric FROM (VALUES ('-Infinity'), ('-1e400'), ('-1e308'),
                                   ('-1'), ('-1e-400'), ('0'), ('1e-400'),
                                   ('1'), ('1.00000000000000000001'),
                                   ('1.00000000000000000002'), ('1e308'),
                                   ('1e400'), ('Infinity'), ('NaN'),
                                   (NULL)) v(x)
    UNION ALL SELECT round(((random() - 0.5) * 10 ^ (random() * 40 - 20))::numeric, 25)
              FROM generate_series(1, 3000);
SELECT * FROM check_keys('t_numeric', false);
-- distinct doubles stay distinct
SELECT count(DISTINCT x::float8) = count(DISTINCT zorder_key(x)) AS numeric_as_double
FROM t_numeric WHERE x = 0 OR abs(x) BETWEEN 1e-300 AND 1e300;

-- date, time, timestamp, timestamptz, with infinities and range ends
CREATE TEMP TABLE t_date AS
    SELECT x::date FROM (VALUES ('-infinity'), ('4713-01-01 BC'), ('1999-12-31'),
                                ('2000-01-01'), ('5874897-12-31'),
                                ('infinity'), (NULL)) v(x)
    UNION ALL SELECT date '2000-01-01' + floor((random() - 0.5) * 2e6)::int
              FROM generate_series(1, 3000);
SELECT * FROM check_keys('t_date', true);

CREATE TEMP TABLE t_time AS
    SELECT x::time FROM (VALUES ('00:00'), ('00:00:00.000001'), ('12:00'),
                                ('23:59:59.999999'), ('24:00'), (NULL)) v(x)
    UNION ALL SELECT time '00:00' + random() * interval '24 hours'
              FROM generate_series(1, 3000);
SELECT * FROM check_keys('t_time', true);

CREATE TEMP TABLE t_timestamp AS
    SELECT x::timestamp FROM (VALUES ('-infinity'), ('4713-01-01 00:00 BC'),
                                     ('2000-01-01 00:00'),
                                     ('2000-01-01 00:00:00.000001'),
                                     ('294276-12-31 23:59:59.999999'),
                                     ('infinity'), (NULL)) v(x)
    UNION ALL SELECT timestamp '2000-01-01' + (random() - 0.5) * interval '8000 years'
              FROM generate_series(1, 3000);
SELECT * FROM check_keys('t_timestamp', true);

CREATE TEMP TABLE t_timestamptz AS
    SELECT x::timestamptz FROM (VALUES ('-infinity'), ('4714-11-24 00:00:00+00 BC'),
                                       ('4714-11-24 00:00:00.000001+00 BC'),
                                       ('294276-12-31 23:59:59.999999+00'),
                                       ('infinity'), (NULL)) v(x)
    UNION ALL SELECT timestamptz '2000-01-01 00:00+00'
                     + (random() - 0.5) * interval '8000 years'
              FROM generate_series(1, 3000);
SELECT * FROM check_keys('t_timestamptz', true);

-- text: bytes as in COLLATE "C", a 16-byte prefix; empty string,
-- multibyte characters, trailing spaces, shared long prefixes
CREATE TEMP TABLE t_text AS
    SELECT x::text FROM (VALUES (''), (' '), ('a'), ('a '), ('ab'), ('A'),
                                ('é'), ('e'), ('日本語'), ('日本'), ('😀'),
                                ('zzzzzzzzzzzzzzzz'), ('zzzzzzzzzzzzzzzza'),
                                ('zzzzzzzzzzzzzzzzb'), (NULL)) v(x)
    UNION ALL SELECT left(md5(g::text), g % 20) FROM generate_series(1, 3000) g
    UNION ALL SELECT repeat(chr(97 + g % 3), g % 7) || chr(1000 + g % 50)
              FROM generate_series(1, 500) g;
SELECT * FROM check_keys('t_text', false, 'C');
-- strings of at most 16 bytes are told apart
SELECT count(DISTINCT x) = count(DISTINCT zorder_key(x)) AS short_text_distinct
FROM t_text WHERE octet_length(x) <= 16;
-- an unknown-type literal is taken as text
SELECT zorder_key('abc') = zorder_key('abc'::text) AS unknown_is_text;

CREATE TEMP TABLE t_varchar AS SELECT x::varchar(30) AS x FROM t_text;
SELECT * FROM check_keys('t_varchar', false, 'C');

-- character(n): trailing spaces do not count, as in bpcharcmp
CREATE TEMP TABLE t_bpchar AS
    SELECT x::char(20) AS x FROM t_text
    UNION ALL SELECT x::char(20) FROM (VALUES ('a  '), ('a' || chr(1)),
                                              ('a  b'), ('ab')) v(x);
SELECT * FROM check_keys('t_bpchar', false, 'C');
SELECT zorder_key('a'::char(5)) = zorder_key('a'::char(10)) AS bpchar_pad,
       zorder_key('a'::char(20)) < zorder_key(('a' || chr(1))::char(20)) AS bpchar_lt;

-- bytea: zero bytes included
CREATE TEMP TABLE t_bytea AS
    SELECT x::bytea FROM (VALUES ('\x'), ('\x00'), ('\x0000'), ('\x0001'),
                                 ('\x01'), ('\xff'), ('\xffff'), (NULL)) v(x)
    UNION ALL SELECT substr(decode(md5(g::text), 'hex'), 1, g % 18)
              FROM generate_series(1, 3000) g;
SELECT * FROM check_keys('t_bytea', false);

-- uuid: all 16 bytes, strict
CREATE TEMP TABLE t_uuid AS
    SELECT x::uuid FROM (VALUES ('00000000-0000-0000-0000-000000000000'),
                                ('00000000-0000-0000-0000-000000000001'),
                                ('ffffffff-ffff-ffff-ffff-ffffffffffff'),
                                (NULL)) v(x)
    UNION ALL SELECT md5(g::text)::uuid FROM generate_series(1, 3000) g;
SELECT * FROM check_keys('t_uuid', true);

-- a domain is encoded as its base type
CREATE DOMAIN posint AS int4 CHECK (VALUE > 0);
SELECT zorder_key(5::posint) = zorder_key(5::int4) AS domain_as_base,
       hilbert_key(5::posint, 'x'::text) = hilbert_key(5, 'x'::text) AS domain_mixed;

-- toasted values: only a prefix is needed, compressed or not
CREATE TEMP TABLE t_toast (id int, x text, b bytea, c char(5000));
INSERT INTO t_toast
    SELECT g, repeat(chr(96 + g), 10000), convert_to(repeat(chr(96 + g), 10000), 'UTF8'),
           repeat(chr(96 + g), 10) || repeat(' ', 10) || chr(96 + g)
    FROM generate_series(1, 3) g;
INSERT INTO t_toast
    SELECT 10 + g, string_agg(md5(g::text || i::text), ''), NULL, NULL
    FROM generate_series(1, 3) g, generate_series(1, 300) i GROUP BY g;
ALTER TABLE t_toast ALTER x SET STORAGE EXTERNAL;
INSERT INTO t_toast SELECT 20 + g, repeat(md5(g::text), 200), NULL, NULL
    FROM generate_series(1, 3) g;
SELECT count(*) FILTER (WHERE zorder_key(x) <> zorder_key(substr(x, 1, 16))) AS text_bad,
       count(*) FILTER (WHERE zorder_key(b) <> zorder_key(substr(b, 1, 16))) AS bytea_bad,
       count(*) FILTER (WHERE zorder_key(c) <> zorder_key(substr(c, 1, 21)::char(5000))) AS bpchar_bad,
       count(*) FILTER (WHERE pg_column_size(x) < 2000) AS small_x
FROM t_toast;
-- spaces inside the 16-byte prefix of a char(n) are not trailing ones
SELECT count(*) FILTER (WHERE zorder_key(c) <> zorder_key(rpad(repeat(chr(96 + id), 10), 16)))
       AS bpchar_inner_spaces_bad
FROM t_toast WHERE id < 10;

--
-- Several arguments
--
CREATE TEMP TABLE t_pair AS
    SELECT a, b FROM (SELECT (floor(random() * 20) - 10)::int4 AS a,
                             (floor(random() * 16) / 4 - 2)::float8 AS b
                      FROM generate_series(1, 250)) s
    UNION ALL VALUES (NULL::int4, 0::float8), (0, NULL), (NULL, NULL),
                     (2147483647, 'NaN'), (-2147483648, '-Infinity'),
                     (0, 'Infinity');

-- zorder_key is non-decreasing in every argument: for (a, b) <= (a', b')
-- componentwise (NULL largest), key(a, b) <= key(a', b')
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE zorder_key(p.a, p.b) > zorder_key(q.a, q.b)) AS z_bad
FROM t_pair p, t_pair q
WHERE (q.a IS NULL OR p.a <= q.a) AND (q.b IS NULL OR p.b <= q.b);

-- distinct argument lists get distinct keys of one length
SELECT count(DISTINCT (a, b)) = count(DISTINCT zorder_key(a, b)) AS z_distinct,
       count(DISTINCT (a, b)) = count(DISTINCT hilbert_key(a, b)) AS h_distinct,
       count(DISTINCT length(zorder_key(a, b))) = 1 AS z_one_length,
       count(DISTINCT length(hilbert_key(a, b))) = 1 AS h_one_length
FROM t_pair;

-- mixed widths: smallint, text, uuid, boolean (widened to 16 bytes each)
CREATE TEMP TABLE t_mixed AS
    SELECT (g % 5)::int2 AS a, chr(97 + g % 3) AS t,
           md5((g % 4)::text)::uuid AS u, g % 2 = 0 AS f
    FROM generate_series(1, 60) g
    UNION ALL VALUES (NULL::int2, 'a', NULL::uuid, NULL::bool);
SELECT count(*) FILTER (WHERE zorder_key(p.a, p.t, p.u, p.f) > zorder_key(q.a, q.t, q.u, q.f)) AS z_bad,
       count(DISTINCT length(zorder_key(p.a, p.t, p.u, p.f))) AS lengths
FROM t_mixed p, t_mixed q
WHERE (q.a IS NULL OR p.a <= q.a) AND p.t COLLATE "C" <= q.t
  AND (q.u IS NULL OR p.u <= q.u) AND (q.f IS NULL OR p.f <= q.f);
SELECT count(DISTINCT (a, t, u, f)) = count(DISTINCT hilbert_key(a, t, u, f)) AS h_distinct
FROM t_mixed;

-- The Hilbert curve visits an aligned block of cells contiguously, each
-- step to a neighbouring cell: 0..7 x 0..7 in two dimensions, 0..3 cubed
-- in three.  Z-order jumps.
SELECT count(*) FILTER (WHERE abs(a - na) + abs(b - nb) <> 1) AS h_jumps2
FROM (SELECT a, b, lead(a) OVER w AS na, lead(b) OVER w AS nb
      FROM generate_series(0, 7) a, generate_series(0, 7) b
      WINDOW w AS (ORDER BY hilbert_key(a::int2, b::int2))) s
WHERE na IS NOT NULL;
SELECT count(*) FILTER (WHERE abs(a - na) + abs(b - nb) + abs(c - nc) <> 1) AS h_jumps3,
       count(*) AS steps
FROM (SELECT a, b, c, lead(a) OVER w AS na, lead(b) OVER w AS nb, lead(c) OVER w AS nc
      FROM generate_series(0, 3) a, generate_series(0, 3) b, generate_series(0, 3) c
      WINDOW w AS (ORDER BY hilbert_key(a, b, c))) s
WHERE na IS NOT NULL;
SELECT count(*) FILTER (WHERE abs(a - na) + abs(b - nb) <> 1) AS z_jumps2
FROM (SELECT a, b, lead(a) OVER w AS na, lead(b) OVER w AS nb
      FROM generate_series(0, 7) a, generate_series(0, 7) b
      WINDOW w AS (ORDER BY zorder_key(a::int2, b::int2))) s
WHERE na IS NOT NULL;
-- Z-order within the same block: the first cells, argument 1 first
SELECT string_agg(format('(%s,%s)', a, b), ' ' ORDER BY zorder_key(a, b)) AS z_path
FROM generate_series(0, 1) a, generate_series(0, 1) b;

-- eight arguments of every width
SELECT length(zorder_key(1::int2, 2, 3::int8, 4::float4, 5::float8, 'x'::text,
                         md5('u')::uuid, true)) AS len8,
       length(hilbert_key(1::int2, 2, 3::int8, 4::float4, 5::float8, 'x'::text,
                          md5('u')::uuid, true)) AS hlen8;

--
-- Explicit VARIADIC arrays: elements are the arguments
--
SELECT zorder_key(VARIADIC ARRAY[1, 2, 3]) = zorder_key(1, 2, 3) AS z_arr,
       hilbert_key(VARIADIC ARRAY[1.5, NULL]::float8[])
           = hilbert_key(1.5::float8, NULL::float8) AS h_arr_null,
       zorder_key(VARIADIC ARRAY['b', 'a']::text[]) = zorder_key('b'::text, 'a'::text) AS z_arr_text,
       zorder_key(VARIADIC ARRAY[5]::posint[]) = zorder_key(5) AS z_arr_domain,
       zorder_key(VARIADIC NULL::int4[]) IS NULL AS null_array;

--
-- Errors
--
CREATE FUNCTION sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END
$$;

SELECT zorder_key(point(1, 2));
SELECT hilbert_key(1, 'x'::text, point(1, 2));
SELECT zorder_key(VARIADIC ARRAY[point(1, 2)]);
SELECT zorder_key(1, 2, 3, 4, 5, 6, 7, 8, 9);
SELECT hilbert_key(VARIADIC ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9]);
SELECT zorder_key(VARIADIC '{}'::int4[]);
-- (terse: PostgreSQL 19 words the hint of this error differently)
\set VERBOSITY terse
SELECT zorder_key();
\set VERBOSITY default
SELECT q, sqlstate_of(q) FROM (VALUES
    ('SELECT zorder.zorder_key(point(1, 2))'),
    ('SELECT zorder.hilbert_key(interval ''1 day'')'),
    ('SELECT zorder.zorder_key(ROW(1, 2))'),
    ('SELECT zorder.zorder_key(1, 2, 3, 4, 5, 6, 7, 8, 9)'),
    ('SELECT zorder.hilbert_key(VARIADIC ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9])'),
    ('SELECT zorder.zorder_key(VARIADIC ''{}''::int4[])'),
    ('SELECT zorder.hilbert_key()')) v(q);

DROP FUNCTION check_keys, sqlstate_of;
DROP DOMAIN posint;
