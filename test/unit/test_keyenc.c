/*-------------------------------------------------------------------------
 *
 * test_keyenc.c
 *	  Unit tests of the order-preserving encoders and curves in keyenc.c.
 *
 * Plain C, no server: built and run by "make unittest".  The curves are
 * checked against slow bit-at-a-time reference code written independently
 * here (Morton interleave, Hilbert decoder), and against the geometric
 * properties that define them (bijection, adjacency, monotonicity).
 *
 * The last line printed is "keyenc: N passed, M failed"; the exit status is
 * non-zero when anything failed.
 *
 *-------------------------------------------------------------------------
 */
#include "keyenc.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	n_passed = 0;
static int	n_failed = 0;
static int	cur_failures;		/* failed checks in the current test */
static char cur_name[128];

static void
begin_test(const char *name)
{
	snprintf(cur_name, sizeof(cur_name), "%s", name);
	cur_failures = 0;
}

static void
end_test(void)
{
	if (cur_failures == 0)
		n_passed++;
	else
	{
		n_failed++;
		printf("FAIL %s: %d failed checks\n", cur_name, cur_failures);
	}
}

/* Report only the first few failures of a test; count them all. */
#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
		{ \
			if (cur_failures++ < 5) \
			{ \
				printf("  %s: check failed: %s: ", cur_name, #cond); \
				printf(__VA_ARGS__); \
				printf("\n"); \
			} \
		} \
	} while (0)

/* xorshift64*: deterministic, so a failure reproduces */
static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t
rnd64(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static uint32_t
rnd32(void)
{
	return (uint32_t) (rnd64() >> 32);
}

static int
rnd_below(int n)
{
	return (int) (rnd64() % (uint64_t) n);
}

static int
sign(int x)
{
	return (x > 0) - (x < 0);
}

static int
cmp_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	return sign(memcmp(a, b, n));
}

/* ---------------------------------------------------------------------
 * Encoders
 * ---------------------------------------------------------------------
 */

static void
test_int16(void)
{
	int			v;

	begin_test("int16 exhaustive strict order");
	for (v = INT16_MIN; v < INT16_MAX; v++)
	{
		uint8_t		a[2],
					b[2];

		zk_encode_int16((int16_t) v, a);
		zk_encode_int16((int16_t) (v + 1), b);
		CHECK(cmp_bytes(a, b, 2) < 0, "v=%d", v);
	}
	end_test();
}

static void
test_int32(void)
{
	int32_t		edges[] = {INT32_MIN, INT32_MIN + 1, -65536, -256, -2, -1, 0,
	1, 2, 255, 256, 65535, INT32_MAX - 1, INT32_MAX};
	int			n = sizeof(edges) / sizeof(edges[0]);
	int			i,
				j;

	begin_test("int32 edges and random pairs");
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
		{
			uint8_t		a[4],
						b[4];

			zk_encode_int32(edges[i], a);
			zk_encode_int32(edges[j], b);
			CHECK(cmp_bytes(a, b, 4) == sign((edges[i] > edges[j]) - (edges[i] < edges[j])),
				  "%d vs %d", (int) edges[i], (int) edges[j]);
		}
	for (i = 0; i < 200000; i++)
	{
		int32_t		x = (int32_t) rnd32(),
					y = (i & 1) ? (int32_t) rnd32() : x + (int32_t) (rnd32() % 3) - 1;
		uint8_t		a[4],
					b[4];

		zk_encode_int32(x, a);
		zk_encode_int32(y, b);
		CHECK(cmp_bytes(a, b, 4) == (x > y) - (x < y), "%d vs %d", (int) x, (int) y);
	}
	end_test();
}

static void
test_int64(void)
{
	int64_t		edges[] = {INT64_MIN, INT64_MIN + 1, -((int64_t) 1 << 32), -1, 0, 1,
	(int64_t) 1 << 32, INT64_MAX - 1, INT64_MAX};
	int			n = sizeof(edges) / sizeof(edges[0]);
	int			i,
				j;

	begin_test("int64 edges and random pairs");
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
		{
			uint8_t		a[8],
						b[8];

			zk_encode_int64(edges[i], a);
			zk_encode_int64(edges[j], b);
			CHECK(cmp_bytes(a, b, 8) == (edges[i] > edges[j]) - (edges[i] < edges[j]),
				  "%lld vs %lld", (long long) edges[i], (long long) edges[j]);
		}
	for (i = 0; i < 200000; i++)
	{
		int64_t		x = (int64_t) rnd64(),
					y;
		uint8_t		a[8],
					b[8];

		/* neighbours too, where only the low bytes differ */
		y = (i & 1) ? (int64_t) rnd64() : (int64_t) ((uint64_t) x + (rnd64() % 3) - 1);
		zk_encode_int64(x, a);
		zk_encode_int64(y, b);
		CHECK(cmp_bytes(a, b, 8) == (x > y) - (x < y),
			  "%lld vs %lld", (long long) x, (long long) y);
	}
	end_test();
}

static void
test_uint32(void)
{
	int			i;

	begin_test("uint32 random pairs and edges");
	for (i = 0; i < 200000; i++)
	{
		uint32_t	x = rnd32(),
					y = (i % 3 == 0) ? 0 : (i % 3 == 1) ? UINT32_MAX : rnd32();
		uint8_t		a[4],
					b[4];

		zk_encode_uint32(x, a);
		zk_encode_uint32(y, b);
		CHECK(cmp_bytes(a, b, 4) == (x > y) - (x < y), "%u vs %u", x, y);
	}
	end_test();
}

/* PostgreSQL's float comparison: NaNs equal each other, above all else. */
static int
pg_float_cmp(double a, double b)
{
	if (isnan(a))
		return isnan(b) ? 0 : 1;
	if (isnan(b))
		return -1;
	return (a > b) - (a < b);
}

