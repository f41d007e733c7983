/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  The bounded batches of an incremental call (batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_BATCH_H
#define ZORDER_BATCH_H

#include "storage/lockdefs.h"

#include "access.h"
#include "mover.h"
#include "radix.h"

/* What an incremental call carries from batch to batch. */
typedef struct CallState
{
	Oid			relid;
	Relation	rel;
	bool		can_commit;
	ZOwnerSwitch owner;			/* the call runs as the table's owner */
	MemoryContext keep_cxt;
	MemoryContext batch_cxt;	/* reset after every batch */
	MemoryContext tmp_cxt;		/* reset after every page */
	MemoryContext caller_cxt;
	IncrState  *st;
	Writer	   *w;
	Snapshot	snapshot;		/* the batch's */
	bool		pushed;
	FoundSnapshot *found;		/* the one the rows to move were found with */
	BlockNumber *vacated;		/* blocks rows left since the last commit */
	size_t		nvacated;
	size_t		maxvacated;

	/*
	 * BRIN ranges summarized while rows that left them were still visible
	 * to some snapshot, in keep_cxt: summarized again by the next call
	 * (zorder.layouts.loose_ranges).
	 */
	BlockNumber *loose;
	int			nloose;
	int			maxloose;
	bool		had_loose;		/* the catalog listed some */
	int64		moved;
	int64		pages_written;	/* heap pages moved rows went into */
	BlockNumber last_written;	/* the last of them */

	/*
	 * What the batches rely on, checked after every commit: the table's
	 * file, kind and access method as the call found them, and the
	 * transaction that saved the runs last with how many extents.
	 */
	Oid			relfilenode;
	char		relkind;
	Oid			relam;
	TransactionId saved_xid;
	int64		saved_extents;
	const char *changed;		/* errdetail: what changed, or NULL */

	/*
	 * Where the placement's newcomers went (room.c tells spread appends
	 * from time-ordered or banded ones by it): the main run's ranges, and
	 * how many of them hold some newcomer's key.
	 */
	int64		ranges_main;
	int64		ranges_reached;

	/*
	 * A newcomer it found stays on a page of a run, neither moved nor
	 * listed as misplaced: the next call must read every page of the runs
	 * to find it again (incremental.c, note_scan_lsn).
	 */
	bool		left_unlisted;
} CallState;

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
