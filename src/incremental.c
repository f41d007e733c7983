/*-------------------------------------------------------------------------
 *
 * incremental.c
 *	  Incremental zorder.optimize: move only the rows that are not yet in a
 *	  sorted run, the newcomers, to where the layout puts them.
 *
 * After a full optimize the heap is one sorted run, the main run.  An
 * incremental call finds the newcomers, computes their curve keys with the
 * boundaries the table's layout recorded, and by default places each into
 * the range of the main run whose stretch of the curve holds its key
 * (place.c); settings choose the other paths, cubes and merges (cubes.c).
 * Every batch saves the runs in the catalog with its moves, so a call cut
 * short leaves a catalog that matches the heap.  The design, told once:
 * docs/design.md; the terms: DEVELOPERS.md's glossary.
 *
 * The moves take EXCLUSIVE lock: plain SELECTs go on, while writers and row
 * lockers wait until the batch commits.  A writer that waited then takes its
 * snapshot after the commit and acts on the moved row, so no UPDATE
 * silently misses one.  Outside a transaction block, each batch of at most
 * zorder.max_batch_size rows commits on its own.  Moves are ordinary
 * heap deletes and inserts, so logical replication and standbys see them
 * as what they are; triggers do not fire.
 *
 * This file orchestrates: the entry point, as phases over the call, with
 * the taking of a band's rows.  The cube and merge paths are cubes.c's,
 * the runs' extents runs.c's, the rows a call collects collect.c's,
 * regions of the key space regions.c's, the batches batch.c's, a row's
 * move mover.c's, and placement into the main run's ranges place.c's (see
 * incremental.h for their order).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/visibilitymap.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "commands/tablecmds.h"
#include "utils/guc.h"

#include "batch.h"
#include "boundsets.h"
#include "brin.h"
#include "collect.h"
#include "cubes.h"
#include "heappage.h"
#include "incremental.h"
#include "mover.h"
#include "pending.h"
#include "pg_compat.h"
#include "place.h"
#include "quantile.h"
#include "radix.h"
#include "regions.h"
#include "room.h"
#include "skipping.h"
#include "runs.h"
#include "tables.h"
#include "zorder.h"

/*
 * Share of the table's rows outside the main run above which a call merges
 * them into it (zorder.merge_threshold): the whole table moves.  At 1, the
 * default, no call merges unless one is under way.
 */
double		zorder_merge_threshold = 1.0;

/*
 * A narrow band of values that new rows crowd into gets a region of keys
 * of its own (zorder.band_regions, regions.c).
 */
bool		zorder_band_regions = true;

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
	DefineCustomBoolVariable("zorder.band_regions",
							 "Incremental zorder.optimize gives a narrow band of values that new rows "
							 "crowd into a region of keys of its own.",
							 "Off: such rows go to the ranges of the band's slab of the curve, "
							 "ordered by the other key columns only.",
							 &zorder_band_regions,
							 true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * The row at tid, a copy in tmpcxt, if snapshot sees it there and it is one
 * of a run's own (on the run's blocks, and not newer than the run); else
 * NULL.  *extent, if asked for, is the run's extent.
 */
