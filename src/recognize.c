/*-------------------------------------------------------------------------
 *
 * recognize.c
 *	  Recognising a heap that a tool other than zorder.optimize rewrote in a
 *	  boundary set's key order (pg_repack --order-by, CLUSTER or REPACK over
 *	  an index on zorder.layout_key), so that the table counts again as one
 *	  sorted run and incremental calls go on from there.
 *
 * The next zorder.optimize after such a rewrite checks the heap with one
 * scan: it never trusts that the rewrite happened, that it used the set, or
 * that nothing came in meanwhile.  Rows that arrived during or after the
 * rewrite, and rows the rewrite put out of order, are left outside the run
 * for the incremental call to place.  The layout and the run are recorded
 * through layout.c; the set is read through layoutkey.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/transam.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "access.h"
#include "boundsets.h"
#include "brin.h"
#include "heappage.h"
#include "layout.h"
#include "radix.h"
#include "recognize.h"
#include "tables.h"
#include "zorder.h"

/*
 * Age of a row's xmin before snapshot xmin sx: 0 for one that does not
 * precede it (the row is newer than anything the check can rely on), the
 * largest for a frozen one.
 */
static inline uint32
xmin_age(HeapTupleHeader tup, TransactionId sx)
{
	TransactionId xmin;

	if (HeapTupleHeaderXminFrozen(tup))
		return PG_UINT32_MAX;
	xmin = HeapTupleHeaderGetRawXmin(tup);
	if (!TransactionIdIsNormal(xmin))
		return PG_UINT32_MAX;
	if (!TransactionIdPrecedes(xmin, sx))
		return 0;
	return (uint32) (sx - xmin);
}

/* One entry of the check's stack (see zorder_recognize_layout). */
typedef struct AgeKey
{
	uint32		age;
	uint64		key;
} AgeKey;

/* A row of a block, for the check. */
typedef struct RowKey
{
	uint64		key;
	uint32		age;
	OffsetNumber off;
	uint32		coords[ZORDER_MAX_KEYS];	/* under the set's boundaries */
} RowKey;

/* A row the check found out of order in its block, and its age. */
typedef struct Misplaced
{
	ItemPointerData tid;
	uint32		age;
} Misplaced;

/* What the check of the heap found. */
typedef struct CheckState
{
	Misplaced  *misplaced;		/* in heap order */
	RowKey	   *misplaced_rows; /* with spans: their keys and coordinates */
	int			nmisplaced;
	int			maxmisplaced;
	uint64		threshold;		/* rows of age >= this form the run */
	BlockNumber cut;			/* no run at or after this block */
	int64		rows;			/* visible rows before cut */
	AgeKey	   *stack;
	int			nstack;
	int			maxstack;
	uint32	   *maxage;			/* per block: oldest row kept at the time */
	uint32	   *minage;			/* ... and youngest */
	uint16	   *nkept;			/* ... and how many were kept */
	bool		copied;			/* the heap is a copy in the set's order
								 * (see keep_in_order) */
	bool		have_copy_age;	/* copy_age is known */
	uint32		copy_age;		/* age of the copy's rows: the first block's
								 * oldest */
	uint64		copy_top;		/* largest key of a copy row kept so far */
	int			nkeys;
	BlockNumber ppr;			/* blocks per BRIN range */
	BlockNumber nranges;
	/* in a copy, per BRIN range, unless NULL: the copy rows kept there span */
	uint64	   *span_lo;		/* ... keys from this */
	uint64	   *span_hi;		/* ... to this */
	uint32	   *box_lo;			/* ... and, nkeys per range, coordinates
								 * from these */
	uint32	   *box_hi;			/* ... to these */
} CheckState;

/*
 * Take one row, in heap order, into the check.  The rows of age >= the
 * threshold must be in key order; when a row breaks it, the threshold
 * rises past whichever side is younger: the row, or the younger rows
 * already kept whose keys are above it.  The stack holds, for the rows
 * kept so far, the latest one of each age range that can still matter:
 * each kept row's key is at least every earlier kept row's, so the
 * largest key among rows of age >= t is that of the last kept row of age
 * >= t.  Returns false when only frozen rows, or rows of the very age of
 * the oldest kept, would be left to break the order: the run must end
 * before this row's block.
 */
