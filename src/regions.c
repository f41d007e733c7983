/*-------------------------------------------------------------------------
 *
 * regions.c
 *	  Regions of the key space for time-ordered keys: the rows beyond every
 *	  value a layout had on one key column get keys of their own, after all
 *	  of the layout's, so that appends of ever later times keep BRIN ranges
 *	  that span a short stretch of time.  And regions for narrow bands of
 *	  values that new rows crowd into (the second half of this file).
 *
 * Why: quantile boundaries are drawn at a full optimize, so new values
 * beyond all of them (a timestamp, a serial number) or crowded into a few
 * buckets would all share one slab of the curve, and every range placement
 * fills there would span every value that arrived since.  How regions and
 * bands divide the key space, when they open, and how many bands a region
 * gets is told once, in docs/design.md ("Regions").
 *
 * The rule this file keeps: a row's key must not change while it lies in
 * a range.  A region starts at the highest value of its column among every
 * row keyed before the call, so no such row is beyond it, and the first
 * region shifts the keys of region 0 right by ZK_REGION_BITS, which keeps
 * their order (the ranges' lowest keys are shifted alike, saved with the
 * first batch).  Only integer kinds of key column (integers, dates,
 * timestamps: those with zorder_ordered_u64) are compared.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "keyenc.h"
#include "layout.h"
#include "placement.h"
#include "quantile.h"
#include "radix.h"
#include "regions.h"

/* Bands of values: fewer sampled newcomers tell none */
#define ZR_MIN_SAMPLE	64
/* the share of the sampled newcomers a band holds, at least */
#define ZR_BAND_SHARE	0.9
/* and how many times the share of the table its buckets hold, at least */
#define ZR_DENSITY		16.0

/*
 * Draw a newcomer of region 0 into the sample (reservoir sampling): the
 * first ZR_SAMPLE, then each with the chance ZR_SAMPLE in the rows seen.
 */
static void
sample_newcomer(IncrState *st, const Datum *values, const bool *nulls)
{
	ZLayout    *lay = &st->lay;
	int64		slot;

	st->seen0++;
	if (st->nsample < ZR_SAMPLE)
		slot = st->nsample++;
	else
	{
		slot = (int64) pg_prng_uint64_range(&st->prng, 0, st->seen0 - 1);
		if (slot >= ZR_SAMPLE)
			return;
	}
	for (int k = 0; k < lay->nkeys; k++)
	{
		bool		null = nulls[k] || !lay->has_top[k];

		st->sample_null[slot * lay->nkeys + k] = null;
		st->sample[slot * lay->nkeys + k] = null ? 0 :
			zorder_ordered_u64(&lay->cols[k], values[k]);
	}
}

/*
 * A row's key column values, as a call computes its key (region0: the key
 * is one of region 0's).  A newcomer is counted: how many newcomers, how
 * many lie beyond the layout's highest value of each column, and their
 * highest value; one of region 0 may go into the sample for bands.  Any
 * other row raises the layout's highest values at once: one of a range
 * that a share or a split moves, say, need not be a newcomer the count saw
 * (a row inserted between two batches), yet once moved by its key it lies
 * in a range like any other, and no later region may start below its
 * value.  The batch that
 * moves it saves the raised values (batch.c).
 */
void
zorder_regions_see(IncrState *st, const Datum *values, const bool *nulls,
				   bool newcomer, bool region0)
{
	ZLayout    *lay = &st->lay;

	st->seen += newcomer;
	if (newcomer && region0 && st->sample != NULL)
		sample_newcomer(st, values, nulls);
	for (int k = 0; k < lay->nkeys; k++)
	{
		uint64		u;

		if (nulls[k] || !lay->has_top[k])
			continue;
		u = zorder_ordered_u64(&lay->cols[k], values[k]);
		if (!newcomer)
			lay->top[k] = Max(lay->top[k], u);
		else
		{
			st->beyond[k] += (u > lay->top[k]);
			if (!st->has_seen_top[k] || u > st->seen_top[k])
			{
				st->has_seen_top[k] = true;
				st->seen_top[k] = u;
			}
		}
	}
}

/* The keys of the layout's runs as keys of region 0: the first region opens. */
static void
shift_to_region_zero(IncrState *st)
{
	for (int i = 0; i < st->nextents; i++)
		st->extents[i].r.key_lo = zk_region_key(0, st->extents[i].r.key_lo);
	if (st->lay.merging)
		st->lay.cursor = zk_region_key(0, st->lay.cursor);
}

