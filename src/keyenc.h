/*-------------------------------------------------------------------------
 *
 * keyenc.h
 *	  Order-preserving value encodings and space-filling curves.
 *
 * Pure C: nothing here includes PostgreSQL headers, so the algorithms can
 * be tested alone (test/unit/test_keyenc.c).
 *
 * Bit strings are packed most significant bit first: bit 0 of a string is
 * the top bit of its first byte.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_KEYENC_H
#define ZORDER_KEYENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most dimensions a curve accepts. */
#define ZK_MAX_DIMS 8

/*
 * Encoders: write the value as big-endian bytes whose unsigned (memcmp)
 * order is the value's natural order.
 */
extern void zk_encode_int16(int16_t v, uint8_t out[2]);
extern void zk_encode_int32(int32_t v, uint8_t out[4]);
extern void zk_encode_int64(int64_t v, uint8_t out[8]);
extern void zk_encode_uint32(uint32_t v, uint8_t out[4]);
/* -0 equals 0; every NaN sorts above +Infinity, as in PostgreSQL */
extern void zk_encode_float4(float v, uint8_t out[4]);
extern void zk_encode_float8(double v, uint8_t out[8]);
/* first width bytes of s, zero-padded: non-decreasing in memcmp order */
extern void zk_encode_bytes_prefix(const uint8_t *s, size_t len,
								   uint8_t *out, size_t width);

/*
 * Curves over d coordinates (1 <= d <= ZK_MAX_DIMS) of nbits bits each.
 * coords[i] points to ceil(nbits / 8) bytes holding coordinate i as a bit
 * string (most significant bit first, so the value is left-aligned; bits
 * past nbits in the last byte are ignored).  The key written to out has
 * d * nbits bits, padded with zero bits to a whole byte: ceil(d * nbits / 8)
 * bytes.  With d = 1 both curves are the identity.
 *
 * Morton interleaves bit levels, coordinate 0 first (most significant)
 * within each level; it is non-decreasing in every coordinate.  Hilbert
 * follows Hamilton's state machine from the origin: consecutive keys are
 * cells at distance 1.  Neither allocates memory.
 *
 * These and the fixed-width variants below share lookup tables, filled on
 * the first call without a lock: a process computes keys on one thread,
 * or computes one before it starts others (keyenc.c).
 */
extern void zk_morton(int d, int nbits, const uint8_t *const *coords,
					  uint8_t *out);
extern void zk_hilbert(int d, int nbits, const uint8_t *const *coords,
					   uint8_t *out);

/*
 * Fixed-width variants used for the table layout key: d coordinates of
 * bits bits each (each coords[i] < 2^bits; higher bits are ignored),
 * d * bits <= 64.  The result is right-aligned in the returned integer and
 * equals zk_morton / zk_hilbert of the same coordinates written as
 * bits-bit strings.
 */
extern uint64_t zk_morton64(int d, int bits, const uint32_t *coords);
extern uint64_t zk_hilbert64(int d, int bits, const uint32_t *coords);

/*
 * Bands of a rank-normalised axis of nbuckets buckets (a power of two, at
 * least 2), nbands >= 1 of them: band i should get about width[i] buckets
 * (the widths add up to nbuckets), and heavy[i] says whether band i is a
 * single value repeated enough to span buckets of its own, rather than a
 * run of lighter values; heavy bands must be at least 2 buckets wide, and
 * no two light bands may be adjacent.  zk_align_bands writes to edges[0 ..
 * nbands] where each band starts, in order, with edges[nbands] = nbuckets:
 * heavy bands get at least one bucket, light bands may get none, and a
 * leading heavy band starts at bucket 1 (bucket 0 is left for values below
 * it).  The edges of heavy bands are moved onto the lines along which the
 * curves split the axis, as coarse as they can be within half the band's
 * width of their ideal places (see keyenc.c).  space must hold
 * zk_align_bands_space(nbands, nbuckets) bytes, aligned for a double.
 */
extern size_t zk_align_bands_space(int nbands, uint32_t nbuckets);
extern void zk_align_bands(int nbands, const double *width,
						   const uint8_t *heavy, uint32_t nbuckets,
						   void *space, uint32_t *edges);

/*
 * Counting the bucket boundaries below a value, for the layout key of
 * every row.  The boundaries are n sorted uint64 values (an order-preserving
 * image of the column's values); a table of ncells cells (a power of two)
 * splits [bounds[0], bounds[n - 1]] into equal slices and records how many
 * boundaries lie before each slice, so that a count is one table lookup
 * plus a search among the few boundaries inside one slice, instead of a
 * search over all of them.  start must hold ncells + 1 entries and lives
 * as long as the table, as does bounds.
 */