static bool
check_row(CheckState *cs, uint32 age, uint64 key, BlockNumber blk)
{
	if ((uint64) age < cs->threshold)
		return true;
	while (cs->nstack > 0 && (uint64) cs->stack[cs->nstack - 1].age < cs->threshold)
		cs->nstack--;
	if (cs->nstack > 0 && cs->stack[cs->nstack - 1].key > key)
	{
		int			i = cs->nstack - 1;

		/* the kept rows above key: a top segment of the stack */
		while (i > 0 && cs->stack[i - 1].key > key)
			i--;
		if ((uint64) cs->stack[i].age + 1 <= (uint64) age)
		{
			/* they are all younger than the row: they leave the run */
			cs->threshold = (uint64) cs->stack[i].age + 1;
			cs->nstack = i;
		}
		else
		{
			/*
			 * The row is as old as the oldest rows kept, and rows of its
			 * very age lie above it: one transaction wrote both.  REPACK
			 * (CONCURRENTLY) does so, copying in key order and then
			 * replaying the changes made meanwhile, after the copy, in the
			 * same transaction.  Age cannot tell the copy from what came
			 * later there, but position can: the run ends before this
			 * row's block.
			 */
			if (cs->stack[i].age == age && cs->stack[0].age == age)
				return false;
			/* the row is the younger: it and its like leave the run */
			if ((uint64) age + 1 > PG_UINT32_MAX)
				return false;
			cs->threshold = (uint64) age + 1;
			while (cs->nstack > 0 &&
				   (uint64) cs->stack[cs->nstack - 1].age < cs->threshold)
				cs->nstack--;
			return true;
		}
	}
	while (cs->nstack > 0 && cs->stack[cs->nstack - 1].age <= age)
		cs->nstack--;
	if (cs->nstack == cs->maxstack)
	{
		cs->maxstack *= 2;
		cs->stack = repalloc_huge(cs->stack, sizeof(AgeKey) * cs->maxstack);
	}
	cs->stack[cs->nstack].age = age;
	cs->stack[cs->nstack].key = key;
	cs->nstack++;
	cs->maxage[blk] = Max(cs->maxage[blk], age);
	cs->minage[blk] = Min(cs->minage[blk], age);
	cs->nkept[blk]++;
	return true;
}

/* Row off of block blk is out of the run's order: listed apart. */
static void
list_misplaced(CheckState *cs, const RowKey *row, BlockNumber blk)
{
	if (cs->nmisplaced == cs->maxmisplaced)
	{
		cs->maxmisplaced = Max(64, cs->maxmisplaced * 2);
		cs->misplaced = cs->misplaced ?
			repalloc_huge(cs->misplaced,
						  sizeof(Misplaced) * cs->maxmisplaced) :
			palloc(sizeof(Misplaced) * cs->maxmisplaced);
		if (cs->span_lo != NULL)
			cs->misplaced_rows = cs->misplaced_rows ?
				repalloc_huge(cs->misplaced_rows,
							  sizeof(RowKey) * cs->maxmisplaced) :
				palloc(sizeof(RowKey) * cs->maxmisplaced);
	}
	ItemPointerSet(&cs->misplaced[cs->nmisplaced].tid, blk, row->off);
	cs->misplaced[cs->nmisplaced].age = row->age;
	if (cs->span_lo != NULL)
		cs->misplaced_rows[cs->nmisplaced] = *row;
	cs->nmisplaced++;
}

/* A copy row kept in the run widens the span of its block's range. */
static void
widen_span(CheckState *cs, const RowKey *row, BlockNumber blk)
{
	BlockNumber r = blk / cs->ppr;
	uint32	   *lo = cs->box_lo + (size_t) r * cs->nkeys;
	uint32	   *hi = cs->box_hi + (size_t) r * cs->nkeys;

	cs->span_lo[r] = Min(cs->span_lo[r], row->key);
	cs->span_hi[r] = Max(cs->span_hi[r], row->key);
	for (int k = 0; k < cs->nkeys; k++)
	{
		lo[k] = Min(lo[k], row->coords[k]);
		hi[k] = Max(hi[k], row->coords[k]);
	}
}

/*
 * Whether a copy row on block blk can stay where it is: its coordinates lie
 * in the box its range's kept rows span, and its key in the stretch of the
 * curve that range and its two neighbours span (a neighbour that kept no
 * rows adds nothing).
 */