static HeapTuple
fetch_run_row(Relation rel, IncrState *st, ItemPointer tid, Snapshot snapshot,
			  BlockNumber nblocks, MemoryContext tmpcxt, Extent **extent)
{
	BlockNumber blk = ItemPointerGetBlockNumber(tid);
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);
	Extent	   *e = NULL;
	Buffer		buf;
	Page		page;
	HeapTupleData tuple;
	HeapTuple	copy = NULL;

	for (int x = 0; x < st->nextents; x++)
		if (blk >= st->extents[x].r.first_block &&
			blk < st->extents[x].r.first_block + st->extents[x].r.nblocks)
			e = &st->extents[x];
	if (e == NULL || blk >= nblocks)
		return NULL;
	buf = ReadBuffer(rel, blk);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (off <= PageGetMaxOffsetNumber(page) &&
		zorder_page_tuple(rel, page, blk, off, &tuple) &&
		HeapTupleSatisfiesVisibility(&tuple, snapshot, buf) &&
		(HeapTupleHeaderXminFrozen(tuple.t_data) ||
		 !TransactionIdFollows(HeapTupleHeaderGetXmin(tuple.t_data),
							   e->r.xid)))
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(tmpcxt);

		copy = heap_copytuple(&tuple);
		MemoryContextSwitchTo(oldcxt);
	}
	UnlockReleaseBuffer(buf);
	if (extent != NULL)
		*extent = e;
	return copy;
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
	MemoryContext oldcxt;

	st->nlisted_tids = 0;
	/* TIDs of the heap the list was made for only */
	arr = zorder_layout_misplaced(rel);
	if (arr == NULL)
		return;
	deconstruct_array(arr, TIDOID, sizeof(ItemPointerData),
					  false, TYPALIGN_SHORT, &tids, NULL, &ntids);
	st->listed_tids = palloc(sizeof(ItemPointerData) * Max(ntids, 1));
	st->nlisted_tids = 0;
	for (int i = 0; i < ntids; i++)
	{
		HeapTuple	copy;

		CHECK_FOR_INTERRUPTS();
		copy = fetch_run_row(rel, st, (ItemPointer) DatumGetPointer(tids[i]),
							 snapshot, nblocks, tmpcxt, NULL);
		if (copy != NULL)
		{
			uint64		key;

			oldcxt = MemoryContextSwitchTo(tmpcxt);
			key = zorder_row_key(st, desc, copy);
			MemoryContextSwitchTo(oldcxt);
			zorder_add_candidate(c, key, &copy->t_self, false, copy->t_len);
			st->listed_tids[st->nlisted_tids++] = copy->t_self;
			MemoryContextReset(tmpcxt);
			found++;
			st->listed++;
		}
	}
	qsort(st->listed_tids, st->nlisted_tids, sizeof(ItemPointerData),
		  zorder_cmp_tid);
	if (found == 0)
		zorder_layout_set_misplaced(RelationGetRelid(rel), NULL, 0);
}

/* Back to the caller: its user, settings and memory context. */
static void
call_restore(IncrCall *ic)
{
	zorder_restore_user(&ic->cs.owner);
	MemoryContextSwitchTo(ic->cs.caller_cxt);
	MemoryContextDelete(ic->cs.keep_cxt);
}

/*
 * Open the table, work as its owner, and load its layout and runs.
 * Returns false, having changed nothing, if the table has no layout or
 * no runs of its current file: a full optimize must lay it out.
 */
