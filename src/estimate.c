/*-------------------------------------------------------------------------
 *
 * estimate.c
 *	  zorder.estimate: what a zorder.optimize call would do, told before it
 *	  runs, as Snowflake's SYSTEM$ESTIMATE_AUTOMATIC_CLUSTERING_COSTS tells
 *	  it: a full rewrite or incremental placement, the rows it would move,
 *	  the heap, index, temporary and WAL bytes it would write, the lock it
 *	  would hold and for how long, and the skipping afterwards.
 *
 * It changes nothing and locks the table ACCESS SHARE only.  It reads the
 * table's size, an even sample of at most SAMPLE_PAGES of its pages (the
 * width of its rows, the free space on its pages, rows newer than the run
 * they lie in), every page outside its sorted runs (the rows an
 * incremental call would find there), and its layout and history in
 * zorder's catalog.  The arithmetic is costmodel.c's.  The time scales
 * from the table's latest call of the same kind in zorder.history where
 * there is one, else it is costmodel.c's stated model.  The skipping
 * afterwards is the key advisor's model (zorder_point_ranges), which
 * counts ranges as the planner's BRIN estimate does.
 *
 * Privileges are those of zorder.optimize, whose call it describes: the
 * table's owner (or a member of the owning role) or a superuser.  Rows are
 * read, and the types' functions run, as the owner in a
 * security-restricted operation.  The skipping, read from the rows'
 * values, is left out (NULL) for a caller that row-level security applies
 * to (an owner under FORCE ROW LEVEL SECURITY).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/itup.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "access.h"
#include "advisor.h"
#include "batch.h"
#include "brin.h"
#include "costmodel.h"
#include "estimate.h"
#include "heappage.h"
#include "incremental.h"
#include "layout.h"
#include "place.h"
#include "pg_compat.h"
#include "room.h"
#include "skipping.h"
#include "tables.h"
#include "zorder.h"

PG_FUNCTION_INFO_V1(zorder_estimate);

#define FNAME "zorder.estimate"

/* Pages the sample reads, spread evenly over the table. */
#define SAMPLE_PAGES 64

/* Mean used bytes of a btree page, for its full page image. */
#define INDEX_PAGE_FILL 0.75

/* What the sample of a table's pages says. */
typedef struct PageSample
{
	double		pages;			/* pages read */
	double		rows;			/* visible rows on them */
	double		tuple_bytes;	/* their stored bytes, aligned */
	double		free_bytes;		/* free space on the pages of the runs */
	double		run_pages;		/* ... of them in a run */
	double		newer_rows;		/* rows newer than the run they lie in */
	double		entry_bytes;	/* index entries a row has, all btrees */
	double	   *entry_each;		/* ... in each btree */
} PageSample;

/* A table's indexes as the estimate sees them. */
typedef struct IndexInfoEst
{
	int			nbtree;			/* btrees on plain columns */
	Oid		   *btree;
	int		   *fillfactor;		/* the leaf fillfactor each is built to */
	double		other_bytes;	/* the size of the rest, rebuilt as is */
	double		btree_pages;	/* leaf and inner pages of the btrees now */
} IndexInfoEst;

/* One table's estimate: a row of the result. */
typedef struct Estimate
{
	const char *mode;
	const char *reason;
	int64		arrived;		/* -1: a full rewrite does not look */
	double		rows;
	double		heap_pages;		/* of the table itself, written or added */
	double		heap_bytes;		/* those and the TOAST table's */
	double		index_bytes;
	double		temp_bytes;
	double		wal_bytes;
	const char *lock;
	double		lock_seconds;
	double		seconds;
	char	   *time_from;
	int			nkeys;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	bool		hide_ranges;	/* row-level security applies to the caller */
	double		now[ZORDER_MAX_KEYS];
	double		after[ZORDER_MAX_KEYS];
} Estimate;

/*
 * The incremental call the next zorder.optimize would make, as
 * zorder.optimize chooses it (incremental.c's choose_plan, cubes.c's
 * choice of runs).
 */
typedef enum CallKind
{
	CALL_PLACE,					/* placement into the main run's ranges */
	CALL_NEW_RUN,				/* a new sorted run (placement off) */
	CALL_MERGE					/* a merge into the main run */
} CallKind;