static double
make_double(uint64_t bits)
{
	double		d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

static float
make_float(uint32_t bits)
{
	float		f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static void
test_float8(void)
{
	double		edges[] = {
		-INFINITY, -DBL_MAX, -1e300, -1.5, -1.0, -DBL_MIN,
		-4.9406564584124654e-324, -0.0, 0.0, 4.9406564584124654e-324,
		2.2250738585072009e-308,	/* largest denormal */
		DBL_MIN, 1.0, 1.0000000000000002, 1e300, DBL_MAX, INFINITY,
		make_double(UINT64_C(0x7FF8000000000000)),	/* quiet NaN */
		make_double(UINT64_C(0xFFF8000000000000)),	/* negative NaN */
		make_double(UINT64_C(0x7FF0000000000001)),	/* signalling NaN */
		make_double(UINT64_C(0xFFFFFFFFFFFFFFFF)),
	};
	int			n = sizeof(edges) / sizeof(edges[0]);
	int			i,
				j;

	begin_test("float8 edges: order iff PostgreSQL order");
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
		{
			uint8_t		a[8],
						b[8];

			zk_encode_float8(edges[i], a);
			zk_encode_float8(edges[j], b);
			CHECK(cmp_bytes(a, b, 8) == pg_float_cmp(edges[i], edges[j]),
				  "%a vs %a", edges[i], edges[j]);
		}
	end_test();

	begin_test("float8 random bit patterns and values");
	for (i = 0; i < 300000; i++)
	{
		double		x,
					y;
		uint8_t		a[8],
					b[8];

		switch (i % 3)
		{
			case 0:				/* any pattern: NaNs, denormals, infinities */
				x = make_double(rnd64());
				y = make_double(rnd64());
				break;
			case 1:				/* close neighbours */
				x = make_double(rnd64());
				y = nextafter(x, (i & 4) ? INFINITY : -INFINITY);
				break;
			default:			/* ordinary magnitudes of mixed sign */
				x = ((double) (int32_t) rnd32()) / 1024.0;
				y = ((double) (int32_t) rnd32()) / 1024.0;
				break;
		}
		zk_encode_float8(x, a);
		zk_encode_float8(y, b);
		CHECK(cmp_bytes(a, b, 8) == pg_float_cmp(x, y), "%a vs %a", x, y);
	}
	end_test();
}

static void
test_float4(void)
{
	float		edges[] = {
		-INFINITY, -FLT_MAX, -1.5f, -FLT_MIN, -1.4e-45f, -0.0f, 0.0f,
		1.4e-45f, 1.1754942e-38f, FLT_MIN, 1.0f, FLT_MAX, INFINITY,
		make_float(0x7FC00000u), make_float(0xFFC00000u),
		make_float(0x7F800001u), make_float(0xFFFFFFFFu),
	};
	int			n = sizeof(edges) / sizeof(edges[0]);
	int			i,
				j;

	begin_test("float4 edges: order iff PostgreSQL order");
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
		{
			uint8_t		a[4],
						b[4];

			zk_encode_float4(edges[i], a);
			zk_encode_float4(edges[j], b);
			CHECK(cmp_bytes(a, b, 4) == pg_float_cmp(edges[i], edges[j]),
				  "%a vs %a", (double) edges[i], (double) edges[j]);
		}
	end_test();

	begin_test("float4 random bit patterns");
	for (i = 0; i < 300000; i++)
	{
		float		x = make_float(rnd32()),
					y;
		uint8_t		a[4],
					b[4];

		y = (i & 1) ? make_float(rnd32()) : nextafterf(x, (i & 2) ? INFINITY : -INFINITY);
		zk_encode_float4(x, a);
		zk_encode_float4(y, b);
		CHECK(cmp_bytes(a, b, 4) == pg_float_cmp(x, y), "%a vs %a", (double) x, (double) y);
	}
	end_test();
}

/* memcmp-then-length, as PostgreSQL compares bytea and C-collated text */
static int
cmp_str(const uint8_t *s, size_t sl, const uint8_t *t, size_t tl)
{
	int			c = memcmp(s, t, sl < tl ? sl : tl);

	if (c != 0)
		return sign(c);
	return (sl > tl) - (sl < tl);
}

static void
test_bytes_prefix(void)
{
	const size_t width = 6;
	int			i;

	begin_test("bytes prefix non-decreasing, exact below width");
	for (i = 0; i < 300000; i++)
	{
		uint8_t		s[10],
					t[10],
					a[6],
					b[6];
		size_t		sl = rnd_below(11),
					tl = rnd_below(11),
					k;
		int			c,
					e;

		/* a small alphabet with zero bytes makes ties and prefixes common */
		for (k = 0; k < 10; k++)
		{
			s[k] = (uint8_t) "\0\1a\377"[rnd_below(4)];
			t[k] = (i & 1) ? s[k] : (uint8_t) "\0\1a\377"[rnd_below(4)];
		}
		c = cmp_str(s, sl, t, tl);
		zk_encode_bytes_prefix(s, sl, a, width);
		zk_encode_bytes_prefix(t, tl, b, width);
		e = cmp_bytes(a, b, width);
		CHECK(c == 0 ? e == 0 : e == 0 || e == c, "lengths %zu %zu", sl, tl);
		/* within the prefix, without zero bytes, the encoding is exact */
		if (sl <= width && tl <= width && !memchr(s, 0, sl) && !memchr(t, 0, tl))
			CHECK(e == c, "short strings, lengths %zu %zu", sl, tl);
	}
	end_test();

	begin_test("bytes prefix of empty string is zeros");
	{
		uint8_t		a[4] = {1, 2, 3, 4};

		zk_encode_bytes_prefix((const uint8_t *) "", 0, a, 4);
		CHECK(a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == 0, "%d", a[0]);
	}
	end_test();
}

/* ---------------------------------------------------------------------
 * Reference curve code (bit at a time)
 * ---------------------------------------------------------------------
 */

#define MAX_NBITS 160
#define MAX_BYTES ((MAX_NBITS + 7) / 8)

static int
get_bit(const uint8_t *s, size_t i)
{
	return (s[i / 8] >> (7 - i % 8)) & 1;
}

static void
set_bit(uint8_t *s, size_t i, int v)
{
	if (v)
		s[i / 8] |= (uint8_t) (0x80 >> (i % 8));
	else
		s[i / 8] &= (uint8_t) ~(0x80 >> (i % 8));
}

/* random nbits-bit coordinates, padding bits zero */
static void
random_coords(int d, int nbits, uint8_t c[][MAX_BYTES])
{
	int			i,
				k;

	for (i = 0; i < d; i++)
	{
		memset(c[i], 0, MAX_BYTES);
		for (k = 0; k < nbits; k++)
			set_bit(c[i], k, (int) (rnd64() >> 63));
	}
}

static void
ref_morton(int d, int nbits, uint8_t c[][MAX_BYTES], uint8_t *out)
{
	int			k,
				i;

	memset(out, 0, (d * nbits + 7) / 8);
	for (k = 0; k < nbits; k++)
		for (i = 0; i < d; i++)
			set_bit(out, (size_t) k * d + i, get_bit(c[i], k));
}

static void
ref_unmorton(int d, int nbits, const uint8_t *key, uint8_t c[][MAX_BYTES])
{
	int			k,
				i;

	for (i = 0; i < d; i++)
		memset(c[i], 0, MAX_BYTES);
	for (k = 0; k < nbits; k++)
		for (i = 0; i < d; i++)
			set_bit(c[i], k, get_bit(key, (size_t) k * d + i));
}

static unsigned
rot_left(unsigned x, int r, int n)
{
	r %= n;
	return ((x << r) | (x >> (n - r))) & ((1u << n) - 1);
}

/* entry point of sub-cube w, and its intra-direction (before mod d) */
static void
ref_subcube(unsigned w, unsigned *entry, int *dw)
{
	unsigned	t;

	*entry = 0;
	*dw = 0;
	if (w == 0)
		return;
	t = 2 * ((w - 1) / 2);
	*entry = t ^ (t >> 1);
	t = (w % 2 == 1) ? w : w - 1;
	while (t & 1)
	{
		(*dw)++;
		t >>= 1;
	}
}

/*
 * Hilbert decoder, inverting Hamilton's state machine: the index digit w
 * gives the Gray code gc(w), which the inverse transform maps back to the
 * label; entry point and direction follow as in the encoder.  Written with
 * loops rather than the encoder's tables, to be an independent check.
 */
static void
ref_unhilbert(int d, int nbits, const uint8_t *key, uint8_t c[][MAX_BYTES])
{
	unsigned	e = 0;
	int			dir = 0;
	int			k,
				i;

	for (i = 0; i < d; i++)
		memset(c[i], 0, MAX_BYTES);
	for (k = 0; k < nbits; k++)
	{
		unsigned	w = 0,
					l,
					entry;
		int			dw;

		for (i = 0; i < d; i++)
			w = (w << 1) | (unsigned) get_bit(key, (size_t) k * d + i);
		l = rot_left(w ^ (w >> 1), dir + 1, d) ^ e;
		for (i = 0; i < d; i++)
			set_bit(c[i], k, (l >> (d - 1 - i)) & 1);

		ref_subcube(w, &entry, &dw);
		e ^= rot_left(entry, dir + 1, d);
		dir = (dir + dw % d + 1) % d;
	}
}

/*
 * Hilbert encoder of d coordinates of bits bits, a bit level at a time: the
 * same machine as ref_unhilbert run forwards, with a loop for the inverse
 * Gray code.  Checks zk_hilbert64, whose tables take several levels at once.
 */
static uint64_t
ref_hilbert64(int d, int bits, const uint32_t *x)
{
	unsigned	e = 0;
	int			dir = 0;
	uint64_t	h = 0;
	int			k,
				i;

	for (k = bits - 1; k >= 0; k--)
	{
		unsigned	l = 0,
					g,
					w,
					entry;
		int			dw;

		for (i = 0; i < d; i++)
			l = (l << 1) | ((x[i] >> k) & 1);
		/* undo l = rot_left(gc(w), dir + 1) ^ e */
		g = rot_left(l ^ e, d - (dir + 1) % d, d);
		w = 0;
		for (i = 0; i < d; i++)
			w ^= g >> i;
		h = (h << d) | w;

		ref_subcube(w, &entry, &dw);
		e ^= rot_left(entry, dir + 1, d);
		dir = (dir + dw % d + 1) % d;
	}
	return h;
}

/* ---------------------------------------------------------------------
 * Curve tests
 * ---------------------------------------------------------------------
 */

static const uint8_t *const *
as_ptrs(uint8_t c[][MAX_BYTES], const uint8_t **p, int d)
{
	int			i;

	for (i = 0; i < d; i++)
		p[i] = c[i];
	return p;
}

static void
test_morton_reference(void)
{
	int			iter;

	begin_test("morton equals bit-at-a-time interleave, round-trips");
	for (iter = 0; iter < 20000; iter++)
	{
		int			d = 1 + rnd_below(ZK_MAX_DIMS);
		int			nbits = 1 + rnd_below(MAX_NBITS);
		uint8_t		c[ZK_MAX_DIMS][MAX_BYTES],
					back[ZK_MAX_DIMS][MAX_BYTES];
		const uint8_t *p[ZK_MAX_DIMS];
		uint8_t		key[ZK_MAX_DIMS * MAX_BYTES + 1],
					ref[ZK_MAX_DIMS * MAX_BYTES];
		size_t		len = ((size_t) d * nbits + 7) / 8;
		int			i;

		random_coords(d, nbits, c);
		key[len] = 0xA5;		/* guard byte */
		zk_morton(d, nbits, as_ptrs(c, p, d), key);
		ref_morton(d, nbits, c, ref);
		CHECK(memcmp(key, ref, len) == 0, "d=%d nbits=%d", d, nbits);
		CHECK(key[len] == 0xA5, "wrote past the key, d=%d nbits=%d", d, nbits);
		ref_unmorton(d, nbits, key, back);
		for (i = 0; i < d; i++)
			CHECK(memcmp(back[i], c[i], MAX_BYTES) == 0, "d=%d nbits=%d", d, nbits);
	}
	end_test();

	begin_test("morton and hilbert ignore padding bits of coordinates");
	for (iter = 0; iter < 2000; iter++)
	{
		int			d = 1 + rnd_below(ZK_MAX_DIMS);
		int			nbits = 1 + rnd_below(MAX_NBITS);
		uint8_t		c[ZK_MAX_DIMS][MAX_BYTES];
		const uint8_t *p[ZK_MAX_DIMS];
		uint8_t		k1[ZK_MAX_DIMS * MAX_BYTES],
					k2[ZK_MAX_DIMS * MAX_BYTES],
					h1[ZK_MAX_DIMS * MAX_BYTES],
					h2[ZK_MAX_DIMS * MAX_BYTES];
		size_t		len = ((size_t) d * nbits + 7) / 8;
		int			i;

		random_coords(d, nbits, c);
		zk_morton(d, nbits, as_ptrs(c, p, d), k1);
		zk_hilbert(d, nbits, as_ptrs(c, p, d), h1);
		for (i = 0; i < d; i++)
			c[i][(nbits - 1) / 8] |= (uint8_t) (0xFF >> (1 + (nbits - 1) % 8));
		zk_morton(d, nbits, as_ptrs(c, p, d), k2);
		zk_hilbert(d, nbits, as_ptrs(c, p, d), h2);
		CHECK(memcmp(k1, k2, len) == 0, "morton d=%d nbits=%d", d, nbits);
		CHECK(memcmp(h1, h2, len) == 0, "hilbert d=%d nbits=%d", d, nbits);
	}
	end_test();
}

/* Increasing any one coordinate never decreases the Morton key. */
static void
test_morton_monotone(void)
{
	int			iter;

	begin_test("morton non-decreasing in each coordinate");
	for (iter = 0; iter < 20000; iter++)
	{
		int			d = 1 + rnd_below(ZK_MAX_DIMS);
		int			nbits = 1 + rnd_below(70);
		int			j = rnd_below(d);
		uint8_t		c[ZK_MAX_DIMS][MAX_BYTES];
		uint8_t		old[MAX_BYTES];
		const uint8_t *p[ZK_MAX_DIMS];
		uint8_t		k1[ZK_MAX_DIMS * MAX_BYTES],
					k2[ZK_MAX_DIMS * MAX_BYTES];
		size_t		len = ((size_t) d * nbits + 7) / 8;
		int			k,
					cmp;

		random_coords(d, nbits, c);
		memcpy(old, c[j], MAX_BYTES);
		/* a random other value of coordinate j */
		for (k = rnd_below(nbits); k < nbits; k++)
			set_bit(c[j], k, (int) (rnd64() >> 63));
		cmp = memcmp(old, c[j], MAX_BYTES);
		zk_morton(d, nbits, as_ptrs(c, p, d), k2);
		memcpy(c[j], old, MAX_BYTES);
		zk_morton(d, nbits, as_ptrs(c, p, d), k1);
		/* same direction, and strict: Morton is a bijection */
		CHECK(sign(memcmp(k1, k2, len)) == sign(cmp), "d=%d nbits=%d j=%d", d, nbits, j);
	}
	end_test();
}

static void
test_hilbert_roundtrip(void)
{
	int			iter;

	begin_test("hilbert decodes back to its coordinates (nbits up to 160)");
	for (iter = 0; iter < 20000; iter++)
	{
		int			d = 1 + rnd_below(ZK_MAX_DIMS);
		int			nbits = 1 + rnd_below(MAX_NBITS);
		uint8_t		c[ZK_MAX_DIMS][MAX_BYTES],
					back[ZK_MAX_DIMS][MAX_BYTES];
		const uint8_t *p[ZK_MAX_DIMS];
		uint8_t		key[ZK_MAX_DIMS * MAX_BYTES + 1];
		size_t		len = ((size_t) d * nbits + 7) / 8;
		int			i,
					pad = (int) (len * 8 - (size_t) d * nbits);

		random_coords(d, nbits, c);
		key[len] = 0x5A;
		zk_hilbert(d, nbits, as_ptrs(c, p, d), key);
		CHECK(key[len] == 0x5A, "wrote past the key, d=%d nbits=%d", d, nbits);
		CHECK(pad == 0 || (key[len - 1] & ((1u << pad) - 1)) == 0,
			  "padding not zero, d=%d nbits=%d", d, nbits);
		ref_unhilbert(d, nbits, key, back);
		for (i = 0; i < d; i++)
			CHECK(memcmp(back[i], c[i], MAX_BYTES) == 0,
				  "d=%d nbits=%d coord %d", d, nbits, i);
	}
	end_test();
}

/* the byte-string key of a small cell, as an integer */
static uint64_t
key_to_u64(const uint8_t *key, int bits)
{
	uint64_t	v = 0;
	int			i;

	for (i = 0; i < bits; i++)
		v = (v << 1) | (uint64_t) get_bit(key, i);
	return v;
}

/* coordinates as left-aligned bit strings of nbits bits */
static void
u32_to_coord(uint32_t v, int nbits, uint8_t *c)
{
	int			k;

	memset(c, 0, MAX_BYTES);
	for (k = 0; k < nbits; k++)
		set_bit(c, k, (int) ((v >> (nbits - 1 - k)) & 1));
}

/*
 * Every cell of a d-dimensional grid of side 2^nbits gets a distinct key in
 * 0 .. 2^(d*nbits) - 1, the curve starts at the origin, and consecutive
 * keys are cells at distance 1 (one coordinate differs by exactly 1).
 * Checked for both the 64-bit and the byte-string implementations.
 */
static void
test_hilbert_grid(int d, int nbits)
{
	int			total = d * nbits;
	uint64_t	ncells = (uint64_t) 1 << total;
	uint32_t   *cell_of = malloc(sizeof(uint32_t) * ncells);
	uint8_t    *seen = calloc(ncells, 1);
	uint32_t	side_mask = (1u << nbits) - 1;
	uint64_t	cell;
	char		name[128];

	snprintf(name, sizeof(name), "hilbert grid d=%d nbits=%d: bijection, adjacency",
			 d, nbits);
	begin_test(name);
	for (cell = 0; cell < ncells; cell++)
	{
		uint32_t	x[ZK_MAX_DIMS];
		uint8_t		c[ZK_MAX_DIMS][MAX_BYTES];
		const uint8_t *p[ZK_MAX_DIMS];
		uint8_t		key[16];
		uint64_t	h,
					hb;
		int			i;

		for (i = 0; i < d; i++)
		{
			x[i] = (uint32_t) (cell >> (i * nbits)) & side_mask;
			u32_to_coord(x[i], nbits, c[i]);
		}
		h = zk_hilbert64(d, nbits, x);
		zk_hilbert(d, nbits, as_ptrs(c, p, d), key);
		hb = key_to_u64(key, total);
		CHECK(h == hb, "cell %llu: %llu vs %llu", (unsigned long long) cell,
			  (unsigned long long) h, (unsigned long long) hb);
		CHECK(h < ncells, "key %llu out of range", (unsigned long long) h);
		if (h < ncells)
		{
			CHECK(!seen[h], "key %llu twice", (unsigned long long) h);
			seen[h] = 1;
			cell_of[h] = (uint32_t) cell;
		}
	}
	CHECK(cell_of[0] == 0, "curve starts at cell %u", cell_of[0]);
	for (cell = 0; cell + 1 < ncells; cell++)
	{
		int			i,
					dist = 0;

		for (i = 0; i < d; i++)
		{
			int			a = (int) ((cell_of[cell] >> (i * nbits)) & side_mask);
			int			b = (int) ((cell_of[cell + 1] >> (i * nbits)) & side_mask);

			dist += abs(a - b);
		}
		CHECK(dist == 1, "keys %llu and %llu are %d apart",
			  (unsigned long long) cell, (unsigned long long) cell + 1, dist);
	}
	end_test();
	free(cell_of);
	free(seen);
}

static void
test_identity_d1(void)
{
	int			iter;

	begin_test("d=1: both curves are the identity");
	for (iter = 0; iter < 20000; iter++)
	{
		int			nbits = 1 + rnd_below(MAX_NBITS);
		uint8_t		c[1][MAX_BYTES];
		const uint8_t *p[1];
		uint8_t		k[MAX_BYTES];
		size_t		len = ((size_t) nbits + 7) / 8;
		int			bits = 1 + rnd_below(32);
		uint32_t	v = rnd32() & (uint32_t) ((UINT64_C(1) << bits) - 1);

		random_coords(1, nbits, c);
		zk_morton(1, nbits, as_ptrs(c, p, 1), k);
		CHECK(memcmp(k, c[0], len) == 0, "morton nbits=%d", nbits);
		zk_hilbert(1, nbits, as_ptrs(c, p, 1), k);
		CHECK(memcmp(k, c[0], len) == 0, "hilbert nbits=%d", nbits);
		CHECK(zk_morton64(1, bits, &v) == v, "morton64 %u", v);
		CHECK(zk_hilbert64(1, bits, &v) == v, "hilbert64 %u", v);
	}
	end_test();
}

/* zk_morton64 / zk_hilbert64 equal the byte-string curves, right-aligned. */
static void
test_64_agreement(void)
{
	int			iter;

	begin_test("morton64 and hilbert64 agree with the byte-string curves");
	for (iter = 0; iter < 100000; iter++)
	{
		int			d = 1 + rnd_below(ZK_MAX_DIMS);
		int			maxbits = 64 / d < 32 ? 64 / d : 32;
		int			bits = 1 + rnd_below(maxbits);
		uint32_t	x[ZK_MAX_DIMS];
		uint8_t		c[ZK_MAX_DIMS][MAX_BYTES];
		const uint8_t *p[ZK_MAX_DIMS];
		uint8_t		key[16];
		int			i;

		/* bias toward the widest coordinates, where shifts overflow */
		if (iter % 4 == 0)
			bits = maxbits;
		for (i = 0; i < d; i++)
		{
			x[i] = rnd32() & (uint32_t) ((UINT64_C(1) << bits) - 1);
			u32_to_coord(x[i], bits, c[i]);
		}
		zk_morton(d, bits, as_ptrs(c, p, d), key);
		CHECK(zk_morton64(d, bits, x) == key_to_u64(key, d * bits),
			  "morton d=%d bits=%d", d, bits);
		zk_hilbert(d, bits, as_ptrs(c, p, d), key);
		CHECK(zk_hilbert64(d, bits, x) == key_to_u64(key, d * bits),
			  "hilbert d=%d bits=%d", d, bits);
	}
	end_test();

	begin_test("morton64 and hilbert64 ignore bits above 'bits'");
	for (iter = 0; iter < 20000; iter++)
	{
		int			d = 1 + rnd_below(ZK_MAX_DIMS);
		int			maxbits = 64 / d < 32 ? 64 / d : 32;
		int			bits = 1 + rnd_below(maxbits);
		uint32_t	x[ZK_MAX_DIMS],
					y[ZK_MAX_DIMS];
		int			i;

		if (bits == 32)
			bits = 31;
		for (i = 0; i < d; i++)
		{
			x[i] = rnd32() & (uint32_t) ((UINT64_C(1) << bits) - 1);
			y[i] = x[i] | (rnd32() << bits);
		}
		CHECK(zk_morton64(d, bits, x) == zk_morton64(d, bits, y), "d=%d bits=%d", d, bits);
		CHECK(zk_hilbert64(d, bits, x) == zk_hilbert64(d, bits, y), "d=%d bits=%d", d, bits);
	}
	end_test();
}

/*
 * zk_morton64 and zk_hilbert64 against the bit-at-a-time references, for
 * every dimension from 2 up and widths that exercise partial chunks at the
 * top, the widest coordinates, and the layouts in common use (d = 2, 3, 4 at
 * 32, 21 and 16 bits).  Extreme coordinates (0, all ones, a single bit) are
 * mixed in with random ones, and the references are checked to invert each
 * other on the byte-string decoder.
 */
static void
test_64_reference(void)
{
	int			d;

	begin_test("morton64 and hilbert64 equal bit-at-a-time references");
	for (d = 2; d <= ZK_MAX_DIMS; d++)
	{
		int			maxbits = 64 / d < 32 ? 64 / d : 32;
		int			bits;

		for (bits = 1; bits <= maxbits; bits++)
		{
			/* every width up to 8, then a few, then the widest ones */
			int			common = (d == 2 && bits == 32) ||
				(d == 3 && bits == 21) || (d == 4 && bits == 16);
			int			iters = common ? 200000 : 5000;
			uint32_t	all = (uint32_t) ((UINT64_C(1) << bits) - 1);
			int			iter;

			if (bits > 8 && bits < maxbits - 1 && bits % 5 != 0 && !common)
				continue;
			for (iter = 0; iter < iters; iter++)
			{
				uint32_t	x[ZK_MAX_DIMS];
				uint64_t	h,
							m = 0;
				int			i,
							k;

				for (i = 0; i < d; i++)
				{
					switch (rnd_below(8))
					{
						case 0:
							x[i] = 0;
							break;
						case 1:
							x[i] = all;
							break;
						case 2:
							x[i] = (uint32_t) 1 << rnd_below(bits);
							break;
						default:
							x[i] = rnd32() & all;
							break;
					}
				}
				for (k = bits - 1; k >= 0; k--)
					for (i = 0; i < d; i++)
						m = (m << 1) | ((x[i] >> k) & 1);
				CHECK(zk_morton64(d, bits, x) == m, "morton d=%d bits=%d", d, bits);

				h = ref_hilbert64(d, bits, x);
				CHECK(zk_hilbert64(d, bits, x) == h,
					  "hilbert d=%d bits=%d: %llx, not %llx", d, bits,
					  (unsigned long long) zk_hilbert64(d, bits, x),
					  (unsigned long long) h);

				if (iter < 500)
				{
					uint8_t		key[8];
					uint8_t		back[ZK_MAX_DIMS][MAX_BYTES],
								c[MAX_BYTES];

					/* the key as a left-aligned bit string */
					for (k = 0; k < 8; k++)
						key[k] = (uint8_t) ((h << (64 - d * bits)) >> (56 - 8 * k));
					ref_unhilbert(d, bits, key, back);
					for (i = 0; i < d; i++)
					{
						u32_to_coord(x[i], bits, c);
						CHECK(memcmp(back[i], c, MAX_BYTES) == 0,
							  "references disagree, d=%d bits=%d", d, bits);
					}
				}
			}
		}
	}
	end_test();
}

/* ---------------------------------------------------------------------
 * Band alignment
 * ---------------------------------------------------------------------
 */

/* zk_align_bands with its own workspace */
static void
align(int nbands, const double *width, const uint8_t *heavy,
	  uint32_t nbuckets, uint32_t *edges)
{
	void	   *space = malloc(zk_align_bands_space(nbands, nbuckets));

	zk_align_bands(nbands, width, heavy, nbuckets, space, edges);
	free(space);
}

/*
 * What zk_align_bands minimises, written out again: for each heavy band
 * [a, b) and each cell size s = 2, 4, .. < nbuckets, the rows of cells the
 * band touches beyond (b - a) / s, plus how far its width is off its share,
 * weighted by that share.
 */
static double
placement_cost(int nbands, const double *width, const uint8_t *heavy,
			   uint32_t nbuckets, const uint32_t *edges)
{
	double		total = 0;

	for (int i = 0; i < nbands; i++)
	{
		double		w = (double) (edges[i + 1] - edges[i]);
		double		excess = 0;

		if (!heavy[i])
			continue;
		for (uint32_t s = 2; s < nbuckets; s *= 2)
		{
			uint32_t	first = edges[i] / s;
			uint32_t	last = (edges[i + 1] - 1) / s;

			excess += (double) (last - first + 1) - w / s;
		}
		total += width[i] * (excess + fabs(log(w / width[i])));
	}
	return total;
}

static void
test_align_bands_examples(void)
{
	uint32_t	e[8];

	begin_test("align: an aligned band of a power-of-two width stays put");
	{
		double		w[] = {1024, 512, 2560};
		uint8_t		h[] = {0, 1, 0};

		align(3, w, h, 4096, e);
		CHECK(e[0] == 0 && e[1] == 1024 && e[2] == 1536 && e[3] == 4096,
			  "edges %u %u %u %u", e[0], e[1], e[2], e[3]);
	}
	end_test();

	begin_test("align: a band across a coarse line moves off it");
	{
		/* ideal [1019.2, 1027.7): crosses the line at 1024 */
		double		w[] = {1019.2, 8.5, 4096 - 1027.7};
		uint8_t		h[] = {0, 1, 0};

		align(3, w, h, 4096, e);
		CHECK((e[1] == 1016 && e[2] == 1024) || (e[1] == 1024 && e[2] == 1032),
			  "edges %u %u", e[1], e[2]);
	}
	end_test();

	begin_test("align: heavy neighbours share coarse edges");
	{
		/* ideal [0, 118.4) [118.4, 269.1) [269.1, 367.6), then the rest */
		double		w[] = {118.4, 150.7, 98.5, 4096 - 367.6};
		uint8_t		h[] = {1, 1, 1, 0};

		align(4, w, h, 4096, e);
		CHECK(e[0] == 1 && e[1] == 128 && e[2] == 256 && e[3] == 384 &&
			  e[4] == 4096,
			  "edges %u %u %u %u %u", e[0], e[1], e[2], e[3], e[4]);
	}
	end_test();

	begin_test("align: light bands only");
	{
		double		w[] = {256};
		uint8_t		h[] = {0};

		align(1, w, h, 256, e);
		CHECK(e[0] == 0 && e[1] == 256, "edges %u %u", e[0], e[1]);
	}
	end_test();

	begin_test("align: one value everywhere");
	{
		double		w[] = {4};
		uint8_t		h[] = {1};

		align(1, w, h, 4, e);
		CHECK(e[0] == 1 && e[1] == 4, "edges %u %u", e[0], e[1]);
	}
	end_test();
}

/*
 * Random band lists: edges in order from 0 (1 under a leading heavy band)
 * to nbuckets, heavy bands at least one bucket wide, every edge within
 * half a heavy neighbour's width of its ideal place, and a placement that
 * costs no more than every edge at its nearest bucket.
 */
static void
test_align_bands_random(void)
{
	int			iter;

	begin_test("align: random bands keep order, width and reach");
	for (iter = 0; iter < 3000; iter++)
	{
		int			shift = 2 + rnd_below(15);
		uint32_t	nbuckets = (uint32_t) 1 << shift;
		int			maxbands = 1 + rnd_below(40);
		double		width[64];
		uint8_t		heavy[64];
		uint32_t	edges[65];
		uint32_t	rounded[65];
		double		ideal[65];
		double		left = nbuckets;
		int			nbands = 0;

		/* alternate heavy values and runs of light ones, widths adding up */
		while (nbands < maxbands && left >= 2)
		{
			int			h = (nbands > 0 && !heavy[nbands - 1]) || rnd_below(2);
			double		u = (double) rnd32() / 4294967296.0;
			double		w;

			/* heavy: now and then a wide band, mostly narrow ones */
			if (h)
				w = 2 + (left - 2) * (rnd_below(3) == 0 ? u : u / 8);
			else
				w = left * u / 4;
			if (nbands == maxbands - 1)
				w = left;
			width[nbands] = w;
			heavy[nbands] = (uint8_t) h;
			left -= w;
			nbands++;
		}
		if (left > 0)
		{
			if (nbands == 0 || heavy[nbands - 1])
			{
				width[nbands] = left;
				heavy[nbands] = 0;
				nbands++;
			}
			else
				width[nbands - 1] += left;
		}

		ideal[0] = 0;
		for (int i = 0; i < nbands; i++)
			ideal[i + 1] = ideal[i] + width[i];
		align(nbands, width, heavy, nbuckets, edges);

		rounded[0] = heavy[0] ? 1 : 0;
		for (int i = 1; i < nbands; i++)
		{
			double		r = floor(ideal[i] + 0.5);

			r = r < 1 ? 1 : r;
			rounded[i] = (uint32_t) (r > nbuckets - 1 ? nbuckets - 1 : r);
		}
		rounded[nbands] = nbuckets;
		CHECK(placement_cost(nbands, width, heavy, nbuckets, edges) <=
			  placement_cost(nbands, width, heavy, nbuckets, rounded) + 1e-9,
			  "%d bands over %u buckets: cost %.3f, rounded %.3f", nbands,
			  nbuckets, placement_cost(nbands, width, heavy, nbuckets, edges),
			  placement_cost(nbands, width, heavy, nbuckets, rounded));

		CHECK(edges[0] == (heavy[0] ? 1u : 0u), "first edge %u", edges[0]);
		CHECK(edges[nbands] == nbuckets, "last edge %u of %u", edges[nbands],
			  nbuckets);
		for (int i = 0; i < nbands; i++)
		{
			CHECK(edges[i + 1] >= edges[i] + (heavy[i] ? 1 : 0),
				  "band %d: [%u, %u) heavy %d", i, edges[i], edges[i + 1],
				  heavy[i]);
			if (i > 0)
			{
				double		reach = 0.5;

				if (heavy[i - 1] && width[i - 1] / 2 > reach)
					reach = width[i - 1] / 2;
				if (heavy[i] && width[i] / 2 > reach)
					reach = width[i] / 2;
				CHECK(fabs(edges[i] - ideal[i]) <= reach + 1,
					  "edge %d at %u, ideal %.1f, reach %.1f", i, edges[i],
					  ideal[i], reach);
			}
		}
	}
	end_test();
}

/* Count of a[i] <= v (strict: < v), the slow way. */
static uint32_t
naive_count(const uint64_t *a, uint32_t n, uint64_t v, int strict)
{
	uint32_t	c = 0;

	for (uint32_t i = 0; i < n; i++)
		c += strict ? a[i] < v : a[i] <= v;
	return c;
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t	a = *(const uint64_t *) x;
	uint64_t	b = *(const uint64_t *) y;

	return a < b ? -1 : a > b;
}

/*
 * The slice table counts exactly what a scan of the boundaries counts:
 * uniform, crowded (many boundaries in one slice, repeated values) and
 * extreme boundaries, probed at every boundary, its neighbours, the ends
 * of the range and random values.
 */
static void
test_bound_table(void)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 7, 255, 256, 1000, 8191};
	uint64_t   *bounds = malloc(sizeof(uint64_t) * 8191);
	uint32_t   *start = malloc(sizeof(uint32_t) * ((1 << 17) + 1));

	begin_test("bound table counts like a scan");
	CHECK(zk_bound_table_cells(0) == 1, "cells(0) = %u", zk_bound_table_cells(0));
	CHECK(zk_bound_table_cells(255) == 512, "cells(255) = %u", zk_bound_table_cells(255));
	CHECK(zk_bound_table_cells(1000000) == (1 << 17), "cells capped");
	for (int shape = 0; shape < 5; shape++)
	{
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		{
			uint32_t	n = sizes[s];
			uint32_t	ncells = zk_bound_table_cells(n);
			ZkBoundTable t;

			for (uint32_t i = 0; i < n; i++)
			{
				uint64_t	r = rnd64();

				switch (shape)
				{
					case 0:		/* uniform over all of uint64 */
						bounds[i] = r;
						break;
					case 1:		/* a narrow cluster and a far outlier */
						bounds[i] = i == n - 1 && n > 2 ? UINT64_MAX - (r % 3) :
							UINT64_C(1) << 40 | (r % 5000);
						break;
					case 2:		/* few distinct values, repeated */
						bounds[i] = (r % 7) * UINT64_C(1000003);
						break;
					case 3:		/* the extremes of the domain */
						bounds[i] = (r & 1) ? 0 : UINT64_MAX;
						break;
					default:	/* int32-like: small, dense */
						bounds[i] = UINT64_C(0x80000000) + (r % 2000001) - 1000000;
						break;
				}
			}
			qsort(bounds, n, sizeof(uint64_t), cmp_u64);
			zk_bound_table_build(&t, bounds, n, ncells, start);

			for (uint32_t i = 0; i < n + 2000; i++)
			{
				uint64_t	probes[3];

				if (i < n)
				{
					probes[0] = bounds[i];
					probes[1] = bounds[i] - 1;
					probes[2] = bounds[i] + 1;
				}
				else if (i == n)
				{
					probes[0] = 0;
					probes[1] = UINT64_MAX;
					probes[2] = n > 0 ? bounds[n - 1] + 1 : 1;
				}
				else
				{
					probes[0] = rnd64();
					probes[1] = n > 0 ? bounds[0] + (rnd64() % 100000) : rnd64();
					probes[2] = n > 0 ? bounds[n - 1] - (rnd64() % 100000) : rnd64();
				}
				for (int p = 0; p < 3; p++)
					for (int strict = 0; strict <= 1; strict++)
					{
						uint32_t	got = zk_bound_table_count(&t, probes[p], strict);
						uint32_t	want = naive_count(bounds, n, probes[p], strict);

						CHECK(got == want,
							  "shape %d, n %u, v %llu, strict %d: %u, want %u",
							  shape, n, (unsigned long long) probes[p],
							  strict, got, want);
					}
			}
		}
	}
	free(bounds);
	free(start);
	end_test();
}

