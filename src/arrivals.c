/*-------------------------------------------------------------------------
 *
 * arrivals.c
 *	  How a table's latest rows arrived, read from its heap order, for the
 *	  room of its first layout (room.c).
 *
 * Before any incremental call has seen appends, the room of a table's
 * first full rewrite is a guess.  Spread appends need room for their
 * growth in every range, time-ordered and banded appends need none, and a
 * room that suits one kind costs the other (docs/design.md, "Room").  But
 * a table that has never been laid out still holds its rows about in the
 * order they came: heap_insert fills the last page, and a bulk load writes
 * in its input's order.  So its last pages hold its latest rows, and they
 * are the best witness of the appends to come.  If, on every key, they
 * spread over the values of the rows before them as widely as any rows
 * do, the appends are taken for spread; if on some key they crowd (above
 * all the others, as a time-ordered key's do, or into a band), for
 * crowded.  A table too small to tell, or whose keys have too few values,
 * is unknown.
 *
 * Only a table with no layout is read so: after a layout, the heap is in
 * the curve's order, and its last pages hold the curve's end, not the
 * latest rows; the calls since tell the rest (room.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "arrivals.h"
#include "heappage.h"
#include "placement.h"
#include "quantile.h"
#include "tables.h"

/* the table's last pages that count as its latest rows: one in so many */
#define ARRIVALS_TAIL_SHARE		20
/* pages read from the latest rows, and from the rows before them */
#define ARRIVALS_PAGES			32

/* The key values of the rows read from some pages: nrows x nkeys */
typedef struct KeyValues
{
	int			nrows;
	int			maxrows;
	Datum	   *values;
	bool	   *nulls;
} KeyValues;

/*
 * Read the rows visible to snap on up to ARRIVALS_PAGES pages spread
 * evenly over [first, end) of rel, keeping their key values in kv.
 */
static void
read_pages(Relation rel, int nkeys, ZKeyColumn *cols, Snapshot snap,
		   BlockNumber first, BlockNumber end, KeyValues *kv)
{
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	HeapTuple  *rows = palloc(sizeof(HeapTuple) * MaxHeapTuplesPerPage);
	TupleDesc	desc = RelationGetDescr(rel);
	BlockNumber span = end - first;
	int			npages = (int) Min(span, ARRIVALS_PAGES);

	kv->nrows = 0;
	kv->maxrows = npages * MaxHeapTuplesPerPage;
	kv->values = palloc(sizeof(Datum) * Max(kv->maxrows, 1) * nkeys);
	kv->nulls = palloc(sizeof(bool) * Max(kv->maxrows, 1) * nkeys);
	for (int p = 0; p < npages; p++)
	{
		BlockNumber blk = first + (BlockNumber) ((uint64) span * p / npages);
		int			n;

		CHECK_FOR_INTERRUPTS();
		n = zorder_block_rows(rel, blk, strategy, zorder_row_visible, snap,
							  rows);
		for (int i = 0; i < n; i++)
		{
			int			r = kv->nrows++;

			for (int k = 0; k < nkeys; k++)
			{
				bool		isnull;
				Datum		d = heap_getattr(rows[i], cols[k].attnum, desc,
											 &isnull);

				kv->nulls[r * nkeys + k] = isnull;
				kv->values[r * nkeys + k] = isnull ? (Datum) 0 :
					zorder_copy_value(&cols[k], d);
			}
		}
	}
	FreeAccessStrategy(strategy);
}

/*
 * The ranks, in [0, 1], of key k's non-NULL values in kv among the sorted
 * values before[0 .. nbefore): ties take the middle of their run.
 * Returns how many.
 */
static int
ranks_of(ZKeyColumn *col, int nkeys, int k, const KeyValues *kv,
		 const Datum *before, int nbefore, double *ranks)
{
	int			n = 0;

	for (int r = 0; r < kv->nrows; r++)
	{
		Datum		v = kv->values[r * nkeys + k];
		int64		below;
		int64		upto;

		if (kv->nulls[r * nkeys + k])
			continue;
		below = zorder_count_below(&col->ssup, before, nbefore, v, false);
		upto = zorder_count_below(&col->ssup, before, nbefore, v, true);
		ranks[n++] = (below + upto) / 2.0 / nbefore;
	}
	return n;
}

/*
 * Key k's verdict: the ranks of the latest rows' values and of the earlier
 * rows' own, among the earlier rows' values.
 */
static zp_arrivals
key_arrivals(ZKeyColumn *col, int nkeys, int k, const KeyValues *tail,
			 const KeyValues *base)
{
	Datum	   *sorted = palloc(sizeof(Datum) * Max(base->nrows, 1));
	double	   *ranks = palloc(sizeof(double) *
							   Max(Max(base->nrows, tail->nrows), 1));
	int			m = 0;
	int			ntail;
	int			nbase;
	double		tail_span;
	double		base_span;

	for (int r = 0; r < base->nrows; r++)
		if (!base->nulls[r * nkeys + k])
			sorted[m++] = base->values[r * nkeys + k];
	if (m == 0)
		return ZP_ARRIVALS_UNKNOWN;
	qsort_arg(sorted, m, sizeof(Datum), zorder_cmp_datums, &col->ssup);
	ntail = ranks_of(col, nkeys, k, tail, sorted, m, ranks);
	tail_span = zp_rank_span(ranks, ntail);
	nbase = ranks_of(col, nkeys, k, base, sorted, m, ranks);
	base_span = zp_rank_span(ranks, nbase);
	return zp_key_arrivals(tail_span, ntail, base_span, nbase);
}

/*
 * How rel's latest rows arrived, by its key columns (see the file's
 * header).  Reads 2 x ARRIVALS_PAGES pages at most.  Called as the table's
 * owner: the keys' comparison functions run.
 */
zp_arrivals
zorder_heap_arrivals(Relation rel)
{
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	ZKeyColumn	cols[ZORDER_MAX_KEYS];
	MemoryContext cxt;
	MemoryContext oldcxt;
	BlockNumber nblocks;
	BlockNumber tail_start;
	Snapshot	snap;
	KeyValues	tail;
	KeyValues	base;
	int			nkeys;
	zp_arrivals result = ZP_ARRIVALS_UNKNOWN;

	nblocks = RelationGetNumberOfBlocks(rel);
	tail_start = nblocks - nblocks / ARRIVALS_TAIL_SHARE;
	if (tail_start >= nblocks || tail_start == 0)
		return ZP_ARRIVALS_UNKNOWN;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder arrivals",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	nkeys = zorder_get_keys(rel, attnums);
	if (nkeys > 0)
	{
		for (int k = 0; k < nkeys; k++)
			zorder_prepare_key_column(rel, attnums[k], &cols[k]);
		snap = RegisterSnapshot(GetLatestSnapshot());
		read_pages(rel, nkeys, cols, snap, tail_start, nblocks, &tail);
		read_pages(rel, nkeys, cols, snap, 0, tail_start, &base);
		UnregisterSnapshot(snap);

		/*
		 * Crowded on one key is crowded on the curve: the rows reach few of
		 * its ranges.  Keys that tell nothing are passed over.
		 */
		for (int k = 0; k < nkeys; k++)
		{
			zp_arrivals a = key_arrivals(&cols[k], nkeys, k, &tail, &base);

			if (a == ZP_ARRIVALS_CROWDED)
			{
				result = ZP_ARRIVALS_CROWDED;
				break;
			}
			if (a == ZP_ARRIVALS_SPREAD)
				result = ZP_ARRIVALS_SPREAD;
		}
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return result;
}