static bool
inside_span(const CheckState *cs, const RowKey *row, BlockNumber blk)
{
	BlockNumber r = blk / cs->ppr;
	const uint32 *lo = cs->box_lo + (size_t) r * cs->nkeys;
	const uint32 *hi = cs->box_hi + (size_t) r * cs->nkeys;
	uint64		keys_from = cs->span_lo[r];
	uint64		keys_to = cs->span_hi[r];

	if (keys_from > keys_to)
		return false;			/* no row kept there */
	if (r > 0 && cs->span_lo[r - 1] <= cs->span_hi[r - 1])
		keys_from = Min(keys_from, cs->span_lo[r - 1]);
	if (r + 1 < cs->nranges && cs->span_lo[r + 1] <= cs->span_hi[r + 1])
		keys_to = Max(keys_to, cs->span_hi[r + 1]);
	if (row->key < keys_from || row->key > keys_to)
		return false;
	for (int k = 0; k < cs->nkeys; k++)
		if (row->coords[k] < lo[k] || row->coords[k] > hi[k])
			return false;
	return true;
}

/*
 * After the scan of a copy: a copy row listed apart stays in the run when
 * its coordinates under the set lie in the box of the run's rows of its
 * BRIN range, so that it widens the range's summaries by no more than the
 * width of a boundary bucket (a NULL key may mark the range as holding
 * nulls), and its key is near the range's (inside_span), so that each
 * range still holds a stretch of the curve, as placement keeps it; such a
 * row's key may lie in a neighbouring range's interval, which placement,
 * splits and merges bear, as they take a range's keys from the rows in
 * order.  The rows are the ones an incremental call had placed into the
 * room of the original's ranges (keep_in_order).  A copy packs rows to the
 * fillfactor, and the original held those placed rows besides, so the
 * copy's ranges begin at other keys than the original's, drifting by about
 * a page and a half a range: placed rows straddle the copy's range
 * boundaries, and listed apart they would all move.  A row on the first
 * block of its range stays listed, and so does every row of a range whose
 * first block kept none, as placement takes the least key of the first
 * block with rows of the run as where the range's keys begin (place.c).
 */
static void
keep_inside_spans(CheckState *cs)
{
	int			n = 0;

	if (cs->span_lo == NULL)
		return;
	for (int i = 0; i < cs->nmisplaced; i++)
	{
		Misplaced  *m = &cs->misplaced[i];
		BlockNumber blk = ItemPointerGetBlockNumber(&m->tid);
		BlockNumber first = blk - blk % cs->ppr;

		if (cs->have_copy_age && m->age == cs->copy_age &&
			(uint64) m->age >= cs->threshold &&
			blk < cs->cut && blk != first && cs->nkept[first] > 0 &&
			inside_span(cs, &cs->misplaced_rows[i], blk))
		{
			cs->nkept[blk]++;
			cs->maxage[blk] = Max(cs->maxage[blk], m->age);
			cs->minage[blk] = Min(cs->minage[blk], m->age);
			continue;
		}
		cs->misplaced[n++] = *m;
	}
	cs->nmisplaced = n;

	/* the spans and the listed rows' keys are not needed again */
	pfree(cs->span_lo);
	pfree(cs->span_hi);
	pfree(cs->box_lo);
	pfree(cs->box_hi);
	if (cs->misplaced_rows != NULL)
		pfree(cs->misplaced_rows);
	cs->span_lo = cs->span_hi = NULL;
	cs->box_lo = cs->box_hi = NULL;
	cs->misplaced_rows = NULL;
}

/*
 * In a heap copied whole in the set's order (a restore, VACUUM FULL,
 * CLUSTER: every row of the copy has one age), a block's copy rows are in
 * order but for the rows an incremental call had placed into the room of
 * their range: their keys lie anywhere in the range's stretch of the curve,
 * above or below the rows around them, and a restore (COPY packs the rows
 * to the fillfactor) puts them anywhere in a block.  One such row kept
 * above its neighbours would break the order of every row after it.  So
 * of the block's copy rows whose keys lie between the largest key kept so
 * far and anchor, the longest run in non-decreasing key order (in heap
 * order) stays in; every other copy row of the block is marked in out[],
 * to be listed apart.  Rows of other ages are left to check_row.
 */
static void
keep_in_order(CheckState *cs, const RowKey *rows, int n, uint64 anchor,
			  bool *out)
{
	int			tails[MaxHeapTuplesPerPage];	/* per length, last index */
	int			pred[MaxHeapTuplesPerPage];
	bool		inlis[MaxHeapTuplesPerPage];
	int			len = 0;

	for (int i = 0; i < n; i++)
	{
		int			lo = 0,
					hi = len;

		inlis[i] = false;
		out[i] = false;
		pred[i] = -1;
		if (rows[i].age != cs->copy_age)
			continue;
		if (rows[i].key < cs->copy_top || rows[i].key > anchor)
		{
			out[i] = true;
			continue;
		}
		/* the first length whose tail is above the key (non-decreasing) */
		while (lo < hi)
		{
			int			mid = (lo + hi) / 2;

			if (rows[tails[mid]].key <= rows[i].key)
				lo = mid + 1;
			else
				hi = mid;
		}
		pred[i] = lo > 0 ? tails[lo - 1] : -1;
		tails[lo] = i;
		if (lo == len)
			len++;
	}
	for (int i = len > 0 ? tails[len - 1] : -1; i >= 0; i = pred[i])
		inlis[i] = true;
	for (int i = 0; i < n; i++)
		if (rows[i].age == cs->copy_age && !inlis[i])
			out[i] = true;
}