/*
 * Region keys: a region's keys sort after every key of the regions before
 * it, and region 0 keeps the order of the curve keys it shifts; within a
 * region the band (an equal piece of the curve over the other columns)
 * comes first, then the offset, saturated rather than wrapped;
 * zk_region_band tells a key's band.
 */
static void
test_region_keys(void)
{
	begin_test("region keys");
	for (int i = 0; i < 100000; i++)
	{
		uint64_t	a = rnd64();
		uint64_t	b = rnd64();
		uint32_t	c1[3];
		uint32_t	c2[3];
		int			m = 1 + (int) (rnd64() % 3);
		int			bits = m == 1 ? 32 : (m == 2 ? 21 : 16);
		uint32_t	nb = 1 + (uint32_t) (rnd64() % (i % 2 ? 100 : ZK_REGION_MAX_BANDS));
		int			hilbert = (int) (rnd64() & 1);
		uint64_t	o1 = rnd64() >> (rnd64() % 64);
		uint64_t	o2 = rnd64() >> (rnd64() % 64);
		unsigned	r = 1 + (unsigned) (rnd64() % ZK_REGION_MAX);
		uint64_t	k1;
		uint64_t	k2;

		CHECK(a > b ? zk_region_key(0, a) >= zk_region_key(0, b) :
			  zk_region_key(0, a) <= zk_region_key(0, b),
			  "region 0 keeps order: %llx %llx", (unsigned long long) a,
			  (unsigned long long) b);
		CHECK(zk_region_key(r, a) > zk_region_key(r - 1, b),
			  "region %u after region %u", r, r - 1);
		CHECK(zk_region_of(zk_region_key(r, a)) == r, "region of a key %u", r);

		for (int j = 0; j < m; j++)
			c1[j] = c2[j] = (uint32_t) (rnd64() & ((UINT64_C(1) << bits) - 1));
		/* same coordinates: one band, ordered by the offset */
		k1 = zk_region_row_key(r, hilbert, m, bits, c1, nb, o1);
		k2 = zk_region_row_key(r, hilbert, m, bits, c2, nb, o2);
		CHECK(o1 <= o2 ? k1 <= k2 : k1 >= k2,
			  "same coordinates, offsets %llu %llu", (unsigned long long) o1,
			  (unsigned long long) o2);
		CHECK(zk_region_of(k1) == r, "a region's own key, region %u", r);
		CHECK(zk_region_band(k1, nb) == zk_region_band(k2, nb),
			  "same coordinates, same band");
		CHECK((zk_region_band(k1, nb) & ((UINT64_C(1) << zk_region_band_width(nb)) - 1)) < nb,
			  "band below nbands %u", nb);
		/* small offsets stay apart: not shifted away */
		CHECK(zk_region_row_key(r, hilbert, m, bits, c1, nb, 1) <
			  zk_region_row_key(r, hilbert, m, bits, c1, nb, 2),
			  "offsets 1 and 2 apart");
		/* one column: bands follow its order, the offset counts less */
		if (m == 1)
		{
			c2[0] = (uint32_t) rnd64();
			k1 = zk_region_row_key(r, hilbert, 1, bits, c1, nb, o1);
			k2 = zk_region_row_key(r, hilbert, 1, bits, c2, nb, o2);
			if (zk_region_band(k1, nb) != zk_region_band(k2, nb))
				CHECK((c1[0] < c2[0]) == (k1 < k2), "bands in the column's order");
			else
			{
				uint64_t	om = (UINT64_C(1) << (56 - zk_region_band_width(nb))) - 1;

				CHECK(((o1 < om ? o1 : om) <= (o2 < om ? o2 : om)) == (k1 <= k2),
					  "one band: by offset, saturated");
			}
		}
	}
	/* with as many bands as values, every value its own band */
	for (uint32_t v = 0; v < 1000; v++)
	{
		uint32_t	c = v << 16;

		CHECK((zk_region_band(zk_region_row_key(1, 1, 1, 32, &c, 65536, 0), 65536) &
			   0xFFFF) == v, "band of %u", v);
	}
	/* no other column: the offset itself */
	CHECK(zk_region_row_key(1, 1, 0, 32, NULL, 1, 12345) ==
		  ((UINT64_C(1) << 56) | 12345), "no other column");
	CHECK(zk_region_row_key(2, 1, 0, 32, NULL, 1, UINT64_MAX) ==
		  ((UINT64_C(3) << 56) - 1), "no other column: saturated");
	end_test();
}

