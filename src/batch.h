/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  The bounded batches of an incremental call (batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_BATCH_H
#define ZORDER_BATCH_H

#include "incremental.h"

/* zorder.max_batch_size */
extern int	zorder_max_batch_size;
extern void zorder_batch_init(void);

extern void zorder_batch_begin(CallState *cs);
extern void zorder_move_items(CallState *cs, zr_item *items, size_t n);
extern bool zorder_prune_frees(CallState *cs);
extern void zorder_after_commit(CallState *cs, bool find_free);
extern void zorder_add_loose(CallState *cs, BlockNumber r);
extern bool zorder_resummarize_loose(CallState *cs);
extern void zorder_tighten_loose(CallState *cs);
extern void zorder_save_batch(CallState *cs);
extern bool zorder_commit_and_reopen(CallState *cs, LOCKMODE lockmode);
extern void zorder_batch_end(CallState *cs, bool more);
extern void zorder_batch_rotate(CallState *cs, int64 *batch_rows);
extern void zorder_batch_move(CallState *cs, zr_item *items, size_t n,
							  bool leave_open);

#endif							/* ZORDER_BATCH_H */