/*
 * Take the rows of block blk into the check, in heap order, given the key
 * where the next block's oldest rows begin (anchor).  pg_repack copies with
 * INSERT ... SELECT ... ORDER BY, and an insert that finds the current page
 * full puts a narrow row into room an earlier page has left: that row's key
 * lies beyond the next block's start.  Such rows are listed apart (they
 * must move out of the run, as newcomers) instead of breaking the order of
 * all the rows after them.  Returns false as check_row does.
 */
static bool
feed_block(CheckState *cs, RowKey *rows, int n, BlockNumber blk,
		   uint64 anchor)
{
	bool		out[MaxHeapTuplesPerPage];

	if (cs->copied && !cs->have_copy_age)
	{
		/* the copy starts in the first block with rows: its oldest */
		cs->copy_age = 0;
		for (int i = 0; i < n; i++)
			cs->copy_age = Max(cs->copy_age, rows[i].age);
		cs->have_copy_age = true;
	}
	if (cs->copied && (uint64) cs->copy_age >= cs->threshold)
		keep_in_order(cs, rows, n, anchor, out);
	else
		memset(out, 0, sizeof(bool) * n);

	for (int i = 0; i < n; i++)
	{
		if (out[i] || rows[i].key > anchor)
		{
			list_misplaced(cs, &rows[i], blk);
			continue;
		}
		if (!check_row(cs, rows[i].age, rows[i].key, blk))
		{
			/*
			 * A row below the order, as old as the rows kept (VACUUM FULL
			 * and CLUSTER freeze every row), while the next block goes on
			 * above them: a row an incremental call placed into the room
			 * of its range, after that range's rows.  It is listed apart
			 * too, rather than ending the run here.
			 */
			if (anchor != PG_UINT64_MAX && cs->nstack > 0 &&
				anchor >= cs->stack[cs->nstack - 1].key)
			{
				list_misplaced(cs, &rows[i], blk);
				continue;
			}
			return false;
		}
		if (cs->copied && rows[i].age == cs->copy_age)
		{
			cs->copy_top = Max(cs->copy_top, rows[i].key);
			if (cs->span_lo != NULL && (uint64) rows[i].age >= cs->threshold)
				widen_span(cs, &rows[i], blk);
		}
	}
	return true;
}

static int
cmp_misplaced(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) &((const Misplaced *) a)->tid,
							  (ItemPointer) &((const Misplaced *) b)->tid);
}

/*
 * Rows of the run in blocks [0, upto): in each block that kept rows old
 * enough, all its kept rows if none is too young, else those counted
 * again one by one.
 */
static int64
count_run_rows(Relation rel, CheckState *cs, BlockNumber upto,
			   Snapshot snapshot, BufferAccessStrategy strategy,
			   HeapTuple *rows, MemoryContext rowcxt)
{
	TransactionId sx = snapshot->xmin;
	int64		run_rows = 0;

	for (BlockNumber blk = 0; blk < upto; blk++)
	{
		if ((uint64) cs->maxage[blk] < cs->threshold || cs->maxage[blk] == 0)
			continue;
		if ((uint64) cs->minage[blk] >= cs->threshold)
			run_rows += cs->nkept[blk]; /* every row kept there is in it */
		else
		{
			/* some are, some are too young since: count them again */
			MemoryContext oldcxt;
			int			n;

			CHECK_FOR_INTERRUPTS();
			oldcxt = MemoryContextSwitchTo(rowcxt);
			n = zorder_block_rows(rel, blk, strategy, zorder_row_visible,
								  snapshot, rows);
			for (int i = 0; i < n; i++)
			{
				Misplaced	m;

				m.tid = rows[i]->t_self;
				if ((uint64) xmin_age(rows[i]->t_data, sx) >= cs->threshold &&
					(cs->nmisplaced == 0 ||
					 bsearch(&m, cs->misplaced, cs->nmisplaced,
							 sizeof(Misplaced), cmp_misplaced) == NULL))
					run_rows++;
			}
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(rowcxt);
		}
	}
	return run_rows;
}