/* What a slab walk visited (test_slab_walk). */
typedef struct SlabSeen
{
	uint64_t	lo[1 << 12];
	uint64_t	hi[1 << 12];
	int			n;				/* inside nodes, or pieces marked */
	int			visits;
	const uint64_t *cuts;		/* pieces: [cuts[i], cuts[i + 1]) */
	int			ncuts;
	bool		marked[64];
} SlabSeen;

static bool
slab_all(uint64_t klo, uint64_t khi, bool inside, void *arg)
{
	SlabSeen   *s = arg;

	s->visits++;
	if (inside)
	{
		s->lo[s->n] = klo;
		s->hi[s->n] = khi;
		s->n++;
	}
	return true;
}

static int
piece_of(const SlabSeen *s, uint64_t key)
{
	int			p = 0;

	while (p + 1 < s->ncuts && s->cuts[p + 1] <= key)
		p++;
	return p;
}

/* stop where the node's keys fall in one piece, or in the slab */
static bool
slab_pieces(uint64_t klo, uint64_t khi, bool inside, void *arg)
{
	SlabSeen   *s = arg;
	int			a = piece_of(s, klo);
	int			b = piece_of(s, khi);

	s->visits++;
	if (!inside && a != b)
		return true;
	for (int p = a; p <= b; p++)
		s->marked[p] = true;
	return false;
}

