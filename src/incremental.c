/*-------------------------------------------------------------------------
 *
 * incremental.c
 *	  Incremental zorder.optimize: sort only the rows that are not yet in a
 *	  sorted run into a new run ("cube"), and now and then merge the cubes
 *	  back into the table's main run.
 *
 * After a full optimize the heap is one sorted run, the main run.  Appended
 * rows land after it or in free space inside it; an incremental call finds
 * them, computes their curve keys with the boundaries the table's layout
 * recorded, sorts (key, TID) pairs, and moves the rows in key order into a
 * cube: a delete of the old version and an insert of a copy, with every
 * index entry made.  The newest cubes no bigger than what comes in are
 * merged into the new one, so that the number of cubes stays logarithmic,
 * like a binary counter.
 *
 * Each cube spans the whole key space, so a point filter reads some ranges
 * of every cube.  Once the rows outside the main run pass
 * zorder.merge_threshold of the table, a call merges them into it: it
 * takes the main run one key slice per batch (whole BRIN ranges, in key
 * order from a cursor saved in the layout), adds the cubes' rows of the
 * same keys, and writes them sorted.  Rows go to whole BRIN ranges left
 * empty by earlier moves, pruned right after the batch that emptied them
 * committed, so the heap grows by about one slice rather than doubling;
 * the main run ends up as several extents, each sorted, together covering
 * the key space once.  Every batch saves the runs in the catalog with its
 * moves, so a call cut short leaves a catalog that matches the heap and a
 * merge the next call resumes.
 *
 * The moves take EXCLUSIVE lock: plain SELECTs go on, while writers and row
 * lockers wait until the batch commits.  A writer that waited then takes its
 * snapshot after the commit and acts on the moved row, so no UPDATE
 * silently misses one.  Outside a transaction block, each batch of at most
 * zorder.max_batch_size rows commits on its own.  Moves are ordinary
 * heap deletes and inserts, so logical replication and standbys see them
 * as what they are; triggers do not fire.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/brin.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "access/xloginsert.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_publication.h"
#include "commands/progress.h"
#include "commands/tablecmds.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "brin.h"
#include "keyenc.h"
#include "layout.h"
#include "layoutkey.h"
#include "pg_compat.h"
#include "placement.h"
#include "radix.h"
#include "zorder.h"

/* Most rows one batch moves before it commits (zorder.max_batch_size). */
int			zorder_max_batch_size = 100000;

/*
 * Share of the table's rows outside the main run above which a call merges
 * them into it (zorder.merge_threshold): the whole table moves.  At 1, the
 * default, no call merges unless one is under way.
 */
double		zorder_merge_threshold = 1.0;

/*
 * Place newcomers into the main run's ranges, splitting full ones
 * (zorder.placement), rather than making cubes of them.
 */
bool		zorder_placement = true;

/* a merge takes the main run in about this many slices */
#define MERGE_SLICES	64

/* a candidate's val: block << 16 | offset, and this bit if it is counted */
#define CAND_COUNTED	(UINT64CONST(1) << 63)
#define CAND_TID_MASK	UINT64CONST(0x0000FFFFFFFFFFFF)
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
	BlockNumber first_block;
	BlockNumber nblocks;
	int64		rows;
	TransactionId xid;			/* rows with a newer xmin came later */
	int			run;			/* 0: the main run; cubes: newer ones higher */
	uint64		key_lo;			/* main run: where its keys start */
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
} IncrState;

/* Append an extent to the state; returns its index. */
static int
add_extent(IncrState *st, BlockNumber first_block, BlockNumber nblocks,
		   int64 rows, TransactionId xid, int run, uint64 key_lo)
{
	Extent	   *e;

	if (st->nextents == st->maxextents)
	{
		st->maxextents = Max(16, st->maxextents * 2);
		st->extents = st->extents ?
			repalloc(st->extents, sizeof(Extent) * st->maxextents) :
			palloc(sizeof(Extent) * st->maxextents);
	}
	e = &st->extents[st->nextents];
	memset(e, 0, sizeof(Extent));
	e->first_block = first_block;
	e->nblocks = nblocks;
	e->rows = rows;
	e->xid = xid;
	e->run = run;
	e->key_lo = key_lo;
	e->taken_to = first_block;
	return st->nextents++;
}

/* The table's runs, extent by extent, in heap order (layout.c). */
static void
load_extents(Oid relid, IncrState *st)
{
	ZRunExtent *runs;
	int			n = zorder_runs_load(relid, &runs);

	st->nextents = 0;
	for (int i = 0; i < n; i++)
		add_extent(st, runs[i].first_block, runs[i].nblocks, runs[i].rows,
				   runs[i].xid, runs[i].run, runs[i].key_lo);
}

/*
 * Save the runs and the merge cursor in the catalog (layout.c), replacing
 * what it had.  Returns how many extents it saved.
 */
static int64
save_extents(Oid relid, IncrState *st)
{
	ZRunExtent *runs = palloc(sizeof(ZRunExtent) * Max(st->nextents, 1));

	for (int i = 0; i < st->nextents; i++)
	{
		Extent	   *e = &st->extents[i];

		runs[i].first_block = e->first_block;
		runs[i].nblocks = e->nblocks;
		runs[i].rows = e->rows;
		runs[i].xid = e->xid;
		runs[i].run = e->run;
		runs[i].key_lo = e->key_lo;
	}
	return zorder_runs_save(relid, runs, st->nextents, st->lay.merging,
							st->lay.cursor);
}

/* Growable array of (key, TID) pairs. */
typedef struct Candidates
{
	zr_item    *items;
	size_t		n;
	size_t		cap;
} Candidates;

static void
add_candidate(Candidates *c, uint64 key, ItemPointer tid, bool counted,
			  uint32 len)
{
	if (c->n == c->cap)
	{
		c->cap = Max(1024, c->cap * 2);
		c->items = c->items ?
			repalloc_huge(c->items, c->cap * sizeof(zr_item)) :
			palloc_extended(c->cap * sizeof(zr_item), MCXT_ALLOC_HUGE);
	}
	c->items[c->n].key = key;
	c->items[c->n].val = ((uint64) ItemPointerGetBlockNumber(tid) << 16) |
		ItemPointerGetOffsetNumber(tid) | (counted ? CAND_COUNTED : 0) |
		((uint64) Min(len, CAND_LEN_MASK) << CAND_LEN_SHIFT);
	c->n++;
}

/*
 * The curve key of a row, with the table's boundaries: the key
 * zorder.layout_key computes, which depends on the row's values alone (a
 * frequent value's rows are spread by a seed taken from those values), so
 * a row keeps its key from one call to the next.
 */
static uint64
row_key(IncrState *st, TupleDesc desc, HeapTuple tuple)
{
	Datum		kvals[ZORDER_MAX_KEYS];
	bool		knulls[ZORDER_MAX_KEYS];
	uint32		coords[ZORDER_MAX_KEYS];

	for (int k = 0; k < st->lay.nkeys; k++)
		kvals[k] = heap_getattr(tuple, st->lay.cols[k].attnum, desc, &knulls[k]);
	zorder_row_coordinates(st->lay.cols, st->lay.nkeys, kvals, knulls, st->lay.bits,
						   coords);
	return zorder_curve_key(st->lay.curve, st->lay.nkeys, st->lay.bits, coords);
}

/* Which rows of a block range collect_block_range takes. */
typedef enum CollectMode
{
	COLLECT_ALL,				/* outside every run */
	COLLECT_NEWER,				/* inserted after the run was written */
	COLLECT_OLDER				/* the rest of a run being merged */
} CollectMode;

/*
 * Scan blocks [from, to) and add the rows visible to snapshot that mode
 * selects, xid being the run's.  With skip_frozen, pages VACUUM marked
 * all-frozen are skipped.  With counted, the rows are counted in their
 * range's remaining rows.
 */
static void
collect_block_range(Relation rel, IncrState *st, BlockNumber from,
					BlockNumber to, CollectMode mode, TransactionId xid,
					bool skip_frozen, bool counted, Snapshot snapshot,
					Candidates *c, MemoryContext tmpcxt)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Buffer		vmbuf = InvalidBuffer;
	BufferAccessStrategy strategy;
	HeapTuple	picked[MaxHeapTuplesPerPage];
	int			npicked;
	MemoryContext oldcxt;

	/* a run's last pages may be gone: VACUUM truncates empty ones */
	to = Min(to, RelationGetNumberOfBlocks(rel));
	if (from >= to)
		return;
	strategy = GetAccessStrategy(BAS_BULKREAD);
	for (BlockNumber blk = from; blk < to; blk++)
	{
		Buffer		buf;
		Page		page;
		OffsetNumber maxoff;

		CHECK_FOR_INTERRUPTS();

		/*
		 * An insert clears a page's all-frozen bit, and VACUUM sets it again
		 * only once every row there is frozen: a full rewrite freezes what
		 * it writes, so after the VACUUM that follows it the pages of the
		 * first run are skipped unread until a newcomer lands on them.
		 */
		if (skip_frozen && VM_ALL_FROZEN(rel, blk, &vmbuf))
			continue;

		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		maxoff = PageGetMaxOffsetNumber(page);

		/*
		 * Copy the rows first: their keys may need detoasting, which must
		 * not happen under the buffer lock.
		 */
		npicked = 0;
		oldcxt = MemoryContextSwitchTo(tmpcxt);
		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			HeapTupleData tuple;

			if (!zorder_page_tuple(rel, page, blk, off, &tuple))
				continue;
			if (!HeapTupleSatisfiesVisibility(&tuple, snapshot, buf))
				continue;
			if (mode != COLLECT_ALL)
			{
				bool		newer;

				newer = !HeapTupleHeaderXminFrozen(tuple.t_data) &&
					TransactionIdFollows(HeapTupleHeaderGetXmin(tuple.t_data),
										 xid);
				if (newer != (mode == COLLECT_NEWER))
					continue;
			}
			picked[npicked++] = heap_copytuple(&tuple);
		}
		MemoryContextSwitchTo(oldcxt);
		UnlockReleaseBuffer(buf);

		oldcxt = MemoryContextSwitchTo(tmpcxt);
		for (int i = 0; i < npicked; i++)
		{
			uint64		key = row_key(st, desc, picked[i]);

			MemoryContextSwitchTo(oldcxt);
			add_candidate(c, key, &picked[i]->t_self, counted,
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

/* Make sure block blk exists, extending rel with empty pages up to it. */
static void
extend_to(Relation rel, BlockNumber blk)
{
	while (RelationGetNumberOfBlocks(rel) <= blk)
	{
		Buffer		buf;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		LockRelationForExtension(rel, ExclusiveLock);
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK,
								 NULL);
		UnlockRelationForExtension(rel, ExclusiveLock);
		page = BufferGetPage(buf);
		START_CRIT_SECTION();
		PageInit(page, BufferGetPageSize(buf), 0);
		MarkBufferDirty(buf);
		if (RelationNeedsWAL(rel))
			log_newpage_buffer(buf, true);
		END_CRIT_SECTION();
		UnlockReleaseBuffer(buf);
	}
}

static int
cmp_block(const void *a, const void *b)
{
	BlockNumber x = *(const BlockNumber *) a;
	BlockNumber y = *(const BlockNumber *) b;

	return (x > y) - (x < y);
}

/*
 * Desummarize and/or summarize, in every BRIN index of rel, the ranges that
 * cover blocks [from, to).
 */
static void
brin_ranges(Relation rel, BlockNumber from, BlockNumber to,
			bool desummarize, bool summarize)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		Relation	index;
		BlockNumber ppr;

		index = index_open(indexoid, AccessShareLock);
		if (index->rd_rel->relam != BRIN_AM_OID)
		{
			index_close(index, AccessShareLock);
			continue;
		}
		ppr = BrinGetPagesPerRange(index);
		index_close(index, AccessShareLock);

		for (BlockNumber b = from - from % ppr; b < to; b += ppr)
		{
			CHECK_FOR_INTERRUPTS();
			if (desummarize)
				DirectFunctionCall2(brin_desummarize_range,
									ObjectIdGetDatum(indexoid),
									Int64GetDatum((int64) b));
			if (summarize)
				DirectFunctionCall2(brin_summarize_range,
									ObjectIdGetDatum(indexoid),
									Int64GetDatum((int64) b));
		}
	}
	list_free(indexes);
}