/*
 * The one scan of recognize: every block's visible rows in heap order, with
 * their keys and ages, fed to the check until the order first breaks (the
 * cut); past it rows are only counted.  The heap had nblocks blocks once
 * the snapshot was taken, the size of the check's arrays: blocks added
 * since hold no row the snapshot sees.
 */
static void
scan_heap(Relation rel, LayoutSet *set, Snapshot snapshot, BlockNumber nblocks,
		  BufferAccessStrategy strategy, CheckState *cs, HeapTuple *rows,
		  MemoryContext rowcxt)
{
	TransactionId sx = snapshot->xmin;
	TupleDesc	desc = RelationGetDescr(rel);
	MemoryContext oldcxt;
	RowKey	   *prev = palloc(sizeof(RowKey) * MaxHeapTuplesPerPage);
	RowKey	   *cur = palloc(sizeof(RowKey) * MaxHeapTuplesPerPage);
	int			nprev = 0;
	BlockNumber prevblk = InvalidBlockNumber;
	uint32		prev_oldest = 0;

	for (BlockNumber blk = 0; blk < nblocks; blk++)
	{
		int			n;
		uint32		oldest = 0;
		uint64		anchor = PG_UINT64_MAX;
		RowKey	   *swap;

		CHECK_FOR_INTERRUPTS();
		oldcxt = MemoryContextSwitchTo(rowcxt);
		n = zorder_block_rows(rel, blk, strategy, zorder_row_visible,
							  snapshot, rows);
		for (int i = 0; i < n; i++)
		{
			zorder_tuple_coordinates(set->cols, set->attnums, set->nkeys,
									 set->bits, desc, rows[i], cur[i].coords);
			cur[i].key = zorder_curve_key(set->curve, set->nkeys, set->bits,
										  cur[i].coords);
			cur[i].age = xmin_age(rows[i]->t_data, sx);
			cur[i].off = ItemPointerGetOffsetNumber(&rows[i]->t_self);
		}
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(rowcxt);
		cs->rows += n;
		if (n == 0)
			continue;

		/*
		 * The block's first row of its oldest rows: where the copy went on
		 * after the blocks before.  A row of an earlier block above it was
		 * put there later, into room left at the end of that block.
		 */
		for (int i = 0; i < n; i++)
			if (cur[i].age > oldest || i == 0)
			{
				oldest = cur[i].age;
				anchor = cur[i].key;
			}
		/*
		 * In a copy whose blocks may begin with rows that were placed into
		 * their range's room (keep_in_order), the first row is no sure
		 * start: take the lower quartile of the block's oldest keys, which
		 * the rows in order reach whatever few rows lie below them.
		 */
		if (cs->copied)
		{
			uint64		keys[MaxHeapTuplesPerPage];
			int			nk = 0;

			for (int i = 0; i < n; i++)
				if (cur[i].age == oldest)
					keys[nk++] = cur[i].key;
			qsort(keys, nk, sizeof(uint64), zr_cmp_u64);
			anchor = keys[nk / 4];
		}
		/* a block of younger rows only is not where the copy went on */
		if (oldest < prev_oldest)
			anchor = PG_UINT64_MAX;
		if (nprev > 0 && !feed_block(cs, prev, nprev, prevblk, anchor))
		{
			cs->cut = prevblk;
			nprev = 0;
			/* past a cut, rows are only counted */
			for (BlockNumber b = blk + 1; b < nblocks; b++)
			{
				CHECK_FOR_INTERRUPTS();
				cs->rows += zorder_block_rows(rel, b, strategy,
											 zorder_row_visible, snapshot,
											 NULL);
			}
			break;
		}
		swap = prev;
		prev = cur;
		cur = swap;
		nprev = n;
		prevblk = blk;
		prev_oldest = oldest;
	}
	if (nprev > 0 && !feed_block(cs, prev, nprev, prevblk, PG_UINT64_MAX))
		cs->cut = prevblk;
}

/*
 * The created_xid of a recognised run whose rows are at least threshold
 * transactions older than sx: rows younger than it are newcomers.
 */
static TransactionId
run_xid(Relation rel, uint64 threshold, TransactionId sx)
{
	TransactionId xid = sx - (TransactionId) Min(threshold, (uint64) PG_UINT32_MAX);

	if (threshold >= PG_UINT32_MAX || !TransactionIdIsNormal(xid) ||
		!TransactionIdPrecedes(xid, sx) ||
		(TransactionIdIsNormal(rel->rd_rel->relfrozenxid) &&
		 TransactionIdPrecedes(xid, rel->rd_rel->relfrozenxid)))
	{
		/* only frozen rows count: any xid before every unfrozen one */
		xid = rel->rd_rel->relfrozenxid;
		if (!TransactionIdIsNormal(xid))
			xid = FirstNormalTransactionId;
		else
			TransactionIdRetreat(xid);
		if (!TransactionIdIsNormal(xid))
			xid = FirstNormalTransactionId;
	}
	return xid;
}