typedef struct ZkBoundTable
{
	const uint64_t *bounds;
	uint32_t	n;
	uint64_t	lo;				/* bounds[0] */
	int			shift;			/* slice of v: (v - lo) >> shift */
	uint32_t	ncells;
	const uint32_t *start;		/* boundaries before each slice */
} ZkBoundTable;

/* Cells worth having for n boundaries: about two per boundary. */
extern uint32_t zk_bound_table_cells(uint32_t n);
extern void zk_bound_table_build(ZkBoundTable *t, const uint64_t *bounds,
								 uint32_t n, uint32_t ncells,
								 uint32_t *start);

/* Boundaries <= v (strict: < v) among a[0 .. m), branch-free. */
static inline uint32_t
zk_count_sorted(const uint64_t *a, uint32_t m, uint64_t v, int strict)
{
	const uint64_t *base = a;

	if (m == 0)
		return 0;
	while (m > 1)
	{
		uint32_t	half = m / 2;
		uint64_t	b = base[half - 1];

		base = (strict ? b < v : b <= v) ? base + half : base;
		m -= half;
	}
	return (uint32_t) (base - a) + (strict ? *base < v : *base <= v);
}

/* Boundaries <= v (strict: < v). */
static inline uint32_t
zk_bound_table_count(const ZkBoundTable *t, uint64_t v, int strict)
{
	uint64_t	cell;
	uint32_t	first;

	if (t->n == 0 || v < t->lo)
		return 0;
	cell = (v - t->lo) >> t->shift;
	if (cell >= t->ncells)
		return t->n;
	first = t->start[cell];
	return first + zk_count_sorted(t->bounds + first,
								   t->start[cell + 1] - first, v, strict);
}

/*
 * Keys of a layout with regions (time-ordered keys, see regions.c): the
 * top ZK_REGION_BITS bits of a key name its region.  Region 0 is the
 * layout's curve as a full optimize laid it out, its keys shifted right by
 * as many bits (zk_region_key(0, curve key)), which keeps their order; the
 * keys of the later regions are zk_region_row_key's.
 */
#define ZK_REGION_BITS	8
#define ZK_REGION_MAX	((1 << ZK_REGION_BITS) - 1)

static inline uint64_t
zk_region_key(unsigned region, uint64_t inner)
{
	return ((uint64_t) region << (64 - ZK_REGION_BITS)) |
		(inner >> ZK_REGION_BITS);
}

static inline unsigned
zk_region_of(uint64_t key)
{
	return (unsigned) (key >> (64 - ZK_REGION_BITS));
}

/*
 * The key of a row in region region (1 .. ZK_REGION_MAX): the rows of a
 * region all lie beyond one value of one key column (times after a
 * start).  The region cuts the curve over the other m key columns (their
 * coordinates, bits bits each) into nbands bands of equal length (1 ..
 * ZK_REGION_MAX_BANDS); within a band, rows are ordered by offset, how far
 * beyond the start the row's own value lies, saturated to the bits left
 * below the region and the band.  So rows arriving in time order go to the
 * end of their band: its ranges are stretches of time, and a filter on a
 * time reads one range or two per band.
 */
#define ZK_REGION_MAX_BANDS	(1 << 20)
extern uint64_t zk_region_row_key(unsigned region, int hilbert, int m,
								  int bits, const uint32_t *coords,
								  uint32_t nbands, uint64_t offset);

/* Bits of a key that hold the band of a region of nbands bands. */
static inline int
zk_region_band_width(uint32_t nbands)
{
	int			w = 0;

	while (w < 32 && (UINT64_C(1) << w) < nbands)
		w++;
	return w;
}

/* The band of a region's key (zk_region_row_key), region included. */
static inline uint64_t
zk_region_band(uint64_t key, uint32_t nbands)
{
	return key >> (64 - ZK_REGION_BITS - zk_region_band_width(nbands));
}

/*
 * The nodes of a curve's recursive subdivision that a slab crosses: the
 * cells of d coordinates of bits bits each whose coordinate dim lies in
 * [lo, hi].  Every such node, from the whole space down, is passed to
 * visit with its keys [klo, khi] (zk_morton64's or zk_hilbert64's: each
 * node of the subdivision is a contiguous, aligned stretch of either
 * curve) and whether all of its cells lie in the slab.  A node that does
 * not is split into its children if visit returns true.  So a caller that
 * stops where a node's keys fall in one piece of its own (a BRIN range)
 * learns which pieces the slab crosses after visiting about as many nodes
 * as there are such pieces, times d, times the depth.
 */
typedef bool (*zk_slab_visit) (uint64_t klo, uint64_t khi, bool inside,
							   void *arg);
extern void zk_slab_walk(int hilbert, int d, int bits, int dim, uint32_t lo,
						 uint32_t hi, zk_slab_visit visit, void *arg);

#endif							/* ZORDER_KEYENC_H */