/* Summarize every range of rel's BRIN indexes that has no summary. */
static void
brin_summarize_rest(Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);

		Relation	index = index_open(indexoid, AccessShareLock);
		bool		brin = index->rd_rel->relam == BRIN_AM_OID;

		index_close(index, AccessShareLock);
		if (brin)
			DirectFunctionCall1(brin_summarize_new_values,
								ObjectIdGetDatum(indexoid));
	}
	list_free(indexes);
}

/* True if no page of blocks [from, to) holds a tuple, live or dead. */
static bool
blocks_empty(Relation rel, BlockNumber from, BlockNumber to)
{
	for (BlockNumber blk = from; blk < to; blk++)
	{
		Buffer		buf;
		Page		page;
		bool		empty = true;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(rel, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!PageIsNew(page))
		{
			OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

			/* what pruning leaves (dead line pointers) takes no room */
			for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
			{
				ItemId		id = PageGetItemId(page, off);

				if (ItemIdIsNormal(id) || ItemIdIsRedirected(id))
				{
					empty = false;
					break;
				}
			}
		}
		UnlockReleaseBuffer(buf);
		if (!empty)
			return false;
	}
	return true;
}

/* True if some extent of a run covers a block of [from, to). */
static bool
blocks_in_run(IncrState *st, BlockNumber from, BlockNumber to)
{
	for (int i = 0; i < st->nextents; i++)
	{
		Extent	   *e = &st->extents[i];

		if (e->nblocks > 0 && e->first_block < to &&
			e->first_block + e->nblocks > from)
			return true;
	}
	return false;
}

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
	 * Placement (see place_newcomers): with in_range, rows go only to the
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

static void
writer_add_free(Writer *w, BlockNumber start)
{
	int			pos = 0;

	while (pos < w->nfree && w->free[pos] < start)
		pos++;
	if (pos < w->nfree && w->free[pos] == start)
		return;
	if (w->nfree == w->maxfree)
	{
		w->maxfree = Max(64, w->maxfree * 2);
		w->free = w->free ? repalloc(w->free, sizeof(BlockNumber) * w->maxfree) :
			palloc(sizeof(BlockNumber) * w->maxfree);
	}
	memmove(&w->free[pos + 1], &w->free[pos],
			sizeof(BlockNumber) * (w->nfree - pos));
	w->free[pos] = start;
	w->nfree++;
}

/* Start a new range: the lowest empty one, or a new one at the end. */
static void
writer_next_range(Relation rel, IncrState *st, Writer *w)
{
	BlockNumber start = InvalidBlockNumber;

	while (w->nfree > 0)
	{
		start = w->free[0];
		w->nfree--;
		memmove(&w->free[0], &w->free[1], sizeof(BlockNumber) * w->nfree);

		/*
		 * Others may have inserted there between two batches, before this
		 * call kept them out of the range; what VACUUM truncated since is
		 * empty and comes back with extend_to.
		 */
		if (blocks_empty(rel, start,
						 Min(start + st->lay.ppr, RelationGetNumberOfBlocks(rel))))
			break;
		start = InvalidBlockNumber;
	}
	if (start != InvalidBlockNumber)
	{
		/* a summary made before would cover what comes in too */
		brin_ranges(rel, start, start + st->lay.ppr, true, false);
		/* and inserts by others between batches must not land here */
		for (BlockNumber b = start; b < start + st->lay.ppr; b++)
			RecordPageWithFreeSpace(rel, b, 0);
	}
	else
	{
		BlockNumber end = RelationGetNumberOfBlocks(rel);

		start = ((end + st->lay.ppr - 1) / st->lay.ppr) * st->lay.ppr;
	}
	w->cur = start;
	w->range_end = start + st->lay.ppr;
	w->room = 0;
	w->lines = 0;
	if (w->nstarted == w->maxstarted)
	{
		w->maxstarted = Max(64, w->maxstarted * 2);
		w->started = w->started ?
			repalloc(w->started, sizeof(BlockNumber) * w->maxstarted) :
			palloc(sizeof(BlockNumber) * w->maxstarted);
	}
	w->started[w->nstarted++] = start;
}

/* Start writing run number run on a fresh range. */
static void
writer_start_run(Writer *w, int run)
{
	w->run = run;
	w->out = -1;
	w->cur = InvalidBlockNumber;
}

/*
 * True if page blk can take a tuple of need bytes; *room gets its free
 * space and *lines how many line pointers it can still add.
 */
static bool
page_has_room(Relation rel, BlockNumber blk, Size need, Size *room,
			  int *lines)
{
	Buffer		buf = ReadBuffer(rel, blk);
	Page		page;
	bool		fits;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	*room = PageIsNew(page) ? MaxHeapTupleSize : PageGetHeapFreeSpace(page);
	*lines = MaxHeapTuplesPerPage -
		(PageIsNew(page) ? 0 : (int) PageGetMaxOffsetNumber(page));
	/* an empty page takes whatever it can: no better page exists */
	fits = PageIsNew(page) || PageIsEmpty(page) || *room >= need;
	UnlockReleaseBuffer(buf);
	return fits;
}

/*
 * Point heap_insert at the page where a tuple of len bytes goes next.
 * heap_insert without the free space map uses that page if the tuple fits,
 * which page_has_room made sure of.
 */
static bool
writer_place(Relation rel, IncrState *st, Writer *w, BulkInsertState bistate,
			 Size len)
{
	Size		need = MAXALIGN(len) + w->savefree;
	Size		used = MAXALIGN(len) + sizeof(ItemIdData);

	/*
	 * Within a batch only this call inserts into the table (its lock keeps
	 * writers out) and pruning only frees space, so what the page had left
	 * after the last insert is a floor: read it again only when that is
	 * not enough.
	 */
	if (!(w->cur != InvalidBlockNumber && w->cur < w->range_end &&
		  w->room >= need && w->lines > 0))
	{
		for (;;)
		{
			if (w->in_range && w->cur >= w->range_end && !w->wrapped)
			{
				/* on with the pages before the one filled first */
				w->cur = w->range_first;
				w->wrapped = true;
			}
			if (w->in_range &&
				(w->cur >= w->range_end || (w->wrapped && w->cur >= w->wrap_start)))
			{
				/* the range is full after all: heap_insert finds a page */
				w->room = 0;
				w->lines = 0;
				ReleaseBulkInsertStatePin(bistate);
				w->targeted = InvalidBlockNumber;
				RelationSetTargetBlock(rel, InvalidBlockNumber);
				return false;
			}
			if (w->cur == InvalidBlockNumber || w->cur >= w->range_end)
				writer_next_range(rel, st, w);
			extend_to(rel, w->cur);
			if (page_has_room(rel, w->cur, need, &w->room, &w->lines))
				break;
			w->cur++;
		}
	}
	/*
	 * As PageGetHeapFreeSpace counts: a line pointer off too, and nothing
	 * left once the page has as many as a page can (one reused instead of
	 * added only leaves more).
	 */
	w->room = w->room > used ? w->room - used : 0;
	w->lines--;
	if (w->targeted != w->cur)
	{
		/* heap_insert would go on with the page it holds pinned */
		ReleaseBulkInsertStatePin(bistate);
		w->targeted = w->cur;
	}
	RelationSetTargetBlock(rel, w->cur);
	return true;
}

/* Count a row written on page blk in the extent being written. */
static void
writer_record(IncrState *st, Writer *w, BlockNumber blk)
{
	Extent	   *e = w->out >= 0 ? &st->extents[w->out] : NULL;

	if (e && blk >= e->first_block && blk < e->first_block + e->nblocks)
		;
	else if (e && blk == e->first_block + e->nblocks &&
			 !(w->per_range && blk % st->lay.ppr == 0))
		e->nblocks++;
	else
	{
		w->out = add_extent(st, blk, 1, 0, InvalidTransactionId, w->run,
							w->has_key_lo_next ? w->key_lo_next : w->key);
		w->has_key_lo_next = false;
		e = &st->extents[w->out];
		e->fresh = true;
	}
	e->rows++;
	/* saved with the xid of the batch that wrote last into it */
	e->xid = InvalidTransactionId;
}

/* One batch's executor state for index insertion. */
typedef struct MoveState
{
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	BulkInsertState bistate;
} MoveState;

static void
move_begin(Relation rel, MoveState *ms)
{
	ms->estate = CreateExecutorState();
	ms->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(ms->rri, rel, 1, NULL, 0);
	ExecOpenIndices(ms->rri, false);
	ms->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
										&TTSOpsHeapTuple);
	ms->bistate = GetBulkInsertState();
}

static void
move_end(MoveState *ms)
{
	FreeBulkInsertState(ms->bistate);
	ExecDropSingleTupleTableSlot(ms->slot);
	ExecCloseIndices(ms->rri);
	FreeExecutorState(ms->estate);
}

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
} FoundSnapshot;

static FoundSnapshot *
found_snapshot(Snapshot snapshot, MemoryContext cxt)
{
	FoundSnapshot *f = MemoryContextAllocZero(cxt, sizeof(FoundSnapshot));

	f->xmin = snapshot->xmin;
	f->xmax = snapshot->xmax;
	f->xcnt = snapshot->xcnt;
	f->xip = MemoryContextAlloc(cxt, sizeof(TransactionId) * Max(f->xcnt, 1));
	memcpy(f->xip, snapshot->xip, sizeof(TransactionId) * f->xcnt);
	f->suboverflowed = snapshot->suboverflowed;
	f->subxcnt = f->suboverflowed ? 0 : snapshot->subxcnt;
	f->subxip = MemoryContextAlloc(cxt, sizeof(TransactionId) * Max(f->subxcnt, 1));
	memcpy(f->subxip, snapshot->subxip, sizeof(TransactionId) * f->subxcnt);
	return f;
}

