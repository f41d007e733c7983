/*-------------------------------------------------------------------------
 *
 * heappage.c
 *	  Reading the rows of a heap page to compute their keys.
 *
 * Whoever computes curve keys of stored rows (an incremental call finding
 * newcomers, the check of an externally rewritten heap, the sample that
 * chooses boundaries, the skipping statistics) reads pages the same way:
 * lock the page, take the rows it wants, copy them, and release the page
 * before computing anything.  A key may need a value detoasted, which reads
 * other buffers and must not happen under the page's lock; a copy also
 * outlives the pin.  The caller decides which rows it wants (ZRowKeep) and
 * owns the memory context the copies go into.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"

#include "heappage.h"
#include "zorder.h"

/* A ZRowKeep for the rows visible to a snapshot (arg). */
bool
zorder_row_visible(HeapTuple tuple, Buffer buf, void *arg)
{
	return HeapTupleSatisfiesVisibility(tuple, (Snapshot) arg, buf);
}

/*
 * The rows of the pinned buffer buf that keep takes: copied into rows
 * (room for MaxHeapTuplesPerPage) in the current memory context, or only
 * counted when rows is NULL.  Releases the buffer; returns how many.
 */
int
zorder_buffer_rows(Relation rel, Buffer buf, ZRowKeep keep, void *arg,
				   HeapTuple *rows)
{
	BlockNumber blk = BufferGetBlockNumber(buf);
	Page		page;
	OffsetNumber maxoff;
	int			n = 0;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	maxoff = PageIsNew(page) ? InvalidOffsetNumber :
		PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		HeapTupleData tuple;

		if (!zorder_page_tuple(rel, page, blk, off, &tuple))
			continue;
		if (!keep(&tuple, buf, arg))
			continue;
		if (rows != NULL)
			rows[n] = heap_copytuple(&tuple);
		n++;
	}
	UnlockReleaseBuffer(buf);
	return n;
}

/* A ZRowKeep that takes every tuple, whatever its visibility. */
static bool
keep_every_tuple(HeapTuple tuple, Buffer buf, void *arg)
{
	return true;
}

/*
 * The items of block blk of rel that hold a tuple, whatever its
 * visibility, read with strategy: counted, not copied.
 */
int
zorder_block_tuples(Relation rel, BlockNumber blk,
					BufferAccessStrategy strategy)
{
	return zorder_block_rows(rel, blk, strategy, keep_every_tuple, NULL, NULL);
}

/* zorder_buffer_rows for block blk of rel, read with strategy. */
int
zorder_block_rows(Relation rel, BlockNumber blk, BufferAccessStrategy strategy,
				  ZRowKeep keep, void *arg, HeapTuple *rows)
{
	Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL,
										 strategy);

	return zorder_buffer_rows(rel, buf, keep, arg, rows);
}
