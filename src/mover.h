/*-------------------------------------------------------------------------
 *
 * mover.h
 *	  Moving one row of an incremental call (mover.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_MOVER_H
#define ZORDER_MOVER_H

#include "incremental.h"

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
