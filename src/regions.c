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
 * So when most newcomers of a call lie beyond the highest value the layout
 * had of a key column, the key space gets a region for the rows beyond that
 * value.  Its keys sort after every key before it.  Within it, the space of
 * the other key columns is cut into bands (along the curve, the top bits of
 * their coordinates), and a band's rows are ordered by the column's value
 * (zk_region_row_key): rows that arrive in time order go to the end of their
 * band, so each range of a region holds a stretch of time in one band, and
 * a full one splits at its edge without moving its rows (zp_shift_cut's
 * at_edge).  A region has about as many bands as a point filter reads
 * ranges of a full optimize (zp_region_band_bits): a filter on a
 * recent time reads a range or two per band, one on another column the
 * ranges of its band, more as the region grows.  Once the table has grown
 * so that a region would get more bands (about fourfold, with two key
 * columns), the next region opens beyond the highest value, with as many
 * bands as the table's size then asks for.
 *
 * A row's key must not change while it lies in a range: a region starts at
 * the highest value of its column among every row keyed so far (the full
 * optimize's highest, raised by every call's newcomers), so no such row is
 * beyond it.  The first region shifts the keys of region 0 right by
 * ZK_REGION_BITS (zk_region_key), which keeps their order; the lowest keys
 * of the ranges are shifted alike, saved in the same transaction.
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
 * Count a newcomer's key column values: how many newcomers, how many lie
 * beyond the layout's highest value of each column, and the highest value.
 */
void
zorder_regions_count(IncrState *st, const Datum *values, const bool *nulls)
{
	ZLayout    *lay = &st->lay;

	st->seen++;
	for (int k = 0; k < lay->nkeys; k++)
	{
		uint64		u;

		if (nulls[k] || !lay->has_top[k])
			continue;
		u = zorder_ordered_u64(&lay->cols[k], values[k]);
		if (u > lay->top[k])
			st->beyond[k]++;
		if (!st->has_seen_top[k] || u > st->seen_top[k])
		{
			st->has_seen_top[k] = true;
			st->seen_top[k] = u;
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

/* The ranges of the main run. */
static uint64
main_ranges(IncrState *st)
{
	uint64		n = 0;

	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].r.run == 0 && st->extents[i].r.nblocks > 0)
			n++;
	return n;
}

/*
 * True if the next region should open: the last one has rows beyond its
 * start, and the table grew so that a region would now get more bands.
 */
static bool
last_region_outgrown(IncrState *st)
{
	ZLayout    *lay = &st->lay;
	int			last = lay->nregions - 1;

	if (lay->top[lay->region_key[last]] <= lay->region_start[last])
		return false;			/* nothing beyond its start yet */
	return zp_region_band_bits(main_ranges(st), lay->nkeys, lay->bits) >
		lay->region_bits[last];
}

/*
 * Once the newcomers are counted: raise the layout's highest values by
 * theirs.  Every batch saves them (batch.c), the first before any
 * newcomer lies in a range: a call that stops halfway must not leave rows
 * in ranges beyond the highest value a later region could start at.
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
 * After a call's moves, before its last batch saves the runs: open a
 * region if the newcomers were time-ordered (the first) or the table
 * outgrew the last region's bands (the next, on the same column).  The call's newcomers keep the
 * keys they were placed by: the new region takes the next call's.  The
 * last batch saves the layout's regions with the runs.
 */
void
zorder_regions_after_call(IncrState *st)
{
	ZLayout    *lay = &st->lay;
	int			k;

	if (lay->nregions >= ZK_REGION_MAX)
		return;
	if (lay->nregions == 0)
	{
		k = time_ordered_column(st);
		if (k < 0)
			return;
		shift_to_region_zero(st);
	}
	else
	{
		k = lay->region_key[lay->nregions - 1];
		if (!last_region_outgrown(st))
			return;
	}
	lay->region_key[lay->nregions] = (int16) k;
	lay->region_bits[lay->nregions] =
		(int16) zp_region_band_bits(main_ranges(st), lay->nkeys, lay->bits);
	lay->region_start[lay->nregions] = lay->top[k];
	lay->nregions++;
}