typedef struct CallPlan
{
	CallKind	kind;
	double		main_pages;		/* pages of the main run */
	int64		main_rows;		/* rows it was written with */
	int64		taken_rows;		/* rows of newer runs that move too */
	double		left_pages;		/* pages the moving rows leave */
	bool		new_pages;		/* they go to new pages in key order */
} CallPlan;

/* The server's page, for costmodel.c. */
static const zcm_page heap_page = {
	BLCKSZ, SizeOfPageHeaderData, sizeof(ItemIdData), MaxHeapTuplesPerPage
};

/* ----------------------------------------------------------------
 * Reading the table
 * ----------------------------------------------------------------
 */

/* The extent among runs[] that holds blk, or NULL. */
static ZRunExtent *
run_of(ZRunExtent *runs, int nruns, BlockNumber blk)
{
	for (int i = 0; i < nruns; i++)
		if (blk >= runs[i].first_block &&
			blk < runs[i].first_block + runs[i].nblocks)
			return &runs[i];
	return NULL;
}

/* Add the bytes of the entries a row gets in each btree to each[]. */
static void
entry_bytes(HeapTuple tuple, TupleDesc desc, Relation *btrees, int nbtree,
			double *each)
{
	for (int i = 0; i < nbtree; i++)
	{
		Relation	idx = btrees[i];
		int			natts = idx->rd_index->indnatts;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];
		IndexTuple	itup;

		for (int k = 0; k < natts; k++)
			values[k] = heap_getattr(tuple, idx->rd_index->indkey.values[k],
									 desc, &isnull[k]);
		itup = index_form_tuple(RelationGetDescr(idx), values, isnull);
		each[i] += MAXALIGN(IndexTupleSize(itup));
		pfree(itup);
	}
}

/*
 * Read SAMPLE_PAGES pages spread evenly over the table's nblocks: their
 * visible rows, the rows' width and index entries, the free space of the
 * pages of a run, and the rows there newer than their run (rows inserted
 * into a run's free space, which an incremental call finds and moves).
 */
static void
sample_pages(Relation rel, BlockNumber nblocks, ZRunExtent *runs, int nruns,
			 IndexInfoEst *ix, PageSample *s)
{
	Snapshot	snapshot = GetActiveSnapshot();
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	HeapTuple  *rows = palloc(sizeof(HeapTuple) * MaxHeapTuplesPerPage);
	Relation   *btrees = palloc(sizeof(Relation) * Max(ix->nbtree, 1));
	double		npages = Min((double) nblocks, SAMPLE_PAGES);
	MemoryContext page_cxt;

	memset(s, 0, sizeof(*s));
	s->entry_each = palloc0(sizeof(double) * Max(ix->nbtree, 1));
	for (int i = 0; i < ix->nbtree; i++)
		btrees[i] = index_open(ix->btree[i], AccessShareLock);
	page_cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder estimate page",
									 ALLOCSET_DEFAULT_SIZES);
	for (int p = 0; p < (int) npages; p++)
	{
		BlockNumber blk = (BlockNumber) (((double) p + 0.5) * nblocks / npages);
		ZRunExtent *run = run_of(runs, nruns, blk);
		Buffer		buf;
		MemoryContext oldcxt;
		int			n;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		if (run != NULL)
		{
			s->free_bytes += PageGetHeapFreeSpace(BufferGetPage(buf));
			s->run_pages++;
		}
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		oldcxt = MemoryContextSwitchTo(page_cxt);
		n = zorder_buffer_rows(rel, buf, zorder_row_visible, snapshot, rows);
		for (int r = 0; r < n; r++)
		{
			HeapTupleHeader hdr = rows[r]->t_data;

			s->tuple_bytes += MAXALIGN(rows[r]->t_len);
			entry_bytes(rows[r], RelationGetDescr(rel), btrees, ix->nbtree,
						s->entry_each);
			if (run != NULL && !HeapTupleHeaderXminFrozen(hdr) &&
				TransactionIdFollows(HeapTupleHeaderGetXmin(hdr), run->xid))
				s->newer_rows++;
		}
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(page_cxt);
		s->rows += n;
		s->pages++;
	}
	MemoryContextDelete(page_cxt);
	for (int i = 0; i < ix->nbtree; i++)
		index_close(btrees[i], AccessShareLock);
	FreeAccessStrategy(strategy);
	if (s->rows > 0)
	{
		s->tuple_bytes /= s->rows;
		for (int i = 0; i < ix->nbtree; i++)
		{
			s->entry_each[i] /= s->rows;
			s->entry_bytes += s->entry_each[i];
		}
	}
}