/*
 * In a copy, the spans of the BRIN ranges (keep_inside_spans), of the
 * pages_per_range the layout will be aligned to: none where no BRIN index
 * covers a key column, or its ranges are single blocks, as then every
 * block is the first of its range.
 */
static void
init_spans(CheckState *cs, Relation rel, LayoutSet *set, BlockNumber nblocks)
{
	size_t		nbox;

	cs->ppr = zorder_brin_layout_ppr(zorder_brin_indexes(rel), set->nkeys,
									 set->attnums);
	if (cs->ppr <= 1)
		return;
	cs->nranges = (nblocks + cs->ppr - 1) / cs->ppr;
	cs->span_lo = palloc_extended(sizeof(uint64) * Max(cs->nranges, 1),
								  MCXT_ALLOC_HUGE);
	memset(cs->span_lo, 0xFF, sizeof(uint64) * Max(cs->nranges, 1));
	cs->span_hi = palloc_extended(sizeof(uint64) * Max(cs->nranges, 1),
								  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	nbox = (size_t) Max(cs->nranges, 1) * set->nkeys;
	cs->box_lo = palloc_extended(sizeof(uint32) * nbox, MCXT_ALLOC_HUGE);
	memset(cs->box_lo, 0xFF, sizeof(uint32) * nbox);
	cs->box_hi = palloc_extended(sizeof(uint32) * nbox,
								 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
}

/*
 * Check the heap of rel against boundary set set (one scan) and record it
 * as one sorted run if enough of it is in key order.
 *
 * Rows are taken in heap order.  The run is the rows whose xmin is at
 * least some age (older than a threshold xid) and that are in key order:
 * an online rewrite copies the table in one transaction, in key order,
 * and whatever came in during it or after it (pg_repack replays the
 * changes it logged; writers go on) has a younger xmin, and so does the
 * new version of an updated row.  The threshold becomes the run's
 * created_xid, below which incremental calls take rows for part of the
 * run and above which for newcomers to place: exactly the split the check
 * made.  A CLUSTER keeps old xmins but holds its lock throughout, so its
 * heap is in order at any threshold.  REPACK (CONCURRENTLY) gives the copy
 * and the changes it replays after it one xmin, its own: there the run
 * ends where the order first breaks (check_row).
 *
 * Runs under ShareUpdateExclusiveLock: writers go on.  Their rows have
 * xids at or above the snapshot's xmin, and the threshold is below it, so
 * whatever they insert counts as a newcomer, wherever it lands.
 */
static void
recognize(Relation rel, LayoutSet *set, bool copied, TimestampTz started)
{
	Oid			relid = RelationGetRelid(rel);
	Snapshot	snapshot = GetActiveSnapshot();
	TransactionId sx = snapshot->xmin;
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	MemoryContext rowcxt;
	CheckState	cs;
	HeapTuple	rows[MaxHeapTuplesPerPage];
	BlockNumber last = 0;		/* one past the last block with run rows */
	int			nmisplaced = 0;
	BlockNumber end;
	BlockNumber ppr;
	int64		run_rows = 0;
	TransactionId xid;

	memset(&cs, 0, sizeof(cs));
	cs.threshold = 1;
	cs.copied = copied;
	cs.cut = nblocks;
	cs.maxstack = 1024;
	cs.stack = palloc(sizeof(AgeKey) * cs.maxstack);
	cs.maxage = palloc_extended(sizeof(uint32) * Max(nblocks, 1),
								 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	cs.minage = palloc_extended(sizeof(uint32) * Max(nblocks, 1),
								MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	memset(cs.minage, 0xFF, sizeof(uint32) * Max(nblocks, 1));
	cs.nkept = palloc_extended(sizeof(uint16) * Max(nblocks, 1),
								MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	cs.nkeys = set->nkeys;
	if (copied)
		init_spans(&cs, rel, set, nblocks);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "zorder check",
								   ALLOCSET_DEFAULT_SIZES);

	scan_heap(rel, set, snapshot, nblocks, strategy, &cs, rows, rowcxt);
	keep_inside_spans(&cs);

	elog(DEBUG1, "zorder check of \"%s\" against boundary set %d: %lld rows, "
		 "threshold age " UINT64_FORMAT " before xid %u, cut at block %u of %u",
		 RelationGetRelationName(rel), set->id, (long long) cs.rows,
		 cs.threshold, sx, cs.cut, nblocks);

	/* the run: rows old enough, up to the last block that has some */
	for (BlockNumber blk = 0; blk < cs.cut; blk++)
		if ((uint64) cs.maxage[blk] >= cs.threshold && cs.maxage[blk] > 0)
			last = blk + 1;
	run_rows = count_run_rows(rel, &cs, last, snapshot, strategy, rows,
							  rowcxt);

	/* the run's created_xid: rows younger than the threshold are newcomers */
	xid = run_xid(rel, cs.threshold, sx);

	/* checked: not again until the heap is rewritten */
	zorder_layout_set_checked(rel, set->id);

	if (run_rows == 0 || (double) run_rows < 0.5 * (double) cs.rows)
	{
		FreeAccessStrategy(strategy);
		MemoryContextDelete(rowcxt);
		zorder_forget_runs_if_rewritten(rel);
		ereport(NOTICE,
				(errmsg("table \"%s\" is not in the order of boundary set %d",
						RelationGetRelationName(rel), set->id),
				 errdetail("%lld of its %lld rows are in that order; the table is treated as it was.",
						   (long long) run_rows, (long long) cs.rows),
				 errhint("Rewrite it ordered by zorder.layout_key as zorder.prepare_layout says, or run zorder.optimize with full => true.")));
		return;
	}

	/* a layout with this set, as a full optimize writes it */
	zorder_layout_save_recognized(rel, set->nkeys, set->attnums, set->cols,
								  set->curve, set->bits, set->id, run_rows,
								  last, started);

	/* BRIN indexes as after a full optimize; the run ends on a range */
	zorder_brin_after_optimize(relid, set->nkeys, set->attnums);
	ppr = zorder_layout_pages_per_range(relid);
	end = (last + ppr - 1) / ppr * ppr;
	/* a run cut short by rows out of order ends on the range before them */
	if (cs.cut < nblocks && end > cs.cut)
		end = Max(cs.cut / ppr * ppr, last / ppr * ppr);
	/* else its last range may be short, as after a full optimize */
	end = Min(end, nblocks);
	if (end < last)
	{
		/* the run holds the rows of its blocks only */
		run_rows = count_run_rows(rel, &cs, end, snapshot, strategy, rows,
								  rowcxt);
		zorder_layout_set_written(relid, run_rows, end);
	}
	FreeAccessStrategy(strategy);
	MemoryContextDelete(rowcxt);

	/* rows of the run's blocks, old enough for it, but out of order */
	{
		Datum	   *tids = palloc(sizeof(Datum) * Max(cs.nmisplaced, 1));

		for (int i = 0; i < cs.nmisplaced; i++)
			if ((uint64) cs.misplaced[i].age >= cs.threshold &&
				ItemPointerGetBlockNumber(&cs.misplaced[i].tid) < end)
				tids[nmisplaced++] = PointerGetDatum(&cs.misplaced[i].tid);
		zorder_layout_set_misplaced(relid, tids, nmisplaced);
	}

	zorder_runs_set_main(relid, end, run_rows, xid);

	ereport(NOTICE,
			(errmsg("table \"%s\" is laid out by boundary set %d",
					RelationGetRelationName(rel), set->id),
			 errdetail("%lld of its %lld rows are in key order in blocks 0 to %u and form its sorted run; the other %lld rows are outside it (%d of them placed out of order by the rewrite).",
					   (long long) run_rows, (long long) cs.rows,
					   end > 0 ? end - 1 : 0,
					   (long long) (cs.rows - run_rows), nmisplaced)));
}

/*
 * Does set fit rel, whose key columns are attnums?  Each of the set's
 * columns must be the table's key column of its position, of the type,
 * typmod and collation it was sampled for.  A column is known by its
 * number or, in a restored table (numbered afresh: a table with dropped
 * columns gets other numbers), by the name it had when the set was
 * sampled; the set then takes the table's numbers.  Nothing is read back
 * here: *why says, for a NOTICE, what does not fit, naming only columns
 * and types.
 */
bool
zorder_set_fits(Relation rel, LayoutSet *set, int nkeys,
				const AttrNumber *attnums, char **why)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (set == NULL)
	{
		*why = pstrdup("The boundary set is not in zorder.boundary_sets.");
		return false;
	}
	if (set->unfit)
	{
		*why = set->unfit;
		return false;
	}
	if (set->nkeys != nkeys)
	{
		*why = psprintf("The table has %d key columns; the set was sampled for %d.",
						nkeys, set->nkeys);
		return false;
	}
	for (int k = 0; k < nkeys; k++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnums[k] - 1);
		int32		typmod = att->atttypmod;
		Oid			typid = getBaseTypeAndTypmod(att->atttypid, &typmod);

		if (set->attnums[k] != attnums[k] &&
			strcmp(set->colnames[k], NameStr(att->attname)) != 0)
		{
			*why = psprintf("Key column %d is \"%s\"; the set was sampled from column \"%s\".",
							k + 1, NameStr(att->attname), set->colnames[k]);
			return false;
		}
		/* a set keeps a domain column as its base type */
		if (set->cols[k].typid != typid || set->cols[k].typmod != typmod)
		{
			*why = psprintf("Key column \"%s\" is of type %s; the set was sampled for type %s.",
							NameStr(att->attname),
							format_type_with_typemod(typid, typmod),
							format_type_with_typemod(set->cols[k].typid,
													 set->cols[k].typmod));
			return false;
		}
		if (set->cols[k].collid != att->attcollation)
		{
			*why = psprintf("Key column \"%s\" has collation %s; the set was sampled for collation %s.",
							NameStr(att->attname),
							OidIsValid(att->attcollation) ?
							generate_collation_name(att->attcollation) : "none",
							OidIsValid(set->cols[k].collid) ?
							generate_collation_name(set->cols[k].collid) : "none");
			return false;
		}
	}
	/* the columns it was sampled from, numbered as the table numbers them */
	for (int k = 0; k < nkeys; k++)
	{
		set->attnums[k] = attnums[k];
		set->cols[k].attnum = attnums[k];
	}
	return true;
}

void
zorder_recognize_layout(Oid relid)
{
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	int			id;
	LayoutSet  *set;
	bool		same;
	bool		prepared;
	bool		restored;
	bool		copied;
	char	   *why = NULL;
	ZOwnerSwitch sw;
	TimestampTz started = GetCurrentTimestamp();

	rel = zorder_open_checked(relid, ShareUpdateExclusiveLock,
							  "zorder.optimize");
	if (rel->rd_rel->relkind != RELKIND_RELATION)
	{
		table_close(rel, ShareUpdateExclusiveLock);
		return;
	}
	/*
	 * A prepared set to check; else, if the heap was rewritten since its
	 * runs were recorded (VACUUM FULL, CLUSTER, a repack), the layout's own
	 * set: a rewrite that kept the order keeps the table one run, any other
	 * drops the runs.
	 */
	if (!zorder_layout_set_to_check(rel, &id, &prepared, &restored, &copied))
	{
		zorder_forget_runs_if_rewritten(rel);
		table_close(rel, ShareUpdateExclusiveLock);
		return;
	}

	/*
	 * Everything that may run code of the table owner's choosing (the key
	 * types' receive and comparison functions) runs as the owner in a
	 * security-restricted operation, as in the rewrite: from loading the
	 * set on.
	 */
	zorder_become_owner(rel->rd_rel->relowner, &sw);

	set = zorder_load_boundary_set(id, false);
	nkeys = zorder_get_keys_required(rel, attnums);
	same = zorder_set_fits(rel, set, nkeys, attnums, &why);
	/* boundaries of a type changed in place since: the set no longer fits */
	if (same && !zorder_decode_boundary_set(set))
	{
		same = false;
		why = pstrdup("Its boundaries no longer read back as the types of the key columns (ALTER TYPE since it was sampled).");
	}
	/*
	 * The layout's own set, or one a copy brought from another node: the
	 * heap is a copy of a table laid out with it (a restore, VACUUM FULL,
	 * CLUSTER, a Citus shard move), with the rows incremental calls placed
	 * into the room of their ranges.
	 */
	if (same)
		recognize(rel, set, !prepared || copied, started);
	else
	{
		if (prepared)
			ereport(NOTICE,
					(errmsg("boundary set %d no longer fits table \"%s\"",
							id, RelationGetRelationName(rel)),
					 errdetail("%s", why)));
		else if (restored)
			ereport(NOTICE,
					(errmsg("the restored layout of table \"%s\" does not fit it",
							RelationGetRelationName(rel)),
					 errdetail("%s The table is not checked against boundary set %d.",
							   why, id)));
		zorder_forget_runs_if_rewritten(rel);
	}

	zorder_restore_user(&sw);
	if (!same)
	{
		table_close(rel, ShareUpdateExclusiveLock);
		return;
	}

	/* keep the lock: the run must hold until the call records its moves */
	table_close(rel, NoLock);
}