/*
 * The column a first region is for: the one with the most newcomers beyond
 * its highest value, if they are most of the newcomers; else -1.
 */
static int
time_ordered_column(IncrState *st)
{
	int			best = -1;

	for (int k = 0; k < st->lay.nkeys; k++)
		if (st->lay.has_top[k] &&
			zp_time_ordered((uint64) st->beyond[k], (uint64) st->seen) &&
			(best < 0 || st->beyond[k] > st->beyond[best]))
			best = k;
	return best;
}

/*
 * The BRIN ranges of the main run: until the first placement records it
 * range by range, an extent may span many.
 */
static uint64
main_ranges(IncrState *st)
{
	uint64		n = 0;

	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].r.run == 0)
			n += (st->extents[i].r.nblocks + st->lay.ppr - 1) / st->lay.ppr;
	return n;
}

/*
 * True if the next region of later values should open on the column of
 * the last one (region last): the table grew so that a region would now
 * get twice the last one's bands,
 * or this call's newcomers lie so far beyond the last one's start that
 * later ones would reach the most its keys can tell apart (the offset
 * zk_region_row_key saturates at, about 51 days of microseconds with 2^14
 * bands), where their keys would all be equal.  Either needs rows beyond
 * the last start already.
 */
static bool
last_region_outgrown(IncrState *st, int last)
{
	ZLayout    *lay = &st->lay;
	int			k = lay->region_key[last];
	uint32		bands = lay->region_bands[last];
	int			low = 64 - ZK_REGION_BITS - zk_region_band_width(bands);

	if (lay->top[k] <= lay->region_start[last])
		return false;
	if (st->has_seen_top[k] && st->seen_top[k] > lay->region_start[last] &&
		st->seen_top[k] - lay->region_start[last] >=
		(UINT64CONST(1) << (low - 1)))
		return true;
	return zp_region_bands(main_ranges(st), lay->nkeys, (uint64) st->beyond[k],
						   lay->ppr) >= 2 * (uint64) bands;
}

/*
 * Once the newcomers are counted (and a region opened for them, if one
 * did): raise the layout's highest values by theirs.  Every batch saves
 * them (batch.c), the first before any newcomer lies in a range: a call
 * that stops halfway must not leave rows in ranges beyond the highest
 * value a later region could start at.
 */
void
zorder_regions_raise_tops(IncrState *st)
{
	ZLayout    *lay = &st->lay;

	for (int k = 0; k < lay->nkeys; k++)
		if (lay->has_top[k] && st->has_seen_top[k] &&
			st->seen_top[k] > lay->top[k])
			lay->top[k] = st->seen_top[k];
}

/*
 * Once the newcomers are counted, before they are placed: open a region if
 * most of them lie beyond the highest value of a key column (the first
 * region), or, on the last region's column, if they still do and the table
 * outgrew the last region's bands (the next).  The region starts at the
 * highest value before these newcomers, so that no row in a range is
 * beyond it, and these newcomers are the region's first.  Returns true if
 * a region opened: the caller computes the newcomers' keys again.  The
 * first batch saves the region with the runs (batch.c).
 */
bool
zorder_regions_open(IncrState *st)
{
	ZLayout    *lay = &st->lay;
	int			last = -1;
	int			k;

	if (lay->nregions >= ZK_REGION_MAX)
		return false;
	for (int r = 0; r < lay->nregions; r++)
		if (lay->region_end[r] == UINT64_MAX)
			last = r;
	if (last < 0)
	{
		k = time_ordered_column(st);
		if (k < 0)
			return false;
		if (lay->nregions == 0)
			shift_to_region_zero(st);
	}
	else
	{
		k = lay->region_key[last];
		if (!lay->has_top[k] ||
			!zp_time_ordered((uint64) st->beyond[k], (uint64) st->seen) ||
			!last_region_outgrown(st, last))
			return false;
	}
	lay->region_key[lay->nregions] = (int16) k;
	lay->region_end[lay->nregions] = UINT64_MAX;
	lay->region_bands[lay->nregions] =
		zp_region_bands(main_ranges(st), lay->nkeys, (uint64) st->beyond[k],
						lay->ppr);
	lay->region_start[lay->nregions] = lay->top[k];
	lay->nregions++;
	return true;
}