/*
 * The table's indexes: btrees on plain columns, whose size after a
 * rebuild and whose entries per row the sample gives; the rest (other
 * access methods, expressions) counted at their size today.
 */
static void
read_indexes(Relation rel, IndexInfoEst *ix)
{
	List	   *oids = RelationGetIndexList(rel);
	ListCell   *lc;

	memset(ix, 0, sizeof(*ix));
	ix->btree = palloc(sizeof(Oid) * Max(list_length(oids), 1));
	ix->fillfactor = palloc(sizeof(int) * Max(list_length(oids), 1));
	foreach(lc, oids)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		double		bytes = (double) RelationGetNumberOfBlocks(idx) * BLCKSZ;
		bool		plain = idx->rd_rel->relam == BTREE_AM_OID &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL);

		/* an expression's entries cannot be formed from the row alone */
		for (int k = 0; k < idx->rd_index->indnatts; k++)
			plain = plain && idx->rd_index->indkey.values[k] != 0;

		if (plain)
		{
			ix->fillfactor[ix->nbtree] = BTGetFillFactor(idx);
			ix->btree[ix->nbtree++] = lfirst_oid(lc);
			ix->btree_pages += bytes / BLCKSZ;
		}
		else
			ix->other_bytes += bytes;
		index_close(idx, AccessShareLock);
	}
}

/* Bytes of the table's TOAST table, rewritten with it. */
static double
toast_bytes(Relation rel)
{
	Oid			toastid = rel->rd_rel->reltoastrelid;
	Relation	toast;
	double		bytes;

	if (!OidIsValid(toastid))
		return 0;
	toast = relation_open(toastid, AccessShareLock);
	bytes = (double) RelationGetNumberOfBlocks(toast) * BLCKSZ;
	relation_close(toast, AccessShareLock);
	return bytes;
}

/* ----------------------------------------------------------------
 * The call's figures
 * ----------------------------------------------------------------
 */

/* A full rewrite (or a merge, which moves every row as one). */
static void
estimate_full(Relation rel, BlockNumber nblocks, const PageSample *s,
			  const IndexInfoEst *ix, bool own_history, Estimate *e)
{
	int			ff = zorder_room_full_fillfactor(rel, own_history);
	double		rpp = zcm_rows_per_page(&heap_page, s->tuple_bytes, ff);
	bool		logged = RelationNeedsWAL(rel) && XLogIsNeeded();

	e->rows = s->pages > 0 ? s->rows / s->pages * nblocks : 0;
	e->heap_pages = zcm_pages_for_rows(e->rows, rpp);
	e->heap_bytes = e->heap_pages * BLCKSZ + toast_bytes(rel);
	e->index_bytes = ix->other_bytes;
	for (int i = 0; i < ix->nbtree; i++)
		e->index_bytes += zcm_btree_bytes(&heap_page, e->rows,
										  s->entry_each[i],
										  ix->fillfactor[i]);
	e->temp_bytes = zcm_temp_bytes(e->rows * (s->tuple_bytes + 16),
								   (double) maintenance_work_mem * 1024.0);
	/* a rewrite logs every page it writes, unless the table skips WAL */
	e->wal_bytes = logged ? e->heap_bytes + e->index_bytes : 0;
	e->lock = "ACCESS EXCLUSIVE";
}

/*
 * An incremental call: the rows it finds (outside the runs, or newer than
 * the run they lie in) and the rows of the newer runs it takes with them.
 * Placed over the main run's pages (spread), or written to new pages in
 * key order: a new run, or placement of arrivals that the table's latest
 * call found time-ordered (they went to few ranges).
 */
