/*-------------------------------------------------------------------------
 *
 * regions.c
 *	  Regions of the key space for time-ordered keys: the rows beyond every
 *	  value a layout had on one key column get keys of their own, after all
 *	  of the layout's, so that appends of ever later times keep BRIN ranges
 *	  that span a short stretch of time.
 *
 * Quantile boundaries are drawn at a full optimize.  A key column whose new
 * values lie beyond all of them (a timestamp, a serial number) puts every
 * new row in its last bucket: one slab of the curve, in which rows are
 * ordered by the other key columns alone.  Each range placement fills there
 * spans every time that arrived since the full optimize, so a filter on a
 * recent time reads all of them, more with every call.
 *
 * So when most newcomers of a call lie beyond the highest value the
 * layout had of a key column, the key space gets a region for the rows
 * beyond that value, before they are placed.  Its keys sort after every
 * key before it.  Within it, the space of the other key columns is cut
 * into bands (equal pieces of the curve over them), and a band's rows are
 * ordered by the column's value (zk_region_row_key): rows that arrive in
 * time order go to the end of their band, so each range of a region holds
 * a stretch of time in one band, and a full one splits at its edge without
 * moving its rows (zp_shift_cut's at_edge).  A region has about as many
 * bands as a point filter reads ranges of a full optimize
 * (zp_region_bands): a filter on a recent time reads a range or two per
 * band, one on another column the ranges of its band, more as the region
 * grows.  Once the table has grown so that a region would get twice the
 * bands (fourfold, with two key columns), the next region opens beyond the
 * highest value, with as many bands as the table's size then asks for;
 * so does it when the times reach what the region's keys can tell apart.
 * A region gets no more bands than the call that opens it brings rows per
 * BRIN range's pages, so that each band's first range spans its BRIN
 * range.  The newcomers of the call that opens a region are read twice:
 * their keys change.
 *
 * A row's key must not change while it lies in a range: a region starts
 * at the highest value of its column among every row keyed before the
 * call (the full optimize's highest, raised by every call's newcomers and
 * by every other row a call keys), so no such row is beyond it.  The first
 * region shifts the keys of region 0 right by ZK_REGION_BITS
 * (zk_region_key), which keeps their order; the lowest keys of the ranges
 * are shifted alike, saved with the first batch.
 *
 * Only key columns of the integer kinds (integers, dates, timestamps) are
 * compared: they have zorder_ordered_u64.  A layout that a tool's rewrite
 * gave (pg_repack, REPACK) knows no highest values, and gets regions only
 * after the next full optimize.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "keyenc.h"
#include "layout.h"
#include "placement.h"
#include "quantile.h"
#include "regions.h"

/*
 * A row's key column values, as a call computes its key.  A newcomer is
 * counted: how many newcomers, how many lie beyond the layout's highest
 * value of each column, and their highest value.  Any other row raises the
 * layout's highest values at once: one of a range that a share or a split
 * moves, say, need not be a newcomer the count saw (a row inserted between
 * two batches), yet once moved by its key it lies in a range like any
 * other, and no later region may start below its value.  The batch that
 * moves it saves the raised values (batch.c).
 */
void
zorder_regions_see(IncrState *st, const Datum *values, const bool *nulls,
				   bool newcomer)
{
	ZLayout    *lay = &st->lay;

	st->seen += newcomer;
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
 * True if the next region should open on the last one's column k: the
 * table grew so that a region would now get twice the last one's bands,
 * or this call's newcomers lie so far beyond the last one's start that
 * later ones would reach the most its keys can tell apart (the offset
 * zk_region_row_key saturates at, about 51 days of microseconds with 2^14
 * bands), where their keys would all be equal.  Either needs rows beyond
 * the last start already.
 */
static bool
last_region_outgrown(IncrState *st, int k)
{
	ZLayout    *lay = &st->lay;
	int			last = lay->nregions - 1;
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
	int			k;

	if (lay->nregions >= ZK_REGION_MAX)
		return false;
	if (lay->nregions == 0)
	{
		k = time_ordered_column(st);
		if (k < 0)
			return false;
		shift_to_region_zero(st);
	}
	else
	{
		k = lay->region_key[lay->nregions - 1];
		if (!lay->has_top[k] ||
			!zp_time_ordered((uint64) st->beyond[k], (uint64) st->seen) ||
			!last_region_outgrown(st, k))
			return false;
	}
	lay->region_key[lay->nregions] = (int16) k;
	lay->region_bands[lay->nregions] =
		zp_region_bands(main_ranges(st), lay->nkeys, (uint64) st->beyond[k],
						lay->ppr);
	lay->region_start[lay->nregions] = lay->top[k];
	lay->nregions++;
	return true;
}