static bool
call_begin(IncrCall *ic, Oid relid, const char *curve, bool can_commit)
{
	CallState  *cs = &ic->cs;
	Relation	rel;
	int			sampled;

	cs->relid = relid;
	cs->can_commit = can_commit;
	cs->st = &ic->st;
	cs->w = &ic->w;
	cs->caller_cxt = CurrentMemoryContext;
	zorder_report_start(&ic->report);

	rel = zorder_open_checked(relid, ExclusiveLock, "zorder.optimize");
	CheckTableNotInUse(rel, "zorder.optimize");
	ic->nkeys = zorder_get_keys_required(rel, ic->attnums);
	/* runs of another file than the table's: a full optimize lays it out */
	if (zorder_forget_stale_runs(rel))
	{
		table_close(rel, ExclusiveLock);
		return false;
	}
	cs->relfilenode = rel->rd_rel->relfilenode;
	cs->relkind = rel->rd_rel->relkind;
	cs->relam = rel->rd_rel->relam;

	zorder_become_owner(rel->rd_rel->relowner, &cs->owner);

	/* what must outlive the commits between batches */
	cs->keep_cxt = AllocSetContextCreate(PortalContext, "zorder incremental",
										 ALLOCSET_DEFAULT_SIZES);
	cs->batch_cxt = AllocSetContextCreate(cs->keep_cxt, "zorder incremental batch",
										  ALLOCSET_DEFAULT_SIZES);
	cs->tmp_cxt = AllocSetContextCreate(cs->keep_cxt, "zorder incremental row",
										ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cs->keep_cxt);

	if (!zorder_layout_load(rel, ic->nkeys, ic->attnums, curve, &ic->st.lay))
	{
		/* no layout at all: a full optimize must lay the table out first */
		if (!zorder_layout_exists(relid))
		{
			call_restore(ic);
			/* let the full optimize take its stronger lock afresh */
			table_close(rel, ExclusiveLock);
			return false;
		}

		/*
		 * Keys, curve or a key column's type or collation changed: old runs
		 * stay as they are, new rows follow the new keys.
		 */
		sampled = zorder_layout_resample(rel, ic->nkeys, ic->attnums,
										 curve ? curve : zorder_curve_name(ic->st.lay.curve),
										 &ic->st.lay);
		zorder_layout_set_boundary_set(relid,
									   zorder_save_boundary_set(relid, ic->nkeys,
																ic->st.lay.cols,
																ic->st.lay.curve,
																ic->st.lay.bits,
																sampled, "optimize"));
	}

	zorder_load_extents(relid, &ic->st);

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
	cs->rel = rel;

	/*
	 * report.c: the skipping before, to set beside the skipping after;
	 * with the summaries the calls before left loose (batch.c), which
	 * this call tightens next.
	 */
	ic->report.nkeys = ic->nkeys;
	memcpy(ic->report.attnums, ic->attnums, sizeof(AttrNumber) * ic->nkeys);
	zorder_report_point_ranges(rel, ic->nkeys, ic->attnums, ic->report.before);
	cs->had_loose = zorder_resummarize_loose(cs);
	return true;
}

/*
 * Where this call's scan for newcomers starts reading the pages of the
 * runs (zorder.layouts.scan_lsn, collect.c), and where the next call's
 * may, if this one goes to the end.
 *
 * The position is read under the call's lock, before its snapshot.  The
 * lock waited for every transaction that wrote to the table to end, and no
 * other can write to it before the lock is released: so every row written
 * before the position is visible to the snapshot or never will be, and
 * every row the snapshot does not see is written after it, on a page whose
 * LSN it then passes.  A call that goes to the end has taken every row its
 * snapshot sees on the pages it read, except those it leaves where they
 * are as rows of their range (place.c's stayers), which the next call
 * would leave there too.  Not so where the snapshot may be older than the
 * lock (a REPEATABLE READ or SERIALIZABLE transaction block), nor for a
 * heap whose writes are not WAL-logged (an unlogged or temporary table, a
 * file this transaction made under wal_level minimal): their pages do
 * not show them in their LSN.
 */
static void
note_scan_lsn(IncrCall *ic)
{
	Relation	rel = ic->cs.rel;

	memset(&ic->skip, 0, sizeof(ic->skip));
	ic->scan_lsn = InvalidXLogRecPtr;
	if (!RelationNeedsWAL(rel))
		return;

	/*
	 * Without placement, or where a merge may come, every newcomer moves
	 * and the rows of the runs are taken only if no newer than their run
	 * (cubes.c): the stayers earlier calls left in their ranges must be
	 * found again, wherever they are.
	 */
	if (zorder_placement && zorder_merge_threshold >= 1.0 &&
		!ic->st.lay.merging)
		ic->skip.since = zorder_layout_scan_lsn(rel);
	if (!IsolationUsesXactSnapshot())
		ic->scan_lsn = GetXLogInsertRecPtr();
}

/*
 * Collect the newcomers into ic->cand with their keys (st->remaining
 * counting those of each range); on the first scan, note the whole ranges
 * outside the runs that are empty, for the writer to fill first.
 */
