/*-------------------------------------------------------------------------
 *
 * place.c
 *	  Placement of an incremental call's newcomers into the ranges of the
 *	  main sorted run.
 *
 * The main run is recorded range by range, each with the lowest key of its
 * rows.  Each newcomer goes to the range whose key interval holds it,
 * gathered per range so that a page is written once per call, into the
 * room the table's fillfactor keeps.  A range without room shares a
 * neighbour's or splits in two, as a B-tree leaf does, moving only the
 * rows beyond a cut in its keys, within a budget of rows per arrival; and
 * ranges that would all fill up in the next call split early, so that no
 * call needs more than its budget.
 * The decisions (which range, whether rows fit, where to cut, how many
 * ways to split, the budget) are the pure placement.c's; this file reads
 * the pages and moves the rows.
 * Why, and the figures behind the choices: docs/design.md.
 *
 * Why one file of this size: the passes of placement (into room, sharing,
 * splitting, waiting for the prune, splitting ahead of need) read and
 * update one PlaceState of the call's ranges, and their order matters; the
 * decisions themselves, which are pure arithmetic, are placement.c's and
 * unit-tested there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/freespace.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "batch.h"
#include "heappage.h"
#include "layout.h"
#include "mover.h"
#include "pg_compat.h"
#include "place.h"
#include "placement.h"
#include "radix.h"
#include "zorder.h"

/*
 * Place newcomers into the main run's ranges, splitting full ones
 * (zorder.placement), rather than making cubes of them.
 */
bool		zorder_placement = true;

