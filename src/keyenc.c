/*-------------------------------------------------------------------------
 *
 * keyenc.c
 *	  Order-preserving value encodings, Morton (Z-order) and Hilbert curves.
 *
 * Everything here is plain C99 without PostgreSQL headers, so that the
 * algorithms can be unit-tested alone and reused by the SQL key functions
 * (keys.c) and by the table layout code.
 *
 * The Hilbert curve follows the level-by-level state machine described by
 * Hamilton ("Compact Hilbert Indices", 2006): at each bit level, the d-bit
 * label of that level is transformed by the current entry point e and
 * direction, Gray-decoded into the d bits of the index, and then (e, dir)
 * are updated for the sub-cube just entered.
 *
 * Both curves are computed a byte column at a time: the same byte of every
 * coordinate is spread with a lookup table into one 64-bit word that holds
 * eight consecutive d-bit labels, so no per-bit loop over coordinates and no
 * allocation is needed whatever the coordinate width.
 *
 * The fixed-width variants for the table layout key (zk_morton64,
 * zk_hilbert64) run once per row of a rewrite, so the common dimensions
 * (2 to 4) have their own paths: Morton bits spread by shifts and masks,
 * and Hilbert tables over the reachable states only, taking 5, 3 or 2
 * levels per lookup.
 *
 * Why one file of this size: the value encodings, the two curves and the
 * region keys share one bit layout (big-endian coordinates of a given
 * width) and one unit test, test/unit/test_keyenc.c; all of it is pure C.
 *
 *-------------------------------------------------------------------------
 */
#include "keyenc.h"

#include <math.h>
#include <string.h>

/* keeps rare, bulky paths out of hot ones, like PostgreSQL's pg_noinline */
#if defined(__GNUC__)
#define ZK_NOINLINE __attribute__((noinline))
#else
#define ZK_NOINLINE
#endif

/*
 * spread_tab[d - 1][b]: the 8 bits of b moved to bit positions 0, d, 2d, ...
 * (bit k of b to bit k * d).  d * 8 <= 64, so every entry fits.
 */
static uint64_t spread_tab[ZK_MAX_DIMS][256];

/* Hilbert helpers indexed by an index digit w of up to 8 bits */
static uint8_t gray_inv_tab[256];	/* inverse Gray code of a label */
static uint8_t entry_tab[256];	/* entry point e(w) of sub-cube w */
static uint8_t dirinc_tab[256];	/* intra-direction d(w), before mod n */

/*
 * Filled once per process, by the first key computed, without a lock.  In
 * zorder only a process's main thread computes keys (a backend's, a
 * parallel worker's): the sorter's threads (libzstd's compressor, its
 * decoder) never call in here.  A caller that computed keys on several
 * threads would have to compute one first, before starting them.
 */
static int	tables_ready = 0;

/* Number of trailing one bits of x (x < 256, so at most 8). */
static int
trailing_ones(unsigned x)
{
	int			n = 0;

	while (x & 1)
	{
		n++;
		x >>= 1;
	}
	return n;
}

static void
init_tables(void)
{
	int			d;
	unsigned	w;

	for (d = 1; d <= ZK_MAX_DIMS; d++)
	{
		for (w = 0; w < 256; w++)
		{
			uint64_t	s = 0;
			int			k;

			for (k = 0; k < 8; k++)
				if (w & (1u << k))
					s |= (uint64_t) 1 << (k * d);
			spread_tab[d - 1][w] = s;
		}
	}

	for (w = 0; w < 256; w++)
	{
		unsigned	g = w;

		/* prefix XOR from the top bit down undoes g = w ^ (w >> 1) */
		g ^= g >> 1;
		g ^= g >> 2;
		g ^= g >> 4;
		gray_inv_tab[w] = (uint8_t) g;

		if (w == 0)
		{
			entry_tab[w] = 0;
			dirinc_tab[w] = 0;
		}
		else
		{
			unsigned	t = (w - 1) & ~1u;

			entry_tab[w] = (uint8_t) (t ^ (t >> 1));
			dirinc_tab[w] = (uint8_t) trailing_ones((w & 1) ? w : w - 1);
		}
	}

	tables_ready = 1;
}

static inline void
ensure_tables(void)
{
	if (!tables_ready)
		init_tables();
}

/* ---------------------------------------------------------------------
 * Encoders
 * ---------------------------------------------------------------------
 */

static inline void
put_be16(uint16_t v, uint8_t *out)
{
	out[0] = (uint8_t) (v >> 8);
	out[1] = (uint8_t) v;
}

static inline void
put_be32(uint32_t v, uint8_t *out)
{
	out[0] = (uint8_t) (v >> 24);
	out[1] = (uint8_t) (v >> 16);
	out[2] = (uint8_t) (v >> 8);
	out[3] = (uint8_t) v;
}

static inline void
put_be64(uint64_t v, uint8_t *out)
{
	put_be32((uint32_t) (v >> 32), out);
	put_be32((uint32_t) v, out + 4);
}