/* ----------------------------------------------------------------
 * Bands of values
 *
 * Newcomers may also crowd into a narrow band of values inside the
 * layout's (a hot product, a hot sensor, a day being corrected): all of
 * them fall in the few buckets of the band, so in the slab of the curve
 * those buckets make, where rows are ordered by the other key columns
 * alone.  Every range placement fills there holds every value of the band,
 * and a filter on one of them reads them all, more with every call.  A
 * band gets a region of its own, keyed as a region of later values is (in
 * bands of the other columns, each ordered by the value), with the band's
 * start and end: a filter on one of its values then reads a range or two
 * per band of the other columns.  Unlike later values, those of the band
 * were laid out before: the rows of region 0 that hold them change keys,
 * and move to the region in the call that opens it, listed as misplaced
 * (zorder.layouts.misplaced) until they do.  So a band opens only while
 * those rows are few beside the call's newcomers of the band: the caller
 * counts them (incremental.c).
 * ----------------------------------------------------------------
 */

/* The buckets of (lo, hi] of a column, as a share of the table's rows. */
static double
bucket_share(ZKeyColumn *col, uint64 lo, uint64 hi, uint32 *first,
			 uint32 *last)
{
	zorder_bucket_span(col, lo, hi, first, last);
	return (double) (*last - *first + 1) / (double) (col->nbounds + 1);
}

/* True if (lo, hi] of column k meets a band region. */
static bool
meets_band_region(const ZLayout *lay, int k, uint64 lo, uint64 hi)
{
	for (int r = 0; r < lay->nregions; r++)
		if (lay->region_key[r] == k && lay->region_end[r] != UINT64_MAX &&
			lo < lay->region_end[r] && hi > lay->region_start[r])
			return true;
	return false;
}

/*
 * The band of column k the sampled newcomers crowd into, if any: the
 * values of the narrowest window of ZR_BAND_SHARE of them, by the table's
 * buckets it spans, widened by an eighth of its width on each side for
 * the same band's values just outside the sample's; a band if its buckets
 * hold a share of the table at most 1 / ZR_DENSITY of the newcomers'.
 * Returns that ratio, or 0.
 */
static double
band_of_column(IncrState *st, int k, ZBand *band)
{
	ZLayout    *lay = &st->lay;
	ZKeyColumn *col = &lay->cols[k];
	uint64	   *v = palloc(sizeof(uint64) * Max(st->nsample, 1));
	int			m = 0;
	int			w;
	int			best = -1;
	double		best_share = 2.0;
	uint64		ext;
	int			in = 0;
	double		share;
	uint32		first;
	uint32		last;

	for (int i = 0; i < st->nsample; i++)
		if (!st->sample_null[i * lay->nkeys + k])
			v[m++] = st->sample[i * lay->nkeys + k];
	if (m < ZR_MIN_SAMPLE || col->ubounds == NULL || col->nbounds == 0)
	{
		pfree(v);
		return 0;
	}
	qsort(v, m, sizeof(uint64), zr_cmp_u64);
	w = (int) ceil(ZR_BAND_SHARE * m);
	for (int i = 0; i + w <= m; i++)
	{
		double		s;

		if (v[i] == 0)
			continue;
		s = bucket_share(col, v[i] - 1, v[i + w - 1], &first, &last);
		if (s < best_share)
		{
			best_share = s;
			best = i;
		}
	}
	if (best < 0)
	{
		pfree(v);
		return 0;
	}
	ext = (v[best + w - 1] - v[best]) / 8 + 1;
	band->k = k;
	band->lo = v[best] - 1 > ext ? v[best] - 1 - ext : 0;
	band->hi = v[best + w - 1] < UINT64_MAX - ext ? v[best + w - 1] + ext :
		UINT64_MAX - 1;
	for (int i = 0; i < m; i++)
		in += (v[i] > band->lo && v[i] <= band->hi);
	pfree(v);
	if (meets_band_region(lay, k, band->lo, band->hi))
		return 0;
	share = bucket_share(col, band->lo, band->hi, &band->first, &band->last);
	band->newcomers = (double) in / m * st->seen0 * m / st->nsample;
	if ((double) in / m < ZR_BAND_SHARE ||
		(double) in / m < ZR_DENSITY * share)
		return 0;
	return (double) in / m / share;
}

/*
 * Whether this call's sampled newcomers of region 0 crowd into a narrow
 * band of one key column's values (band_of_column): the densest such
 * band, if any.
 */