static void
estimate_incremental(Relation rel, const PageSample *s,
					 const IndexInfoEst *ix, const CallPlan *plan,
					 Estimate *e)
{
	int			ff = RelationGetFillFactor(rel, HEAP_DEFAULT_FILLFACTOR);
	double		rpp = zcm_rows_per_page(&heap_page, s->tuple_bytes, ff);
	int			ppr = Max((int) zorder_layout_pages_per_range(RelationGetRelid(rel)), 1);
	double		nranges = ceil(plan->main_pages / ppr);
	double		room_rows = s->run_pages > 0 ?
		s->free_bytes / s->run_pages * ppr / (s->tuple_bytes + sizeof(ItemIdData)) : 0;
	double		incoming = (double) e->arrived + (double) plan->taken_rows;
	double		split = 0;
	double		left;
	double		index_pages;
	double		heap_image;
	double		touched;
	bool		logged = RelationNeedsWAL(rel);

	if (!plan->new_pages)
		split = zcm_split_rows(incoming, nranges,
							   s->rows / Max(s->pages, 1) * ppr, room_rows);
	e->rows = incoming + split;
	e->heap_pages = plan->new_pages ? zcm_pages_for_rows(e->rows, rpp) :
		zcm_spread_pages(incoming, plan->main_pages) +
		zcm_pages_for_rows(split, rpp);
	e->heap_bytes = e->heap_pages * BLCKSZ;
	e->index_bytes = e->rows * s->entry_bytes;
	e->temp_bytes = 0;

	/*
	 * Every page the call changes for the first time since a checkpoint
	 * goes into the WAL whole: the pages rows go to, the pages they leave,
	 * and the btree pages their new entries go to.
	 */
	left = Min((double) plan->left_pages, e->rows);
	index_pages = ix->nbtree > 0 ?
		ix->nbtree * zcm_spread_pages(e->rows, ix->btree_pages / ix->nbtree) : 0;
	heap_image = BLCKSZ - (s->run_pages > 0 ? s->free_bytes / s->run_pages : 0);
	touched = e->heap_pages + left + index_pages;
	e->wal_bytes = logged ?
		zcm_incremental_wal(e->rows, s->tuple_bytes, ix->nbtree,
							s->entry_bytes / Max(ix->nbtree, 1), touched,
							(e->heap_pages * heap_image + left * BLCKSZ +
							 index_pages * BLCKSZ * INDEX_PAGE_FILL) /
							Max(touched, 1)) : 0;
	e->lock = "EXCLUSIVE";
}

/*
 * The time: scaled from the table's latest call of the same mode (as
 * zorder.history names it) when the history has one and is the table's
 * own, else the model's.  The lock is held for the whole of a full rewrite
 * and for one batch of an incremental call or merge.
 */
static void
estimate_time(Oid relid, bool full, bool own_history, const char *mode,
			  Estimate *e)
{
	ZHistoryCall prev;
	double		fixed = full ? 0 : ZCM_INCREMENTAL_FIXED_SECONDS;
	bool		known = own_history &&
		zorder_history_last(relid, mode, &prev) &&
		prev.rows_moved > 0 && prev.seconds > 0;
	double		batch = Min(e->rows, (double) zorder_max_batch_size);

	if (known)
	{
		e->seconds = zcm_scaled_seconds(e->rows, (double) prev.rows_moved,
										prev.seconds, fixed);
		e->lock_seconds = full ? e->seconds :
			zcm_scaled_seconds(batch, (double) prev.rows_moved, prev.seconds,
							   fixed);
		e->time_from = psprintf("the %s call of %s, %lld rows in %.3f s",
								mode, timestamptz_to_str(prev.started),
								(long long) prev.rows_moved, prev.seconds);
		return;
	}
	e->seconds = full ?
		zcm_full_seconds(e->rows, e->heap_bytes, e->index_bytes) :
		zcm_incremental_seconds(e->rows, e->heap_bytes / BLCKSZ);
	e->lock_seconds = full ? e->seconds :
		zcm_incremental_seconds(batch, e->heap_bytes / BLCKSZ * batch /
								Max(e->rows, 1));
	e->time_from = pstrdup("model");
}

/*
 * Rows of runs[] that are not the main run's and that a call without
 * placement takes with arrived rows: the newest runs, each no bigger than
 * what comes in before it, as cubes.c chooses them.  Adds their pages to
 * *pages.
 */
