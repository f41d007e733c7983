/*-------------------------------------------------------------------------
 *
 * runs.c
 *	  The sorted runs of a table as an incremental call sees them: their
 *	  extents, loaded from and saved to the catalog (layout.c), and the
 *	  rows each BRIN range of a run still holds that the call moves out.
 *
 * Every module of an incremental call (batch.c, mover.c, place.c,
 * incremental.c) updates the same IncrState; this one keeps its extents
 * consistent, so that what a batch saves with its moves is what the heap
 * holds.  Terms (run, main run, extent, range) are in DEVELOPERS.md's
 * glossary.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "runs.h"

/* Append an extent to the state; returns its index. */
int
zorder_add_extent(IncrState *st, BlockNumber first_block, BlockNumber nblocks,
				  int64 rows, TransactionId xid, int run, uint64 key_lo)
{
	Extent	   *e;

	ZORDER_RESERVE(st->extents, st->maxextents, st->nextents + 1, 16,
				   CurrentMemoryContext);
	e = &st->extents[st->nextents];
	memset(e, 0, sizeof(Extent));
	e->r.first_block = first_block;
	e->r.nblocks = nblocks;
	e->r.rows = rows;
	e->r.xid = xid;
	e->r.run = run;
	e->r.key_lo = key_lo;
	e->taken_to = first_block;
	return st->nextents++;
}

/* The table's runs, extent by extent, in heap order (layout.c). */
void
zorder_load_extents(Oid relid, IncrState *st)
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
		runs[i] = st->extents[i].r;
	return zorder_runs_save(relid, runs, st->nextents, st->lay.merging,
							st->lay.cursor);
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


/* True if some extent of a run covers a block of [from, to). */
bool
zorder_blocks_in_run(IncrState *st, BlockNumber from, BlockNumber to)
{
	for (int i = 0; i < st->nextents; i++)
	{
		Extent	   *e = &st->extents[i];

		if (e->r.nblocks > 0 && e->r.first_block < to &&
			e->r.first_block + e->r.nblocks > from)
			return true;
	}
	return false;
}

/*
 * Take out of their runs the ranges none of whose rows are left, now that a
 * batch moved them.  What is left of a main-run extent after a slice starts
 * at the merge cursor in key order.  *out is the extent of run that a
 * writer is filling (or -1): it follows that extent to its new index.
 */
void
zorder_trim_extents(IncrState *st, int *out, int run)
{
	Extent	   *old = st->extents;
	int			nold = st->nextents;
	BlockNumber out_first = InvalidBlockNumber;

	if (*out >= 0)
		out_first = old[*out].r.first_block;
	st->extents = NULL;
	st->nextents = st->maxextents = 0;
	for (int i = 0; i < nold; i++)
	{
		Extent	   *e = &old[i];
		BlockNumber end = e->r.first_block + e->r.nblocks;
		BlockNumber piece = InvalidBlockNumber;
		int64		rows = 0;

		if (!e->consuming)
		{
			int			k = zorder_add_extent(st, e->r.first_block, e->r.nblocks, e->r.rows,
											  e->r.xid, e->r.run, e->r.key_lo);

			st->extents[k] = *e;
			if (e->r.first_block == out_first && e->r.run == run)
				*out = k;
			continue;
		}

		for (BlockNumber b = e->r.first_block; b <= end;)
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

				if (e->r.run == 0)
					k = zorder_add_extent(st, piece, b - piece,
										  Max(e->r.rows - e->slice_rows, 0), e->r.xid, 0,
										  piece == e->r.first_block ? e->r.key_lo : st->lay.cursor);
				else
				{
					k = zorder_add_extent(st, piece, b - piece, rows, e->r.xid, e->r.run,
										  e->r.key_lo);
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