/*
 * True unless the tuple at a TID the call found was inserted after it
 * found it: then the row it found there is gone, VACUUM freed its line
 * pointer between two batches and another row took it, which is not the
 * call's to move.  (A table rewritten in between is caught before, by its
 * new file.)  Only the inserting transaction tells the two apart: one that
 * had committed when the call looked is old enough.  A subtransaction
 * that was running then is not in the snapshot's list when that list
 * overflowed, and is taken for committed; a row VACUUM froze since is
 * taken for old.
 */
static bool
found_before(HeapTupleHeader tup, const FoundSnapshot *f)
{
	TransactionId xmin;

	if (f == NULL || HeapTupleHeaderXminFrozen(tup))
		return true;
	xmin = HeapTupleHeaderGetRawXmin(tup);
	if (!TransactionIdIsNormal(xmin) || TransactionIdPrecedes(xmin, f->xmin))
		return true;
	if (!TransactionIdPrecedes(xmin, f->xmax))
		return false;
	for (int i = 0; i < f->xcnt; i++)
		if (TransactionIdEquals(xmin, f->xip[i]))
			return false;
	for (int i = 0; i < f->subxcnt; i++)
		if (TransactionIdEquals(xmin, f->subxip[i]))
			return false;
	return true;
}

/*
 * heap_insert into the page the writer chose, taking the room the table's
 * fillfactor keeps free there: heap_insert honours fillfactor on its target
 * page too, which is what keeps ordinary INSERTs out of that room.  The
 * setting is lowered in this backend's relation cache entry for the one
 * call and put back at once, error or not; the table's lock keeps others
 * from changing it meanwhile, and an invalidation that rebuilt the entry
 * in between only means the row goes elsewhere.
 */
static void
insert_into_reserve(Relation rel, HeapTuple tup, CommandId cid,
					BulkInsertState bistate)
{
	StdRdOptions *opts = (StdRdOptions *) rel->rd_options;
	int			saved;

	if (opts == NULL || opts->fillfactor >= 100)
	{
		heap_insert(rel, tup, cid, HEAP_INSERT_SKIP_FSM, bistate);
		return;
	}
	saved = opts->fillfactor;
	opts->fillfactor = 100;
	PG_TRY();
	{
		heap_insert(rel, tup, cid, HEAP_INSERT_SKIP_FSM, bistate);
	}
	PG_FINALLY();
	{
		opts = (StdRdOptions *) rel->rd_options;
		if (opts != NULL)
			opts->fillfactor = saved;
	}
	PG_END_TRY();
}

/*
 * Move one row: delete it and insert a copy where the writer says.
 * Returns the new block, or InvalidBlockNumber if the row is gone or
 * changed, or is not the one the call found at that TID (see
 * found_before).
 */
static BlockNumber
move_row(Relation rel, IncrState *st, Writer *w, MoveState *ms,
		 ItemPointer tid, Snapshot snapshot, const FoundSnapshot *found)
{
	HeapTupleData tuple;
	Buffer		buf;
	HeapTuple	copy;
	TM_FailureData tmfd;
	CommandId	cid = GetCurrentCommandId(true);

	tuple.t_self = *tid;
	if (!heap_fetch(rel, snapshot, &tuple, &buf, false))
		return InvalidBlockNumber;
	copy = heap_copytuple(&tuple);
	ReleaseBuffer(buf);
	if (!found_before(copy->t_data, found))
	{
		heap_freetuple(copy);
		return InvalidBlockNumber;
	}

	/*
	 * Delete first, so that unique indexes see no duplicate.  The delete is
	 * marked as a move (as a row moving to another partition is): a
	 * statement whose snapshot predates the move and that then tries to
	 * update or lock the row gets a serialization error to retry on,
	 * instead of silently finding the row gone.
	 */
	if (zorder_heap_delete_moved(rel, tid, cid, &tmfd) != TM_Ok)
	{
		heap_freetuple(copy);
		return InvalidBlockNumber;
	}
	if (writer_place(rel, st, w, ms->bistate, copy->t_len) &&
		w->ignore_fillfactor)
		insert_into_reserve(rel, copy, cid, ms->bistate);
	else
		heap_insert(rel, copy, cid, HEAP_INSERT_SKIP_FSM, ms->bistate);
	ExecStoreHeapTuple(copy, ms->slot, true);
	zorder_insert_index_entries(ms->rri, ms->slot, ms->estate);
	ResetPerTupleExprContext(ms->estate);
	return ItemPointerGetBlockNumber(&copy->t_self);
}

static List *relation_publications(Relation rel);

/*
 * Refuse moves on a table published by a publication that replicates
 * inserts but not deletes, or the reverse.
 *
 * Every publication that carries the table's changes counts, a partition's
 * through an ancestor too (with publish_via_partition_root, its rows reach
 * the subscriber under the root's name).  Everything is looked up by OID,
 * never by a name that a concurrent rename could point elsewhere.
 */
static void
check_publications(Relation rel)
{
	List	   *puboids;
	ListCell   *lc;

	if (!is_publishable_relation(rel))
		return;

	puboids = relation_publications(rel);
	foreach(lc, puboids)
	{
		HeapTuple	tup;
		Form_pg_publication pubform;

		tup = SearchSysCache1(PUBLICATIONOID, ObjectIdGetDatum(lfirst_oid(lc)));
		if (!HeapTupleIsValid(tup))
			continue;			/* dropped since: it publishes nothing */
		pubform = (Form_pg_publication) GETSTRUCT(tup);
		if (pubform->pubinsert != pubform->pubdelete)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot move rows of table \"%s\" incrementally",
							RelationGetRelationName(rel)),
					 errdetail("Publication \"%s\" publishes either inserts or deletes but not both, so a subscriber would not see the moves as moves.",
							   NameStr(pubform->pubname)),
					 errhint("Use zorder.optimize with full => true: logical replication does not see a rewrite.")));
		ReleaseSysCache(tup);
	}
	list_free(puboids);
}

/*
 * Take out of their runs the ranges none of whose rows are left, now that a
 * batch moved them.  What is left of a main-run extent after a slice starts
 * at the merge cursor in key order.
 */
static void
trim_extents(IncrState *st, Writer *w)
{
	Extent	   *old = st->extents;
	int			nold = st->nextents;
	BlockNumber out_first = InvalidBlockNumber;

	if (w->out >= 0)
		out_first = old[w->out].first_block;
	st->extents = NULL;
	st->nextents = st->maxextents = 0;
	for (int i = 0; i < nold; i++)
	{
		Extent	   *e = &old[i];
		BlockNumber end = e->first_block + e->nblocks;
		BlockNumber piece = InvalidBlockNumber;
		int64		rows = 0;

		if (!e->consuming)
		{
			int			k = add_extent(st, e->first_block, e->nblocks, e->rows,
									   e->xid, e->run, e->key_lo);

			st->extents[k] = *e;
			if (e->first_block == out_first && e->run == w->run)
				w->out = k;
			continue;
		}

		for (BlockNumber b = e->first_block; b <= end;)
		{
			BlockNumber r = b / st->lay.ppr;
			BlockNumber next = Min(b - b % st->lay.ppr + st->lay.ppr, end);
			bool		keep;

			keep = b < end && (r >= st->nranges || st->remaining[r] != 0);
			if (keep)
			{
				if (piece == InvalidBlockNumber)
					piece = b;
				if (r < st->nranges && st->remaining[r] > 0)
					rows += st->remaining[r];
			}
			else if (piece != InvalidBlockNumber)
			{
				int			k;

				if (e->run == 0)
					k = add_extent(st, piece, b - piece,
								   Max(e->rows - e->slice_rows, 0), e->xid, 0,
								   piece == e->first_block ? e->key_lo : st->lay.cursor);
				else
				{
					k = add_extent(st, piece, b - piece, rows, e->xid, e->run,
								   e->key_lo);
					st->extents[k].consuming = true;
				}
				piece = InvalidBlockNumber;
				rows = 0;
			}
			if (b == end)
				break;
			b = next;
		}
	}
	/* a table whose runs are all gone has no extents at all */
	if (old)
		pfree(old);
}

static int
cmp_key(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

/*
 * Take the next slice of the main run to merge: whole ranges of its
 * extents in key order from the cursor, about target rows, into c.
 * Returns true if the slice goes to the end of the main run, else sets
 * *hi_ex to where the keys of the next slice start.
 */
static bool
take_slice(Relation rel, IncrState *st, int64 target, Snapshot snapshot,
		   Candidates *c, uint64 *hi_ex, MemoryContext tmpcxt)
{
	size_t		last_from = 0;

	for (;;)
	{
		int			best = -1;
		Extent	   *e;
		BlockNumber end;

		for (int i = 0; i < st->nextents; i++)
		{
			e = &st->extents[i];
			if (e->run != 0 || e->key_lo < st->lay.cursor ||
				e->taken_to >= e->first_block + e->nblocks)
				continue;
			if (best < 0 || e->key_lo < st->extents[best].key_lo)
				best = i;
		}
		if (best < 0)
			return true;
		if ((int64) c->n >= target)
		{
			uint64		cut = st->lay.cursor;

			/*
			 * The next slice starts near the largest key of the last range
			 * taken, but not at it: a row whose frequent value was spread
			 * over several buckets may have a key far ahead of the rows
			 * around it, and a full optimize spread it differently.
			 */
			if (c->n > last_from)
			{
				size_t		n = c->n - last_from;
				uint64	   *keys = palloc(sizeof(uint64) * n);

				for (size_t j = 0; j < n; j++)
					keys[j] = c->items[last_from + j].key;
				qsort(keys, n, sizeof(uint64), cmp_key);
				cut = keys[n - 1 - n / 50];
				pfree(keys);
			}
			*hi_ex = Max(cut, st->lay.cursor);
			if (*hi_ex < PG_UINT64_MAX)
				(*hi_ex)++;
			return false;
		}

		e = &st->extents[best];
		end = e->first_block + e->nblocks;
		while (e->taken_to < end && (int64) c->n < target)
		{
			BlockNumber b = e->taken_to;
			BlockNumber next = Min(b - b % st->lay.ppr + st->lay.ppr, end);
			size_t		before = c->n;

			collect_block_range(rel, st, b, next, COLLECT_OLDER, e->xid, false,
								false, snapshot, c, tmpcxt);
			last_from = before;
			e->slice_rows += c->n - before;
			e->consuming = true;
			if (b / st->lay.ppr < st->nranges)
				st->remaining[b / st->lay.ppr] = 0;
			e->taken_to = next;
		}
	}
}

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

static void
batch_begin(CallState *cs)
{
	cs->pushed = false;
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		cs->pushed = true;
	}
	cs->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	/*
	 * The bulk insert state holding a pin is new in every batch, and others
	 * may have written on the page since the last one.
	 */
	cs->w->targeted = InvalidBlockNumber;
	cs->w->room = 0;
	cs->w->lines = 0;
}