static int64
newest_runs_taken(const ZRunExtent *runs, int nruns, int64 arrived,
				  double *pages)
{
	int			maxrun = 0;
	int64		accumulated = arrived;

	for (int i = 0; i < nruns; i++)
		maxrun = Max(maxrun, runs[i].run);
	for (int run = maxrun; run >= 1; run--)
	{
		int64		rows = 0;
		double		npages = 0;
		bool		found = false;

		for (int i = 0; i < nruns; i++)
			if (runs[i].run == run)
			{
				rows += runs[i].rows;
				npages += runs[i].nblocks;
				found = true;
			}
		if (!found)
			continue;
		if (rows > accumulated)
			break;
		accumulated += rows;
		*pages += npages;
	}
	return accumulated - arrived;
}

/*
 * The incremental call on rel, whose runs[] are current: the rows that
 * arrived since its latest call (e->arrived), and which of placement, a
 * new run or a merge zorder.optimize would choose for them.
 */
static void
plan_incremental(Relation rel, BlockNumber nblocks, const ZRunExtent *runs,
				 int nruns, const PageSample *s, Estimate *e, CallPlan *plan)
{
	Oid			relid = RelationGetRelid(rel);
	int64		inside;
	int64		outside;
	BlockNumber outside_pages;
	int64		run_rows = 0;
	double		run_pages = 0;
	int64		not_main;
	ZHistoryCall prev;

	memset(plan, 0, sizeof(*plan));
	for (int i = 0; i < nruns; i++)
	{
		if (runs[i].run == 0)
		{
			plan->main_rows += runs[i].rows;
			plan->main_pages += Min(runs[i].nblocks, nblocks);
		}
		else
		{
			run_rows += runs[i].rows;
			run_pages += runs[i].nblocks;
		}
	}
	(void) zorder_count_outside_runs(rel, nblocks, &inside, &outside,
									 &outside_pages);
	e->arrived = outside + (int64) (s->run_pages > 0 ?
									s->newer_rows / s->run_pages *
									(double) (nblocks - outside_pages) : 0);
	plan->left_pages = outside_pages;
	not_main = e->arrived + run_rows;

	if (plan->main_rows > 0 &&
		(zorder_layout_merging(relid) ||
		 (double) not_main > zorder_merge_threshold *
		 (double) (not_main + plan->main_rows)))
	{
		plan->kind = CALL_MERGE;
		e->mode = "merge into the main run";
		e->reason = zorder_layout_merging(relid) ?
			"a merge into the main run is under way: the next call goes on with it" :
			"the rows outside the main run are more than zorder.merge_threshold of the table";
	}
	else if (zorder_placement && plan->main_rows > 0)
	{
		plan->kind = CALL_PLACE;
		plan->taken_rows = run_rows;
		plan->left_pages += run_pages;
		plan->new_pages = zorder_history_last(relid, "incremental", &prev) &&
			prev.appends != NULL && strcmp(prev.appends, "ordered") == 0;
		e->mode = "incremental placement";
		e->reason = plan->new_pages ?
			"the table has a layout; the latest call's arrivals were time-ordered or banded, so new pages take them" :
			"the table has a layout; the rows that arrived since are placed into the ranges their keys belong to";
	}
	else
	{
		plan->kind = CALL_NEW_RUN;
		plan->taken_rows = newest_runs_taken(runs, nruns, e->arrived,
											 &plan->left_pages);
		plan->new_pages = true;
		e->mode = "new sorted run";
		e->reason = zorder_placement ?
			"the main run holds no rows: the rows that arrived since are sorted into a run of their own" :
			"zorder.placement is off: the rows that arrived since are sorted into a run of their own";
	}
}

/*
 * The seconds a full rewrite of rel would hold ACCESS EXCLUSIVE, as
 * zorder.estimate tells them, from the sample s and the indexes ix.
 */
static double
full_lock_seconds(Relation rel, BlockNumber nblocks, const PageSample *s,
				  const IndexInfoEst *ix)
{
	Estimate	full;

	memset(&full, 0, sizeof(full));
	estimate_full(rel, nblocks, s, ix, true, &full);
	estimate_time(RelationGetRelid(rel), true, true, "full", &full);
	return full.lock_seconds;
}

/*
 * Whether zorder's room on rel is used up (room.c), so that the next
 * incremental call would rather be a full rewrite: *spent says how, and
 * *lock_seconds is that rewrite's lock, from the sample given or, without
 * one, a sample read only then.  As the owner.
 */