static void
scan_newcomers(IncrCall *ic, BlockNumber nblocks, bool first)
{
	Relation	rel = ic->cs.rel;
	IncrState  *st = &ic->st;
	BlockNumber next = 0;

	st->listed = 0;
	ic->skip.nfrozen = ic->skip.nunchanged = ic->skip.nread = 0;

	/*
	 * Rows outside every run: appended after the last one, or in pages rows
	 * left.  Whole ranges there with nothing in them take moved rows first.
	 */
	for (int i = 0; i <= st->nextents; i++)
	{
		BlockNumber start = i < st->nextents ?
			Min(st->extents[i].r.first_block, nblocks) : nblocks;

		if (start > next)
		{
			zorder_collect_block_range(rel, st, next, start, COLLECT_ALL,
									   InvalidTransactionId, NULL, false,
									   ic->snapshot, &ic->cand,
									   ic->cs.tmp_cxt);
			for (BlockNumber r = next + (st->lay.ppr - next % st->lay.ppr) % st->lay.ppr;
				 r + st->lay.ppr <= start; r += st->lay.ppr)
				if (first && zorder_blocks_empty(rel, r, r + st->lay.ppr))
					zorder_writer_add_free(&ic->w, r);
		}
		if (i < st->nextents)
			next = Max(next, Min(st->extents[i].r.first_block +
								 st->extents[i].r.nblocks, nblocks));
	}

	/*
	 * Rows that came into free space inside the runs, on the pages written
	 * since the last call (note_scan_lsn).  They are told apart by an xmin
	 * newer than the run's: a newcomer that VACUUM froze since is taken for
	 * an old row, and stays until the next full optimize.
	 */
	for (int i = 0; i < st->nextents; i++)
	{
		zorder_collect_block_range(rel, st, st->extents[i].r.first_block,
								   Min(st->extents[i].r.first_block +
									   st->extents[i].r.nblocks, nblocks),
								   COLLECT_NEWER, st->extents[i].r.xid,
								   &ic->skip, false, ic->snapshot, &ic->cand,
								   ic->cs.tmp_cxt);
		ic->maxrun = Max(ic->maxrun, st->extents[i].r.run);
	}
	ereport(DEBUG1,
			(errmsg_internal("scan for newcomers in the runs: %u pages read, %u not written since %X/%X, %u all-frozen",
							 ic->skip.nread, ic->skip.nunchanged,
							 LSN_FORMAT_ARGS(ic->skip.since),
							 ic->skip.nfrozen)));
	collect_misplaced(rel, st, ic->snapshot, &ic->cand, ic->cs.tmp_cxt);
}

/*
 * True if the call will place its newcomers into the main run's ranges
 * (choose_plan), with no cube or merge about: only then may a band of
 * values get a region (regions.c), since the rows of region 0 that hold
 * its values change keys and must move into ranges by them.
 */
static bool
bands_possible(IncrCall *ic)
{
	IncrState  *st = &ic->st;

	if (!zorder_band_regions || !zorder_placement || st->lay.merging ||
		zorder_merge_threshold < 1.0)
		return false;
	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].r.run != 0)
			return false;
	return st->nextents > 0;
}

/* Which rows of the main run hold a band's values (band_rows). */
typedef struct BandFilter
{
	CollectFilter f;			/* the run's own rows */
	TupleDesc	desc;
	ZKeyColumn *col;
	const ZBand *band;
} BandFilter;

/* A ZRowKeep: by-value integer kinds only, so nothing is detoasted. */
static bool
band_keep(HeapTuple tuple, Buffer buf, void *arg)
{
	BandFilter *bf = (BandFilter *) arg;
	Datum		value;
	bool		isnull;
	uint64		u;

	if (!zorder_collect_keep(tuple, buf, &bf->f))
		return false;
	value = heap_getattr(tuple, bf->col->attnum, bf->desc, &isnull);
	if (isnull)
		return false;
	u = zorder_ordered_u64(bf->col, value);
	return u > bf->band->lo && u <= bf->band->hi;
}

/* rows of the main run a band may take along, per newcomer of it */
#define ZR_LAID_OUT	3