bool
zorder_regions_find_band(IncrState *st, ZBand *band)
{
	double		best = 0;
	int			nbands = 0;

	if (st->sample == NULL || st->lay.nregions >= ZK_REGION_MAX)
		return false;
	/* half of the regions at most, so that later values still get theirs */
	for (int r = 0; r < st->lay.nregions; r++)
		nbands += (st->lay.region_end[r] != UINT64_MAX);
	if (nbands >= ZK_REGION_MAX / 2)
		return false;
	for (int k = 0; k < st->lay.nkeys; k++)
	{
		ZBand		b;
		double		density;

		if (!st->lay.has_top[k])
			continue;
		density = band_of_column(st, k, &b);
		if (density > best)
		{
			best = density;
			*band = b;
		}
	}
	return best > 0;
}

/* What a walk over a band's slab marks (zk_slab_walk). */
typedef struct BandWalk
{
	const ZLayout *lay;
	uint64	   *key_lo;			/* the main run's ranges, by key */
	int		   *extent;			/* their extents */
	int			n;
	bool	   *marked;
} BandWalk;

/* A node of the curve's subdivision as keys of the layout's region 0. */
static bool
band_visit(uint64 klo, uint64 khi, bool inside, void *arg)
{
	BandWalk   *bw = arg;
	size_t		a;
	size_t		b;

	CHECK_FOR_INTERRUPTS();
	if (bw->lay->nregions > 0)
	{
		klo = zk_region_key(0, klo);
		khi = zk_region_key(0, khi);
	}
	a = zp_find_range(bw->key_lo, bw->n, klo);
	b = zp_find_range(bw->key_lo, bw->n, khi);
	if (!inside && a != b)
		return true;
	for (size_t i = a; i <= b; i++)
		bw->marked[i] = true;
	return false;
}

/* Ranges (extent indexes) sorted by their lowest key. */
static int
cmp_by_key_lo(const void *a, const void *b, void *arg)
{
	IncrState  *st = arg;
	uint64		x = st->extents[*(const int *) a].r.key_lo;
	uint64		y = st->extents[*(const int *) b].r.key_lo;

	return (x > y) - (x < y);
}

/*
 * The ranges of the main run that may hold rows of the band (extent
 * indexes, in *extents): those whose keys meet the slab the band's buckets
 * make, found by walking the curve's subdivision down to where a node's
 * keys lie in one range.  The main run must be recorded range by range
 * (zorder_main_run_by_range).  Returns how many.
 */
int
zorder_regions_band_extents(IncrState *st, const ZBand *band, int **extents)
{
	ZLayout    *lay = &st->lay;
	ZKeyColumn *col = &lay->cols[band->k];
	BandWalk	bw;
	int			n = 0;
	int			nout = 0;

	bw.lay = lay;
	*extents = NULL;
	bw.extent = palloc(sizeof(int) * Max(st->nextents, 1));
	bw.key_lo = palloc(sizeof(uint64) * Max(st->nextents, 1));
	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].r.run == 0 && st->extents[i].r.nblocks > 0)
			bw.extent[n++] = i;
	if (n == 0)
		return 0;
	qsort_arg(bw.extent, n, sizeof(int), cmp_by_key_lo, st);
	for (int i = 0; i < n; i++)
		bw.key_lo[i] = st->extents[bw.extent[i]].r.key_lo;
	bw.n = n;
	bw.marked = palloc0(sizeof(bool) * n);
	zk_slab_walk(lay->curve == ZCURVE_HILBERT, lay->nkeys, lay->bits,
				 band->k, col->coord[band->first], col->coord[band->last],
				 band_visit, &bw);
	*extents = palloc(sizeof(int) * n);
	for (int i = 0; i < n; i++)
		if (bw.marked[i])
			(*extents)[nout++] = bw.extent[i];
	return nout;
}

/*
 * Open a region for the band, for its newcomers and the laid_out rows of
 * region 0 that hold its values, all of which move there in this call.
 * Returns false, opening none, if its keys could not tell the band's
 * values apart (zk_region_row_key's offset).
 */
bool
zorder_regions_open_band(IncrState *st, const ZBand *band, int64 laid_out)
{
	ZLayout    *lay = &st->lay;
	int			r = lay->nregions;
	uint32		bands = zp_region_bands(main_ranges(st), lay->nkeys,
										(uint64) (band->newcomers + laid_out),
										lay->ppr);
	int			low = 64 - ZK_REGION_BITS - zk_region_band_width(bands);

	if (band->hi - band->lo >= (UINT64CONST(1) << low))
		return false;
	if (r == 0)
		shift_to_region_zero(st);
	lay->region_key[r] = (int16) band->k;
	lay->region_start[r] = band->lo;
	lay->region_end[r] = band->hi;
	lay->region_bands[r] = bands;
	lay->nregions++;
	return true;
}