/*
 * A slab walk: its inside nodes are exactly the slab's cells, each once;
 * a walk that stops at pieces of the curve marks every piece holding a
 * cell of the slab, after a number of visits of the order of the pieces.
 */
static void
test_slab_walk(void)
{
	begin_test("slab walk");
	for (int t = 0; t < 400; t++)
	{
		int			d = 1 + t % 5;
		int			bits = d == 1 ? 10 : (d == 2 ? 5 : (d == 3 ? 3 : 2));
		int			hilbert = (t / 5) % 2;
		int			dim = (int) (rnd64() % d);
		uint32_t	side = 1u << bits;
		uint32_t	lo = (uint32_t) (rnd64() % side);
		uint32_t	hi = lo + (uint32_t) (rnd64() % (t % 5 == 0 ? side - lo : 3));
		uint64_t	ncells = (uint64_t) 1 << (d * bits);
		static SlabSeen s;
		uint64_t	cuts[16];
		uint64_t	covered = 0;
		uint32_t	c[5];

		if (hi > side - 1)
			hi = side - 1;

		memset(&s, 0, sizeof(s));
		zk_slab_walk(hilbert, d, bits, dim, lo, hi, slab_all, &s);
		for (int i = 0; i < s.n; i++)
			covered += s.hi[i] - s.lo[i] + 1;
		CHECK(covered == (uint64_t) (hi - lo + 1) * (ncells / side),
			  "d %d: inside nodes cover %llu cells", d, (unsigned long long) covered);
		for (uint64_t cell = 0; cell < ncells; cell++)
		{
			uint64_t	key;
			bool		in = false;

			for (int i = 0; i < d; i++)
				c[i] = (uint32_t) ((cell >> (i * bits)) & (side - 1));
			key = hilbert ? zk_hilbert64(d, bits, c) : zk_morton64(d, bits, c);
			for (int i = 0; i < s.n && !in; i++)
				in = key >= s.lo[i] && key <= s.hi[i];
			CHECK(in == (c[dim] >= lo && c[dim] <= hi),
				  "d %d hilbert %d: cell in the slab iff in an inside node", d, hilbert);
		}

		/* pieces of the curve, as a layout's ranges */
		cuts[0] = 0;
		for (int i = 1; i < 16; i++)
			cuts[i] = cuts[i - 1] + 1 + rnd64() % (2 * ncells / 16);
		memset(&s, 0, sizeof(s));
		s.cuts = cuts;
		s.ncuts = 16;
		zk_slab_walk(hilbert, d, bits, dim, lo, hi, slab_pieces, &s);
		for (uint64_t cell = 0; cell < ncells; cell++)
		{
			uint64_t	key;

			for (int i = 0; i < d; i++)
				c[i] = (uint32_t) ((cell >> (i * bits)) & (side - 1));
			if (c[dim] < lo || c[dim] > hi)
				continue;
			key = hilbert ? zk_hilbert64(d, bits, c) : zk_morton64(d, bits, c);
			CHECK(s.marked[piece_of(&s, key)], "a piece with a cell of the slab is marked");
		}
		CHECK(s.visits <= 16 * (1 << d) * (bits + 1), "visits %d", s.visits);
	}
	/* the full width of 64-bit keys */
	{
		static SlabSeen s;

		memset(&s, 0, sizeof(s));
		zk_slab_walk(1, 2, 32, 0, 0, UINT32_MAX, slab_all, &s);
		CHECK(s.n == 1 && s.lo[0] == 0 && s.hi[0] == UINT64_MAX, "the whole space");
	}
	end_test();
}

int
main(void)
{
	int			d,
				nbits;

	test_int16();
	test_int32();
	test_int64();
	test_uint32();
	test_float8();
	test_float4();
	test_bytes_prefix();

	test_morton_reference();
	test_morton_monotone();
	test_hilbert_roundtrip();
	test_identity_d1();
	test_64_agreement();
	test_64_reference();

	for (d = 2; d <= 4; d++)
		for (nbits = 1; nbits <= 4; nbits++)
			test_hilbert_grid(d, nbits);
	/* higher dimensions on the grids that stay small */
	test_hilbert_grid(5, 2);
	test_hilbert_grid(6, 2);
	test_hilbert_grid(7, 2);
	test_hilbert_grid(8, 2);
	test_hilbert_grid(5, 3);
	test_hilbert_grid(2, 8);

	test_align_bands_examples();
	test_region_keys();
	test_slab_walk();
	test_align_bands_random();
	test_bound_table();

	printf("keyenc: %d passed, %d failed\n", n_passed, n_failed);
	return n_failed == 0 ? 0 : 1;
}