/* Signed integers: flipping the sign bit turns two's complement into offset
 * binary, whose unsigned order is the signed order. */
void
zk_encode_int16(int16_t v, uint8_t out[2])
{
	put_be16((uint16_t) v ^ 0x8000u, out);
}

void
zk_encode_int32(int32_t v, uint8_t out[4])
{
	put_be32((uint32_t) v ^ 0x80000000u, out);
}

void
zk_encode_int64(int64_t v, uint8_t out[8])
{
	put_be64((uint64_t) v ^ UINT64_C(0x8000000000000000), out);
}

void
zk_encode_uint32(uint32_t v, uint8_t out[4])
{
	put_be32(v, out);
}

/*
 * IEEE floats: for non-negative values the bit pattern already orders
 * correctly once the sign bit is set; negative values are inverted
 * entirely so larger magnitudes come first.  NaN (any sign, any payload)
 * becomes all ones, above +Infinity, as PostgreSQL's float comparisons
 * treat every NaN as equal and greater than everything else.
 */
void
zk_encode_float4(float v, uint8_t out[4])
{
	uint32_t	u;

	if (v != v)
	{
		put_be32(UINT32_MAX, out);
		return;
	}
	if (v == 0.0f)
		v = 0.0f;				/* -0 collapses onto +0 */
	memcpy(&u, &v, sizeof(u));
	if (u & 0x80000000u)
		u = ~u;
	else
		u |= 0x80000000u;
	put_be32(u, out);
}

void
zk_encode_float8(double v, uint8_t out[8])
{
	uint64_t	u;

	if (v != v)
	{
		put_be64(UINT64_MAX, out);
		return;
	}
	if (v == 0.0)
		v = 0.0;
	memcpy(&u, &v, sizeof(u));
	if (u & UINT64_C(0x8000000000000000))
		u = ~u;
	else
		u |= UINT64_C(0x8000000000000000);
	put_be64(u, out);
}

/*
 * A zero-padded prefix: if s < t in memcmp-then-length order, either they
 * differ inside the prefix (same verdict) or the prefixes tie.  A shorter
 * string padded with zero bytes never exceeds a longer one it prefixes.
 */
void
zk_encode_bytes_prefix(const uint8_t *s, size_t len, uint8_t *out,
					   size_t width)
{
	size_t		n = len < width ? len : width;

	if (n > 0)
		memcpy(out, s, n);
	if (width > n)
		memset(out + n, 0, width - n);
}

/* ---------------------------------------------------------------------
 * Curves over byte-string coordinates
 * ---------------------------------------------------------------------
 */

/*
 * Interleave byte column col (byte col of every coordinate) into a word
 * holding eight d-bit labels, the label of the column's top bit level in
 * the highest d * 8 bits used.  Within a label, coordinate 0 is the most
 * significant bit.  mask clears the padding bits of a last, partial byte.
 */
static inline uint64_t
column_labels(int d, const uint8_t *const *coords, size_t col,
			  uint8_t mask)
{
	const uint64_t *tab = spread_tab[d - 1];
	uint64_t	m = 0;
	int			i;

	for (i = 0; i < d; i++)
		m |= tab[coords[i][col] & mask] << (d - 1 - i);
	return m;
}

static inline uint32_t
get_be32(const uint8_t *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
		((uint32_t) p[2] << 8) | (uint32_t) p[3];
}