static bool
room_rewrite(Relation rel, BlockNumber nblocks, ZRunExtent *runs, int nruns,
			 const PageSample *given, ZRoomSpent *spent, double *lock_seconds)
{
	IndexInfoEst ix;
	PageSample	s;

	if (!zorder_room_used_up(rel, spent))
		return false;
	read_indexes(rel, &ix);
	if (given == NULL)
		sample_pages(rel, nblocks, runs, nruns, &ix, &s);
	*lock_seconds = full_lock_seconds(rel, nblocks, given ? given : &s, &ix);
	return true;
}

/*
 * For zorder.optimize, before an incremental call of rel (as its owner,
 * whose catalog rows are its own): whether zorder's room is used up, how,
 * and the estimated lock of the full rewrite that would make room again.
 * The history and the relation sizes say whether the room is used up;
 * only then are pages sampled, and the runs are not needed for a full
 * rewrite's figures.
 */
bool
zorder_room_rewrite_due(Relation rel, ZRoomSpent *spent, double *lock_seconds)
{
	if (!zorder_runs_current(rel))
		return false;
	return room_rewrite(rel, RelationGetNumberOfBlocks(rel), NULL, 0, NULL,
						spent, lock_seconds);
}

/*
 * One table (a leaf of a partitioned one): which call the next
 * zorder.optimize(rel, full) would make, and its figures.  As the owner.
 */
static void
estimate_table(Relation rel, bool full, Estimate *e)
{
	Oid			relid = RelationGetRelid(rel);
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	ZRunExtent *runs = NULL;

	/*
	 * Rows a dropped temporary table with the same OID left are not this
	 * table's: optimize drops them before it looks, so the estimate
	 * ignores them.
	 */
	bool		is_temp = rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP;
	bool		own_rows = zorder_catalog_rows_current(relid, is_temp, true);
	int			nruns = own_rows && zorder_runs_current(rel) ?
		zorder_runs_load(relid, &runs) : 0;
	IndexInfoEst ix;
	PageSample	s;
	CallPlan	plan;
	double		nranges_after;
	ZRoomSpent	spent;
	double		lock_seconds = 0;

	e->nkeys = zorder_get_keys_required(rel, e->attnums);
	read_indexes(rel, &ix);
	sample_pages(rel, nblocks, runs, nruns, &ix, &s);
	e->arrived = -1;

	if (full)
		e->reason = "\"full\" is true";
	else if (!own_rows || !zorder_layout_exists(relid))
		e->reason = "the table has never been laid out";
	else if (nruns == 0)
		e->reason = "no sorted run is recorded for the table's current file: it was rewritten or restored since it was laid out";
	else
	{
		bool		used_up = zorder_auto_rewrite_limit > 0 &&
			room_rewrite(rel, nblocks, runs, nruns, &s, &spent, &lock_seconds);

		if (used_up && lock_seconds <= zorder_auto_rewrite_limit)
			e->reason = psprintf("%s: a full rewrite, whose lock fits "
								 "zorder.auto_rewrite_limit",
								 zorder_room_spent_reason(&spent));
		else
		{
			plan_incremental(rel, nblocks, runs, nruns, &s, e, &plan);
			if (used_up)
				e->reason = psprintf("%s; %s, but a full rewrite would hold "
									 "its lock longer than "
									 "zorder.auto_rewrite_limit",
									 e->reason,
									 zorder_room_spent_reason(&spent));
		}
	}

	if (e->arrived < 0)
	{
		e->mode = "full rewrite";
		estimate_full(rel, nblocks, &s, &ix, own_rows, e);
		estimate_time(relid, true, own_rows, "full", e);
	}
	else if (plan.kind == CALL_MERGE)
	{
		/* every row moves, as in a rewrite, but one slice per batch */
		estimate_full(rel, nblocks, &s, &ix, true, e);
		e->lock = "EXCLUSIVE";
		estimate_time(relid, false, true, "merge", e);
	}
	else
	{
		estimate_incremental(rel, &s, &ix, &plan, e);
		estimate_time(relid, false, true, "incremental", e);
	}

	/*
	 * The skipping afterwards, as many ranges as the table will have: read
	 * from the rows' values, so kept from a caller that row-level security
	 * applies to, as clustering_information is.
	 */
	if (e->hide_ranges)
		return;
	nranges_after = ceil((e->arrived < 0 ? e->heap_pages : (double) nblocks) /
						 Max(zorder_table_ppr(rel, zorder_brin_indexes(rel),
											  e->nkeys, e->attnums), 1));
	zorder_point_ranges(rel, e->nkeys, e->attnums, nranges_after, e->now,
						e->after);
}