static int
cmp_int(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/* Extents by their first block, as the scans of the heap want them. */
static int
cmp_extent_block(const void *a, const void *b)
{
	BlockNumber x = ((const Extent *) a)->r.first_block;
	BlockNumber y = ((const Extent *) b)->r.first_block;

	return (x > y) - (x < y);
}

/*
 * The TIDs of the rows of the main run's ranges that hold values of the
 * band (in *tids, in block order): at most max of them, or -1 if there are
 * more.
 */
static int64
band_rows(IncrCall *ic, const ZBand *band, int64 max, ItemPointerData **tids)
{
	Relation	rel = ic->cs.rel;
	IncrState  *st = &ic->st;
	BandFilter	bf = {{ic->snapshot, COLLECT_OLDER, InvalidTransactionId, NULL, 0},
	RelationGetDescr(rel), &st->lay.cols[band->k], band};
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	HeapTuple	picked[MaxHeapTuplesPerPage];
	int		   *ext;
	int			next = zorder_regions_band_extents(st, band, &ext);
	int64		n = 0;
	int64		cap = 64;

	/* extents are in block order: read the ranges so */
	if (next > 0)
		qsort(ext, next, sizeof(int), cmp_int);
	*tids = palloc(sizeof(ItemPointerData) * cap);
	for (int x = 0; x < next && n >= 0; x++)
	{
		Extent	   *e = &st->extents[ext[x]];
		BlockNumber end = Min(e->r.first_block + e->r.nblocks, nblocks);

		bf.f.xid = e->r.xid;
		for (BlockNumber blk = e->r.first_block; blk < end && n >= 0; blk++)
		{
			int			npicked;

			CHECK_FOR_INTERRUPTS();
			npicked = zorder_block_rows(rel, blk, strategy, band_keep, &bf,
										picked);
			if (n + npicked > max)
			{
				for (int i = 0; i < npicked; i++)
					heap_freetuple(picked[i]);
				n = -1;
				break;
			}
			if (n + npicked > cap)
			{
				cap = Max(cap * 2, n + npicked);
				*tids = repalloc_huge(*tids, sizeof(ItemPointerData) * cap);
			}
			for (int i = 0; i < npicked; i++)
			{
				(*tids)[n++] = picked[i]->t_self;
				heap_freetuple(picked[i]);
			}
		}
	}
	FreeAccessStrategy(strategy);
	return n;
}

/*
 * Open a region for a narrow band of values the newcomers crowd into, if
 * there is one (regions.c) and the rows of the main run that hold its
 * values are at most ZR_LAID_OUT times its newcomers: they move into the
 * region in this call with the newcomers.  Returns their TIDs and how
 * many, or -1 if no band opened.
 */
static int64
open_band(IncrCall *ic, ItemPointerData **tids)
{
	IncrState  *st = &ic->st;
	ZBand		band;
	int64		n;

	if (!zorder_regions_find_band(st, &band))
		return -1;

	/*
	 * The ranges one by one, as the placement wants them anyway; their new
	 * extents go at the end, and the scan of the newcomers that follows
	 * wants them in block order.
	 */
	zorder_main_run_by_range(ic->cs.rel, st, ic->snapshot, ic->cs.tmp_cxt,
							 false);
	qsort(st->extents, st->nextents, sizeof(Extent), cmp_extent_block);
	n = band_rows(ic, &band, (int64) (ZR_LAID_OUT * band.newcomers), tids);
	if (n < 0 || !zorder_regions_open_band(st, &band, n))
		return -1;
	ereport(DEBUG1,
			(errmsg_internal("band region on key %d: (%llu, %llu], %u bands, %lld rows laid out before",
							 band.k + 1, (unsigned long long) band.lo,
							 (unsigned long long) band.hi,
							 st->lay.region_bands[st->lay.nregions - 1],
							 (long long) n)));
	return n;
}

/*
 * The rows of region 0 that a band's region now holds (tids): candidates,
 * with their new keys, unless already among them (listed as misplaced) or
 * gone, and listed as misplaced in the catalog in the transaction that
 * saves the region, so that a call cut short leaves them for the next one.
 * Their ranges count them no more.
 */
static void
take_band_rows(IncrCall *ic, const ItemPointerData *tids, int64 n)
{
	Relation	rel = ic->cs.rel;
	IncrState  *st = &ic->st;
	TupleDesc	desc = RelationGetDescr(rel);
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	MemoryContext tmpcxt = ic->cs.tmp_cxt;
	uint64	   *have = palloc_extended(sizeof(uint64) * Max(ic->cand.n, 1),
									   MCXT_ALLOC_HUGE);
	ArrayType  *listed = zorder_layout_misplaced(rel);
	Datum	   *old = NULL;
	int			nold = 0;
	Datum	   *all;
	int64		nall = 0;

	for (size_t i = 0; i < ic->cand.n; i++)
		have[i] = ic->cand.items[i].val & CAND_TID_MASK;
	qsort(have, ic->cand.n, sizeof(uint64), zr_cmp_u64);
	if (listed != NULL)
		deconstruct_array(listed, TIDOID, sizeof(ItemPointerData), false,
						  TYPALIGN_SHORT, &old, NULL, &nold);
	all = palloc_extended(sizeof(Datum) * (nold + n + 1), MCXT_ALLOC_HUGE);
	for (int i = 0; i < nold; i++)
		all[nall++] = old[i];
	for (int64 i = 0; i < n; i++)
	{
		ItemPointer tid = (ItemPointer) &tids[i];
		uint64		t = zorder_cand_tid(tid);
		Extent	   *e;
		HeapTuple	copy;
		uint64		key;
		MemoryContext oldcxt;

		CHECK_FOR_INTERRUPTS();
		if (bsearch(&t, have, ic->cand.n, sizeof(uint64),
					zr_cmp_u64) != NULL)
			continue;
		copy = fetch_run_row(rel, st, tid, ic->snapshot, nblocks, tmpcxt, &e);
		if (copy == NULL)
			continue;
		oldcxt = MemoryContextSwitchTo(tmpcxt);
		key = zorder_row_key(st, desc, copy);
		MemoryContextSwitchTo(oldcxt);
		/* the band's, as band_rows chose it by its value */
		if (zk_region_of(key) == (unsigned) st->lay.nregions)
		{
			zorder_add_candidate(&ic->cand, key, tid, false, copy->t_len);
			all[nall++] = PointerGetDatum(tid);
			st->listed++;
			e->r.rows = Max(e->r.rows - 1, 0);
		}
		MemoryContextReset(tmpcxt);
	}
	zorder_layout_set_misplaced(RelationGetRelid(rel), all, (int) nall);
}

/*
 * Find the rows to move: those outside every run, those that came into
 * free space inside the runs, and those a recognised run holds out of
 * order; with the BRIN ranges outside the runs that are empty, for the
 * writer to fill first.
 */
static void
collect_newcomers(IncrCall *ic)
{
	Relation	rel = ic->cs.rel;
	IncrState  *st = &ic->st;
	BlockNumber nblocks;
	ItemPointerData *band = NULL;
	int64		nband = -1;
	bool		opened;

	note_scan_lsn(ic);
	ic->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	ic->cs.found = zorder_found_snapshot(ic->snapshot, ic->cs.keep_cxt);
	nblocks = RelationGetNumberOfBlocks(rel);
	st->nranges = nblocks / st->lay.ppr + 1;
	st->remaining = palloc_extended(sizeof(int32) * st->nranges,
									MCXT_ALLOC_HUGE);
	memset(st->remaining, 0xFF, sizeof(int32) * st->nranges);	/* all -1 */
	ic->w.savefree = RelationGetTargetPageFreeSpace(rel, HEAP_DEFAULT_FILLFACTOR);

	/* VACUUM may have truncated empty pages at the end of a run */
	for (int i = 0; i < st->nextents; i++)
	{
		Extent	   *e = &st->extents[i];

		if (e->r.first_block >= nblocks)
			e->r.nblocks = 0;
		else
			e->r.nblocks = Min(e->r.nblocks, nblocks - e->r.first_block);
	}
	ic->w.out = -1;
	ic->w.cur = InvalidBlockNumber;

	/* what the newcomers say of time-ordered keys and bands (regions.c) */
	if (bands_possible(ic))
	{
		st->sample = palloc(sizeof(uint64) * ZR_SAMPLE * st->lay.nkeys);
		st->sample_null = palloc(sizeof(bool) * ZR_SAMPLE * st->lay.nkeys);
		pg_prng_seed(&st->prng, UINT64CONST(0x7a6f72646572));
	}
	st->counting = true;
	scan_newcomers(ic, nblocks, true);
	st->counting = false;

	/*
	 * A region opened for them (time-ordered keys, or a band of values)
	 * changes their keys: the newcomers are read again, as rarely as
	 * regions open.
	 */
	opened = zorder_regions_open(st);
	if (!opened && st->sample != NULL)
	{
		nband = open_band(ic, &band);
		opened = nband >= 0;
	}
	if (opened)
	{
		ic->cand.n = 0;
		memset(st->remaining, 0xFF, sizeof(int32) * st->nranges);
		/* stayers of the region's values now have other keys: read all */
		ic->skip.since = InvalidXLogRecPtr;
		scan_newcomers(ic, nblocks, false);
	}
	if (nband > 0)
		take_band_rows(ic, band, nband);
	zorder_regions_raise_tops(st);
	ic->nnew = ic->cand.n;
}

/*
 * Merge into the main run when the rows outside it are more than
 * zorder.merge_threshold of the table (or a merge is under way): every
 * cube and every newcomer goes into it, one key slice per batch.  Else,
 * with placement, the newcomers go into the main run's ranges; without, they
 * make a new cube.
 */
static void
choose_plan(IncrCall *ic)
{
	IncrState  *st = &ic->st;
	int64		outside = (int64) ic->nnew;

	for (int i = 0; i < st->nextents; i++)
	{
		if (st->extents[i].r.run == 0)
			ic->main_rows += st->extents[i].r.rows;
		else
			outside += st->extents[i].r.rows;
	}
	ic->merge = ic->main_rows > 0 &&
		(st->lay.merging ||
		 (double) outside > zorder_merge_threshold *
		 (double) (outside + ic->main_rows));
	ic->placing = !ic->merge && zorder_placement && ic->main_rows > 0;
}

/*
 * Which runs' rows move with the newcomers.  Placement: every cube's, into
 * the ranges the main run is read by.  Else the cube and merge paths
 * choose (cubes.c).
 */
static void
choose_runs(IncrCall *ic)
{
	if (!ic->placing)
	{
		zorder_choose_cube_runs(ic);
		return;
	}
	zorder_main_run_by_range(ic->cs.rel, &ic->st, ic->snapshot,
							 ic->cs.tmp_cxt, false);
	ic->nmerged = zorder_take_cubes(ic, 0);
}

/*
 * Write the rows to move that the plan left: into the main run's ranges,
 * or as a new cube.  Leaves the last batch open.
 */
static void
write_rest(IncrCall *ic)
{
	if (ic->placing)
		zorder_place_newcomers(&ic->cs, &ic->cand, ic->main_rows);
	else
		zorder_write_cube(ic);
}

/*
 * End the call: record it in the last batch, commit, and make the BRIN
 * summaries of what moved tight.
 */
static void
call_end(IncrCall *ic)
{
	CallState  *cs = &ic->cs;
	ZRoomRecord room;
	const char *appends = NULL;
	/* arrived since the last call: the rows listed by one before are not */
	int64		arrived = Max((int64) ic->nnew - ic->st.listed, 0);
	bool		unchanged = true;

	zorder_save_batch(cs);
	if (!XLogRecPtrIsInvalid(ic->scan_lsn) && !cs->left_unlisted)
		zorder_layout_set_scan_lsn(cs->relid, ic->scan_lsn);

	/*
	 * room.c: what arrived tells the room the next calls' splits, and the
	 * next rewrite, write pages with.
	 */
	if (ic->placing && cs->ranges_main > 0 && arrived >= 100)
		appends = zorder_room_spread(cs->ranges_main, cs->ranges_reached,
									 (int64) ic->nnew) ? "spread" : "ordered";
	zorder_room_after_call(cs->rel, arrived, ic->merge ? -1 : cs->moved,
						   zorder_room_call_cost(zorder_report_wal(&ic->report),
												 cs->pages_written),
						   ic->main_rows, appends, &room);
	ic->report.pages_written = cs->pages_written;
	zorder_report_end(cs->relid, &ic->report,
					  ic->merge ? "merge" : "incremental", cs->moved,
					  ic->nmerged, &room);
	UnregisterSnapshot(cs->snapshot);
	if (cs->pushed)
		PopActiveSnapshot();

	if (cs->moved > 0 || cs->nvacated > 0)
	{

		/* commit the moves first, so that fresh summaries leave them out */
		if (cs->can_commit)
			unchanged = zorder_commit_and_reopen(cs, ShareUpdateExclusiveLock);

		/*
		 * The call's work is done; if the table changed since, its blocks
		 * are no longer those the moves left, and a rewrite summarized the
		 * new ones.
		 */
		if (unchanged)
		{
			PushActiveSnapshot(GetTransactionSnapshot());
			zorder_after_commit(cs, false);
			zorder_brin_summarize_rest(cs->rel);
			PopActiveSnapshot();
			if (cs->can_commit)
				zorder_tighten_loose(cs);
		}
	}
	/*
	 * The skipping after (report.c), once the summaries are tight: those
	 * of ranges a batch left loose are tightened when batches commit on
	 * their own (else by the next call, and counted loose here).  A table
	 * changed since has blocks the call did not lay out: the skipping
	 * before alone is recorded.
	 */
	{
		double		after[ZORDER_MAX_KEYS];

		if (unchanged)
			zorder_report_point_ranges(cs->rel, ic->nkeys, ic->attnums, after);
		else
			for (int k = 0; k < ic->nkeys; k++)
				after[k] = -1;
		zorder_report_skipping(cs->relid, &ic->report, after);
	}

	/*
	 * Rows moved within ranges and summaries tightened change no file and
	 * no pg_class row: tell the planner's models (planner.c) at commit.
	 */
	CacheInvalidateRelcache(cs->rel);
	table_close(cs->rel, NoLock);
	if (cs->had_loose || cs->nloose > 0)
		zorder_layout_set_loose_ranges(cs->relid, cs->loose, cs->nloose);

	/* BRIN (brin.c): create the index if asked, record pages_per_range */
	zorder_brin_after_optimize(cs->relid, ic->nkeys, ic->attnums);

	pgstat_progress_end_command();
	call_restore(ic);
}

/*
 * Incremental optimize of one table.  Returns false, having changed
 * nothing, if the table has no layout yet (a full optimize must come
 * first).  With can_commit, batches commit one by one.
 */
bool
zorder_optimize_incremental(Oid relid, const char *curve, bool can_commit)
{
	IncrCall	ic;

	memset(&ic, 0, sizeof(ic));
	if (!call_begin(&ic, relid, curve, can_commit))
		return false;
	collect_newcomers(&ic);
	choose_plan(&ic);
	choose_runs(&ic);
	UnregisterSnapshot(ic.snapshot);

	zorder_progress_phase(ZORDER_PHASE_SORT_TUPLES);
	zorder_sort_candidates(&ic.cand);

	zorder_progress_phase(ZORDER_PHASE_WRITE_NEW_HEAP);
	if (ic.merge)
		zorder_merge_slices(&ic);
	write_rest(&ic);
	call_end(&ic);
	return true;
}
