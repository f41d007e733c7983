/*-------------------------------------------------------------------------
 *
 * mover.h
 *	  Moving one row of an incremental call (mover.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_MOVER_H
#define ZORDER_MOVER_H

#include "access/heapam.h"
#include "nodes/execnodes.h"
#include "utils/snapshot.h"

#include "runs.h"

/*
 * Where moved rows go: whole BRIN ranges that are empty (left by earlier
 * moves and pruned or vacuumed since), the lowest first, else new ranges
 * at the end of the heap.  Each range a run starts is its own, so that no
 * range mixes two runs.
 */
typedef struct Writer
{
	BlockNumber *free;			/* first blocks of empty ranges, ascending */
	int			nfree;
	int			maxfree;
	BlockNumber cur;			/* page being filled, or InvalidBlockNumber */
	BlockNumber range_end;		/* end of cur's range */
	BlockNumber targeted;		/* block last given to heap_insert */
	Size		room;			/* free space left on cur, at least */
	int			lines;			/* new line pointers cur takes, at least */
	Size		savefree;		/* room fillfactor keeps free on a page */
	int			run;			/* the run being written */
	uint64		key;			/* key of the row being written */
	int			out;			/* its extent being written, or -1 */
	BlockNumber *started;		/* ranges started since the last commit */
	int			nstarted;
	int			maxstarted;

	/*
	 * Placement (see zorder_place_newcomers): with in_range, rows go only to the
	 * pages of the range being filled, and with ignore_fillfactor into the
	 * room the table's fillfactor keeps free there.  With per_range, every
	 * range written is an extent of its own, whose keys start at the key
	 * of its first row, or at key_lo_next for the first one.
	 */
	bool		in_range;
	BlockNumber range_first;	/* in_range: the range's first page */
	BlockNumber wrap_start;		/* in_range: the page filled first */
	bool		wrapped;		/* in_range: back at range_first since */
	bool		ignore_fillfactor;
	bool		per_range;
	bool		has_key_lo_next;
	uint64		key_lo_next;
} Writer;

/* One batch's executor state for index insertion. */
typedef struct MoveState
{
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	BulkInsertState bistate;
} MoveState;

/*
 * What the snapshot a call found its rows with says about which
 * transactions had committed: kept after the snapshot is released, as the
 * rows move in later transactions.
 */
typedef struct FoundSnapshot
{
	TransactionId xmin;
	TransactionId xmax;
	int			xcnt;
	TransactionId *xip;
	int			subxcnt;
	TransactionId *subxip;
	bool		suboverflowed;

	/*
	 * The call's own batches that committed since: the rows they moved are
	 * the call's, whenever it finds them.
	 */
	TransactionId *own;
	int			nown;
	int			maxown;

	/*
	 * When known (placement), the TIDs the call found with it, sorted
	 * (block << 16 | offset): a row of the call's own at one of them took
	 * the line pointer of the row found there, and is not that row.
	 */
	const uint64 *tids;
	size_t		ntids;
} FoundSnapshot;

extern bool zorder_blocks_recently_dead(Relation rel, BlockNumber from,
										BlockNumber to);
extern bool zorder_blocks_empty(Relation rel, BlockNumber from,
								BlockNumber to);
extern void zorder_writer_add_free(Writer *w, BlockNumber start);
extern void zorder_writer_start_run(Writer *w, int run);
extern void zorder_writer_record(IncrState *st, Writer *w, BlockNumber blk);
extern void zorder_move_begin(Relation rel, MoveState *ms);
extern void zorder_move_end(MoveState *ms);
extern void zorder_found_add_own(FoundSnapshot *f, TransactionId xid);
extern FoundSnapshot *zorder_found_snapshot(Snapshot snapshot,
											MemoryContext cxt);
extern BlockNumber zorder_move_row(Relation rel, IncrState *st, Writer *w,
								   MoveState *ms, ItemPointer tid,
								   Snapshot snapshot,
								   const FoundSnapshot *found);
extern void zorder_check_publications(Relation rel);

#endif							/* ZORDER_MOVER_H */