/* Move the rows of items (sorted by key) where the writer puts them. */
static void
move_items(CallState *cs, zr_item *items, size_t n)
{
	Relation	rel = cs->rel;
	IncrState  *st = cs->st;
	Writer	   *w = cs->w;
	MoveState	ms;

	if (cs->nvacated + n > cs->maxvacated)
	{
		cs->maxvacated = Max(cs->nvacated + n, cs->maxvacated * 2);
		cs->vacated = cs->vacated ?
			repalloc_huge(cs->vacated, sizeof(BlockNumber) * cs->maxvacated) :
			MemoryContextAllocHuge(cs->keep_cxt,
								   sizeof(BlockNumber) * cs->maxvacated);
	}

	move_begin(rel, &ms);
	for (size_t i = 0; i < n; i++)
	{
		ItemPointerData tid;
		uint64		val = items[i].val;
		BlockNumber from = (BlockNumber) ((val & CAND_TID_MASK) >> 16);
		BlockNumber blk;

		CHECK_FOR_INTERRUPTS();
		ItemPointerSet(&tid, from, (OffsetNumber) (val & 0xFFFF));
		cs->vacated[cs->nvacated++] = from;
		/* gone or moved, the row is no longer where its run was */
		if ((val & CAND_COUNTED) && from / st->lay.ppr < st->nranges)
			st->remaining[from / st->lay.ppr]--;
		w->key = items[i].key;
		blk = move_row(rel, st, w, &ms, &tid, cs->snapshot, cs->found);
		if (blk == InvalidBlockNumber)
			continue;
		cs->moved++;
		/* a row heap_insert put elsewhere is found by the next call */
		if (blk == w->cur)
			writer_record(st, w, blk);
	}
	move_end(&ms);

	/*
	 * A serializable transaction's SIREAD lock on a row's old TID does not
	 * cover the copy, and the mover is not serializable, so nothing links
	 * the reader to a later writer of the copy.  As for a full rewrite,
	 * promote the table's tuple and page locks to a lock on the table.
	 */
	if (n > 0)
		TransferPredicateLocksToHeapRelation(rel);
	pgstat_progress_update_param(ZORDER_PROGRESS_TUPLES_WRITTEN,
								 cs->moved);
}

/*
 * After the moves committed: prune the pages rows left, so that ranges
 * now empty can take the rows of the next batches, and make the BRIN
 * summaries of the ranges rows left or came to tight again.
 */
static void
after_commit(CallState *cs, bool find_free)
{
	Relation	rel = cs->rel;
	IncrState  *st = cs->st;
	Writer	   *w = cs->w;
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	BlockNumber last = InvalidBlockNumber;
	BlockNumber cur_range = InvalidBlockNumber;

	if (w->cur != InvalidBlockNumber)
		cur_range = w->cur - w->cur % st->lay.ppr;
	qsort(cs->vacated, cs->nvacated, sizeof(BlockNumber), cmp_block);
	if (cs->can_commit)
	{
		Buffer		vmbuf = InvalidBuffer;

		for (size_t i = 0; i < cs->nvacated; i++)
		{
			BlockNumber b = cs->vacated[i];
			Buffer		buf;

			if (b == last || b >= nblocks)
				continue;
			last = b;
			CHECK_FOR_INTERRUPTS();
			buf = ReadBuffer(rel, b);
			zorder_prune_page(rel, buf, &vmbuf);
			ReleaseBuffer(buf);
		}
		zorder_prune_done(&vmbuf);
	}

	last = InvalidBlockNumber;
	for (size_t i = 0; i < cs->nvacated; i++)
	{
		BlockNumber r = cs->vacated[i] - cs->vacated[i] % st->lay.ppr;

		if (r == last)
			continue;
		last = r;
		brin_ranges(rel, r, r + st->lay.ppr, true, true);
		if (find_free && cs->can_commit && r + st->lay.ppr <= nblocks &&
			r != cur_range &&
			!blocks_in_run(st, r, r + st->lay.ppr) &&
			blocks_empty(rel, r, r + st->lay.ppr))
			writer_add_free(w, r);
	}
	for (int i = 0; i < w->nstarted; i++)
		brin_ranges(rel, w->started[i], w->started[i] + st->lay.ppr, false, true);
	w->nstarted = 0;
	cs->nvacated = 0;
}

/* Save the runs, those written in this batch with its transaction ID. */
static void
save_batch(CallState *cs)
{
	IncrState  *st = cs->st;

	for (int i = 0; i < st->nextents; i++)
		if (!TransactionIdIsValid(st->extents[i].xid))
			st->extents[i].xid = GetTopTransactionId();
	cs->saved_extents = save_extents(cs->relid, st);
}

/*
 * True if the runs and the layout in the catalog are still those the call
 * saved last: nobody else wrote them since (another session's optimize,
 * full or incremental, zorder.cluster_by or zorder.clear_keys).
 */
static bool
catalog_unchanged(CallState *cs)
{
	return zorder_runs_unchanged(cs->relid, cs->saved_xid, cs->saved_extents);
}

/*
 * After the table's lock was released and taken again, check everything
 * the next batch relies on: the file its TIDs point into, the kind and
 * access method of the table, the type, typmod and collation of each key
 * column (the comparators and boundaries were set up for them), the keys
 * declared, and the layout and runs in the catalog.  Commands waiting for
 * the lock get in between two batches: ALTER TABLE, VACUUM FULL, CLUSTER,
 * TRUNCATE, another optimize.
 *
 * Returns true if nothing changed.  Else sets cs->changed to what did and,
 * when the table was rewritten, forgets its runs (if they are still the
 * ones this call saved): their blocks were those of a file that is gone,
 * so no run in the catalog may claim blocks of the new one.
 */
static bool
check_unchanged(CallState *cs)
{
	Relation	rel = cs->rel;
	TupleDesc	desc = RelationGetDescr(rel);
	IncrState  *st = cs->st;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	bool		rewritten = false;

	cs->changed = NULL;
	if (rel->rd_rel->relfilenode != cs->relfilenode)
	{
		cs->changed = "The table was rewritten (by VACUUM FULL, CLUSTER, TRUNCATE, ALTER TABLE or another zorder.optimize).";
		rewritten = true;
	}
	else if (rel->rd_rel->relkind != cs->relkind ||
			 rel->rd_rel->relam != cs->relam)
		cs->changed = "The table's kind or access method changed.";
	for (int k = 0; k < st->lay.nkeys && cs->changed == NULL; k++)
	{
		ZKeyColumn *col = &st->lay.cols[k];
		Form_pg_attribute att;

		if (col->attnum > desc->natts)
		{
			cs->changed = "A key column was dropped.";
			break;
		}
		att = TupleDescAttr(desc, col->attnum - 1);
		if (att->attisdropped)
			cs->changed = "A key column was dropped.";
		else if (att->atttypid != col->typid ||
				 att->atttypmod != col->typmod ||
				 att->attcollation != col->collid ||
				 att->attlen != col->typlen ||
				 att->attbyval != col->typbyval)
			cs->changed = psprintf("The type or collation of key column \"%s\" changed.",
								   NameStr(att->attname));
	}
	if (cs->changed == NULL)
	{
		nkeys = zorder_get_keys(rel, attnums);
		if (nkeys != st->lay.nkeys)
			cs->changed = "The table's clustering keys changed.";
		for (int k = 0; k < nkeys && cs->changed == NULL; k++)
			if (attnums[k] != st->lay.cols[k].attnum)
				cs->changed = "The table's clustering keys changed.";
	}
	if (cs->changed == NULL && !catalog_unchanged(cs))
		cs->changed = "Another command changed the table's layout or sorted runs in the catalog.";
	if (cs->changed == NULL)
		return true;

	if (rewritten && catalog_unchanged(cs))
		zorder_runs_forget(cs->relid);
	return false;
}

/*
 * Commit, then open the table again with lockmode and work as its owner
 * again.  Returns false if something the batches rely on changed in
 * between (see check_unchanged).
 */
static bool
commit_and_reopen(CallState *cs, LOCKMODE lockmode)
{
	/* the batch's writes to the catalog carry its transaction ID */
	cs->saved_xid = GetTopTransactionIdIfAny();
	AtEOXact_GUC(false, cs->save_nestlevel);
	SetUserIdAndSecContext(cs->save_userid, cs->save_sec_context);
	table_close(cs->rel, NoLock);
	MemoryContextSwitchTo(cs->caller_cxt);
	SPI_commit();
	MemoryContextSwitchTo(cs->keep_cxt);
	cs->rel = zorder_open_checked(cs->relid, lockmode, "zorder.optimize");
	GetUserIdAndSecContext(&cs->save_userid, &cs->save_sec_context);
	SetUserIdAndSecContext(cs->rel->rd_rel->relowner,
						   cs->save_sec_context | SECURITY_RESTRICTED_OPERATION);
	cs->save_nestlevel = NewGUCNestLevel();
	return check_unchanged(cs);
}

/*
 * Stop the call after check_unchanged found a change between two batches:
 * commit what it did about it, then raise the error.  The batches that
 * committed before stand, with the runs they saved.
 *
 * The error is a serialization failure (40001), as when a concurrent
 * transaction changed a row a statement had to update: the cause is
 * another session's command, nothing is wrong with the table or the
 * call's arguments, and calling again (what a retry loop on 40001 does)
 * starts from a fresh scan of the table as it is now and succeeds.
 */
static void
stop_changed(CallState *cs)
{
	const char *detail = cs->changed;
	char	   *relname = pstrdup(RelationGetRelationName(cs->rel));

	AtEOXact_GUC(false, cs->save_nestlevel);
	SetUserIdAndSecContext(cs->save_userid, cs->save_sec_context);
	table_close(cs->rel, NoLock);
	cs->rel = NULL;
	MemoryContextSwitchTo(cs->caller_cxt);
	SPI_commit();
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("table \"%s\" changed between two batches of zorder.optimize",
					relname),
			 errdetail("%s The batches that committed before stand.", detail),
			 errhint("Call zorder.optimize again: it starts from the table as it is now.")));
}

/*
 * End a batch: save the runs, and unless it is the last one, commit when
 * allowed and take the lock again for the next.
 */
static void
batch_end(CallState *cs, bool more)
{
	save_batch(cs);
	UnregisterSnapshot(cs->snapshot);
	if (cs->pushed)
		PopActiveSnapshot();
	MemoryContextReset(cs->batch_cxt);

	if (more && cs->can_commit)
	{
		/* let waiting writers in between batches */
		if (!commit_and_reopen(cs, ExclusiveLock))
			stop_changed(cs);

		/*
		 * A publication may have taken the table in meanwhile (ALTER
		 * PUBLICATION ... ADD TABLE waits only for the batch's lock), or
		 * changed what it publishes: the next moves must be allowed too.
		 * The batches before stand.
		 */
		CheckCmdReplicaIdentity(cs->rel, CMD_DELETE);
		check_publications(cs->rel);
		PushActiveSnapshot(GetTransactionSnapshot());
		after_commit(cs, true);
		PopActiveSnapshot();
	}
}