/* Spread the low 32 bits of x to the even bit positions. */
static inline uint64_t
spread2(uint32_t x)
{
	uint64_t	v = x;

	v = (v | (v << 16)) & UINT64_C(0x0000FFFF0000FFFF);
	v = (v | (v << 8)) & UINT64_C(0x00FF00FF00FF00FF);
	v = (v | (v << 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
	v = (v | (v << 2)) & UINT64_C(0x3333333333333333);
	v = (v | (v << 1)) & UINT64_C(0x5555555555555555);
	return v;
}

void
zk_morton(int d, int nbits, const uint8_t *const *coords, uint8_t *out)
{
	size_t		ncols = ((size_t) nbits + 7) / 8;
	size_t		outlen = ((size_t) d * nbits + 7) / 8;
	uint8_t		last_mask = (uint8_t) (0xFF << ((8 - nbits % 8) % 8));
	size_t		col = 0;

	ensure_tables();

	/*
	 * Eight bit levels of d coordinates are exactly d output bytes, so each
	 * column lands byte-aligned.  Padding bits of the last column are masked
	 * to zero, which makes the tail of its output zero and lets it be cut.
	 */
	if (d == 2)
	{
		/* two dimensions, the common case: four columns at a time */
		for (; col + 4 < ncols; col += 4)
			put_be64((spread2(get_be32(coords[0] + col)) << 1) |
					 spread2(get_be32(coords[1] + col)), out + 2 * col);
	}
	for (; col < ncols; col++)
	{
		uint8_t		mask = (col + 1 == ncols) ? last_mask : 0xFF;
		uint64_t	m = column_labels(d, coords, col, mask);
		size_t		base = col * (size_t) d;
		size_t		n = outlen - base < (size_t) d ? outlen - base : (size_t) d;
		uint8_t		tmp[8];

		put_be64(m << (64 - 8 * d), tmp);
		memcpy(out + base, tmp, n);
	}
}

/* Rotate the low n bits of x right / left by r (0 <= r < n). */
static inline unsigned
rotr_n(unsigned x, int r, int n, unsigned mask)
{
	return ((x >> r) | (x << (n - r))) & mask;
}

static inline unsigned
rotl_n(unsigned x, int r, int n, unsigned mask)
{
	return ((x << r) | (x >> (n - r))) & mask;
}

/*
 * One Hilbert step: label l (n bits) in the current state (e, dir) gives
 * the index digit; the state moves to the sub-cube entered.  dir is kept as
 * "direction + 1" modulo n, the rotation actually applied, which saves an
 * addition per level.
 */
static inline unsigned
hilbert_step(unsigned l, unsigned *e, int *rot, int n, unsigned mask)
{
	unsigned	w = gray_inv_tab[rotr_n(l ^ *e, *rot, n, mask)];
	int			r;

	*e ^= rotl_n(entry_tab[w], *rot, n, mask);
	/* new direction = dir + d(w) + 1, so new rot = rot + d(w) + 1 */
	r = *rot + dirinc_tab[w] + 1;	/* at most 2n */
	r -= (r >= n) ? n : 0;
	r -= (r >= n) ? n : 0;
	*rot = r;
	return w;
}

/*
 * For few dimensions the state machine fits a small table that also takes
 * several bit levels at once: L = 8 / n levels (4 for n = 2, 2 for n = 3
 * and 4, 1 for n = 5), a chunk of n * L label bits.  State (e, rot) is
 * numbered e * n + rot (< 160); entry [state << (n * L) | chunk] holds the
 * state after the chunk in its high byte and the n * L index bits in the low
 * byte.  One dependent load per chunk instead of a chain of shifts and
 * lookups per level.  Entries: 2048, 1536, 16384 and 5120 for n = 2..5;
 * higher dimensions use the arithmetic step.
 */
#define HILBERT_TAB_MAX_DIMS 5

static uint16_t hilbert_tab_2[8 << 8];
static uint16_t hilbert_tab_3[24 << 6];
static uint16_t hilbert_tab_4[64 << 8];
static uint16_t hilbert_tab_5[160 << 5];
static uint16_t *const hilbert_tabs[HILBERT_TAB_MAX_DIMS + 1] = {
	NULL, NULL, hilbert_tab_2, hilbert_tab_3, hilbert_tab_4, hilbert_tab_5
};
static int	hilbert_tab_ready[HILBERT_TAB_MAX_DIMS + 1];

static const uint16_t *
hilbert_table(int n)
{
	uint16_t   *tab;
	int			levels = 8 / n;
	int			cbits = n * levels;
	unsigned	mask = (1u << n) - 1;
	unsigned	state,
				chunk;

	tab = hilbert_tabs[n];
	if (hilbert_tab_ready[n])
		return tab;

	for (state = 0; state < (unsigned) n << n; state++)
		for (chunk = 0; chunk < 1u << cbits; chunk++)
		{
			unsigned	e = state / n;
			int			rot = state % n;
			unsigned	w = 0;
			int			k;

			for (k = levels - 1; k >= 0; k--)
				w = (w << n) | hilbert_step((chunk >> (k * n)) & mask, &e, &rot,
											n, mask);
			tab[(state << cbits) | chunk] = (uint16_t) (((e * n + rot) << 8) | w);
		}
	hilbert_tab_ready[n] = 1;
	return tab;
}

/*
 * The walker over bit levels.  With a table, chunks of L levels go through
 * it and leftover levels (fewer than L) take the arithmetic step; without
 * one, L = 1 and every level is arithmetic.
 */
typedef struct HilbertWalk
{
	const uint16_t *tab;		/* NULL: arithmetic only */
	int			levels;			/* L: levels per chunk */
	int			cbits;			/* n * L */
	unsigned	state;			/* table: e * n + rot */
	unsigned	e;				/* no table: entry point and rotation */
	int			rot;
	int			n;
	unsigned	mask;			/* n low bits */
} HilbertWalk;

static inline void
hilbert_walk_init(HilbertWalk *hw, int n)
{
	ensure_tables();
	hw->n = n;
	hw->mask = (1u << n) - 1;
	if (n >= 2 && n <= HILBERT_TAB_MAX_DIMS)
	{
		hw->tab = hilbert_table(n);
		hw->levels = 8 / n;
	}
	else
	{
		hw->tab = NULL;
		hw->levels = 1;
	}
	hw->cbits = n * hw->levels;
	/* entry point 0, direction 0: rotate by 1 */
	hw->e = 0;
	hw->rot = 1 % n;
	hw->state = hw->rot;
}

/* one chunk of L levels: cbits label bits in, cbits index bits out */
static inline unsigned
hilbert_walk_chunk(HilbertWalk *hw, unsigned chunk)
{
	if (hw->tab)
	{
		unsigned	ent = hw->tab[(hw->state << hw->cbits) | chunk];

		hw->state = ent >> 8;
		return ent & 0xFF;
	}
	return hilbert_step(chunk, &hw->e, &hw->rot, hw->n, hw->mask);
}

/* a single level, for the levels left over after whole chunks */
static inline unsigned
hilbert_walk_level(HilbertWalk *hw, unsigned l)
{
	unsigned	e;
	int			rot;
	unsigned	w;

	if (!hw->tab)
		return hilbert_step(l, &hw->e, &hw->rot, hw->n, hw->mask);
	e = hw->state / hw->n;
	rot = hw->state % hw->n;
	w = hilbert_step(l, &e, &rot, hw->n, hw->mask);
	hw->state = e * hw->n + rot;
	return w;
}

void
zk_hilbert(int d, int nbits, const uint8_t *const *coords, uint8_t *out)
{
	size_t		ncols = ((size_t) nbits + 7) / 8;
	size_t		outlen = ((size_t) d * nbits + 7) / 8;
	HilbertWalk hw;
	uint32_t	acc = 0;		/* pending output bits, right-aligned */
	int			nacc = 0;
	size_t		pos = 0;
	size_t		col;

	hilbert_walk_init(&hw, d);

	for (col = 0; col < ncols; col++)
	{
		uint64_t	m = column_labels(d, coords, col, 0xFF);
		int			left = nbits - (int) col * 8;	/* levels to do */
		int			k = 8;		/* levels of this column not yet done */

		if (left > 8)
			left = 8;

		/* L divides 8, so chunks never straddle a column */
		while (left >= hw.levels)
		{
			unsigned	chunk;

			k -= hw.levels;
			left -= hw.levels;
			chunk = (unsigned) (m >> (k * d)) & ((1u << hw.cbits) - 1);
			acc = (acc << hw.cbits) | hilbert_walk_chunk(&hw, chunk);
			nacc += hw.cbits;
			if (nacc >= 8)
			{
				/* cbits <= 8: at most one byte completes per chunk */
				nacc -= 8;
				out[pos++] = (uint8_t) (acc >> nacc);
			}
		}
		while (left > 0)
		{
			k--;
			left--;
			acc = (acc << d) |
				hilbert_walk_level(&hw, (unsigned) (m >> (k * d)) & hw.mask);
			nacc += d;
			if (nacc >= 8)
			{
				nacc -= 8;
				out[pos++] = (uint8_t) (acc >> nacc);
			}
		}
	}
	if (nacc > 0)
		out[pos++] = (uint8_t) (acc << (8 - nacc));
	while (pos < outlen)
		out[pos++] = 0;
}

/* ---------------------------------------------------------------------
 * Fixed-width 64-bit variants
 * ---------------------------------------------------------------------
 */

/* Spread the low 21 bits of x to every third bit (bit k to bit 3k). */
static inline uint64_t
spread3(uint32_t x)
{
	uint64_t	v = x & UINT32_C(0x1FFFFF);

	v = (v | (v << 32)) & UINT64_C(0x001F00000000FFFF);
	v = (v | (v << 16)) & UINT64_C(0x001F0000FF0000FF);
	v = (v | (v << 8)) & UINT64_C(0x100F00F00F00F00F);
	v = (v | (v << 4)) & UINT64_C(0x10C30C30C30C30C3);
	v = (v | (v << 2)) & UINT64_C(0x1249249249249249);
	return v;
}

/* Spread the low 16 bits of x to every fourth bit (bit k to bit 4k). */
static inline uint64_t
spread4(uint32_t x)
{
	uint64_t	v = x & UINT32_C(0xFFFF);

	v = (v | (v << 24)) & UINT64_C(0x000000FF000000FF);
	v = (v | (v << 12)) & UINT64_C(0x000F000F000F000F);
	v = (v | (v << 6)) & UINT64_C(0x0303030303030303);
	v = (v | (v << 3)) & UINT64_C(0x1111111111111111);
	return v;
}

/* Morton word by the byte tables, for any d */
static uint64_t
morton64_tables(int d, int bits, const uint32_t *coords)
{
	const uint64_t *tab;
	uint32_t	cmask = bits >= 32 ? UINT32_MAX : ((uint32_t) 1 << bits) - 1;
	uint64_t	m = 0;
	int			i;

	ensure_tables();
	tab = spread_tab[d - 1];
	for (i = 0; i < d; i++)
	{
		uint32_t	c = coords[i] & cmask;
		uint64_t	s = 0;
		int			b;

		/* d * bits <= 64 keeps every shift below 64 */
		for (b = 0; b * 8 < bits && b * 8 * d < 64; b++)
			s |= tab[(c >> (8 * b)) & 0xFF] << (8 * d * b);
		m |= s << (d - 1 - i);
	}
	return m;
}

/*
 * Masking the coordinates keeps stray high bits out of the key.  The common
 * dimensions spread with shifts and masks, a few independent operations per
 * coordinate where the byte tables need a load per byte; inlined into
 * zk_hilbert64 too.
 */
static inline uint64_t
morton64(int d, int bits, const uint32_t *coords)
{
	uint32_t	cmask = bits >= 32 ? UINT32_MAX : ((uint32_t) 1 << bits) - 1;

	switch (d)
	{
		case 1:
			return coords[0] & cmask;
		case 2:
			return (spread2(coords[0] & cmask) << 1) |
				spread2(coords[1] & cmask);
		case 3:
			return (spread3(coords[0] & cmask) << 2) |
				(spread3(coords[1] & cmask) << 1) |
				spread3(coords[2] & cmask);
		case 4:
			return (spread4(coords[0] & cmask) << 3) |
				(spread4(coords[1] & cmask) << 2) |
				(spread4(coords[2] & cmask) << 1) |
				spread4(coords[3] & cmask);
	}
	return morton64_tables(d, bits, coords);
}

uint64_t
zk_morton64(int d, int bits, const uint32_t *coords)
{
	return morton64(d, bits, coords);
}

/*
 * zk_hilbert64 for 2 to 4 dimensions, the layouts nearly every table uses.
 * Of the n * 2^n states (e, rot) only n * 2^(n - 1) can be reached from the
 * origin's, and numbered densely they leave room for more levels per lookup
 * than hilbert_table takes: L = 5, 3 and 2 levels for n = 2, 3 and 4, in
 * tables of 4 << 10, 12 << 9 and 32 << 8 entries (8, 12 and 16 kB, so they
 * stay in L1 next to the rest of a rewrite).  The key is a chain of
 * dependent lookups, so their number is what counts: 7 instead of 8 for
 * n = 2 at 32 bits, 7 instead of 11 steps for n = 3 at 21 bits, and for
 * n = 4 the same 8 in half the table.  The states (0, r) are numbered r.
 *
 * An entry is (next state << n * L) | the n * L index bits: masking off its
 * low bits leaves the offset of the next state's row, ready for the next
 * chunk to be or-ed in.
 */
#define FAST64_MAX_DIMS 4

static const int fast64_levels[FAST64_MAX_DIMS + 1] = {0, 0, 5, 3, 2};
static uint16_t fast64_tab_2[4 << 10];
static uint16_t fast64_tab_3[12 << 9];
static uint16_t fast64_tab_4[32 << 8];
static uint16_t *const fast64_tabs[FAST64_MAX_DIMS + 1] = {
	NULL, NULL, fast64_tab_2, fast64_tab_3, fast64_tab_4
};
static int	fast64_ready[FAST64_MAX_DIMS + 1];

static void
fast64_fill(int n)
{
	int			levels = fast64_levels[n];
	int			cbits = n * levels;
	unsigned	mask = (1u << n) - 1;
	uint16_t   *tab = fast64_tabs[n];

	/* state numbers + 1 by e * n + rot (0: not seen yet), and back */
	uint8_t		num[FAST64_MAX_DIMS << FAST64_MAX_DIMS];
	uint8_t		e_of[FAST64_MAX_DIMS << FAST64_MAX_DIMS];
	uint8_t		rot_of[FAST64_MAX_DIMS << FAST64_MAX_DIMS];
	int			nstates = 0;
	int			s;
	int			r;
	unsigned	l,
				chunk;

	ensure_tables();
	memset(num, 0, sizeof(num));
	for (r = 0; r < n; r++)
	{
		num[r] = (uint8_t) ++nstates;
		e_of[r] = 0;
		rot_of[r] = (uint8_t) r;
	}
	/* breadth-first: every state one level away from a numbered one */
	for (s = 0; s < nstates; s++)
		for (l = 0; l <= mask; l++)
		{
			unsigned	e = e_of[s];
			int			rot = rot_of[s];

			(void) hilbert_step(l, &e, &rot, n, mask);
			if (num[e * n + rot] == 0)
			{
				e_of[nstates] = (uint8_t) e;
				rot_of[nstates] = (uint8_t) rot;
				num[e * n + rot] = (uint8_t) ++nstates;
			}
		}

	/* nstates is now n << (n - 1), the rows the table has room for */
	for (s = 0; s < nstates; s++)
		for (chunk = 0; chunk < 1u << cbits; chunk++)
		{
			unsigned	e = e_of[s];
			int			rot = rot_of[s];
			unsigned	w = 0;
			int			k;

			for (k = levels - 1; k >= 0; k--)
				w = (w << n) |
					hilbert_step((chunk >> (k * n)) & mask, &e, &rot, n, mask);
			tab[((unsigned) s << cbits) | chunk] =
				(uint16_t) (((unsigned) (num[e * n + rot] - 1) << cbits) | w);
		}
	fast64_ready[n] = 1;
}

/*
 * Walk the labels of Morton word m, bits levels of n bits, through the
 * table for n.  The levels are padded at the top to whole chunks: a zero
 * label in entry point 0 gives index digit 0 and keeps entry point 0,
 * only rotating one step further, so p zero levels from state (0, 1 - p
 * mod n) end in the origin's state (0, 1) having output nothing, and the
 * zero labels above m's top level are exactly such levels.  Inlined with
 * a constant n, so that n and L fold into the code.
 */
static inline uint64_t
hilbert64_fast(int n, int bits, uint64_t m)
{
	const uint16_t *tab = fast64_tabs[n];
	int			levels = fast64_levels[n];
	int			cbits = n * levels;
	unsigned	cmask = (1u << cbits) - 1;
	int			level = (bits + levels - 1) / levels * levels;
	int			pad = level - bits;
	unsigned	off = (unsigned) ((1 + n * levels - pad) % n) << cbits;
	uint64_t	h = 0;

	/* each chunk's lowest level is below bits, so level * n < 64 */
	while (level > 0)
	{
		unsigned	ent;

		level -= levels;
		ent = tab[off | ((unsigned) (m >> (level * n)) & cmask)];
		off = ent & ~cmask;
		/* the pad's index bits are zero, shifted out past 64 if need be */
		h = (h << cbits) | (ent & cmask);
	}
	return h;
}

/* Five or more dimensions: the walker, as for byte strings */
static ZK_NOINLINE uint64_t
hilbert64_walk(int d, int bits, const uint32_t *coords)
{
	uint64_t	m = morton64_tables(d, bits, coords);
	uint64_t	h = 0;
	HilbertWalk hw;
	int			level = bits;	/* levels not yet done */

	hilbert_walk_init(&hw, d);
	while (level >= hw.levels)
	{
		level -= hw.levels;
		h = (h << hw.cbits) |
			hilbert_walk_chunk(&hw, (unsigned) (m >> (level * d)) &
							   ((1u << hw.cbits) - 1));
	}
	while (level > 0)
	{
		level--;
		h = (h << d) |
			hilbert_walk_level(&hw, (unsigned) (m >> (level * d)) & hw.mask);
	}
	return h;
}

/* First call for d: fill its table, then start again. */
static ZK_NOINLINE uint64_t
hilbert64_first(int d, int bits, const uint32_t *coords)
{
	fast64_fill(d);
	return zk_hilbert64(d, bits, coords);
}

/* The Morton word holds the labels of all levels, top level highest. */
uint64_t
zk_hilbert64(int d, int bits, const uint32_t *coords)
{
	/*
	 * Checked here, apart, so that nothing is live across the call: the
	 * common path then needs no callee-saved registers.
	 */
	if (d >= 2 && d <= FAST64_MAX_DIMS && !fast64_ready[d])
		return hilbert64_first(d, bits, coords);

	switch (d)
	{
		case 1:
			return morton64(1, bits, coords);
		case 2:
			return hilbert64_fast(2, bits, morton64(2, bits, coords));
		case 3:
			return hilbert64_fast(3, bits, morton64(3, bits, coords));
		case 4:
			return hilbert64_fast(4, bits, morton64(4, bits, coords));
	}
	return hilbert64_walk(d, bits, coords);
}

/* ---------------------------------------------------------------------
 * Aligning the bands of frequent values with the curve's cells
 * ---------------------------------------------------------------------
 *
 * A point filter on a key reads every block range that holds its value.
 * Block ranges are runs of the curve, and both curves split the space into
 * halves, quarters, eighths ... along each axis, finishing one cell before
 * the next; a run of the curve crosses a line of a coarse split rarely, and
 * a line of a fine one often.  A value that spans many buckets fills a band
 * across the other axes, and the ranges it reads are those inside its band
 * plus those that its edges cut: an edge on a coarse line cuts few ranges,
 * an edge between two lines cuts as many as any other line, and a band that
 * straddles a coarse line reads a whole row of ranges on each side of it.
 * So each heavy band should start and end on as coarse a line as it can, at
 * the price of a width a little off its share of the rows; light bands
 * absorb the difference, and since each light value sits in one bucket, its
 * band's width hardly matters to its own filters.
 *
 * The block range size, and so the split level that matters, is not known
 * here, so a band [a, b) is charged at every level: at the level of cells
 * s buckets wide, its filter reads rows of ranges from a / s to (b - 1) / s,
 * ceil(b / s) - floor(a / s) of them, where (b - a) / s would do.  That
 * excess, summed over the levels and weighted by the band's rows, plus a
 * charge for a width off its share, is minimised by dynamic programming
 * over the band edges; each edge only tries, for each level, the line of
 * that level just below and just above its ideal place (within half the
 * width of its heavy neighbours), which are the only places worth taking.
 */

static int
log2_u32(uint32_t x)
{
	int			n = 0;

	while (x > 1)
	{
		x >>= 1;
		n++;
	}
	return n;
}

/* Places an edge tries: two lines per level, and the nearest bucket. */
static int
align_candidates(uint32_t nbuckets)
{
	return 2 * log2_u32(nbuckets) + 1;
}

/* Add y to the n places in c, unless it is there or outside [lo, hi]. */
static int
add_candidate(uint32_t *c, int n, double y, double lo, double hi)
{
	if (y < lo || y > hi)
		return n;
	for (int i = 0; i < n; i++)
		if (c[i] == (uint32_t) y)
			return n;
	c[n] = (uint32_t) y;
	return n + 1;
}

size_t
zk_align_bands_space(int nbands, uint32_t nbuckets)
{
	size_t		k = (size_t) align_candidates(nbuckets);
	size_t		nedges = (size_t) nbands + 1;

	/* cost, then candidate and back pointer per (edge, candidate) */
	return nedges * k * (sizeof(double) + sizeof(uint32_t) + sizeof(uint8_t)) +
		nedges * sizeof(uint8_t);
}

/* Charge of a heavy band [a, b) with ideal width w; see above. */
static double
band_cost(uint32_t a, uint32_t b, double w, uint32_t nbuckets)
{
	double		width = (double) (b - a);
	double		excess = 0;

	for (uint32_t s = 2; s < nbuckets; s <<= 1)
		excess += (double) ((b + s - 1) / s - a / s) - width / s;
	return w * (excess + fabs(log(width / w)));
}

void
zk_align_bands(int nbands, const double *width, const uint8_t *heavy,
			   uint32_t nbuckets, void *space, uint32_t *edges)
{
	int			levels = log2_u32(nbuckets);
	int			k = align_candidates(nbuckets);
	int			nedges = nbands + 1;
	double	   *cost = (double *) space;
	uint32_t   *cand = (uint32_t *) (cost + (size_t) nedges * k);
	uint8_t    *from = (uint8_t *) (cand + (size_t) nedges * k);
	uint8_t    *ncand = from + (size_t) nedges * k;
	double		x = 0;

	/* the places each edge may take */
	for (int e = 0; e <= nbands; e++)
	{
		uint32_t   *c = cand + (size_t) e * k;
		int			n = 0;

		if (e == 0 || e == nbands)
		{
			c[n++] = e == 0 ? (heavy[0] ? 1 : 0) : nbuckets;
		}
		else
		{
			double		reach = 0;
			double		lo;
			double		hi;
			double		r;

			x += width[e - 1];
			if (heavy[e - 1])
				reach = width[e - 1] / 2;
			if (heavy[e] && width[e] / 2 > reach)
				reach = width[e] / 2;
			lo = fmax(ceil(x - reach), 1);
			hi = fmin(floor(x + reach), nbuckets - 1);
			r = fmin(fmax(floor(x + 0.5), 1), nbuckets - 1);
			c[n++] = (uint32_t) r;
			for (int t = 1; t <= levels; t++)
			{
				double		s = (double) ((uint32_t) 1 << t);
				double		below = floor(x / s) * s;

				n = add_candidate(c, n, below, lo, hi);
				n = add_candidate(c, n, below + s, lo, hi);
			}
		}
		ncand[e] = (uint8_t) n;
	}

	/*
	 * Cheapest placement of edges 0 .. e, for each place of edge e.  Every
	 * edge at its nearest bucket (the first candidate) is always a valid
	 * placement, since heavy bands are at least two buckets wide.
	 */
	cost[0] = 0;
	for (int e = 1; e <= nbands; e++)
	{
		const uint32_t *cp = cand + (size_t) (e - 1) * k;
		const uint32_t *cc = cand + (size_t) e * k;
		double	   *costp = cost + (size_t) (e - 1) * k;
		double	   *costc = cost + (size_t) e * k;
		uint8_t    *fromc = from + (size_t) e * k;
		uint32_t	gap = heavy[e - 1] ? 1 : 0;

		for (int j = 0; j < ncand[e]; j++)
		{
			costc[j] = HUGE_VAL;
			fromc[j] = 0;
			for (int i = 0; i < ncand[e - 1]; i++)
			{
				double		total;

				if (costp[i] == HUGE_VAL || cc[j] < cp[i] + gap)
					continue;
				total = costp[i];
				if (heavy[e - 1])
					total += band_cost(cp[i], cc[j], width[e - 1], nbuckets);
				if (total < costc[j])
				{
					costc[j] = total;
					fromc[j] = (uint8_t) i;
				}
			}
		}
	}

	/* walk back from the last edge */
	if (cost[(size_t) nbands * k] == HUGE_VAL)
	{
		/* only if a heavy band was narrower than promised: round */
		for (int e = 0; e <= nbands; e++)
			edges[e] = cand[(size_t) e * k];
	}
	else
	{
		int			j = 0;

		for (int e = nbands; e >= 0; e--)
		{
			edges[e] = cand[(size_t) e * k + j];
			j = from[(size_t) e * k + j];
		}
	}
}

/* ---------------------------------------------------------------------
 * Counting boundaries through a table of slices
 * ---------------------------------------------------------------------
 *
 * Every row of a rewrite needs, for each key column, the number of bucket
 * boundaries below its value.  A binary search over a few hundred
 * boundaries is a chain of a dozen dependent loads and compares; with
 * about two slices per boundary most slices hold none or one of them, so
 * the count is one lookup and a compare or two.  Boundaries crowded into a
 * narrow range of values share a slice and are searched as before, so a
 * skewed column is never slower than the plain search.
 */

uint32_t
zk_bound_table_cells(uint32_t n)
{
	uint32_t	cells = 1;

	while (cells < 2 * (uint64_t) n && cells < ((uint32_t) 1 << 17))
		cells <<= 1;
	return cells;
}

void
zk_bound_table_build(ZkBoundTable *t, const uint64_t *bounds, uint32_t n,
					 uint32_t ncells, uint32_t *start)
{
	uint64_t	span;
	int			cellbits = 0;
	int			spanbits = 0;
	uint32_t	i;
	uint32_t	c;

	t->bounds = bounds;
	t->n = n;
	t->ncells = ncells;
	t->start = start;
	t->lo = n > 0 ? bounds[0] : 0;

	/* the smallest shift that puts the last boundary in the last slice */
	while (((uint32_t) 1 << cellbits) < ncells)
		cellbits++;
	span = n > 0 ? bounds[n - 1] - t->lo : 0;
	while (spanbits < 64 && (span >> spanbits) != 0)
		spanbits++;
	t->shift = spanbits > cellbits ? spanbits - cellbits : 0;

	/* start[c]: boundaries in slices before c */
	i = 0;
	for (c = 0; c < ncells; c++)
	{
		start[c] = i;
		while (i < n && ((bounds[i] - t->lo) >> t->shift) == c)
			i++;
	}
	start[ncells] = n;
}

uint64_t
zk_region_row_key(unsigned region, int hilbert, int m, int bits,
				  const uint32_t *coords, uint32_t nbands, uint64_t offset)
{
	int			low = 64 - ZK_REGION_BITS - zk_region_band_width(nbands);
	uint64_t	band = 0;
	uint64_t	omax = (UINT64_C(1) << low) - 1;

	if (m > 0 && nbands > 1)
	{
		/* the curve index at up to 40 bits, cut into nbands equal pieces */
		int			res = bits < 16 ? bits : 16;
		uint32_t	c[ZK_MAX_DIMS];
		uint64_t	idx;

		if (m * res > 40)
			res = 40 / m;
		for (int i = 0; i < m; i++)
			c[i] = coords[i] >> (bits - res);
		if (m == 1)
			idx = c[0];
		else
			idx = hilbert ? zk_hilbert64(m, res, c) : zk_morton64(m, res, c);
		band = (idx * nbands) >> (m * res);
	}
	return ((uint64_t) region << (64 - ZK_REGION_BITS)) | (band << low) |
		(offset < omax ? offset : omax);
}

/* A walk's fixed arguments (zk_slab_walk). */
typedef struct SlabWalk
{
	int			hilbert;
	int			d;
	int			bits;
	int			dim;
	uint32_t	lo;
	uint32_t	hi;
	zk_slab_visit visit;
	void	   *arg;
} SlabWalk;

/*
 * The node of side 2^(bits - level) whose first cell is corner.  Its keys
 * are those of any of its cells with the last d * (bits - level) bits
 * cleared, the node being an aligned stretch of the curve.
 */
static void
slab_node(const SlabWalk *w, uint32_t *corner, int level)
{
	int			below = w->bits - level;
	uint64_t	side = UINT64_C(1) << below;
	uint64_t	first = corner[w->dim];
	uint64_t	last = first + side - 1;
	int			shift = w->d * below;
	uint64_t	span = shift >= 64 ? UINT64_MAX : (UINT64_C(1) << shift) - 1;
	uint64_t	key;
	bool		inside;

	if (last < w->lo || first > w->hi)
		return;
	inside = first >= w->lo && last <= w->hi;
	key = w->hilbert ? zk_hilbert64(w->d, w->bits, corner) :
		zk_morton64(w->d, w->bits, corner);
	key &= ~span;
	if (!w->visit(key, key + span, inside, w->arg) || inside)
		return;
	/* not inside, so at least two cells wide: the children, half a side */
	for (uint32_t c = 0; c < (UINT32_C(1) << w->d); c++)
	{
		uint32_t	child[ZK_MAX_DIMS];

		for (int i = 0; i < w->d; i++)
			child[i] = corner[i] + (((c >> i) & 1) ? (uint32_t) (side >> 1) : 0);
		slab_node(w, child, level + 1);
	}
}

void
zk_slab_walk(int hilbert, int d, int bits, int dim, uint32_t lo, uint32_t hi,
			 zk_slab_visit visit, void *arg)
{
	SlabWalk	w = {hilbert, d, bits, dim, lo, hi, visit, arg};
	uint32_t	corner[ZK_MAX_DIMS] = {0};

	slab_node(&w, corner, 0);
}
