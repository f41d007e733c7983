/*-------------------------------------------------------------------------
 *
 * incremental.h
 *	  The incremental zorder.optimize: its entry point, and what its modules
 *	  share.
 *
 * An incremental call is four modules over one call state (CallState),
 * each with its header for what the others call (batch.h, mover.h,
 * place.h); this one has the types they share:
 *
 * - incremental.c: the entry point and its phases (open the table and
 *   load the layout, collect the newcomers, choose the plan, merge key
 *   slices into the main run, write a cube, record the call), with the
 *   bookkeeping of the runs' extents;
 * - batch.c: the bounded batches: begin, move a batch of rows, save the
 *   runs, commit, reopen the table and check it did not change;
 * - mover.c: moving one row (delete, and insert of a copy where the
 *   writer says, with its index entries), and the writer that chooses the
 *   pages;
 * - place.c: placing newcomers into the main run's ranges and splitting
 *   full ones (the decisions themselves are placement.c's).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_INCREMENTAL_H
#define ZORDER_INCREMENTAL_H

#include "access/heapam.h"
#include "common/pg_prng.h"
#include "nodes/execnodes.h"
#include "utils/snapshot.h"

#include "layout.h"
#include "radix.h"
#include "zorder.h"

/* zorder.merge_threshold, zorder.band_regions */
extern double zorder_merge_threshold;
extern bool zorder_band_regions;
extern void zorder_incremental_init(void);

/* The entry point (incremental.c). */
extern bool zorder_optimize_incremental(Oid relid, const char *curve,
										bool can_commit);

/* a candidate's val: block << 16 | offset, and this bit if it is counted */
#define CAND_COUNTED	(UINT64CONST(1) << 63)
#define CAND_TID_MASK	UINT64CONST(0x0000FFFFFFFFFFFF)

/* A TID as a candidate's val holds it (val & CAND_TID_MASK). */
static inline uint64
zorder_cand_tid(ItemPointer tid)
{
	return ((uint64) ItemPointerGetBlockNumber(tid) << 16) |
		ItemPointerGetOffsetNumber(tid);
}
/* and, in bits 48 to 62, the row's length in bytes (at most a page) */
#define CAND_LEN_SHIFT	48
#define CAND_LEN_MASK	UINT64CONST(0x7FFF)
#define CAND_LEN(val)	((uint32) (((val) >> CAND_LEN_SHIFT) & CAND_LEN_MASK))

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

/* Growable array of (key, TID) pairs. */
typedef struct Candidates
{
	zr_item    *items;
	size_t		n;
	size_t		cap;
} Candidates;

/* Which rows of a block range zorder_collect_block_range takes. */
typedef enum CollectMode
{
	COLLECT_ALL,				/* outside every run */
	COLLECT_NEWER,				/* inserted after the run was written */
	COLLECT_OLDER				/* the rest of a run being merged */
} CollectMode;

/* Which rows of a page a collection takes. */
typedef struct CollectFilter
{
	Snapshot	snapshot;		/* those visible to it */
	CollectMode mode;
	TransactionId xid;			/* the run's, unless COLLECT_ALL */
} CollectFilter;

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

/* What an incremental call carries from batch to batch. */
typedef struct CallState
{
	Oid			relid;
	Relation	rel;
	bool		can_commit;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
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
} CallState;

/* incremental.c: the runs' extents and the rows a call collects */
extern int	zorder_add_extent(IncrState *st, BlockNumber first_block,
							  BlockNumber nblocks, int64 rows,
							  TransactionId xid, int run, uint64 key_lo);
extern int64 zorder_save_extents(Oid relid, IncrState *st);
extern void zorder_trim_extents(IncrState *st, Writer *w);
extern bool zorder_blocks_in_run(IncrState *st, BlockNumber from,
								 BlockNumber to);
extern void zorder_ensure_ranges(IncrState *st, BlockNumber nblocks);
extern void zorder_add_candidate(Candidates *c, uint64 key, ItemPointer tid,
								 bool counted, uint32 len);
extern uint64 zorder_row_key(IncrState *st, TupleDesc desc, HeapTuple tuple);
extern void zorder_collect_block_range(Relation rel, IncrState *st,
									   BlockNumber from, BlockNumber to,
									   CollectMode mode, TransactionId xid,
									   bool skip_frozen, bool counted,
									   Snapshot snapshot, Candidates *c,
									   MemoryContext tmpcxt);
extern bool zorder_collect_keep(HeapTuple tuple, Buffer buf, void *arg);
extern int	zorder_cmp_uint64(const void *a, const void *b);

#endif							/* ZORDER_INCREMENTAL_H */