/* Make the remaining rows' counts cover a heap of nblocks blocks. */
static void
ensure_ranges(IncrState *st, BlockNumber nblocks)
{
	BlockNumber n = nblocks / st->lay.ppr + 1;

	if (n <= st->nranges)
		return;
	st->remaining = repalloc_huge(st->remaining, sizeof(int32) * n);
	for (BlockNumber r = st->nranges; r < n; r++)
		st->remaining[r] = -1;
	st->nranges = n;
}

/* ----------------------------------------------------------------
 * Placement into the ranges of the main run
 * ----------------------------------------------------------------
 */

/*
 * The rows a run wrote on blocks [from, to), leaving out rows newer than
 * the run's xid: how many (*rows), and the lowest curve key of those on
 * the first page that holds any.  Returns false if there are none.
 */
static bool
range_low_key(Relation rel, IncrState *st, BlockNumber from, BlockNumber to,
			  TransactionId xid, Snapshot snapshot, MemoryContext tmpcxt,
			  uint64 *key, int64 *rows)
{
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	picked[MaxHeapTuplesPerPage];
	bool		found = false;

	*rows = 0;
	to = Min(to, RelationGetNumberOfBlocks(rel));
	for (BlockNumber blk = from; blk < to; blk++)
	{
		Buffer		buf;
		Page		page;
		OffsetNumber maxoff;
		int			npicked = 0;
		MemoryContext oldcxt;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(rel, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		maxoff = PageIsNew(page) ? InvalidOffsetNumber :
			PageGetMaxOffsetNumber(page);
		/* copy first: computing keys may detoast, not under the lock */
		oldcxt = MemoryContextSwitchTo(tmpcxt);
		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			HeapTupleData tuple;

			if (!zorder_page_tuple(rel, page, blk, off, &tuple))
				continue;
			if (!HeapTupleSatisfiesVisibility(&tuple, snapshot, buf))
				continue;
			if (TransactionIdIsValid(xid) &&
				!HeapTupleHeaderXminFrozen(tuple.t_data) &&
				TransactionIdFollows(HeapTupleHeaderGetXmin(tuple.t_data), xid))
				continue;
			(*rows)++;
			if (!found)
				picked[npicked++] = heap_copytuple(&tuple);
		}
		MemoryContextSwitchTo(oldcxt);
		UnlockReleaseBuffer(buf);

		oldcxt = MemoryContextSwitchTo(tmpcxt);
		for (int i = 0; i < npicked; i++)
		{
			uint64		k = row_key(st, desc, picked[i]);

			if (!found || k < *key)
				*key = k;
			found = true;
		}
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(tmpcxt);
	}
	return found;
}

/*
 * Make every extent of the main run one BRIN range (or the part of one it
 * covers), with where the keys of that range start and its rows.  A full
 * optimize or a merge records an extent of many ranges and where its keys
 * start; the placement needs it range by range.  Reads the run once (and
 * computes the keys of each range's first page): afterwards the catalog
 * has the ranges one by one.
 */
static void
main_run_by_range(Relation rel, IncrState *st, Snapshot snapshot,
				  MemoryContext tmpcxt)
{
	int			n = st->nextents;

	for (int i = 0; i < n; i++)
	{
		BlockNumber first = st->extents[i].first_block;
		BlockNumber end = first + st->extents[i].nblocks;
		BlockNumber b = first - first % st->lay.ppr + st->lay.ppr;
		uint64		key = st->extents[i].key_lo;
		TransactionId xid = st->extents[i].xid;
		uint64		low = 0;
		int64		rows;

		if (st->extents[i].run != 0 || b >= end)
			continue;
		st->extents[i].nblocks = b - first;
		range_low_key(rel, st, first, b, xid, snapshot, tmpcxt, &low, &rows);
		st->extents[i].rows = rows;
		for (; b < end; b += st->lay.ppr)
		{
			BlockNumber piece_end = Min(b + st->lay.ppr, end);

			/* keys never go down within an extent, whatever the sample */
			if (range_low_key(rel, st, b, piece_end, xid, snapshot, tmpcxt,
							  &low, &rows))
				key = Max(key, low);
			add_extent(st, b, piece_end - b, rows, xid, 0, key);
		}
	}
}

/*
 * Free space on blocks [from, to) that heap_insert can use when fillfactor
 * does not hold it back.  *best gets the page to fill first with rows of
 * need bytes: the one with the least room that takes them all, else the
 * one with the most room, so that the rows touch as few pages as they can
 * (each page touched after a checkpoint costs a full-page image in WAL).
 */
static uint64
range_room(Relation rel, BlockNumber from, BlockNumber to, uint64 need,
		   BlockNumber *best)
{
	uint64		room = 0;
	Size		best_room = 0;
	bool		best_fits = false;

	*best = from;
	to = Min(to, RelationGetNumberOfBlocks(rel));
	for (BlockNumber blk = from; blk < to; blk++)
	{
		Buffer		buf = ReadBuffer(rel, blk);
		Page		page;
		Size		r;
		bool		fits;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		r = PageIsNew(page) ? MaxHeapTupleSize : PageGetHeapFreeSpace(page);
		UnlockReleaseBuffer(buf);
		room += r;
		fits = r >= need;
		if (blk == from ||
			(fits && (!best_fits || r < best_room)) ||
			(!fits && !best_fits && r > best_room))
		{
			*best = blk;
			best_room = r;
			best_fits = fits;
		}
	}
	return room;
}

/* A range of the main run, as placement sees it. */
typedef struct PRange
{
	uint64		key_lo;
	BlockNumber first_block;
	BlockNumber nblocks;
} PRange;

static int
cmp_prange(const void *a, const void *b)
{
	const PRange *x = (const PRange *) a;
	const PRange *y = (const PRange *) b;

	if (x->key_lo != y->key_lo)
		return x->key_lo > y->key_lo ? 1 : -1;
	return (x->first_block > y->first_block) - (x->first_block < y->first_block);
}

/* The main run's extent that starts at block first, or -1. */
static int
find_main_extent(IncrState *st, BlockNumber first)
{
	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].run == 0 && st->extents[i].first_block == first &&
			!st->extents[i].consuming && st->extents[i].nblocks > 0)
			return i;
	return -1;
}

/*
 * Split ranges: the nfirst ranges of the main run starting at firsts
 * (neighbours in key order, the lowest first), with the newcomers that
 * belong to them (items, n of them, sorted by key), go sorted into at
 * least one range more than they were, each filled evenly to leave room
 * for newcomers again.  As a B*-tree shares a split with its neighbours,
 * taking neighbours fills the new ranges fuller than halving one range
 * would (three into four: 3/4 full), for more rows moved per split.  The
 * old ranges leave the run and, once pruned after the commit, take the
 * rows of later splits.  Rows on them that belong to other ranges (TIDs
 * in tids, sorted) move with their own range.  Returns how many of the
 * ranges' own rows moved.
 */