/* ----------------------------------------------------------------
 * The SQL function
 * ----------------------------------------------------------------
 */

static Datum
float_array(const double *v, int n)
{
	Datum		d[ZORDER_MAX_KEYS];

	for (int i = 0; i < n; i++)
		d[i] = Float8GetDatum(round(v[i] * 100) / 100);
	return PointerGetDatum(construct_array(d, n, FLOAT8OID, sizeof(float8),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

static Datum
name_array(Relation rel, const Estimate *e)
{
	Datum		d[ZORDER_MAX_KEYS];

	for (int i = 0; i < e->nkeys; i++)
	{
		Name		n = palloc0(NAMEDATALEN);

		namestrcpy(n, get_attname(RelationGetRelid(rel), e->attnums[i], false));
		d[i] = NameGetDatum(n);
	}
	return PointerGetDatum(construct_array(d, e->nkeys, NAMEOID, NAMEDATALEN,
										   false, TYPALIGN_CHAR));
}

static void
emit(ReturnSetInfo *rsinfo, Relation rel, const Estimate *e)
{
	Datum		values[16];
	bool		nulls[16] = {false};

	values[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	values[1] = CStringGetTextDatum(e->mode);
	values[2] = CStringGetTextDatum(e->reason);
	values[3] = Int64GetDatum(e->arrived);
	nulls[3] = e->arrived < 0;
	values[4] = Int64GetDatum((int64) round(e->rows));
	values[5] = Int64GetDatum((int64) round(e->heap_bytes));
	values[6] = Int64GetDatum((int64) round(e->index_bytes));
	values[7] = Int64GetDatum((int64) round(e->temp_bytes));
	values[8] = Int64GetDatum((int64) round(e->wal_bytes));
	values[9] = CStringGetTextDatum(e->lock);
	values[10] = Float8GetDatum(round(e->lock_seconds * 1000) / 1000);
	values[11] = Float8GetDatum(round(e->seconds * 1000) / 1000);
	values[12] = CStringGetTextDatum(e->time_from);
	values[13] = name_array(rel, e);
	values[14] = float_array(e->now, e->nkeys);
	values[15] = float_array(e->after, e->nkeys);
	nulls[14] = nulls[15] = e->hide_ranges;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* The tables a call on relid works on: itself, or a partitioned one's leaves. */
static List *
tables_of(Oid relid)
{
	Relation	rel = zorder_open_owned(relid, AccessShareLock, FNAME);
	List	   *leaves = NIL;
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		relation_close(rel, NoLock);
		return list_make1_oid(relid);
	}
	foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
			leaves = lappend_oid(leaves, lfirst_oid(lc));
	relation_close(rel, NoLock);
	return leaves;
}

/*
 * zorder.estimate(rel regclass, "full" boolean DEFAULT NULL): one row per
 * table the call would work on.  "full" NULL or false: what
 * zorder.optimize(rel) would do; true: a full rewrite.
 */
Datum
zorder_estimate(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		full;
	List	   *tables;
	ListCell   *lc;
	MemoryContext cxt;
	MemoryContext oldcxt;

	zorder_arg_required(fcinfo, 0, "table");
	full = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	InitMaterializedSRF(fcinfo, 0);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder estimate",
								ALLOCSET_DEFAULT_SIZES);
	tables = tables_of(PG_GETARG_OID(0));
	foreach(lc, tables)
	{
		Relation	rel = zorder_open_owned(lfirst_oid(lc), AccessShareLock,
												FNAME);
		Estimate	e = {0};
		ZOwnerSwitch sw;

		e.hide_ranges = zorder_rls_applies(rel);
		oldcxt = MemoryContextSwitchTo(cxt);
		zorder_become_owner(rel->rd_rel->relowner, &sw);
		estimate_table(rel, full, &e);
		zorder_restore_user(&sw);
		MemoryContextSwitchTo(oldcxt);
		emit(rsinfo, rel, &e);
		MemoryContextReset(cxt);
		relation_close(rel, AccessShareLock);
	}
	MemoryContextDelete(cxt);
	PG_RETURN_VOID();
}
