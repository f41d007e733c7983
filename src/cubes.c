/*-------------------------------------------------------------------------
 *
 * cubes.c
 *	  The incremental paths besides placement: newcomers written as runs
 *	  of their own (cubes), and merges of every run back into the main run.
 *
 * With zorder.placement off, a call sorts its newcomers and writes them,
 * in key order, as a new run of whole ranges, a cube; the newest cubes no
 * bigger than what comes in are merged into it, so that their number stays
 * logarithmic.  Each cube spans the whole key space, so a filter reads
 * some ranges of every cube.  With zorder.merge_threshold below 1, once
 * the rows outside the main run pass that share of the table, calls merge
 * every cube and newcomer into the main run, one key slice of it per batch,
 * moving the whole table while reads go on: a re-sort online, where
 * zorder.optimize's full rewrite takes ACCESS EXCLUSIVE.  Placement
 * (place.c) is the default; README.md says when these paths are chosen.
 * The design: docs/design.md ("Cubes and merges").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/snapmgr.h"

#include "batch.h"
#include "collect.h"
#include "cubes.h"
#include "mover.h"
#include "radix.h"
#include "runs.h"
#include "zorder.h"

/* a merge takes the main run in about this many slices */
#define MERGE_SLICES	64

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
			if (e->r.run != 0 || e->r.key_lo < st->lay.cursor ||
				e->taken_to >= e->r.first_block + e->r.nblocks)
				continue;
			if (best < 0 || e->r.key_lo < st->extents[best].r.key_lo)
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
				qsort(keys, n, sizeof(uint64), zr_cmp_u64);
				cut = keys[n - 1 - n / 50];
				pfree(keys);
			}
			*hi_ex = Max(cut, st->lay.cursor);
			if (*hi_ex < PG_UINT64_MAX)
				(*hi_ex)++;
			return false;
		}

		e = &st->extents[best];
		end = e->r.first_block + e->r.nblocks;
		while (e->taken_to < end && (int64) c->n < target)
		{
			BlockNumber b = e->taken_to;
			BlockNumber next = Min(b - b % st->lay.ppr + st->lay.ppr, end);
			size_t		before = c->n;

			zorder_collect_block_range(rel, st, b, next, COLLECT_OLDER,
									   e->r.xid, NULL, false, snapshot, c,
									   tmpcxt);
			last_from = before;
			e->slice_rows += c->n - before;
			e->consuming = true;
			if (b / st->lay.ppr < st->nranges)
				st->remaining[b / st->lay.ppr] = 0;
			e->taken_to = next;
		}
	}
}

/* Mark all extents of the given run as moving out; collect their rows. */
static void
consume_run(Relation rel, IncrState *st, int run, Snapshot snapshot,
			Candidates *c, MemoryContext tmpcxt)
{
	for (int i = 0; i < st->nextents; i++)
	{
		Extent	   *e = &st->extents[i];
		BlockNumber end = e->r.first_block + e->r.nblocks;

		if (e->r.run != run)
			continue;
		e->consuming = true;
		for (BlockNumber b = e->r.first_block; b < end; b += st->lay.ppr - b % st->lay.ppr)
			if (b / st->lay.ppr < st->nranges)
				st->remaining[b / st->lay.ppr] = 0;
		zorder_collect_block_range(rel, st, e->r.first_block, end, COLLECT_OLDER,
								   e->r.xid, NULL, true, snapshot, c, tmpcxt);
	}
}

/*
 * Take the rows of every cube but skip_run (0: none) along: returns how
 * many cubes that is.  Placement takes them too, into the ranges.
 */
int
zorder_take_cubes(IncrCall *ic, int skip_run)
{
	IncrState  *st = &ic->st;
	int			n = 0;

	for (int run = 1; run <= ic->maxrun; run++)
	{
		bool		found = false;

		for (int i = 0; i < st->nextents && !found; i++)
			found = st->extents[i].r.run == run;
		if (!found)
			continue;
		consume_run(ic->cs.rel, st, run, ic->snapshot, &ic->cand,
					ic->cs.tmp_cxt);
		if (run != skip_run)
			n++;
	}
	return n;
}

/*
 * Before a merge: the newcomers first make a cube of their own, merged
 * like the others.  Appends scatter over the free space of many pages;
 * once they have left, those ranges are empty and take the slices' rows,
 * instead of the heap growing.  Returns the cube's run.
 */
static int
newcomers_to_cube(IncrCall *ic)
{
	int			run = ++ic->maxrun;

	UnregisterSnapshot(ic->snapshot);
	zorder_sort_candidates(&ic->cand);
	zorder_writer_start_run(&ic->w, run);
	zorder_batch_move(&ic->cs, ic->cand.items, ic->cand.n, false);
	ic->cand.n = 0;
	ic->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	ic->cs.found = zorder_found_snapshot(ic->snapshot, ic->cs.keep_cxt);
	zorder_ensure_ranges(&ic->st, RelationGetNumberOfBlocks(ic->cs.rel));
	return run;
}

/*
 * Which runs' rows move with the newcomers, without placement.  A merge:
 * every cube's, into the main run.  Else the newest cubes no bigger than
 * what comes in, so that cube sizes at least double going back and their
 * number stays logarithmic.
 */