static size_t
split_ranges(CallState *cs, const BlockNumber *firsts, int nfirst,
			 zr_item *items, size_t n, const uint64 *tids, size_t ntids,
			 Size table_savefree)
{
	IncrState  *st = cs->st;
	Writer	   *w = cs->w;
	uint64		key_lo = 0;
	Candidates	sc = {0};
	MemoryContext prev = MemoryContextSwitchTo(cs->batch_cxt);
	zr_item    *all;
	uint32	   *lens;
	size_t		nall;
	size_t		m = 0;
	size_t		own;
	uint64		total = 0;
	uint32		maxrow = 0;
	uint32		ways;
	size_t	   *start;
	Size		usable = BLCKSZ - SizeOfPageHeaderData;

	for (int f = 0; f < nfirst; f++)
	{
		int			ei = find_main_extent(st, firsts[f]);
		Extent		e;
		BlockNumber r;

		if (ei < 0)
			continue;
		e = st->extents[ei];
		r = e.first_block / st->lay.ppr;
		if (f == 0)
			key_lo = e.key_lo;
		st->extents[ei].consuming = true;
		if (r < st->nranges)
			st->remaining[r] = 0;
		collect_block_range(cs->rel, st, e.first_block,
							e.first_block + e.nblocks, COLLECT_ALL,
							InvalidTransactionId, false, true, cs->snapshot,
							&sc, cs->tmp_cxt);
	}
	for (size_t j = 0; j < sc.n; j++)
	{
		uint64		tid = sc.items[j].val & CAND_TID_MASK;

		if (ntids > 0 &&
			bsearch(&tid, tids, ntids, sizeof(uint64), cmp_key) != NULL)
		{
			BlockNumber r = (BlockNumber) (tid >> 16) / st->lay.ppr;

			if (r < st->nranges)
				st->remaining[r]--;
			continue;
		}
		sc.items[m++] = sc.items[j];
	}
	own = m;

	nall = own + n;
	all = palloc_extended((nall + 1) * sizeof(zr_item), MCXT_ALLOC_HUGE);
	if (own > 0)
		memcpy(all, sc.items, own * sizeof(zr_item));
	if (n > 0)
		memcpy(all + own, items, n * sizeof(zr_item));
	if (nall > 1)
		zr_sort(all, palloc_extended(nall * sizeof(zr_item), MCXT_ALLOC_HUGE),
				nall);
	lens = palloc_extended((nall + 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (size_t j = 0; j < nall; j++)
	{
		lens[j] = MAXALIGN(CAND_LEN(all[j].val)) + sizeof(ItemIdData);
		total += lens[j];
		maxrow = Max(maxrow, lens[j]);
	}
	ways = Max((uint32) nfirst + 1,
			   zp_split_ways(total, (uint64) st->lay.ppr * usable,
							 RelationGetFillFactor(cs->rel, HEAP_DEFAULT_FILLFACTOR)));
	start = palloc(sizeof(size_t) * (ways + 1));
	zp_split_points(lens, nall, ways, start);
	MemoryContextSwitchTo(prev);

	for (uint32 p = 0; p < ways; p++)
	{
		uint64		bytes = 0;
		Size		cap;

		if (start[p] == start[p + 1])
			continue;
		for (size_t j = start[p]; j < start[p + 1]; j++)
			bytes += lens[j];
		/* spread the piece evenly over the pages of a new range */
		cap = Min(usable, bytes / st->lay.ppr + maxrow);
		writer_start_run(w, 0);
		w->in_range = false;
		w->ignore_fillfactor = false;
		w->per_range = true;
		w->savefree = Max(table_savefree, usable - cap);
		w->has_key_lo_next = true;
		w->key_lo_next = p == 0 ? key_lo : all[start[p]].key;
		move_items(cs, all + start[p], start[p + 1] - start[p]);
	}
	w->savefree = table_savefree;
	w->per_range = false;
	w->has_key_lo_next = false;
	return own;
}

/*
 * The ranges a split of range t takes: t and its next neighbours in key
 * order (or, at the end of the key space, the ones before it), up to
 * ZP_SPLIT_RANGES of them that are still in the run, the lowest first.
 * Returns how many.
 */
static int
split_group(IncrState *st, PRange *pr, int nr, int t, BlockNumber *firsts)
{
	int			lo = t;
	int			hi = t;			/* inclusive */

	if (find_main_extent(st, pr[t].first_block) < 0)
		return 0;
	while (hi - lo + 1 < ZP_SPLIT_RANGES && hi + 1 < nr &&
		   find_main_extent(st, pr[hi + 1].first_block) >= 0)
		hi++;
	while (hi - lo + 1 < ZP_SPLIT_RANGES && lo > 0 &&
		   find_main_extent(st, pr[lo - 1].first_block) >= 0)
		lo--;
	for (int i = lo; i <= hi; i++)
		firsts[i - lo] = pr[i].first_block;
	return hi - lo + 1;
}

/* One group of newcomers: those of one range, items [pos, end). */
typedef struct PGroup
{
	size_t		pos;
	size_t		end;
	int32		t;				/* the range, in the placement's order */
	uint64		need;			/* bytes, line pointers included */
	uint32		maxrow;
} PGroup;

/*
 * Move a group's newcomers into the room of its range, page after page from
 * the page that suits them best, if the room takes them.  Returns false,
 * having moved nothing, if it does not (or the range is gone).
 */
static bool
place_group(CallState *cs, PRange *pr, Candidates *cand, PGroup *g,
			const int32 *stayers, Size table_savefree)
{
	IncrState  *st = cs->st;
	Writer	   *w = cs->w;
	int			ei = find_main_extent(st, pr[g->t].first_block);
	BlockNumber first = pr[g->t].first_block;
	BlockNumber first_page;

	if (ei < 0)
		return false;
	if (!zp_fits(range_room(cs->rel, first, first + st->extents[ei].nblocks,
							g->need, &first_page),
				 g->need, st->extents[ei].nblocks, g->maxrow))
		return false;
	w->run = 0;
	w->out = ei;
	w->cur = first_page;
	w->range_first = first;
	w->wrap_start = first_page;
	w->wrapped = false;
	w->range_end = first + st->extents[ei].nblocks;
	w->room = 0;
	w->lines = 0;
	w->in_range = true;
	w->ignore_fillfactor = true;
	w->savefree = 0;
	move_items(cs, cand->items + g->pos, g->end - g->pos);

	/*
	 * The range is saved with this batch's transaction ID, so newcomers
	 * that stayed on it count as its rows from now on.
	 */
	ei = find_main_extent(st, first);
	if (ei >= 0)
		st->extents[ei].rows += stayers[g->t];
	w->in_range = false;
	w->ignore_fillfactor = false;
	w->savefree = table_savefree;
	w->cur = InvalidBlockNumber;
	w->out = -1;
	return true;
}

/* Commit the batch once it moved zorder.max_batch_size rows; start the next. */
static void
batch_rotate(CallState *cs, int64 *batch_rows)
{
	if (*batch_rows < zorder_max_batch_size)
		return;
	trim_extents(cs->st, cs->w);
	batch_end(cs, true);
	batch_begin(cs);
	*batch_rows = 0;
}

/* A range that may split ahead of need, and how full it is estimated. */
typedef struct PFull
{
	BlockNumber first_block;
	double		fill;
} PFull;

static int
cmp_pfull(const void *a, const void *b)
{
	double		x = ((const PFull *) a)->fill;
	double		y = ((const PFull *) b)->fill;

	return (x < y) - (x > y);	/* fullest first */
}

/*
 * Place the newcomers (cand, sorted by key) into the ranges of the main
 * run: each goes to the range whose key interval holds it, so no range's
 * box widens.  A range's newcomers are moved together, in one batch, into
 * the room its pages have (the room fillfactor keeps from ordinary
 * INSERTs), filling as few pages as they can, so that each page is written
 * once per call.
 *
 * A range whose room does not take its newcomers is tried again after the
 * other groups committed: ordinary INSERTs may have filled its room with
 * rows that belong elsewhere, and these left with this call (pruned after
 * the commit).  If it still has no room, it splits.  Splits move at most
 * zp_split_budget rows per call; the newcomers of ranges left over wait
 * where they are for a later call.  What budget they leave splits the
 * fullest ranges ahead of need, so that ranges a full optimize wrote at
 * the same fill do not all split in the same few calls.
 *
 * Leaves the last batch open, as the other writers do.  Returns the number
 * of splits.
 */
static int
place_newcomers(CallState *cs, Candidates *cand, int64 main_rows)
{
	IncrState  *st = cs->st;
	Writer	   *w = cs->w;
	PRange	   *pr;
	uint64	   *keys;
	int32	   *tgt;
	uint64	   *tids;
	int32	   *stayers;
	PGroup	   *retry;
	int			nretry = 0;
	int			nr = 0;
	size_t		nkeep = 0;
	size_t		pos = 0;
	uint64		budget;
	uint64		spent = 0;
	uint64		need_all = 0;
	int			nsplits = 0;
	int64		batch_rows = 0;
	Size		table_savefree = w->savefree;
	int			fill = RelationGetFillFactor(cs->rel, HEAP_DEFAULT_FILLFACTOR);

	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].run == 0 && st->extents[i].nblocks > 0)
			nr++;
	pr = palloc(sizeof(PRange) * Max(nr, 1));
	nr = 0;
	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].run == 0 && st->extents[i].nblocks > 0)
		{
			pr[nr].key_lo = st->extents[i].key_lo;
			pr[nr].first_block = st->extents[i].first_block;
			pr[nr].nblocks = st->extents[i].nblocks;
			nr++;
		}
	qsort(pr, nr, sizeof(PRange), cmp_prange);
	keys = palloc(sizeof(uint64) * Max(nr, 1));
	for (int i = 0; i < nr; i++)
		keys[i] = pr[i].key_lo;

	/* each newcomer's range; one already on it stays there */
	tgt = palloc_extended(sizeof(int32) * Max(cand->n, 1), MCXT_ALLOC_HUGE);
	tids = palloc_extended(sizeof(uint64) * Max(cand->n, 1), MCXT_ALLOC_HUGE);
	stayers = palloc0(sizeof(int32) * Max(nr, 1));
	for (size_t i = 0; i < cand->n && nr > 0; i++)
	{
		size_t		t = zp_find_range(keys, nr, cand->items[i].key);
		BlockNumber from = (BlockNumber) ((cand->items[i].val & CAND_TID_MASK) >> 16);

		if (from >= pr[t].first_block &&
			from < pr[t].first_block + pr[t].nblocks &&
			!(cand->items[i].val & CAND_COUNTED))
		{
			stayers[t]++;
			continue;
		}
		cand->items[nkeep] = cand->items[i];
		tgt[nkeep] = (int32) t;
		tids[nkeep] = cand->items[i].val & CAND_TID_MASK;
		nkeep++;
	}
	qsort(tids, nkeep, sizeof(uint64), cmp_key);
	budget = zp_split_budget(nkeep, (uint64) (main_rows / Max(nr, 1)) + 1);
	retry = palloc(sizeof(PGroup) * Max(nr, 1));

	/* first pass: every range whose room takes its newcomers */
	batch_begin(cs);
	while (pos < nkeep)
	{
		PGroup		g;

		CHECK_FOR_INTERRUPTS();
		g.pos = pos;
		g.end = pos;
		g.t = tgt[pos];
		g.need = 0;
		g.maxrow = 0;
		while (g.end < nkeep && tgt[g.end] == g.t)
		{
			uint32		len = MAXALIGN(CAND_LEN(cand->items[g.end].val)) +
				sizeof(ItemIdData);

			g.need += len;
			g.maxrow = Max(g.maxrow, len);
			g.end++;
		}
		need_all += g.need;
		pos = g.end;

		/*
		 * A batch moves a bounded number of rows, a split's included: past
		 * zorder.max_batch_size newcomers for one range (appends all
		 * beyond the last boundary, say), the rest waits for the next call.
		 */
		if (g.end - g.pos > (size_t) zorder_max_batch_size)
		{
			g.end = g.pos + zorder_max_batch_size;
			g.need = 0;
			for (size_t j = g.pos; j < g.end; j++)
				g.need += MAXALIGN(CAND_LEN(cand->items[j].val)) +
					sizeof(ItemIdData);
		}
		if (place_group(cs, pr, cand, &g, stayers, table_savefree))
			batch_rows += g.end - g.pos;
		else
			retry[nretry++] = g;
		batch_rotate(cs, &batch_rows);
	}

	/* second pass, after a commit that pruned what left: else split */
	if (nretry > 0 && cs->can_commit && batch_rows > 0)
	{
		batch_rows = zorder_max_batch_size;
		batch_rotate(cs, &batch_rows);
	}
	for (int i = 0; i < nretry; i++)
	{
		PGroup	   *g = &retry[i];
		BlockNumber firsts[ZP_SPLIT_RANGES];
		int			nfirst;

		CHECK_FOR_INTERRUPTS();
		if (place_group(cs, pr, cand, g, stayers, table_savefree))
			batch_rows += g->end - g->pos;
		else if (spent < budget &&
				 (nfirst = split_group(st, pr, nr, g->t, firsts)) > 0)
		{
			size_t		own = split_ranges(cs, firsts, nfirst,
										   cand->items + g->pos,
										   g->end - g->pos, tids, nkeep,
										   table_savefree);

			spent += own;
			batch_rows += own + g->end - g->pos;
			nsplits++;
		}
		/* else: no budget left for a split this call; they wait */
		batch_rotate(cs, &batch_rows);
	}

	/*
	 * Ahead of need: the fullest ranges, by the rows the catalog counts and
	 * the newcomers' mean size, once they used half their reserved room and
	 * would be full within about four calls like this one; with what the
	 * splits of need left of the budget.
	 */
	if (nkeep > 0 && spent < budget && st->lay.ppr > 1)
	{
		double		rowbytes = (double) need_all / nkeep;
		double		range_bytes = (double) st->lay.ppr * (BLCKSZ - SizeOfPageHeaderData);
		/* what one call brings a range, on average, as a share of it */
		double		per_call = (double) need_all / Max(nr, 1) / range_bytes;
		double		threshold = Max((fill + 100.0) / 200.0, 1.0 - 4 * per_call);
		PFull	   *full = palloc(sizeof(PFull) * Max(st->nextents, 1));
		int			nfull = 0;

		for (int i = 0; i < st->nextents; i++)
		{
			Extent	   *e = &st->extents[i];
			double		f = e->rows * rowbytes / range_bytes;

			if (e->run != 0 || e->consuming || e->fresh ||
				e->nblocks != (BlockNumber) st->lay.ppr || f < threshold)
				continue;
			full[nfull].first_block = e->first_block;
			full[nfull].fill = f;
			nfull++;
		}
		qsort(full, nfull, sizeof(PFull), cmp_pfull);
		for (int i = 0; i < nfull && spent < budget; i++)
		{
			int			ei = find_main_extent(st, full[i].first_block);
			BlockNumber firsts[ZP_SPLIT_RANGES];
			int			nfirst;
			int			t = 0;
			size_t		own;

			CHECK_FOR_INTERRUPTS();
			if (ei < 0 || spent + ZP_SPLIT_RANGES * st->extents[ei].rows > budget)
				continue;
			while (t < nr && pr[t].first_block != full[i].first_block)
				t++;
			if (t == nr || (nfirst = split_group(st, pr, nr, t, firsts)) == 0)
				continue;
			own = split_ranges(cs, firsts, nfirst, NULL, 0, tids, nkeep,
							   table_savefree);
			spent += own;
			batch_rows += own;
			nsplits++;
			batch_rotate(cs, &batch_rows);
		}
	}
	trim_extents(st, w);
	return nsplits;
}

