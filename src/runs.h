/*-------------------------------------------------------------------------
 *
 * runs.h
 *	  The sorted runs of a table as an incremental call sees them (runs.c),
 *	  and the state every module of the call shares (IncrState).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_RUNS_H
#define ZORDER_RUNS_H

#include "common/pg_prng.h"
#include "storage/block.h"
#include "storage/itemptr.h"

#include "layout.h"

/*
 * One extent of a sorted run: contiguous blocks, whole BRIN ranges apart
 * from a last one that may be short.
 */
typedef struct Extent
{
	ZRunExtent	r;				/* what the catalog records (layout.h) */
	bool		consuming;		/* rows are moving out of it in this call */
	BlockNumber taken_to;		/* main run: the batch merges blocks before */
	int64		slice_rows;		/* main run: rows of it the batch merges */
	bool		fresh;			/* written by this slice of a merge */
} Extent;

/* What an incremental call works from: the layout and the runs. */
typedef struct IncrState
{
	ZLayout		lay;
	int			nextents;
	int			maxextents;
	Extent	   *extents;

	/*
	 * Per BRIN range of the table as the call found it: rows of a run still
	 * to move out of it, or -1 if none of its run's rows move.  A range
	 * whose count drops to 0 leaves its run.
	 */
	int32	   *remaining;
	BlockNumber nranges;

	/*
	 * Rows among the newcomers that did not arrive since the last call:
	 * listed as misplaced (left unmoved by it, or out of order in a
	 * recognised run), or laid out before in a band that got a region.
	 * They move, but earn the call no split budget (zp_split_budget).
	 */
	int64		listed;

	/*
	 * The TIDs of the rows taken from zorder.layouts.misplaced, sorted:
	 * each lies in a range of the main run and is not newer than it, so
	 * one that stays on its range (its key is in the range's) counts as
	 * that range's row from then on, whether the call writes there or not
	 * (place.c's place_targets).
	 */
	ItemPointerData *listed_tids;
	int			nlisted_tids;

	/*
	 * What the newcomers' key columns say of time-ordered keys (regions.c),
	 * counted while counting is set: newcomers seen, how many lie beyond
	 * the layout's highest value of each key column, and the highest value
	 * among them.
	 */
	bool		counting;
	int64		seen;
	int64		beyond[ZORDER_MAX_KEYS];
	bool		has_seen_top[ZORDER_MAX_KEYS];
	uint64		seen_top[ZORDER_MAX_KEYS];

	/*
	 * A sample of the newcomers of region 0 (ZR_SAMPLE rows, drawn with
	 * prng), for a narrow band of values they crowd into (regions.c): per
	 * row, each key column's value (zorder_ordered_u64) and whether it is
	 * null.  NULL unless a band may open.  seen0 counts the rows drawn from.
	 */
	uint64	   *sample;
	bool	   *sample_null;
	int			nsample;
	int64		seen0;
	pg_prng_state prng;
} IncrState;

extern int	zorder_add_extent(IncrState *st, BlockNumber first_block,
							  BlockNumber nblocks, int64 rows,
							  TransactionId xid, int run, uint64 key_lo);
extern void zorder_load_extents(Oid relid, IncrState *st);
extern int64 zorder_save_extents(Oid relid, IncrState *st);
extern void zorder_ensure_ranges(IncrState *st, BlockNumber nblocks);
extern bool zorder_blocks_in_run(IncrState *st, BlockNumber from,
								 BlockNumber to);
extern void zorder_trim_extents(IncrState *st, int *out, int run);

#endif							/* ZORDER_RUNS_H */