void
zorder_choose_cube_runs(IncrCall *ic)
{
	IncrState  *st = &ic->st;
	int64		accumulated = (int64) ic->nnew;

	if (ic->merge)
	{
		int			newcomers_run = 0;

		if (!st->lay.merging)
		{
			st->lay.merging = true;
			st->lay.cursor = 0;
		}
		if (ic->cs.can_commit && ic->nnew > 0)
			newcomers_run = newcomers_to_cube(ic);
		ic->nmerged = zorder_take_cubes(ic, newcomers_run);
		return;
	}
	for (int run = ic->maxrun; run >= 1; run--)
	{
		int64		rows = 0;
		bool		found = false;

		for (int i = 0; i < st->nextents; i++)
			if (st->extents[i].r.run == run)
			{
				rows += st->extents[i].r.rows;
				found = true;
			}
		if (!found)
			continue;
		if (rows > accumulated)
			break;
		consume_run(ic->cs.rel, st, run, ic->snapshot, &ic->cand,
					ic->cs.tmp_cxt);
		accumulated += rows;
		ic->nmerged++;
	}
}

/*
 * One slice of a merge, in the batch begun: the next key slice of the
 * main run with the other rows of its keys (from *upos on), sorted and
 * moved; then the cursor moves on.  Returns true if the slice went to the
 * end of the main run.
 */
static bool
merge_slice(IncrCall *ic, int64 target, size_t *upos)
{
	CallState  *cs = &ic->cs;
	IncrState  *st = &ic->st;
	Candidates *cand = &ic->cand;
	Candidates	slice = {0};
	uint64		hi_ex = 0;
	bool		to_end;
	size_t		uend = *upos;
	size_t		nitems;
	zr_item    *items;
	MemoryContext prev;

	prev = MemoryContextSwitchTo(cs->batch_cxt);
	to_end = take_slice(cs->rel, st, target, cs->snapshot, &slice, &hi_ex,
						cs->tmp_cxt);
	while (uend < cand->n && (to_end || cand->items[uend].key < hi_ex))
		uend++;

	/* the slice with the other rows of its keys, sorted */
	nitems = slice.n + uend - *upos;
	items = palloc_extended((nitems + 1) * sizeof(zr_item), MCXT_ALLOC_HUGE);
	if (slice.n > 0)
		memcpy(items, slice.items, slice.n * sizeof(zr_item));
	if (uend > *upos)
		memcpy(items + slice.n, cand->items + *upos,
			   (uend - *upos) * sizeof(zr_item));
	if (nitems > 1)
		zr_sort(items,
				palloc_extended(nitems * sizeof(zr_item), MCXT_ALLOC_HUGE),
				nitems);
	MemoryContextSwitchTo(prev);
	zorder_move_items(cs, items, nitems);
	*upos = uend;
	if (to_end)
	{
		st->lay.merging = false;
		st->lay.cursor = 0;
	}
	else
	{
		/*
		 * Keep "key_lo >= cursor" meaning "not merged yet": what this slice
		 * wrote starts below the cursor, what is left starts at it or
		 * after.
		 */
		for (int i = 0; i < st->nextents; i++)
		{
			Extent	   *e = &st->extents[i];

			if (e->r.run != 0)
				continue;
			if (e->fresh)
				e->r.key_lo = Min(Max(e->r.key_lo, st->lay.cursor), hi_ex - 1);
			else if (e->r.key_lo >= st->lay.cursor)
				e->r.key_lo = Max(e->r.key_lo, hi_ex);
		}
		st->lay.cursor = hi_ex;
	}
	for (int i = 0; i < st->nextents; i++)
		st->extents[i].fresh = false;
	zorder_trim_extents(st, &ic->w.out, ic->w.run);
	for (int i = 0; i < st->nextents; i++)
		st->extents[i].slice_rows = 0;
	return to_end;
}

/*
 * Merge the main run with the rows to move, one key slice per batch.  The
 * rows below where a resumed merge goes on (ic->ulow of them) are left for
 * a cube after it.
 */
void
zorder_merge_slices(IncrCall *ic)
{
	Candidates *cand = &ic->cand;
	int64		main_rows = ic->main_rows;
	int64		target;
	size_t		upos;

	while (ic->ulow < cand->n && cand->items[ic->ulow].key < ic->st.lay.cursor)
		ic->ulow++;
	upos = ic->ulow;

	/*
	 * A slice's rows go to ranges the slices before it left (pruned after
	 * each commit), so the heap grows by about one slice: take
	 * 1/MERGE_SLICES of the main run, less if a batch is smaller.
	 */
	target = Min(main_rows / MERGE_SLICES + 1,
				 (int64) ((double) zorder_max_batch_size * main_rows /
						  (double) Max(1, main_rows + (int64) (cand->n - ic->ulow))));
	target = Max(target, 1);
	zorder_writer_start_run(&ic->w, 0);
	for (;;)
	{
		bool		to_end;

		zorder_batch_begin(&ic->cs);
		to_end = merge_slice(ic, target, &upos);
		zorder_batch_end(&ic->cs, !to_end || ic->ulow > 0);
		if (to_end)
			break;
	}
}

/*
 * Write the rows to move that the plan left as a new cube: all of them
 * without placement, or after a merge the rows below where it went on.
 * Leaves the last batch open.
 */
void
zorder_write_cube(IncrCall *ic)
{
	if (!ic->merge || ic->ulow > 0)
	{
		zorder_writer_start_run(&ic->w, ic->maxrun + 1);
		zorder_batch_move(&ic->cs, ic->cand.items,
						  ic->merge ? ic->ulow : ic->cand.n, true);
	}
	else
	{
		/* the last merge batch ended without saving the history */
		zorder_batch_begin(&ic->cs);
	}
}