/* Mark all extents of the given run as moving out; collect their rows. */
static void
consume_run(Relation rel, IncrState *st, int run, Snapshot snapshot,
			Candidates *c, MemoryContext tmpcxt)
{
	for (int i = 0; i < st->nextents; i++)
	{
		Extent	   *e = &st->extents[i];
		BlockNumber end = e->first_block + e->nblocks;

		if (e->run != run)
			continue;
		e->consuming = true;
		for (BlockNumber b = e->first_block; b < end; b += st->lay.ppr - b % st->lay.ppr)
			if (b / st->lay.ppr < st->nranges)
				st->remaining[b / st->lay.ppr] = 0;
		collect_block_range(rel, st, e->first_block, end, COLLECT_OLDER,
							e->xid, false, true, snapshot, c, tmpcxt);
	}
}

/* ---- layoutkey.c: rows of a recognised run placed out of key order ---- */

/*
 * Rows that an external rewrite (pg_repack) left out of key order inside
 * what zorder_recognize_layout recorded as the main run: it lists their
 * TIDs in zorder.layouts.misplaced, since their xmin does not tell them
 * apart from the run's.  Take those still there (visible, in a run's
 * blocks and not newer than it, so not taken already) as newcomers.  Once
 * none is left, the list is cleared.
 */
static void
collect_misplaced(Relation rel, IncrState *st, Snapshot snapshot,
				  Candidates *c, MemoryContext tmpcxt)
{
	ArrayType  *arr;
	Datum	   *tids;
	int			ntids;
	int			found = 0;
	TupleDesc	desc = RelationGetDescr(rel);
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);

	/* TIDs of the heap the list was made for only */
	arr = zorder_layout_misplaced(rel);
	if (arr == NULL)
		return;
	deconstruct_array(arr, TIDOID, sizeof(ItemPointerData),
					  false, TYPALIGN_SHORT, &tids, NULL, &ntids);
	for (int i = 0; i < ntids; i++)
	{
		ItemPointer tid = (ItemPointer) DatumGetPointer(tids[i]);
		BlockNumber blk = ItemPointerGetBlockNumber(tid);
		OffsetNumber off = ItemPointerGetOffsetNumber(tid);
		Extent	   *e = NULL;
		Buffer		buf;
		Page		page;
		HeapTupleData tuple;
		HeapTuple	copy = NULL;

		CHECK_FOR_INTERRUPTS();
		for (int x = 0; x < st->nextents; x++)
			if (blk >= st->extents[x].first_block &&
				blk < st->extents[x].first_block + st->extents[x].nblocks)
				e = &st->extents[x];
		if (e == NULL || blk >= nblocks)
			continue;
		buf = ReadBuffer(rel, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (off <= PageGetMaxOffsetNumber(page) &&
			zorder_page_tuple(rel, page, blk, off, &tuple) &&
			HeapTupleSatisfiesVisibility(&tuple, snapshot, buf) &&
			(HeapTupleHeaderXminFrozen(tuple.t_data) ||
			 !TransactionIdFollows(HeapTupleHeaderGetXmin(tuple.t_data),
								   e->xid)))
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(tmpcxt);

			copy = heap_copytuple(&tuple);
			MemoryContextSwitchTo(oldcxt);
		}
		UnlockReleaseBuffer(buf);
		if (copy != NULL)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(tmpcxt);
			uint64		key = row_key(st, desc, copy);

			MemoryContextSwitchTo(oldcxt);
			add_candidate(c, key, &copy->t_self, false, copy->t_len);
			MemoryContextReset(tmpcxt);
			found++;
		}
	}
	if (found == 0)
		zorder_layout_set_misplaced(RelationGetRelid(rel), NULL, 0);
}

/* ---- end of layoutkey.c's misplaced rows ---- */

/*
 * Incremental optimize of one table.  Returns false, having changed
 * nothing, if the table has no layout yet (a full optimize must come
 * first).  With can_commit, batches commit one by one.
 */
