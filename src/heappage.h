/*-------------------------------------------------------------------------
 *
 * heappage.h
 *	  Reading the rows of a heap page to compute their keys (heappage.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_HEAPPAGE_H
#define ZORDER_HEAPPAGE_H

#include "access/htup.h"
#include "storage/buf.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "zorder.h"

/* The heap tuple at item off of a locked page of rel, if the item has one. */
static inline bool
zorder_page_tuple(Relation rel, Page page, BlockNumber blk, OffsetNumber off,
				  HeapTuple tuple)
{
	ItemId		itemid = PageGetItemId(page, off);

	if (!ItemIdIsNormal(itemid))
		return false;
	tuple->t_data = (HeapTupleHeader) PageGetItem(page, itemid);
	tuple->t_len = ItemIdGetLength(itemid);
	tuple->t_tableOid = RelationGetRelid(rel);
	ItemPointerSet(&tuple->t_self, blk, off);
	return true;
}

/*
 * Which rows of a page a caller wants: called with the page's buffer
 * locked, so it must not detoast or do anything else that may read another
 * buffer.
 */
typedef bool (*ZRowKeep) (HeapTuple tuple, Buffer buf, void *arg);

/* A ZRowKeep for the rows visible to a snapshot (arg). */
extern bool zorder_row_visible(HeapTuple tuple, Buffer buf, void *arg);

extern int	zorder_buffer_rows(Relation rel, Buffer buf, ZRowKeep keep,
							   void *arg, HeapTuple *rows);
extern int	zorder_block_tuples(Relation rel, BlockNumber blk,
								BufferAccessStrategy strategy);
extern int	zorder_block_rows(Relation rel, BlockNumber blk,
							  BufferAccessStrategy strategy, ZRowKeep keep,
							  void *arg, HeapTuple *rows);

#endif							/* ZORDER_HEAPPAGE_H */
