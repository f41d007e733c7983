/*-------------------------------------------------------------------------
 *
 * collect.c
 *	  The rows an incremental call collects: each with its curve key and
 *	  TID as a candidate to move, read block by block from the heap.
 *
 * A row's key is the layout's (layout.c's zorder_layout_key_of), and while
 * the call counts its newcomers, their values also go to regions.c, which
 * decides from them whether time-ordered keys or a band of values need a
 * region of their own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/visibilitymap.h"

#include "collect.h"
#include "heappage.h"
#include "pg_compat.h"
#include "regions.h"

void
zorder_add_candidate(Candidates *c, uint64 key, ItemPointer tid, bool counted,
					 uint32 len)
{
	ZORDER_RESERVE(c->items, c->cap, c->n + 1, 1024, CurrentMemoryContext);
	c->items[c->n].key = key;
	c->items[c->n].val = zorder_cand_tid(tid) | (counted ? CAND_COUNTED : 0) |
		((uint64) Min(len, CAND_LEN_MASK) << CAND_LEN_SHIFT);
	c->n++;
}

/*
 * The curve key of a row, with the table's boundaries and regions: the key
 * zorder.layout_key computes while the layout has no regions, which
 * depends on the row's values alone (a frequent value's rows are spread by
 * a seed taken from those values), so a row keeps its key from one call to
 * the next.  While st->counting, the row is a newcomer and its values go
 * into the counts regions.c decides by; else they raise the layout's
 * highest values, as the row may move by this key (regions.c).
 */
uint64
zorder_row_key(IncrState *st, TupleDesc desc, HeapTuple tuple)
{
	Datum		values[ZORDER_MAX_KEYS];
	bool		nulls[ZORDER_MAX_KEYS];

	uint64		key;

	for (int k = 0; k < st->lay.nkeys; k++)
		values[k] = heap_getattr(tuple, st->lay.cols[k].attnum, desc,
								 &nulls[k]);
	key = zorder_layout_key_of(&st->lay, values, nulls);
	/* region 0's keys: the curve's, or its region's number is 0 */
	zorder_regions_see(st, values, nulls, st->counting,
					   st->lay.nregions == 0 || zk_region_of(key) == 0);
	return key;
}

/* A ZRowKeep (heappage.c) for the rows a CollectFilter selects. */
bool
zorder_collect_keep(HeapTuple tuple, Buffer buf, void *arg)
{
	CollectFilter *f = (CollectFilter *) arg;
	bool		newer;

	if (!HeapTupleSatisfiesVisibility(tuple, f->snapshot, buf))
		return false;
	if (f->mode != COLLECT_ALL)
	{
		newer = !HeapTupleHeaderXminFrozen(tuple->t_data) &&
			TransactionIdFollows(HeapTupleHeaderGetXmin(tuple->t_data), f->xid);
		if (newer != (f->mode == COLLECT_NEWER))
			return false;
	}
	return f->nskip == 0 ||
		bsearch(&tuple->t_self, f->skip, f->nskip, sizeof(ItemPointerData),
				zorder_cmp_tid) == NULL;
}

/* ItemPointerCompare for qsort and bsearch. */
int
zorder_cmp_tid(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/*
 * Scan blocks [from, to) and add the rows visible to snapshot that mode
 * selects, xid being the run's.  With skip, the pages it names are left
 * unread, and skip counts the pages left unread and those read.  With
 * counted, the rows are counted in their range's remaining rows.
 */
void
zorder_collect_block_range(Relation rel, IncrState *st, BlockNumber from,
						   BlockNumber to, CollectMode mode, TransactionId xid,
						   PageSkip *skip, bool counted, Snapshot snapshot,
						   Candidates *c, MemoryContext tmpcxt)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Buffer		vmbuf = InvalidBuffer;
	BufferAccessStrategy strategy;
	HeapTuple	picked[MaxHeapTuplesPerPage];
	CollectFilter filter = {snapshot, mode, xid, NULL, 0};

	/* a run's last pages may be gone: VACUUM truncates empty ones */
	to = Min(to, RelationGetNumberOfBlocks(rel));
	if (from >= to)
		return;
	strategy = GetAccessStrategy(BAS_BULKREAD);
	for (BlockNumber blk = from; blk < to; blk++)
	{
		MemoryContext oldcxt;
		Buffer		buf;
		int			npicked;

		CHECK_FOR_INTERRUPTS();

		/*
		 * An insert clears a page's all-frozen bit, and VACUUM sets it again
		 * only once every row there is frozen: a full rewrite freezes what
		 * it writes, so after the VACUUM that follows it the pages of the
		 * first run are skipped unread until a newcomer lands on them.
		 */
		if (skip != NULL && VM_ALL_FROZEN(rel, blk, &vmbuf))
		{
			skip->nfrozen++;
			continue;
		}
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);

		/*
		 * Every row written into a page sets its LSN past the record that
		 * wrote it, so a page whose LSN is not past skip->since has had no
		 * row written since then: the call that recorded it saw each of its
		 * rows (incremental.c, note_scan_lsn).  The page is in memory now,
		 * but its tuple headers are not touched, and they are most of the
		 * cost of a page read for its rows.
		 */
		if (skip != NULL && !XLogRecPtrIsInvalid(skip->since))
		{
			XLogRecPtr	lsn;

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			lsn = PageGetLSN(BufferGetPage(buf));
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			if (lsn <= skip->since)
			{
				ReleaseBuffer(buf);
				skip->nunchanged++;
				continue;
			}
		}
		if (skip != NULL)
			skip->nread++;

		oldcxt = MemoryContextSwitchTo(tmpcxt);
		npicked = zorder_buffer_rows(rel, buf, zorder_collect_keep, &filter,
									 picked);
		for (int i = 0; i < npicked; i++)
		{
			uint64		key = zorder_row_key(st, desc, picked[i]);

			MemoryContextSwitchTo(oldcxt);
			zorder_add_candidate(c, key, &picked[i]->t_self, counted,
								 picked[i]->t_len);
			if (counted && blk / st->lay.ppr < st->nranges)
				st->remaining[blk / st->lay.ppr]++;
			MemoryContextSwitchTo(tmpcxt);
		}
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(tmpcxt);
	}
	if (BufferIsValid(vmbuf))
		ReleaseBuffer(vmbuf);
	FreeAccessStrategy(strategy);
}

/* Sort rows to move by key. */
void
zorder_sort_candidates(Candidates *c)
{
	if (c->n > 1)
	{
		zr_item    *tmp = palloc_extended(c->n * sizeof(zr_item),
										  MCXT_ALLOC_HUGE);

		zr_sort(c->items, tmp, c->n);
		pfree(tmp);
	}
}