bool
zorder_optimize_incremental(Oid relid, const char *curve, bool can_commit)
{
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	IncrState	st;
	Writer		w;
	CallState	cs;
	Candidates	cand = {0};
	Snapshot	snapshot;
	BlockNumber nblocks;
	size_t		nnew;
	int64		main_rows = 0;
	int64		outside;
	bool		merge;
	bool		placing;
	int			nmerged = 0;
	int			maxrun = 0;
	int			newcomers_run = -1;
	size_t		upos = 0;
	size_t		ulow = 0;
	TimestampTz started = GetCurrentTimestamp();

	memset(&cs, 0, sizeof(cs));
	memset(&st, 0, sizeof(st));
	memset(&w, 0, sizeof(w));
	cs.relid = relid;
	cs.can_commit = can_commit;
	cs.st = &st;
	cs.w = &w;
	cs.caller_cxt = CurrentMemoryContext;

	rel = zorder_open_checked(relid, ExclusiveLock, "zorder.optimize");
	CheckTableNotInUse(rel, "zorder.optimize");
	nkeys = zorder_get_keys_required(rel, attnums);
	/* runs of another file than the table's: a full optimize lays it out */
	if (zorder_forget_stale_runs(rel))
	{
		table_close(rel, ExclusiveLock);
		return false;
	}
	cs.relfilenode = rel->rd_rel->relfilenode;
	cs.relkind = rel->rd_rel->relkind;
	cs.relam = rel->rd_rel->relam;

	GetUserIdAndSecContext(&cs.save_userid, &cs.save_sec_context);
	SetUserIdAndSecContext(rel->rd_rel->relowner,
						   cs.save_sec_context | SECURITY_RESTRICTED_OPERATION);
	cs.save_nestlevel = NewGUCNestLevel();

	/* what must outlive the commits between batches */
	cs.keep_cxt = AllocSetContextCreate(PortalContext, "zorder incremental",
										ALLOCSET_DEFAULT_SIZES);
	cs.batch_cxt = AllocSetContextCreate(cs.keep_cxt, "zorder incremental batch",
										 ALLOCSET_DEFAULT_SIZES);
	cs.tmp_cxt = AllocSetContextCreate(cs.keep_cxt, "zorder incremental row",
									   ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cs.keep_cxt);

	if (!zorder_layout_load(rel, nkeys, attnums, curve, &st.lay))
	{
		/* no layout at all: a full optimize must lay the table out first */
		if (!zorder_layout_exists(relid))
		{
			MemoryContextSwitchTo(cs.caller_cxt);
			MemoryContextDelete(cs.keep_cxt);
			AtEOXact_GUC(false, cs.save_nestlevel);
			SetUserIdAndSecContext(cs.save_userid, cs.save_sec_context);
			/* let the full optimize take its stronger lock afresh */
			table_close(rel, ExclusiveLock);
			return false;
		}

		/*
		 * Keys, curve or a key column's type or collation changed: old runs
		 * stay as they are, new rows follow the new keys.
		 */
		zorder_layout_resample(rel, nkeys, attnums,
							   curve ? curve : zorder_curve_name(st.lay.curve),
							   &st.lay);
	}

	load_extents(relid, &st);

	/* files a crashed full optimize left behind */
	zorder_cleanup_orphans();

	/*
	 * Moves are deletes and inserts: refuse them where a DELETE would be
	 * refused, and where a publication carries only one of the two, as a
	 * subscriber would then lose or duplicate the moved rows.
	 */
	CheckCmdReplicaIdentity(rel, CMD_DELETE);
	check_publications(rel);

	zorder_progress_start(relid);
	zorder_progress_phase(ZORDER_PHASE_SEQ_SCAN_HEAP);

	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	cs.found = found_snapshot(snapshot, cs.keep_cxt);
	nblocks = RelationGetNumberOfBlocks(rel);
	st.nranges = nblocks / st.lay.ppr + 1;
	st.remaining = palloc_extended(sizeof(int32) * st.nranges,
								   MCXT_ALLOC_HUGE);
	memset(st.remaining, 0xFF, sizeof(int32) * st.nranges);	/* all -1 */
	w.savefree = RelationGetTargetPageFreeSpace(rel, HEAP_DEFAULT_FILLFACTOR);

	/* VACUUM may have truncated empty pages at the end of a run */
	for (int i = 0; i < st.nextents; i++)
	{
		Extent	   *e = &st.extents[i];

		if (e->first_block >= nblocks)
			e->nblocks = 0;
		else
			e->nblocks = Min(e->nblocks, nblocks - e->first_block);
	}
	w.out = -1;
	w.cur = InvalidBlockNumber;

	/*
	 * Rows outside every run: appended after the last one, or in pages rows
	 * left.  Whole ranges there with nothing in them take moved rows first.
	 */
	{
		BlockNumber next = 0;

		for (int i = 0; i <= st.nextents; i++)
		{
			BlockNumber start = i < st.nextents ?
				Min(st.extents[i].first_block, nblocks) : nblocks;

			if (start > next)
			{
				collect_block_range(rel, &st, next, start, COLLECT_ALL,
									InvalidTransactionId, false, false,
									snapshot, &cand, cs.tmp_cxt);
				for (BlockNumber r = next + (st.lay.ppr - next % st.lay.ppr) % st.lay.ppr;
					 r + st.lay.ppr <= start; r += st.lay.ppr)
					if (blocks_empty(rel, r, r + st.lay.ppr))
						writer_add_free(&w, r);
			}
			if (i < st.nextents)
				next = Max(next, Min(st.extents[i].first_block +
									 st.extents[i].nblocks, nblocks));
		}
	}

	/*
	 * Rows that came into free space inside the runs.  They are told apart
	 * by an xmin newer than the run's: a newcomer that VACUUM froze since
	 * is taken for an old row, and stays until the next full optimize.
	 */
	for (int i = 0; i < st.nextents; i++)
	{
		collect_block_range(rel, &st, st.extents[i].first_block,
							Min(st.extents[i].first_block +
								st.extents[i].nblocks, nblocks),
							COLLECT_NEWER, st.extents[i].xid, true, false,
							snapshot, &cand, cs.tmp_cxt);
		maxrun = Max(maxrun, st.extents[i].run);
	}
	collect_misplaced(rel, &st, snapshot, &cand, cs.tmp_cxt);
	nnew = cand.n;

	/*
	 * Merge into the main run when the rows outside it are more than
	 * zorder.merge_threshold of the table (or a merge is under way): every
	 * cube and every newcomer goes into it, one key slice per batch.  Else,
	 * the newcomers make a new cube, merged with the newest cubes while
	 * these are no bigger than what comes in, so that cube sizes at least
	 * double going back and their number stays logarithmic.
	 */
	outside = (int64) nnew;
	for (int i = 0; i < st.nextents; i++)
	{
		if (st.extents[i].run == 0)
			main_rows += st.extents[i].rows;
		else
			outside += st.extents[i].rows;
	}
	merge = main_rows > 0 &&
		(st.lay.merging ||
		 (double) outside > zorder_merge_threshold * (double) (outside + main_rows));
	placing = !merge && zorder_placement && main_rows > 0;
	cs.rel = rel;
	if (placing)
	{
		/* the ranges one by one, and the rows of any cube placed too */
		main_run_by_range(rel, &st, snapshot, cs.tmp_cxt);
		for (int run = 1; run <= maxrun; run++)
		{
			bool		found = false;

			for (int i = 0; i < st.nextents && !found; i++)
				found = st.extents[i].run == run;
			if (!found)
				continue;
			consume_run(rel, &st, run, snapshot, &cand, cs.tmp_cxt);
			nmerged++;
		}
	}
	else if (merge)
	{
		if (!st.lay.merging)
		{
			st.lay.merging = true;
			st.lay.cursor = 0;
		}
		if (can_commit && nnew > 0)
		{
			/*
			 * The newcomers first make a cube of their own, merged below
			 * like the others.  Appends scatter over the free space of many
			 * pages; once they have left, those ranges are empty and take
			 * the slices' rows, instead of the heap growing.
			 */
			UnregisterSnapshot(snapshot);
			if (cand.n > 1)
			{
				zr_item    *tmp = palloc_extended(cand.n * sizeof(zr_item),
												  MCXT_ALLOC_HUGE);

				zr_sort(cand.items, tmp, cand.n);
				pfree(tmp);
			}
			writer_start_run(&w, ++maxrun);
			newcomers_run = maxrun;
			for (size_t pos = 0; pos < cand.n;)
			{
				size_t		end = Min(cand.n, pos + (size_t) zorder_max_batch_size);

				batch_begin(&cs);
				move_items(&cs, cand.items + pos, end - pos);
				trim_extents(&st, &w);
				batch_end(&cs, true);
				pos = end;
			}
			cand.n = 0;
			rel = cs.rel;
			snapshot = RegisterSnapshot(GetTransactionSnapshot());
			cs.found = found_snapshot(snapshot, cs.keep_cxt);
			ensure_ranges(&st, RelationGetNumberOfBlocks(rel));
		}
		for (int run = 1; run <= maxrun; run++)
		{
			bool		found = false;

			for (int i = 0; i < st.nextents && !found; i++)
				found = st.extents[i].run == run;
			if (!found)
				continue;
			consume_run(rel, &st, run, snapshot, &cand, cs.tmp_cxt);
			if (run != newcomers_run)
				nmerged++;
		}
	}
	else
	{
		int64		accumulated = (int64) nnew;

		for (int run = maxrun; run >= 1; run--)
		{
			int64		rows = 0;
			bool		found = false;

			for (int i = 0; i < st.nextents; i++)
				if (st.extents[i].run == run)
				{
					rows += st.extents[i].rows;
					found = true;
				}
			if (!found)
				continue;
			if (rows > accumulated)
				break;
			consume_run(rel, &st, run, snapshot, &cand, cs.tmp_cxt);
			accumulated += rows;
			nmerged++;
		}
	}
	UnregisterSnapshot(snapshot);

	zorder_progress_phase(ZORDER_PHASE_SORT_TUPLES);
	if (cand.n > 1)
	{
		zr_item    *tmp = palloc_extended(cand.n * sizeof(zr_item),
										  MCXT_ALLOC_HUGE);

		zr_sort(cand.items, tmp, cand.n);
		pfree(tmp);
	}

	zorder_progress_phase(ZORDER_PHASE_WRITE_NEW_HEAP);

	if (merge)
	{
		int64		target;

		/* rows below where a resumed merge goes on make a cube after it */
		while (ulow < cand.n && cand.items[ulow].key < st.lay.cursor)
			ulow++;
		upos = ulow;
		/*
		 * A slice's rows go to ranges the slices before it left (pruned
		 * after each commit), so the heap grows by about one slice: take
		 * 1/MERGE_SLICES of the main run, less if a batch is smaller.
		 */
		target = Min(main_rows / MERGE_SLICES + 1,
					 (int64) ((double) zorder_max_batch_size * main_rows /
							  (double) Max(1, main_rows + (int64) (cand.n - ulow))));
		target = Max(target, 1);
		writer_start_run(&w, 0);
		for (;;)
		{
			Candidates	slice = {0};
			uint64		hi_ex = 0;
			bool		to_end;
			size_t		uend = upos;
			size_t		nitems;
			zr_item    *items;
			MemoryContext prev;

			batch_begin(&cs);
			prev = MemoryContextSwitchTo(cs.batch_cxt);
			to_end = take_slice(cs.rel, &st, target, cs.snapshot, &slice,
								&hi_ex, cs.tmp_cxt);
			while (uend < cand.n && (to_end || cand.items[uend].key < hi_ex))
				uend++;

			/* the slice with the other rows of its keys, sorted */
			nitems = slice.n + uend - upos;
			items = palloc_extended((nitems + 1) * sizeof(zr_item),
									MCXT_ALLOC_HUGE);
			if (slice.n > 0)
				memcpy(items, slice.items, slice.n * sizeof(zr_item));
			if (uend > upos)
				memcpy(items + slice.n, cand.items + upos,
					   (uend - upos) * sizeof(zr_item));
			if (nitems > 1)
				zr_sort(items,
						palloc_extended(nitems * sizeof(zr_item), MCXT_ALLOC_HUGE),
						nitems);
			MemoryContextSwitchTo(prev);
			move_items(&cs, items, nitems);
			upos = uend;
			if (to_end)
			{
				st.lay.merging = false;
				st.lay.cursor = 0;
			}
			else
			{
				/*
				 * Keep "key_lo >= cursor" meaning "not merged yet": what
				 * this slice wrote starts below the cursor, what is left
				 * starts at it or after.
				 */
				for (int i = 0; i < st.nextents; i++)
				{
					Extent	   *e = &st.extents[i];

					if (e->run != 0)
						continue;
					if (e->fresh)
						e->key_lo = Min(Max(e->key_lo, st.lay.cursor), hi_ex - 1);
					else if (e->key_lo >= st.lay.cursor)
						e->key_lo = Max(e->key_lo, hi_ex);
				}
				st.lay.cursor = hi_ex;
			}
			for (int i = 0; i < st.nextents; i++)
				st.extents[i].fresh = false;
			trim_extents(&st, &w);
			for (int i = 0; i < st.nextents; i++)
				st.extents[i].slice_rows = 0;
			batch_end(&cs, !to_end || ulow > 0);
			if (to_end)
				break;
		}
	}

	if (placing)
		place_newcomers(&cs, &cand, main_rows);
	else if (!merge || ulow > 0)
	{
		size_t		n = merge ? ulow : cand.n;
		size_t		pos = 0;

		writer_start_run(&w, maxrun + 1);
		do
		{
			size_t		end = Min(n, pos + (size_t) zorder_max_batch_size);

			batch_begin(&cs);
			move_items(&cs, cand.items + pos, end - pos);
			trim_extents(&st, &w);
			pos = end;
			if (pos >= n)
				break;
			batch_end(&cs, true);
		} while (true);
	}
	else
	{
		/* the last merge batch ended without saving the history */
		batch_begin(&cs);
	}

	/* the last batch: record the call with it */
	save_batch(&cs);
	zorder_history_record(relid, started, merge ? "merge" : "incremental",
						  cs.moved, nmerged);
	UnregisterSnapshot(cs.snapshot);
	if (cs.pushed)
		PopActiveSnapshot();

	if (cs.moved > 0 || cs.nvacated > 0)
	{
		bool		unchanged = true;

		/* commit the moves first, so that fresh summaries leave them out */
		if (can_commit)
			unchanged = commit_and_reopen(&cs, ShareUpdateExclusiveLock);

		/*
		 * The call's work is done; if the table changed since, its blocks
		 * are no longer those the moves left, and a rewrite summarized the
		 * new ones.
		 */
		if (unchanged)
		{
			PushActiveSnapshot(GetTransactionSnapshot());
			after_commit(&cs, false);
			brin_summarize_rest(cs.rel);
			PopActiveSnapshot();
		}
	}
	table_close(cs.rel, NoLock);

	/* BRIN (brin.c): create the index if asked, record pages_per_range */
	zorder_brin_after_optimize(relid, nkeys, attnums);

	pgstat_progress_end_command();
	AtEOXact_GUC(false, cs.save_nestlevel);
	SetUserIdAndSecContext(cs.save_userid, cs.save_sec_context);
	MemoryContextSwitchTo(cs.caller_cxt);
	MemoryContextDelete(cs.keep_cxt);
	return true;
}

/* ----------------------------------------------------------------
 * Version differences (to move into pg_compat.h)
 * ----------------------------------------------------------------
 */

/*
 * OIDs of the publications whose changes of rel a walsender decodes, as
 * RelationBuildPublicationDesc gathers them: those that list the table or
 * a partition ancestor, those of the schema of either, and those FOR ALL
 * TABLES.  19 names the first lookup GetRelationIncludedPublications and
 * lets FOR ALL TABLES leave out tables listed with EXCEPT, which are named
 * by the topmost ancestor of a partition.
 */
static List *
relation_publications(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			root = relid;
	List	   *puboids;
	List	   *alltables;
	ListCell   *lc;

	puboids = zorder_relation_publications(relid);
	puboids = list_concat_unique_oid(puboids,
									 GetSchemaPublications(RelationGetNamespace(rel)));
	if (rel->rd_rel->relispartition)
	{
		foreach(lc, get_partition_ancestors(relid))
		{
			Oid			ancestor = lfirst_oid(lc);

			puboids = list_concat_unique_oid(puboids,
											 zorder_relation_publications(ancestor));
			puboids = list_concat_unique_oid(puboids,
											 GetSchemaPublications(get_rel_namespace(ancestor)));
			root = ancestor;
		}
	}
	alltables = GetAllTablesPublications();
	alltables = list_difference_oid(alltables,
									zorder_excluded_publications(root));
	return list_concat_unique_oid(puboids, alltables);
}