/* Called from _PG_init. */
void
zorder_place_init(void)
{
	DefineCustomBoolVariable("zorder.placement",
							 "Incremental zorder.optimize places new rows into the ranges of the "
							 "main sorted run that hold their keys.",
							 "Off: new rows make sorted runs of their own (cubes), each spanning "
							 "the whole key space.",
							 &zorder_placement,
							 true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * The rows a run wrote on blocks [from, to), leaving out rows newer than
 * the run's xid and the nskip rows of skip (sorted TIDs): how many
 * (*rows), and the lowest curve key of those on the first page that holds
 * any.  Returns false if there are none.  With just_written, the run's
 * pages hold its rows and nothing else (a full rewrite of live rows, in
 * its own transaction): pages after the first are counted by their line
 * pointers, without reading the tuples.
 */
static bool
range_low_key(Relation rel, IncrState *st, BlockNumber from, BlockNumber to,
			  TransactionId xid, Snapshot snapshot, MemoryContext tmpcxt,
			  const ItemPointerData *skip, int nskip, bool just_written,
			  uint64 *key, int64 *rows)
{
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	picked[MaxHeapTuplesPerPage];
	bool		found = false;
	/* pages read once, that need not push the cache out */
	BufferAccessStrategy strategy = just_written ?
		GetAccessStrategy(BAS_BULKREAD) : NULL;
	CollectFilter filter = {snapshot,
		TransactionIdIsValid(xid) ? COLLECT_OLDER : COLLECT_ALL, xid,
	skip, nskip};

	*rows = 0;
	to = Min(to, RelationGetNumberOfBlocks(rel));
	for (BlockNumber blk = from; blk < to; blk++)
	{
		MemoryContext oldcxt;
		int			n;

		CHECK_FOR_INTERRUPTS();
		if (found)
		{
			/* the rest only counted */
			*rows += just_written ? zorder_block_tuples(rel, blk, strategy) :
				zorder_block_rows(rel, blk, NULL, zorder_collect_keep,
								  &filter, NULL);
			continue;
		}
		oldcxt = MemoryContextSwitchTo(tmpcxt);
		n = zorder_block_rows(rel, blk, NULL, zorder_collect_keep, &filter,
							  picked);
		*rows += n;
		for (int i = 0; i < n; i++)
		{
			uint64		k = zorder_row_key(st, desc, picked[i]);

			if (!found || k < *key)
				*key = k;
			found = true;
		}
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(tmpcxt);
	}
	if (strategy != NULL)
		FreeAccessStrategy(strategy);
	return found;
}

/*
 * Make every extent of the main run one BRIN range (or the part of one it
 * covers), with where the keys of that range start and its rows.  A full
 * optimize or a merge records an extent of many ranges and where its keys
 * start; the placement needs it range by range.  Reads the run once (and
 * computes the keys of each range's first page): afterwards the catalog
 * has the ranges one by one.  just_written: see range_low_key.
 */
void
zorder_main_run_by_range(Relation rel, IncrState *st, Snapshot snapshot,
						 MemoryContext tmpcxt, bool just_written)
{
	int			n = st->nextents;
	ArrayType  *listed = zorder_layout_misplaced(rel);
	ItemPointerData *skip = NULL;
	int			nskip = 0;

	/*
	 * Rows a recognised run listed apart (zorder.layouts.misplaced) lie in
	 * its blocks with its age, but the run does not count them, nor does
	 * their key say where a range's keys start: they are newcomers.
	 */
	if (listed != NULL)
	{
		Datum	   *tids;

		deconstruct_array(listed, TIDOID, sizeof(ItemPointerData), false,
						  TYPALIGN_SHORT, &tids, NULL, &nskip);
		skip = palloc(sizeof(ItemPointerData) * Max(nskip, 1));
		for (int i = 0; i < nskip; i++)
			skip[i] = *(ItemPointer) DatumGetPointer(tids[i]);
		qsort(skip, nskip, sizeof(ItemPointerData), zorder_cmp_tid);
	}

	for (int i = 0; i < n; i++)
	{
		BlockNumber first = st->extents[i].r.first_block;
		BlockNumber end = first + st->extents[i].r.nblocks;
		BlockNumber b = first - first % st->lay.ppr + st->lay.ppr;
		uint64		key = st->extents[i].r.key_lo;
		TransactionId xid = st->extents[i].r.xid;
		uint64		low = 0;
		int64		rows;

		if (st->extents[i].r.run != 0 || b >= end)
			continue;
		st->extents[i].r.nblocks = b - first;
		range_low_key(rel, st, first, b, xid, snapshot, tmpcxt, skip, nskip,
					  just_written, &low, &rows);
		st->extents[i].r.rows = rows;
		for (; b < end; b += st->lay.ppr)
		{
			BlockNumber piece_end = Min(b + st->lay.ppr, end);

			/* keys never go down within an extent, whatever the sample */
			if (range_low_key(rel, st, b, piece_end, xid, snapshot, tmpcxt,
							  skip, nskip, just_written, &low, &rows))
				key = Max(key, low);
			zorder_add_extent(st, b, piece_end - b, rows, xid, 0, key);
		}
	}
}

/*
 * Right after a full rewrite of rel that wrote only live rows, in its
 * transaction and under its lock, with the layout and its BRIN ranges
 * recorded: the main run range by range in the catalog, as the first
 * incremental call would make it.  That call would count the rows of
 * every range through their visibility, a read of the whole table (half
 * the call's time on a table of a million rows); here the line pointers
 * of the pages just written count the rows the rewrite wrote, and only
 * each range's first page is read whole.  Rows deleted before the first
 * call then stay counted, as rows deleted between later calls do.  With
 * fewer than ZORDER_SPLIT_LEAST_PPR pages a range (no BRIN index on the
 * keys gives 1), most pages are first pages: the lock would last as long
 * as the first call's read, so that call is left to do it.
 */
#define ZORDER_SPLIT_LEAST_PPR	4

void
zorder_main_run_ranges_written(Relation rel, int nkeys,
							   const AttrNumber *attnums)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "zorder ranges of a rewrite",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext tmpcxt = AllocSetContextCreate(cxt, "zorder range rows",
												 ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	IncrState	st;
	Snapshot	snapshot;

	memset(&st, 0, sizeof(st));
	if (zorder_layout_load(rel, nkeys, attnums, NULL, &st.lay) &&
		st.lay.ppr >= ZORDER_SPLIT_LEAST_PPR)
	{
		int			before;

		zorder_load_extents(RelationGetRelid(rel), &st);
		before = st.nextents;
		snapshot = RegisterSnapshot(GetLatestSnapshot());
		zorder_main_run_by_range(rel, &st, snapshot, tmpcxt, true);
		UnregisterSnapshot(snapshot);
		/* a run of one range, or none (an empty table), stays as it is */
		if (st.nextents > before)
			zorder_save_extents(RelationGetRelid(rel), &st);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
}

/* Pages the free space map may name before a range is read whole. */
#define FSM_TRIES	3

/* Free space on page blk that heap_insert can use, fillfactor aside. */
static Size
page_free(Relation rel, BlockNumber blk)
{
	Buffer		buf = ReadBuffer(rel, blk);
	Page		page;
	Size		r;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	r = PageIsNew(page) ? MaxHeapTupleSize : PageGetHeapFreeSpace(page);
	UnlockReleaseBuffer(buf);
	return r;
}

/*
 * A page of blocks [from, to) that takes rows of need bytes by itself, as
 * the free space map tells: the one with the least room that still takes
 * them, so that placing a range's newcomers reads one page of it rather
 * than all of them (with newcomers spread over the key space, a call
 * places into every range, and reading every page of them would read the
 * whole table each call).  The map lags behind the pages (VACUUM records
 * what it leaves, placement what it leaves on the last page it fills, an
 * ordinary INSERT only a page it finds full), so the page is read to make
 * sure, and the map corrected if it was wrong; FSM_TRIES pages are tried.
 * Returns InvalidBlockNumber if none is found: range_room then reads the
 * range whole.
 */
static BlockNumber
page_that_takes(Relation rel, BlockNumber from, BlockNumber to, Size need)
{
	BlockNumber tried[FSM_TRIES];

	to = Min(to, RelationGetNumberOfBlocks(rel));
	for (int t = 0; t < FSM_TRIES; t++)
	{
		BlockNumber cand = InvalidBlockNumber;
		Size		cand_room = 0;
		Size		actual;

		for (BlockNumber blk = from; blk < to; blk++)
		{
			Size		r = GetRecordedFreeSpace(rel, blk);
			bool		seen = false;

			for (int u = 0; u < t; u++)
				seen |= tried[u] == blk;
			if (r < need || seen)
				continue;
			if (cand == InvalidBlockNumber || r < cand_room)
			{
				cand = blk;
				cand_room = r;
			}
		}
		if (cand == InvalidBlockNumber)
			break;
		tried[t] = cand;
		actual = page_free(rel, cand);
		if (actual >= need)
			return cand;
		RecordPageWithFreeSpace(rel, cand, actual);
	}
	return InvalidBlockNumber;
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
		Size		r;
		bool		fits;

		CHECK_FOR_INTERRUPTS();
		r = page_free(rel, blk);
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

/*
 * Whether a commit's prune frees what leaves blocks [from, to): the pages
 * the rows leave are pruned after the commit as a read prunes a page
 * (heap_page_prune_opt), which leaves a page alone while it has more room
 * than the fillfactor keeps (or a tenth of the page).  A range whose
 * newcomers found no room has such pages only where its room was never
 * taken; rows leaving those free nothing until VACUUM.
 */
static bool
range_prunable(Relation rel, BlockNumber from, BlockNumber to)
{
	Size		minfree = Max(RelationGetTargetPageFreeSpace(rel,
															 HEAP_DEFAULT_FILLFACTOR),
							  BLCKSZ / 10);

	to = Min(to, RelationGetNumberOfBlocks(rel));
	for (BlockNumber blk = from; blk < to; blk++)
	{
		Buffer		buf = ReadBuffer(rel, blk);
		Page		page;
		bool		prunable;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		prunable = PageIsNew(page) || PageIsFull(page) ||
			PageGetHeapFreeSpace(page) < minfree;
		UnlockReleaseBuffer(buf);
		if (!prunable)
			return false;
	}
	return true;
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
		if (st->extents[i].r.run == 0 && st->extents[i].r.first_block == first &&
			!st->extents[i].consuming && st->extents[i].r.nblocks > 0)
			return i;
	return -1;
}

/*
 * Move items (sorted by key, bytes in all, the largest maxrow) into new
 * ranges of the main run, spread evenly over the pages of each, the first
 * one's keys starting at key_lo.
 */
static void
write_new_range(CallState *cs, zr_item *items, size_t n, uint64 bytes,
				uint32 maxrow, uint64 key_lo, Size table_savefree)
{
	Writer	   *w = cs->w;
	Size		usable = BLCKSZ - SizeOfPageHeaderData;
	Size		cap = Min(usable, bytes / cs->st->lay.ppr + maxrow);

	zorder_writer_start_run(w, 0);
	w->in_range = false;
	w->ignore_fillfactor = false;
	w->per_range = true;
	w->savefree = Max(table_savefree, usable - cap);
	w->has_key_lo_next = true;
	w->key_lo_next = key_lo;
	zorder_move_items(cs, items, n);
	w->savefree = table_savefree;
	w->per_range = false;
	w->has_key_lo_next = false;
}

/*
 * Split ranges: the nfirst ranges of the main run starting at firsts
 * (neighbours in key order, the lowest first; placement passes one), with
 * the newcomers that belong to them (items, n of them, sorted by key), go
 * sorted into at least one range more than they were, each filled evenly
 * to leave room for newcomers again.  This is the split of last resort,
 * for a range that no cut splits in two with the newcomers that stay
 * fitting the room it has now (its lowest newcomers lie low in a full
 * range, or a burst of rows came in a narrow band of its keys): it moves
 * every row of the range.  The old ranges leave the run and, once pruned
 * after the commit, take the rows of later splits.  Rows on them that
 * belong to other ranges (TIDs in tids, sorted) move with their own range.
 * With nfirst 0, the newcomers alone go into as many new ranges as they
 * fill (those of a zone no range is in yet: see place_appends), the first
 * one's keys starting at append_lo or at its lowest, whichever is lower.
 * Returns how many of the ranges' own rows moved.
 */
static size_t
split_ranges(CallState *cs, const BlockNumber *firsts, int nfirst,
			 zr_item *items, size_t n, const uint64 *tids, size_t ntids,
			 Size table_savefree, uint64 append_lo)
{
	IncrState  *st = cs->st;
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
		r = e.r.first_block / st->lay.ppr;
		if (f == 0)
			key_lo = e.r.key_lo;
		st->extents[ei].consuming = true;
		if (r < st->nranges)
			st->remaining[r] = 0;
		zorder_collect_block_range(cs->rel, st, e.r.first_block,
								   e.r.first_block + e.r.nblocks, COLLECT_ALL,
								   InvalidTransactionId, NULL, true, cs->snapshot,
								   &sc, cs->tmp_cxt);
	}
	for (size_t j = 0; j < sc.n; j++)
	{
		uint64		tid = sc.items[j].val & CAND_TID_MASK;

		if (ntids > 0 &&
			bsearch(&tid, tids, ntids, sizeof(uint64), zr_cmp_u64) != NULL)
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
	if (nfirst == 0)
	{
		/* newcomers alone: as many ranges as they fill */
		key_lo = Min(append_lo, nall > 0 ? all[0].key : append_lo);
		ways = zp_fill_ways(total, (uint64) st->lay.ppr * usable,
							RelationGetFillFactor(cs->rel, HEAP_DEFAULT_FILLFACTOR));
	}
	else
		ways = Max((uint32) nfirst + 1,
				   zp_split_ways(total, (uint64) st->lay.ppr * usable,
								 RelationGetFillFactor(cs->rel, HEAP_DEFAULT_FILLFACTOR)));
	start = palloc(sizeof(size_t) * (ways + 1));
	if (nfirst == 1 && ways == 2)
	{
		/*
		 * Tilted, as shift_group's splits are, and for the same reason; no
		 * piece more than a range takes at the fillfactor, a row's worth
		 * wasted at the end of each page (zp_fits)
		 */
		Size		room = usable -
			RelationGetTargetPageFreeSpace(cs->rel, HEAP_DEFAULT_FILLFACTOR);

		zp_split_two(lens, nall,
					 zp_split_share(total, (uint64) st->lay.ppr *
									(room > maxrow ? room - maxrow : 0),
									100, zp_split_tilt(key_lo)),
					 start);
	}
	else
		zp_split_points(lens, nall, ways, start);
	MemoryContextSwitchTo(prev);

	for (uint32 p = 0; p < ways; p++)
	{
		uint64		bytes = 0;

		if (start[p] == start[p + 1])
			continue;
		for (size_t j = start[p]; j < start[p + 1]; j++)
			bytes += lens[j];
		write_new_range(cs, all + start[p], start[p + 1] - start[p], bytes,
						maxrow, p == 0 ? key_lo : all[start[p]].key,
						table_savefree);
	}
	return own;
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
 * Move items (sorted by key) into the room of the main run's extent ei,
 * page after page from first_page, fillfactor's room included.
 */
static void
fill_range(CallState *cs, int ei, BlockNumber first_page, zr_item *items,
		   size_t n, Size table_savefree)
{
	IncrState  *st = cs->st;
	Writer	   *w = cs->w;
	BlockNumber first = st->extents[ei].r.first_block;

	w->run = 0;
	w->out = ei;
	w->cur = first_page;
	w->range_first = first;
	w->wrap_start = first_page;
	w->wrapped = false;
	w->range_end = first + st->extents[ei].r.nblocks;
	w->room = 0;
	w->lines = 0;
	w->in_range = true;
	w->ignore_fillfactor = true;
	w->savefree = 0;
	zorder_move_items(cs, items, n);

	/*
	 * Tell the free space map what the page filled last has left, so that
	 * the next call finds the room there without reading the range (pages
	 * filled before it have next to none, and the map says so once a call
	 * tries one of them).
	 */
	if (w->cur != InvalidBlockNumber && w->cur >= first &&
		w->cur < w->range_end && w->cur < RelationGetNumberOfBlocks(cs->rel))
		RecordPageWithFreeSpace(cs->rel, w->cur, page_free(cs->rel, w->cur));
	w->in_range = false;
	w->ignore_fillfactor = false;
	w->savefree = table_savefree;
	w->cur = InvalidBlockNumber;
	w->out = -1;
}

/* What placing one call's newcomers works with. */
typedef struct PlaceState
{
	CallState  *cs;
	Candidates *cand;			/* the newcomers that move, sorted by key */
	PRange	   *pr;				/* the main run's ranges in key order */
	int			nr;
	int32	   *tgt;			/* each newcomer's range */
	uint64	   *tids;			/* the newcomers' TIDs, sorted */
	size_t		nkeep;			/* newcomers that move */
	size_t		nappend;		/* of them, those of a zone no range is in
								 * (regions.c), their tgt -1 */
	int32	   *stayers;		/* per range: newcomers already on it */
	PGroup	   *second;			/* groups the first pass left, for the second */
	int			nsecond;
	PGroup	   *after_prune;	/* newcomers that stay on a range a shift
								 * made room in, once the pages are pruned */
	int			nafter_prune;
	bool	   *waiting;		/* per range: its group waits for a later
								 * pass (second or after_prune) */
	bool	   *moved;			/* per newcomer that moves: given to a mover */
	bool	   *split_here;		/* per range: split in two by this call */
	uint64	   *placed;			/* per range: newcomers' bytes it took */
	uint64		budget;			/* rows splits may move */
	uint64		spent;
	int			nsplits;
	int			nshifts;
	int			nahead;			/* of the splits, those ahead of need */
	int64		batch_rows;
	Size		table_savefree;
} PlaceState;

/*
 * Move a group's newcomers into the room of its range, page after page from
 * the page that suits them best, if the room takes them.  Returns false,
 * having moved nothing, if it does not (or the range is gone).
 */
static bool
place_group(PlaceState *ps, PGroup *g)
{
	CallState  *cs = ps->cs;
	IncrState  *st = cs->st;
	int			ei = find_main_extent(st, ps->pr[g->t].first_block);
	BlockNumber first = ps->pr[g->t].first_block;
	BlockNumber first_page;

	if (ei < 0)
		return false;
	first_page = page_that_takes(cs->rel, first,
								 first + st->extents[ei].r.nblocks, g->need);
	if (first_page == InvalidBlockNumber &&
		!zp_fits(range_room(cs->rel, first, first + st->extents[ei].r.nblocks,
							g->need, &first_page),
				 g->need, st->extents[ei].r.nblocks, g->maxrow))
		return false;
	fill_range(cs, ei, first_page, ps->cand->items + g->pos, g->end - g->pos,
			   ps->table_savefree);
	memset(ps->moved + g->pos, true, g->end - g->pos);
	ps->placed[g->t] += g->need;

	/*
	 * The range is saved with this batch's transaction ID, so newcomers
	 * that stayed on it count as its rows from now on.
	 */
	ei = find_main_extent(st, first);
	if (ei >= 0)
		st->extents[ei].r.rows += ps->stayers[g->t];
	return true;
}

/*
 * The ranges of the main run in key order, and each newcomer's range: a
 * newcomer already on its range stays there and is left out of cand.
 */
static void
place_targets(PlaceState *ps, int64 main_rows)
{
	IncrState  *st = ps->cs->st;
	Candidates *cand = ps->cand;
	uint64	   *keys;
	int			nr = 0;

	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].r.run == 0 && st->extents[i].r.nblocks > 0)
			nr++;
	ps->pr = palloc(sizeof(PRange) * Max(nr, 1));
	nr = 0;
	for (int i = 0; i < st->nextents; i++)
		if (st->extents[i].r.run == 0 && st->extents[i].r.nblocks > 0)
		{
			ps->pr[nr].key_lo = st->extents[i].r.key_lo;
			ps->pr[nr].first_block = st->extents[i].r.first_block;
			ps->pr[nr].nblocks = st->extents[i].r.nblocks;
			nr++;
		}
	qsort(ps->pr, nr, sizeof(PRange), cmp_prange);
	ps->nr = nr;
	keys = palloc(sizeof(uint64) * Max(nr, 1));
	for (int i = 0; i < nr; i++)
		keys[i] = ps->pr[i].key_lo;

	/* each newcomer's range; one already on it stays there */
	ps->tgt = palloc_extended(sizeof(int32) * Max(cand->n, 1), MCXT_ALLOC_HUGE);
	ps->tids = palloc_extended(sizeof(uint64) * Max(cand->n, 1), MCXT_ALLOC_HUGE);
	ps->moved = palloc_extended(sizeof(bool) * Max(cand->n, 1),
								MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	ps->stayers = palloc0(sizeof(int32) * Max(nr, 1));
	ps->cs->ranges_main = nr;
	ps->cs->ranges_reached = 0;
	for (size_t i = 0, last = SIZE_MAX; i < cand->n && nr > 0; i++)
	{
		size_t		t = zp_find_range(keys, nr, cand->items[i].key);
		BlockNumber from = (BlockNumber) ((cand->items[i].val & CAND_TID_MASK) >> 16);
		bool		own_zone = zorder_key_zone(&st->lay, cand->items[i].key) ==
			zorder_key_zone(&st->lay, ps->pr[t].key_lo);

		/* newcomers come sorted by key: a new range is a new t */
		if (own_zone && t != last)
		{
			ps->cs->ranges_reached++;
			last = t;
		}

		if (own_zone && from >= ps->pr[t].first_block &&
			from < ps->pr[t].first_block + ps->pr[t].nblocks &&
			!(cand->items[i].val & CAND_COUNTED))
		{
			ItemPointerData tid;

			ItemPointerSet(&tid, from,
						   (OffsetNumber) (cand->items[i].val & 0xFFFF));
			if (st->nlisted_tids > 0 &&
				bsearch(&tid, st->listed_tids, st->nlisted_tids,
						sizeof(ItemPointerData), zorder_cmp_tid) != NULL)
			{
				/* a listed row, as old as its range: it counts there now */
				int			ei = find_main_extent(st, ps->pr[t].first_block);

				if (ei >= 0)
					st->extents[ei].r.rows++;
			}
			else
				ps->stayers[t]++;
			continue;
		}
		cand->items[ps->nkeep] = cand->items[i];
		/* a zone no range is in yet: the newcomer starts its first */
		ps->tgt[ps->nkeep] = own_zone ? (int32) t : -1;
		ps->nappend += !own_zone;
		ps->tids[ps->nkeep] = cand->items[i].val & CAND_TID_MASK;
		ps->nkeep++;
	}
	qsort(ps->tids, ps->nkeep, sizeof(uint64), zr_cmp_u64);
	if (ps->cs->found != NULL)
	{
		/* rows of the call's own at these TIDs are not the ones found */
		ps->cs->found->tids = ps->tids;
		ps->cs->found->ntids = ps->nkeep;
	}
	ps->budget = zp_split_budget(ps->nkeep - Min((uint64) ps->cs->st->listed, ps->nkeep),
								 ps->nkeep, (uint64) (main_rows / Max(nr, 1)) + 1);
	ps->second = palloc(sizeof(PGroup) * Max(nr, 1));
	ps->after_prune = palloc(sizeof(PGroup) * Max(nr, 1));
	ps->waiting = palloc0(sizeof(bool) * Max(nr, 1));
	ps->split_here = palloc0(sizeof(bool) * Max(nr, 1));
	ps->placed = palloc0(sizeof(uint64) * Max(nr, 1));
}

/*
 * First pass: every range whose room takes its newcomers gets them; the
 * other groups are left in ps->second.
 */
static void
place_first_pass(PlaceState *ps)
{
	Candidates *cand = ps->cand;
	size_t		pos = 0;

	while (pos < ps->nkeep)
	{
		PGroup		g;

		CHECK_FOR_INTERRUPTS();
		if (ps->tgt[pos] < 0)
		{
			/* place_appends' */
			pos++;
			continue;
		}
		g.pos = pos;
		g.end = pos;
		g.t = ps->tgt[pos];
		g.need = 0;
		g.maxrow = 0;
		while (g.end < ps->nkeep && ps->tgt[g.end] == g.t)
		{
			uint32		len = MAXALIGN(CAND_LEN(cand->items[g.end].val)) +
				sizeof(ItemIdData);

			g.need += len;
			g.maxrow = Max(g.maxrow, len);
			g.end++;
		}
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
		if (place_group(ps, &g))
			ps->batch_rows += g.end - g.pos;
		else
		{
			ps->waiting[g.t] = true;
			ps->second[ps->nsecond++] = g;
		}
		zorder_batch_rotate(ps->cs, &ps->batch_rows);
	}
}

/*
 * The neighbours of range t in key order that may take rows from it, the
 * one with more room first, into nb: not those with newcomers of their own
 * still waiting (they have no room to give), nor those split in two by
 * this call (the range above such a one is not the next in ps->pr), nor
 * those of another zone (regions.c), so that no range spans two.
 * Returns how many.
 */
static int
shift_neighbours(PlaceState *ps, int t, int *nb)
{
	IncrState  *st = ps->cs->st;
	uint64		room[2];
	int			n = 0;

	for (int d = -1; d <= 1; d += 2)
	{
		int			c = t + d;
		int			ce;
		BlockNumber page;

		if (c < 0 || c >= ps->nr || ps->waiting[c] || ps->split_here[c] ||
			zorder_key_zone(&st->lay, ps->pr[c].key_lo) !=
			zorder_key_zone(&st->lay, ps->pr[t].key_lo) ||
			(ce = find_main_extent(st, ps->pr[c].first_block)) < 0)
			continue;
		nb[n] = c;
		room[n] = range_room(ps->cs->rel, ps->pr[c].first_block,
							 ps->pr[c].first_block + st->extents[ce].r.nblocks,
							 0, &page);
		n++;
	}
	if (n == 2 && room[1] > room[0])
	{
		int			x = nb[0];

		nb[0] = nb[1];
		nb[1] = x;
	}
	return n;
}

/* The rows a shift takes from a range, by key. */
typedef struct ShiftRows
{
	size_t		n;
	zr_item    *all;
	uint64	   *keys;
	uint32	   *lens;			/* bytes, line pointer included */
	bool	   *is_new;			/* a newcomer, not one of the range's rows */
	uint32		maxrow;
} ShiftRows;

/*
 * The rows of a shift: range t's own rows (those that are not newcomers
 * bound elsewhere) merged with its group's newcomers, by key, with each
 * row's bytes and whether it is a newcomer; with reverse, in descending
 * key order.  Allocated in the batch's memory context.
 */
static void
shift_rows(PlaceState *ps, PGroup *g, BlockNumber first, BlockNumber nblocks,
		   bool reverse, ShiftRows *sr)
{
	CallState  *cs = ps->cs;
	MemoryContext prev = MemoryContextSwitchTo(cs->batch_cxt);
	Candidates	sc = {0};
	zr_item    *nc = ps->cand->items + g->pos;
	size_t		nn = g->end - g->pos;
	size_t		m = 0;
	size_t		a = 0;
	size_t		b = 0;

	zorder_collect_block_range(cs->rel, cs->st, first, first + nblocks,
							   COLLECT_ALL, InvalidTransactionId, NULL, false,
							   cs->snapshot, &sc, cs->tmp_cxt);
	for (size_t j = 0; j < sc.n; j++)
	{
		uint64		tid = sc.items[j].val & CAND_TID_MASK;

		if (ps->nkeep > 0 &&
			bsearch(&tid, ps->tids, ps->nkeep, sizeof(uint64),
					zr_cmp_u64) != NULL)
			continue;
		sc.items[m++] = sc.items[j];
	}
	if (m > 1)
		zr_sort(sc.items, palloc_extended(m * sizeof(zr_item), MCXT_ALLOC_HUGE),
				m);

	sr->n = m + nn;
	sr->all = palloc_extended((sr->n + 1) * sizeof(zr_item), MCXT_ALLOC_HUGE);
	sr->keys = palloc_extended((sr->n + 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	sr->lens = palloc_extended((sr->n + 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	sr->is_new = palloc_extended((sr->n + 1) * sizeof(bool), MCXT_ALLOC_HUGE);
	sr->maxrow = g->maxrow;
	for (size_t j = 0; j < sr->n; j++)
	{
		/* own rows first among equal keys, both lists in their order */
		bool		own = b >= nn || (a < m && sc.items[a].key <= nc[b].key);
		size_t		at = reverse ? sr->n - 1 - j : j;

		sr->all[at] = own ? sc.items[a++] : nc[b++];
		sr->keys[at] = sr->all[at].key;
		sr->lens[at] = MAXALIGN(CAND_LEN(sr->all[at].val)) + sizeof(ItemIdData);
		sr->is_new[at] = !own;
		sr->maxrow = Max(sr->maxrow, sr->lens[at]);
	}
	MemoryContextSwitchTo(prev);
}

/* Range t's keys start at key now, in the catalog and in ps->pr. */
static void
set_key_lo(PlaceState *ps, int t, uint64 key)
{
	int			ei = find_main_extent(ps->cs->st, ps->pr[t].first_block);

	ps->pr[t].key_lo = key;
	if (ei >= 0)
		ps->cs->st->extents[ei].r.key_lo = key;
}

/*
 * Place the newcomers of group g that stay on its range after a shift:
 * with down, the last stay of them, else the first.  The cut left them
 * room there, now or, when the call commits, once the pages the rows left
 * are pruned: then they wait in ps->after_prune for place_after_prune, and the range
 * takes no one else's rows meanwhile.
 */
static void
place_rest(PlaceState *ps, PGroup *g, size_t stay, bool down)
{
	PGroup		rest = *g;

	if (stay == 0)
		return;
	if (down)
		rest.pos = g->end - stay;
	else
		rest.end = g->pos + stay;
	rest.need = 0;
	rest.maxrow = 0;
	for (size_t j = rest.pos; j < rest.end; j++)
	{
		uint32		len = MAXALIGN(CAND_LEN(ps->cand->items[j].val)) +
			sizeof(ItemIdData);

		rest.need += len;
		rest.maxrow = Max(rest.maxrow, len);
	}
	if (place_group(ps, &rest))
		ps->batch_rows += rest.end - rest.pos;
	else if (ps->cs->can_commit)
	{
		/* one group per range, and a range shifts once a call */
		Assert(ps->nafter_prune < ps->nr);
		ps->after_prune[ps->nafter_prune++] = rest;
		ps->waiting[g->t] = true;
	}
	/* else pages the waste estimate did not foresee: a later call's */
}

/*
 * Make room in a full range by moving the rows at one edge of its keys,
 * as a B-tree leaf gives keys to a sibling, or splits:
 *
 * - with a neighbour nt (the next range in key order, or the one before),
 *   the range's highest rows go to the next one, whose keys then start
 *   lower, or its lowest to the one before, so that both are left about
 *   equally much room;
 * - with nt = -1, the highest rows go to a new range of their own, keys
 *   starting at the first of them: the range splits in two.
 *
 * Both sides stay contiguous stretches of the curve, so no box grows
 * beyond what a full optimize would give such a stretch, and only the rows
 * beyond the cut move, where split_ranges moves every row of the ranges it
 * takes.  The newcomers beyond the cut go with them.  Those that stay
 * need the room the leaving rows free, which is the range's only once
 * their pages are pruned: they wait for the next commit (place_rest).  A
 * transaction block never commits, an older snapshot keeps the prune from
 * freeing anything (zorder_prune_frees), and some pages are not pruned
 * (range_prunable): there they must fit the room the range has now, and
 * the cut is chosen so.  Returns
 * false, having moved nothing, if there is no such cut or the budget does
 * not allow the rows it would move.
 */
static bool
shift_group(PlaceState *ps, PGroup *g, int nt)
{
	CallState  *cs = ps->cs;
	IncrState  *st = cs->st;
	int			t = g->t;
	int			ei = find_main_extent(st, ps->pr[t].first_block);
	int			nei = -1;
	bool		down = nt >= 0 && nt < t;
	BlockNumber first = ps->pr[t].first_block;
	BlockNumber page;
	ShiftRows	sr;
	size_t		cut;
	uint64		cut_key;
	size_t		own = 0;
	size_t		stay = 0;
	uint64		need = 0;
	int64		room;
	int64		nroom;
	zr_item    *mv;
	size_t		nmv;

	if (ei < 0 || ps->split_here[t] ||
		(nt >= 0 && (nei = find_main_extent(st, ps->pr[nt].first_block)) < 0))
		return false;
	shift_rows(ps, g, first, st->extents[ei].r.nblocks, down, &sr);
	room = (int64) range_room(cs->rel, first, first + st->extents[ei].r.nblocks,
							  0, &page) -
		(int64) st->extents[ei].r.nblocks * sr.maxrow;
	if (nt >= 0)
		nroom = (int64) range_room(cs->rel, ps->pr[nt].first_block,
								   ps->pr[nt].first_block + st->extents[nei].r.nblocks,
								   0, &page) -
			(int64) st->extents[nei].r.nblocks * sr.maxrow;
	else
		nroom = (int64) st->lay.ppr *
			(BLCKSZ - SizeOfPageHeaderData - sr.maxrow);

	/*
	 * A neighbour shares evenly.  A split keeps a share of the room that
	 * differs from range to range: ranges that new rows fill at the same
	 * pace (a band's, all opened by one call) would otherwise split at
	 * once, their halves fill up again at once, and so on, each time more
	 * than one call's budget allows.
	 */
	cut = zp_tilted_cut(sr.keys, sr.lens, sr.is_new, sr.n, room, nroom,
						cs->can_commit && zorder_prune_frees(cs) &&
						range_prunable(cs->rel, first,
									   first + st->extents[ei].r.nblocks) ?
						PG_INT64_MAX : room,
						sizeof(ItemIdData), nt < 0,
						nt >= 0 ? 50 : zp_split_tilt(ps->pr[t].key_lo));
	if (cut >= sr.n)
		return false;

	/*
	 * Where the keys above the cut start must stay within the range's
	 * interval: a row of another interval that the range holds (a newcomer
	 * left waiting on it when a batch wrote there) sorts at one end, and a
	 * cut among such rows would move a key_lo past a neighbour's.  The
	 * first range holds every key below its own.
	 */
	cut_key = down ? sr.keys[cut - 1] : sr.keys[cut];
	if ((t > 0 && cut_key < ps->pr[t].key_lo) ||
		(t + 1 < ps->nr && cut_key > ps->pr[t + 1].key_lo))
		return false;
	for (size_t j = cut; j < sr.n; j++)
	{
		own += !sr.is_new[j];
		need += sr.lens[j];
	}
	for (size_t j = 0; j < cut; j++)
		stay += sr.is_new[j];
	if (ps->spent + own > ps->budget)
		return false;

	/* the rows that move, in ascending key order */
	nmv = sr.n - cut;
	mv = sr.all + cut;
	for (size_t j = 0; down && j < nmv / 2; j++)
	{
		zr_item		x = mv[j];

		mv[j] = mv[nmv - 1 - j];
		mv[nmv - 1 - j] = x;
	}
	/* the first range's keys start at its lowest, before those above it */
	if (t == 0 && sr.keys[0] < ps->pr[0].key_lo)
		set_key_lo(ps, 0, sr.keys[0]);
	if (nt < 0)
	{
		write_new_range(cs, mv, nmv, need, sr.maxrow, sr.keys[cut],
						ps->table_savefree);
		/* the range above it in key order is no longer ps->pr[t + 1] */
		ps->split_here[t] = true;
	}
	else
	{
		range_room(cs->rel, ps->pr[nt].first_block,
				   ps->pr[nt].first_block + st->extents[nei].r.nblocks, need,
				   &page);
		fill_range(cs, nei, page, mv, nmv, ps->table_savefree);
		/* where the keys of the range above the cut now start */
		if (down)
			set_key_lo(ps, t, sr.keys[cut - 1]);
		else
			set_key_lo(ps, nt, sr.keys[cut]);
	}
	/* the newcomers beyond the cut went with the rows */
	if (down)
		memset(ps->moved + g->pos, true, g->end - g->pos - stay);
	else
		memset(ps->moved + g->pos + stay, true, g->end - g->pos - stay);
	ei = find_main_extent(st, first);
	if (ei >= 0)
		st->extents[ei].r.rows = Max(0, st->extents[ei].r.rows - (int64) own);
	place_rest(ps, g, stay, down);
	ps->spent += own;
	ps->batch_rows += nmv;
	return true;
}

/* The rows the catalog counts on the ranges starting at firsts. */
static uint64
group_rows(PlaceState *ps, const BlockNumber *firsts, int nfirst)
{
	uint64		rows = 0;

	for (int f = 0; f < nfirst; f++)
	{
		int			ei = find_main_extent(ps->cs->st, firsts[f]);

		if (ei >= 0)
			rows += ps->cs->st->extents[ei].r.rows;
	}
	return rows;
}

/*
 * The split of last resort: range g->t with its newcomers g into new
 * ranges (split_ranges), which moves every row of the range, if the budget
 * allows that.  Returns false, having moved nothing, if it does not.
 */
static bool
split_whole(PlaceState *ps, PGroup *g)
{
	BlockNumber first = ps->pr[g->t].first_block;
	size_t		own;

	if (find_main_extent(ps->cs->st, first) < 0 ||
		ps->spent + group_rows(ps, &first, 1) > ps->budget)
		return false;
	own = split_ranges(ps->cs, &first, 1, ps->cand->items + g->pos,
					   g->end - g->pos, ps->tids, ps->nkeep,
					   ps->table_savefree, 0);
	memset(ps->moved + g->pos, true, g->end - g->pos);
	ps->spent += own;
	ps->batch_rows += own + g->end - g->pos;
	ps->nsplits++;
	return true;
}

/*
 * Second pass, after a commit that pruned what left: the groups the first
 * pass left, placed if their range has room now, else into room made by
 * sharing a neighbour's, splitting in two, or, for a burst, splitting with
 * the neighbours, while the budget lasts.
 */
static void
place_second_pass(PlaceState *ps)
{
	if (ps->nsecond > 0 && ps->cs->can_commit && ps->batch_rows > 0)
	{
		ps->batch_rows = zorder_max_batch_size;
		zorder_batch_rotate(ps->cs, &ps->batch_rows);
	}
	for (int i = 0; i < ps->nsecond; i++)
	{
		PGroup	   *g = &ps->second[i];
		int			nb[2];
		int			nnb;

		CHECK_FOR_INTERRUPTS();
		ps->waiting[g->t] = false;
		if (place_group(ps, g))
			ps->batch_rows += g->end - g->pos;
		else if ((nnb = shift_neighbours(ps, g->t, nb)) > 0 &&
				 (shift_group(ps, g, nb[0]) ||
				  (nnb > 1 && shift_group(ps, g, nb[1]))))
			ps->nshifts++;
		else if (shift_group(ps, g, -1))
			ps->nsplits++;
		else
			split_whole(ps, g);
		/* if that did not either, no budget was left: they wait */
		zorder_batch_rotate(ps->cs, &ps->batch_rows);
	}
}

/*
 * Third pass: the newcomers that stay on ranges shifts made room in, placed
 * after a commit that pruned the pages the rows left.  Where the prune did
 * not make room for them (a snapshot taken since the last commit still
 * sees the rows that left), they wait for the next call, which finds the
 * room VACUUM made: moving the whole range now instead would cost more
 * than the wait, which costs skipping only until then.
 */
static void
place_after_prune(PlaceState *ps)
{
	if (ps->nafter_prune == 0)
		return;
	ps->batch_rows = zorder_max_batch_size;
	zorder_batch_rotate(ps->cs, &ps->batch_rows);
	for (int i = 0; i < ps->nafter_prune; i++)
	{
		PGroup	   *g = &ps->after_prune[i];

		CHECK_FOR_INTERRUPTS();
		ps->waiting[g->t] = false;
		if (place_group(ps, g))
			ps->batch_rows += g->end - g->pos;
		zorder_batch_rotate(ps->cs, &ps->batch_rows);
	}
}

/* Free space on blocks [from, to) as the free space map records it. */
static uint64
recorded_room(Relation rel, BlockNumber from, BlockNumber to)
{
	uint64		room = 0;

	to = Min(to, RelationGetNumberOfBlocks(rel));
	for (BlockNumber blk = from; blk < to; blk++)
		room += GetRecordedFreeSpace(rel, blk);
	return room;
}

/* A range that would split next call, by how much room it has left. */
typedef struct AheadRange
{
	int			t;
	double		left;			/* room for so many calls like this one */
	uint64		cost;			/* rows a split of it moves, about */
} AheadRange;

/*
 * Whether a neighbour of range t in key order (of its zone) has room to
 * share for t's next newcomers besides its own: a share moves a few rows,
 * not half a range.
 */
static bool
neighbour_shares(PlaceState *ps, int t, uint32 maxrow)
{
	IncrState  *st = ps->cs->st;

	for (int d = -1; d <= 1; d += 2)
	{
		int			c = t + d;
		int			ce;
		int64		room;

		if (c < 0 || c >= ps->nr || ps->split_here[c] ||
			zorder_key_zone(&st->lay, ps->pr[c].key_lo) !=
			zorder_key_zone(&st->lay, ps->pr[t].key_lo) ||
			(ce = find_main_extent(st, ps->pr[c].first_block)) < 0)
			continue;
		room = (int64) recorded_room(ps->cs->rel, ps->pr[c].first_block,
									 ps->pr[c].first_block +
									 st->extents[ce].r.nblocks) -
			(int64) ps->placed[c] - (int64) st->extents[ce].r.nblocks * maxrow;
		if (room >= (int64) (2 * ps->placed[c] + ps->placed[t]))
			return true;
	}
	return false;
}

static int
cmp_ahead(const void *a, const void *b)
{
	double		x = ((const AheadRange *) a)->left;
	double		y = ((const AheadRange *) b)->left;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * Fourth pass: split ahead of need (zp_split_ahead).  The ranges this call
 * placed into whose room would not take as many newcomers again, and
 * whose neighbours have no room to share with them, are counted at what
 * their split would move: about half their rows where the newcomers that
 * stay can wait for the prune (shift_group), else about all of them.  If
 * splitting all of them next call would take more than a budget like this
 * call's, the fullest split now, as far as this call's budget allows.
 * Ranges that new rows fill at the same pace (a band's, all opened by one
 * call, or halves of splits alike) would otherwise split in one call, more
 * than it may move.  The ranges of a region of later
 * values are left out: rows arriving in time order come to the top of
 * their range, whose split then moves none of its rows (zp_tilted_cut's
 * at_edge).  The free space map tells which ranges to read; a call that
 * cannot commit splits nothing ahead.
 */
static void
place_ahead(PlaceState *ps)
{
	CallState  *cs = ps->cs;
	IncrState  *st = cs->st;
	ZLayout    *lay = &st->lay;
	AheadRange *ar;
	uint64	   *cost;
	size_t		n = 0;
	size_t		k;
	uint32		maxrow = 0;

	if (!cs->can_commit || ps->nr == 0)
		return;
	for (size_t j = 0; j < ps->nkeep; j++)
		maxrow = Max(maxrow, MAXALIGN(CAND_LEN(ps->cand->items[j].val)) +
					 sizeof(ItemIdData));
	ar = palloc(sizeof(AheadRange) * ps->nr);
	for (int t = 0; t < ps->nr; t++)
	{
		BlockNumber first = ps->pr[t].first_block;
		int			ei = find_main_extent(st, first);
		unsigned	r = zk_region_of(ps->pr[t].key_lo);
		BlockNumber page;
		int64		room;

		CHECK_FOR_INTERRUPTS();
		if (ps->placed[t] == 0 || ps->split_here[t] || ps->waiting[t] || ei < 0 ||
			(r > 0 && r <= (unsigned) lay->nregions &&
			 lay->region_end[r - 1] == UINT64_MAX))
			continue;
		/* the map may say more than there is, hardly less */
		if (recorded_room(cs->rel, first, first + st->extents[ei].r.nblocks) >=
			3 * ps->placed[t] + (uint64) st->extents[ei].r.nblocks * maxrow)
			continue;
		room = (int64) range_room(cs->rel, first,
								  first + st->extents[ei].r.nblocks, 0, &page) -
			(int64) st->extents[ei].r.nblocks * maxrow;
		if (room >= (int64) ps->placed[t] || neighbour_shares(ps, t, maxrow))
			continue;
		ar[n].t = t;
		ar[n].left = (double) room / (double) ps->placed[t];
		ar[n].cost = (uint64) Max(st->extents[ei].r.rows, 0) /
			(range_prunable(cs->rel, first,
							first + st->extents[ei].r.nblocks) ? 2 : 1);
		n++;
	}
	qsort(ar, n, sizeof(AheadRange), cmp_ahead);
	cost = palloc(sizeof(uint64) * Max(n, 1));
	for (size_t i = 0; i < n; i++)
		cost[i] = ar[i].cost;
	k = zp_split_ahead(cost, n, ps->budget);

	/*
	 * The rows this batch placed are not in its snapshot: a split now would
	 * leave them on the range, outside its keys.  Commit first.
	 */
	if (k > 0)
	{
		ps->batch_rows = zorder_max_batch_size;
		zorder_batch_rotate(cs, &ps->batch_rows);
	}
	for (size_t i = 0; i < k; i++)
	{
		PGroup		g = {.pos = 0, .end = 0, .t = ar[i].t, .need = 0,
		.maxrow = maxrow};

		CHECK_FOR_INTERRUPTS();
		if (ps->split_here[g.t] || !shift_group(ps, &g, -1))
			continue;
		ps->nsplits++;
		ps->nahead++;
		zorder_batch_rotate(cs, &ps->batch_rows);
	}
}

/*
 * The newcomers of a zone no range is in (tgt -1): a band of a region for
 * time-ordered keys (regions.c) that no range holds yet, whose keys would
 * otherwise fall to a range of another zone.  They go alone into new
 * ranges, the first taking every key of the zone from its lowest, as a
 * B-tree starts a leaf: with another zone's rows, a range would span two
 * bands or two regions.  In batches of at most zorder.max_batch_size rows.
 */
static void
place_appends(PlaceState *ps)
{
	ZLayout    *lay = &ps->cs->st->lay;
	zr_item    *items = ps->cand->items;
	size_t		pos = 0;

	while (ps->nappend > 0 && pos < ps->nkeep)
	{
		uint64		zone;
		uint64		lo;

		CHECK_FOR_INTERRUPTS();
		if (ps->tgt[pos] >= 0)
		{
			pos++;
			continue;
		}
		/* a zone is told by its lowest key, where its first range starts */
		zone = lo = zorder_key_zone(lay, items[pos].key);
		while (pos < ps->nkeep && ps->tgt[pos] < 0 &&
			   zorder_key_zone(lay, items[pos].key) == zone)
		{
			size_t		n = 0;

			while (pos + n < ps->nkeep && n < (size_t) zorder_max_batch_size &&
				   ps->tgt[pos + n] < 0 &&
				   zorder_key_zone(lay, items[pos + n].key) == zone)
				n++;
			split_ranges(ps->cs, NULL, 0, items + pos, n, ps->tids, ps->nkeep,
						 ps->table_savefree, lo);
			memset(ps->moved + pos, true, n);
			ps->batch_rows += n;
			pos += n;
			/* the next batch's range starts at its own lowest key */
			lo = UINT64_MAX;
			zorder_batch_rotate(ps->cs, &ps->batch_rows);
		}
	}
}

/*
 * The newcomers that did not move in this call (no budget left for their
 * range, or past zorder.max_batch_size for one range) and lie on a range
 * of the main run: listed as misplaced (zorder.layouts.misplaced), as a
 * recognised run lists rows out of order, for the next call to take.  A
 * range this call wrote into is saved with the call's transaction ID, and
 * a newcomer on it older than that would otherwise be taken for one of its
 * rows from then on, in a range whose keys do not hold it.  The list is
 * replaced: what it held before was among this call's newcomers.  One left
 * on a page of another run (a cube's) is not listed, and the call records
 * no scan_lsn (incremental.c), so that the next reads every page of the
 * runs.
 */
static void
list_leftovers(PlaceState *ps)
{
	IncrState  *st = ps->cs->st;
	BlockNumber ppr = st->lay.ppr;
	BlockNumber nr = 0;
	BlockNumber *from;
	BlockNumber *to;
	Datum	   *tids = palloc(sizeof(Datum) * Max(ps->nkeep, 1));
	ItemPointerData *ip = palloc(sizeof(ItemPointerData) * Max(ps->nkeep, 1));
	int			n = 0;

	/* per BRIN range, the blocks of the main run there: no range mixes runs */
	for (int x = 0; x < st->nextents; x++)
		nr = Max(nr, (st->extents[x].r.first_block +
					  st->extents[x].r.nblocks + ppr - 1) / ppr);
	from = palloc0(sizeof(BlockNumber) * Max(nr, 1));
	to = palloc0(sizeof(BlockNumber) * Max(nr, 1));
	for (int x = 0; x < st->nextents; x++)
	{
		Extent	   *e = &st->extents[x];
		BlockNumber end = e->r.first_block + e->r.nblocks;

		if (e->r.run != 0 || e->consuming || e->r.nblocks == 0)
			continue;
		for (BlockNumber r = e->r.first_block / ppr; r * ppr < end; r++)
		{
			from[r] = Max(r * ppr, e->r.first_block);
			to[r] = Min((r + 1) * ppr, end);
		}
	}

	for (size_t i = 0; i < ps->nkeep; i++)
	{
		uint64		val = ps->cand->items[i].val;
		BlockNumber blk = (BlockNumber) ((val & CAND_TID_MASK) >> 16);
		BlockNumber r = blk / ppr;

		if (ps->moved[i])
			continue;
		if (r >= nr || blk < from[r] || blk >= to[r])
		{
			/* on no range of the main run: a cube's, or outside every run */
			if (zorder_blocks_in_run(st, blk, blk + 1))
				ps->cs->left_unlisted = true;
			continue;
		}
		ItemPointerSet(&ip[n], blk, (OffsetNumber) (val & 0xFFFF));
		tids[n] = PointerGetDatum(&ip[n]);
		n++;
	}
	zorder_layout_set_misplaced(ps->cs->relid, tids, n);
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
 * the commit).  If it still has no room, it shares a neighbour's room (the
 * rows at the edge of its keys move there), else splits in two (its upper
 * part moves to a new range); the newcomers that stay are placed after the
 * next commit prunes what left (place_after_prune), or, where that prune cannot
 * be counted on, must fit the room the range has now; when no cut allows
 * that, the range alone goes with its newcomers into as many new ranges as
 * they need.  Rows of ranges these move count against zp_split_budget; the
 * newcomers of ranges left over wait where they are for a later call
 * (list_leftovers).  Until the reserved room is used up, each newcomer
 * moves once, and old rows move only to even out the room of neighbours
 * (every old row moved costs WAL for its index entries, on index pages all
 * over the table); a range splits ahead of need only when the ranges that
 * would fill up next call together need more than its budget
 * (place_ahead).
 *
 * Leaves the last batch open, as the other writers do.  Returns the number
 * of splits.
 */
int
zorder_place_newcomers(CallState *cs, Candidates *cand, int64 main_rows)
{
	PlaceState	ps;

	memset(&ps, 0, sizeof(ps));
	ps.cs = cs;
	ps.cand = cand;
	ps.table_savefree = cs->w->savefree;
	place_targets(&ps, main_rows);

	zorder_batch_begin(cs);
	place_first_pass(&ps);
	place_appends(&ps);
	place_second_pass(&ps);
	place_after_prune(&ps);
	place_ahead(&ps);
	zorder_trim_extents(cs->st, &cs->w->out, cs->w->run);
	list_leftovers(&ps);
	ereport(DEBUG1,
			(errmsg_internal("placement: %zu newcomers, %d splits (%d ahead of need), %d shifts, %llu rows of theirs moved",
							 ps.nkeep, ps.nsplits, ps.nahead, ps.nshifts,
							 (unsigned long long) ps.spent)));
	return ps.nsplits;
}
