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
#include "heappage.h"
#include "keyenc.h"
#include "layout.h"
#include "layoutkey.h"
#include "pg_compat.h"
#include "placement.h"
#include "radix.h"
#include "incremental.h"
#include "zorder.h"

/*
 * Share of the table's rows outside the main run above which a call merges
 * them into it (zorder.merge_threshold): the whole table moves.  At 1, the
 * default, no call merges unless one is under way.
 */
double		zorder_merge_threshold = 1.0;

/* Called from _PG_init. */
void
zorder_incremental_init(void)
{
	DefineCustomRealVariable("zorder.merge_threshold",
							 "Share of a table's rows outside its main sorted run above which an "
							 "incremental zorder.optimize merges them into it (1: never).",
							 "A merge moves the whole main run, one key slice per batch; lower "
							 "values keep skipping closer to a full optimize and move more rows.",
							 &zorder_merge_threshold,
							 1.0, 0.0, 1.0,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/* a merge takes the main run in about this many slices */
#define MERGE_SLICES	64

/* Append an extent to the state; returns its index. */
int
zorder_add_extent(IncrState *st, BlockNumber first_block, BlockNumber nblocks,
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
		zorder_add_extent(st, runs[i].first_block, runs[i].nblocks, runs[i].rows,
				   runs[i].xid, runs[i].run, runs[i].key_lo);
}

/*
 * Save the runs and the merge cursor in the catalog (layout.c), replacing
 * what it had.  Returns how many extents it saved.
 */
int64
zorder_save_extents(Oid relid, IncrState *st)
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

void
zorder_add_candidate(Candidates *c, uint64 key, ItemPointer tid, bool counted,
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
uint64
zorder_row_key(IncrState *st, TupleDesc desc, HeapTuple tuple)
{
	return zorder_tuple_key(st->lay.cols, NULL, st->lay.nkeys, st->lay.curve,
							st->lay.bits, desc, tuple);
}

/* A ZRowKeep (heappage.c) for the rows a CollectFilter selects. */
bool
zorder_collect_keep(HeapTuple tuple, Buffer buf, void *arg)
{
	CollectFilter *f = (CollectFilter *) arg;
	bool		newer;

	if (!HeapTupleSatisfiesVisibility(tuple, f->snapshot, buf))
		return false;
	if (f->mode == COLLECT_ALL)
		return true;
	newer = !HeapTupleHeaderXminFrozen(tuple->t_data) &&
		TransactionIdFollows(HeapTupleHeaderGetXmin(tuple->t_data), f->xid);
	return newer == (f->mode == COLLECT_NEWER);
}

/*
 * Scan blocks [from, to) and add the rows visible to snapshot that mode
 * selects, xid being the run's.  With skip_frozen, pages VACUUM marked
 * all-frozen are skipped.  With counted, the rows are counted in their
 * range's remaining rows.
 */
void
zorder_collect_block_range(Relation rel, IncrState *st, BlockNumber from,
						   BlockNumber to, CollectMode mode, TransactionId xid,
						   bool skip_frozen, bool counted, Snapshot snapshot,
						   Candidates *c, MemoryContext tmpcxt)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Buffer		vmbuf = InvalidBuffer;
	BufferAccessStrategy strategy;
	HeapTuple	picked[MaxHeapTuplesPerPage];
	CollectFilter filter = {snapshot, mode, xid};

	/* a run's last pages may be gone: VACUUM truncates empty ones */
	to = Min(to, RelationGetNumberOfBlocks(rel));
	if (from >= to)
		return;
	strategy = GetAccessStrategy(BAS_BULKREAD);
	for (BlockNumber blk = from; blk < to; blk++)
	{
		MemoryContext oldcxt;
		int			npicked;

		CHECK_FOR_INTERRUPTS();

		/*
		 * An insert clears a page's all-frozen bit, and VACUUM sets it again
		 * only once every row there is frozen: a full rewrite freezes what
		 * it writes, so after the VACUUM that follows it the pages of the
		 * first run are skipped unread until a newcomer lands on them.
		 */
		if (skip_frozen && VM_ALL_FROZEN(rel, blk, &vmbuf))
			continue;

		oldcxt = MemoryContextSwitchTo(tmpcxt);
		npicked = zorder_block_rows(rel, blk, strategy, zorder_collect_keep,
									&filter, picked);
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

/* True if some extent of a run covers a block of [from, to). */
bool
zorder_blocks_in_run(IncrState *st, BlockNumber from, BlockNumber to)
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
 * Take out of their runs the ranges none of whose rows are left, now that a
 * batch moved them.  What is left of a main-run extent after a slice starts
 * at the merge cursor in key order.
 */
void
zorder_trim_extents(IncrState *st, Writer *w)
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
			int			k = zorder_add_extent(st, e->first_block, e->nblocks, e->rows,
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
					k = zorder_add_extent(st, piece, b - piece,
								   Max(e->rows - e->slice_rows, 0), e->xid, 0,
								   piece == e->first_block ? e->key_lo : st->lay.cursor);
				else
				{
					k = zorder_add_extent(st, piece, b - piece, rows, e->xid, e->run,
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

int
zorder_cmp_uint64(const void *a, const void *b)
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
				qsort(keys, n, sizeof(uint64), zorder_cmp_uint64);
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

			zorder_collect_block_range(rel, st, b, next, COLLECT_OLDER, e->xid, false,
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

/* Make the remaining rows' counts cover a heap of nblocks blocks. */
void
zorder_ensure_ranges(IncrState *st, BlockNumber nblocks)
{
	BlockNumber n = nblocks / st->lay.ppr + 1;

	if (n <= st->nranges)
		return;
	st->remaining = repalloc_huge(st->remaining, sizeof(int32) * n);
	for (BlockNumber r = st->nranges; r < n; r++)
		st->remaining[r] = -1;
	st->nranges = n;
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
		zorder_collect_block_range(rel, st, e->first_block, end, COLLECT_OLDER,
							e->xid, false, true, snapshot, c, tmpcxt);
	}
}

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
			uint64		key = zorder_row_key(st, desc, copy);

			MemoryContextSwitchTo(oldcxt);
			zorder_add_candidate(c, key, &copy->t_self, false, copy->t_len);
			MemoryContextReset(tmpcxt);
			found++;
		}
	}
	if (found == 0)
		zorder_layout_set_misplaced(RelationGetRelid(rel), NULL, 0);
}

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
	zorder_check_publications(rel);

	zorder_progress_start(relid);
	zorder_progress_phase(ZORDER_PHASE_SEQ_SCAN_HEAP);

	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	cs.found = zorder_found_snapshot(snapshot, cs.keep_cxt);
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
				zorder_collect_block_range(rel, &st, next, start, COLLECT_ALL,
									InvalidTransactionId, false, false,
									snapshot, &cand, cs.tmp_cxt);
				for (BlockNumber r = next + (st.lay.ppr - next % st.lay.ppr) % st.lay.ppr;
					 r + st.lay.ppr <= start; r += st.lay.ppr)
					if (zorder_blocks_empty(rel, r, r + st.lay.ppr))
						zorder_writer_add_free(&w, r);
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
		zorder_collect_block_range(rel, &st, st.extents[i].first_block,
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
		zorder_main_run_by_range(rel, &st, snapshot, cs.tmp_cxt);
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
			zorder_writer_start_run(&w, ++maxrun);
			newcomers_run = maxrun;
			for (size_t pos = 0; pos < cand.n;)
			{
				size_t		end = Min(cand.n, pos + (size_t) zorder_max_batch_size);

				zorder_batch_begin(&cs);
				zorder_move_items(&cs, cand.items + pos, end - pos);
				zorder_trim_extents(&st, &w);
				zorder_batch_end(&cs, true);
				pos = end;
			}
			cand.n = 0;
			rel = cs.rel;
			snapshot = RegisterSnapshot(GetTransactionSnapshot());
			cs.found = zorder_found_snapshot(snapshot, cs.keep_cxt);
			zorder_ensure_ranges(&st, RelationGetNumberOfBlocks(rel));
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
		zorder_writer_start_run(&w, 0);
		for (;;)
		{
			Candidates	slice = {0};
			uint64		hi_ex = 0;
			bool		to_end;
			size_t		uend = upos;
			size_t		nitems;
			zr_item    *items;
			MemoryContext prev;

			zorder_batch_begin(&cs);
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
			zorder_move_items(&cs, items, nitems);
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
			zorder_trim_extents(&st, &w);
			for (int i = 0; i < st.nextents; i++)
				st.extents[i].slice_rows = 0;
			zorder_batch_end(&cs, !to_end || ulow > 0);
			if (to_end)
				break;
		}
	}

	if (placing)
		zorder_place_newcomers(&cs, &cand, main_rows);
	else if (!merge || ulow > 0)
	{
		size_t		n = merge ? ulow : cand.n;
		size_t		pos = 0;

		zorder_writer_start_run(&w, maxrun + 1);
		do
		{
			size_t		end = Min(n, pos + (size_t) zorder_max_batch_size);

			zorder_batch_begin(&cs);
			zorder_move_items(&cs, cand.items + pos, end - pos);
			zorder_trim_extents(&st, &w);
			pos = end;
			if (pos >= n)
				break;
			zorder_batch_end(&cs, true);
		} while (true);
	}
	else
	{
		/* the last merge batch ended without saving the history */
		zorder_batch_begin(&cs);
	}

	/* the last batch: record the call with it */
	zorder_save_batch(&cs);
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
			unchanged = zorder_commit_and_reopen(&cs, ShareUpdateExclusiveLock);

		/*
		 * The call's work is done; if the table changed since, its blocks
		 * are no longer those the moves left, and a rewrite summarized the
		 * new ones.
		 */
		if (unchanged)
		{
			PushActiveSnapshot(GetTransactionSnapshot());
			zorder_after_commit(&cs, false);
			zorder_brin_summarize_rest(cs.rel);
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
