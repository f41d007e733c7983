/*-------------------------------------------------------------------------
 *
 * brin.c
 *	  BRIN management: the BRIN indexes of a table that cover its key
 *	  columns, the choice of pages_per_range (zorder.suggest_pages_per_range,
 *	  zorder.brin_pages_per_range), and the BRIN index zorder.optimize may
 *	  create.
 *
 * A BRIN block range is the unit a scan skips.  A layout is aligned to the
 * ranges of the index that will read it, so the choice of pages_per_range
 * comes first: few pages per range skip finely but make a larger index
 * that every scan reads whole; the cost model below weighs the two.
 *
 * "BRIN index on the key columns": a valid BRIN index without a predicate
 * covers a key column if one of its columns is that column itself (not an
 * expression), at any position: BRIN summarizes each column on its own, so
 * unlike a btree the position in a multi-column index does not matter.
 *
 * How many ranges a filter actually reads is measured in skipping.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/brin.h"
#include "access/brin_internal.h"
#include "access/brin_page.h"
#include "access/brin_revmap.h"
#include "access/brin_tuple.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "common/pg_prng.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/sampling.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "access.h"
#include "brin.h"
#include "catalog.h"
#include "layout.h"
#include "pg_compat.h"
#include "tables.h"
#include "zorder.h"


PG_FUNCTION_INFO_V1(zorder_suggest_pages_per_range);

/*
 * Cost model for choosing pages_per_range, in units of "one heap page read
 * and rechecked".  A BRIN bitmap scan reads the whole index and checks
 * every summary, then reads every page of each range it could not skip.
 * RANGE_COST is the CPU of one summary (revmap lookup, deform, consistent
 * call) against one heap page of ~80 tuples: fitted to point queries on a
 * 1M-row, 12,346-page table with pages_per_range 1 to 64 (0.33 us per
 * summary, 10.4 us per heap page, warm cache; test/bench/skipping.sh part
 * 3 shows the same curve).
 */
#define INDEX_PAGE_COST 1.0
#define RANGE_COST		0.03

/* Width assumed for a varlena key column without statistics. */
#define DEFAULT_VARLENA_WIDTH 16

/* GUCs */
static bool create_brin = false;
static int	brin_pages_per_range = 0;

/* ----------------------------------------------------------------
 * GUCs
 * ----------------------------------------------------------------
 */
void
zorder_brin_init(void)
{
	DefineCustomBoolVariable("zorder.create_brin",
							 "Whether zorder.optimize creates a BRIN index on key columns that have none.",
							 "The index uses the default (minmax) operator class of each column's type "
							 "and zorder.brin_pages_per_range.",
							 &create_brin,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("zorder.brin_pages_per_range",
							"pages_per_range of the BRIN index zorder.optimize creates.",
							"0 chooses it from the table's size, as zorder.suggest_pages_per_range does.",
							&brin_pages_per_range,
							0,
							0, ZORDER_MAX_PAGES_PER_RANGE,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}

/* ----------------------------------------------------------------
 * Finding the table's BRIN indexes
 * ----------------------------------------------------------------
 */

/*
 * The valid BRIN indexes of rel that have no predicate, in OID order.  An
 * index column counts as minmax when it uses its type's default BRIN
 * opclass, that opclass is minmax, and its collation is the column's: then
 * its summaries order values exactly as our btree comparator does.
 */
List *
zorder_brin_indexes(Relation rel)
{
	List	   *result = NIL;
	List	   *indexoids = RelationGetIndexList(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;

	foreach(lc, indexoids)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		BrinIndexInfo *info;

		if (idx->rd_rel->relam != BRIN_AM_OID ||
			!idx->rd_index->indisvalid ||
			!heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL))
		{
			index_close(idx, AccessShareLock);
			continue;
		}

		info = palloc0(sizeof(BrinIndexInfo));
		info->indexoid = RelationGetRelid(idx);
		info->ppr = BrinGetPagesPerRange(idx);
		info->natts = idx->rd_index->indnatts;
		for (int i = 0; i < info->natts; i++)
		{
			AttrNumber	attno = idx->rd_index->indkey.values[i];
			Form_pg_attribute att;
			Oid			opclass;

			info->heapattno[i] = attno;
			if (attno <= 0)
				continue;
			att = TupleDescAttr(desc, attno - 1);
			opclass = GetDefaultOpClass(att->atttypid, BRIN_AM_OID);
			info->minmax[i] = OidIsValid(opclass) &&
				idx->rd_opfamily[i] == get_opclass_family(opclass) &&
				idx->rd_opcintype[i] == get_opclass_input_type(opclass) &&
				index_getprocid(idx, i + 1, BRIN_PROCNUM_OPCINFO) ==
				F_BRIN_MINMAX_OPCINFO &&
				idx->rd_indcollation[i] == att->attcollation;
		}
		result = lappend(result, info);
		index_close(idx, AccessShareLock);
	}
	list_free(indexoids);
	return result;
}

/*
 * The first index in the list that covers heap column attnum; with
 * want_minmax, only one that summarizes it with minmax.  Sets *indexattno.
 */
BrinIndexInfo *
zorder_brin_covering(List *indexes, AttrNumber attnum, bool want_minmax,
			   AttrNumber *indexattno)
{
	ListCell   *lc;

	foreach(lc, indexes)
	{
		BrinIndexInfo *info = lfirst(lc);

		for (int i = 0; i < info->natts; i++)
		{
			if (info->heapattno[i] != attnum)
				continue;
			if (want_minmax && !info->minmax[i])
				continue;
			if (indexattno)
				*indexattno = i + 1;
			return info;
		}
	}
	return NULL;
}

/* ----------------------------------------------------------------
 * Choosing pages_per_range
 * ----------------------------------------------------------------
 */

/* Estimated figures of a BRIN index over a table, for one pages_per_range. */
typedef struct PprEstimate
{
	int			ppr;
	int64		nranges;
	int64		index_pages;
	double		ranges_read;	/* ideal, by a point filter on one key */
	double		heap_pages_read;
	double		cost;
} PprEstimate;

/* Ideal number of ranges a point filter on one of d keys reads. */
double
zorder_ideal_ranges(int64 nranges, int nkeys)
{
	if (nranges <= 0)
		return 0;
	return pow((double) nranges, (double) (nkeys - 1) / nkeys);
}

/*
 * Bytes of one minmax BRIN tuple over the key columns, with its line
 * pointer: header and null bitmap, then a min and a max per column.  A
 * varlena column is as wide as its statistics say; for_caller: only where
 * the current user could read them in pg_stats.
 */
static int
brin_tuple_width(Relation rel, int nkeys, const AttrNumber *attnums,
				 bool for_caller)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			data = 0;

	for (int k = 0; k < nkeys; k++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnums[k] - 1);
		int			width = att->attlen;

		if (width <= 0)
		{
			if (for_caller && !zorder_stats_visible(rel, attnums[k]))
				width = 0;
			else
				width = get_attavgwidth(RelationGetRelid(rel), attnums[k]);
			if (width <= 0)
				width = DEFAULT_VARLENA_WIDTH;
		}
		data = att_align_nominal(data, att->attalign) + width;
		data = att_align_nominal(data, att->attalign) + width;
	}
	return MAXALIGN(MAXALIGN(SizeOfBrinTuple + BITMAPLEN(nkeys * 2)) + data) +
		sizeof(ItemIdData);
}

static void
estimate_ppr(int64 nblocks, int nkeys, int tuple_width, int ppr,
			 PprEstimate *e)
{
	int			per_page = (BLCKSZ - MAXALIGN(SizeOfPageHeaderData) -
							MAXALIGN(sizeof(BrinSpecialSpace))) / tuple_width;

	e->ppr = ppr;
	e->nranges = (nblocks + ppr - 1) / ppr;
	/* metapage, revmap, summaries */
	e->index_pages = 1 + (e->nranges + REVMAP_PAGE_MAXITEMS - 1) / REVMAP_PAGE_MAXITEMS +
		(e->nranges + Max(per_page, 1) - 1) / Max(per_page, 1);
	e->ranges_read = zorder_ideal_ranges(e->nranges, nkeys);
	e->heap_pages_read = Min((double) nblocks, e->ranges_read * ppr);
	e->cost = e->heap_pages_read + INDEX_PAGE_COST * e->index_pages +
		RANGE_COST * e->nranges;
}

/*
 * The power of two from 1 to 128 with the lowest estimated cost of a point
 * filter (ties go to the larger, smaller index).
 */
static int
choose_ppr(int64 nblocks, int nkeys, int tuple_width)
{
	int			best = 1;
	double		best_cost = 0;

	for (int ppr = 1; ppr <= 128; ppr *= 2)
	{
		PprEstimate e;

		estimate_ppr(Max(nblocks, 1), nkeys, tuple_width, ppr, &e);
		if (ppr == 1 || e.cost <= best_cost)
		{
			best = ppr;
			best_cost = e.cost;
		}
	}
	return best;
}

/* pages_per_range for a new index: the GUC, else the model's choice. */
static int
new_index_ppr(Relation rel, int nkeys, const AttrNumber *attnums)
{
	if (brin_pages_per_range > 0)
		return brin_pages_per_range;
	return choose_ppr(RelationGetNumberOfBlocks(rel), nkeys,
					  brin_tuple_width(rel, nkeys, attnums, false));
}

/*
 * pages_per_range that describes the table for keys without a BRIN index:
 * that of the index covering the first covered key, else what a new index
 * would get.
 */
int
zorder_table_ppr(Relation rel, List *indexes, int nkeys, const AttrNumber *attnums)
{
	for (int k = 0; k < nkeys; k++)
	{
		BrinIndexInfo *info = zorder_brin_covering(indexes, attnums[k], false, NULL);

		if (info)
			return info->ppr;
	}
	return new_index_ppr(rel, nkeys, attnums);
}

/* ----------------------------------------------------------------
 * Creating the index (zorder.optimize)
 * ----------------------------------------------------------------
 */

/*
 * Create one BRIN index over the given columns of relid; the columns get
 * their type's default BRIN opclass, minmax for the usual key types.
 * Right after a rewrite each range is a compact box, so one interval per
 * range is exact and minmax is the smallest and cheapest summary.
 * minmax_multi (several intervals per range, a larger index) pays off once
 * ranges hold a few far-apart values: rows inserted into or updated within
 * an optimized range widen a minmax summary to the outlier, and a partly
 * rewritten range mixes two boxes.
 *
 * The index is defined on the table's OID, as ALTER TABLE ... ADD
 * CONSTRAINT does (ATExecAddIndex), never through the table's name:
 * ALTER SCHEMA ... RENAME does not conflict with the lock optimize holds,
 * and DefineIndex may wait for writers (the lock it takes is stronger than
 * the one an incremental call keeps after its last batch), so a name
 * printed into a CREATE INDEX statement could by then lead to another
 * table.  The columns are given by name, which is safe: renaming a column
 * needs a lock that conflicts with ours.  The statement is what CREATE
 * INDEX ON t USING brin (cols) WITH (pages_per_range = n) would be after
 * parse analysis: DefineIndex chooses the index's name as for a CREATE
 * INDEX without one, and checks CREATE on the table's schema.  Being no
 * statement, it fires no event trigger (nor did the CLUSTER-like rewrite
 * before it).
 *
 * The caller must not hold the table open (DefineIndex refuses a table
 * that this session is using).  We run as the table's owner in optimize's
 * security-restricted context already; the search_path stays pinned while
 * the index is built, so that nothing the build calls resolves a name in a
 * user's schema.  Returns the new index's OID.
 */
static Oid
create_brin_index(Oid relid, int ncols, const AttrNumber *cols, int ppr)
{
	IndexStmt  *stmt = makeNode(IndexStmt);
	ObjectAddress address;
	int			save_nestlevel;

	stmt->accessMethod = pstrdup("brin");
	for (int i = 0; i < ncols; i++)
	{
		IndexElem  *elem = makeNode(IndexElem);

		elem->name = get_attname(relid, cols[i], false);
		elem->ordering = SORTBY_DEFAULT;
		elem->nulls_ordering = SORTBY_NULLS_DEFAULT;
		stmt->indexParams = lappend(stmt->indexParams, elem);
	}
	stmt->options = list_make1(makeDefElem("pages_per_range",
										   (Node *) makeInteger(ppr), -1));
	/* plain columns only: there is nothing for parse analysis to do */
	stmt->transformed = true;

	save_nestlevel = zorder_pin_search_path();
	address = zorder_define_index(relid, stmt);
	AtEOXact_GUC(false, save_nestlevel);

	/* let the rest of the call see the new index */
	CommandCounterIncrement();
	return address.objectId;
}

/*
 * The pages_per_range a layout over the key columns attnums is aligned to,
 * given rel's BRIN indexes: a full rewrite starts its one run at block 0,
 * so it is aligned to every index on the key columns, and later runs must
 * start on a multiple of the largest pages_per_range among them (0: no
 * index covers a key column).
 */
int
zorder_brin_layout_ppr(List *indexes, int nkeys, const AttrNumber *attnums)
{
	int			ppr = 0;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		BrinIndexInfo *info = lfirst(lc);

		for (int k = 0; k < nkeys; k++)
			for (int i = 0; i < info->natts; i++)
				if (info->heapattno[i] == attnums[k])
					ppr = Max(ppr, info->ppr);
	}
	return ppr;
}

void
zorder_brin_after_optimize(Oid relid, int nkeys, const AttrNumber *attnums)
{
	Relation	rel;
	List	   *indexes;
	AttrNumber	missing[ZORDER_MAX_KEYS];
	int			nmissing = 0;
	int			layout_ppr;

	/* optimize holds AccessExclusiveLock until commit */
	rel = table_open(relid, NoLock);
	indexes = zorder_brin_indexes(rel);

	for (int k = 0; k < nkeys; k++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel),
											  attnums[k] - 1);

		if (zorder_brin_covering(indexes, attnums[k], false, NULL))
			continue;
		if (!OidIsValid(GetDefaultOpClass(att->atttypid, BRIN_AM_OID)))
		{
			if (create_brin)
				ereport(NOTICE,
						(errmsg("key column \"%s\" gets no BRIN index",
								NameStr(att->attname)),
						 errdetail("Type %s has no default BRIN operator class.",
								   format_type_be(att->atttypid))));
			continue;
		}
		missing[nmissing++] = attnums[k];
	}

	if (create_brin && nmissing > 0)
	{
		int			ppr = 0;
		Oid			newoid;

		/*
		 * Ranges of a new index should line up with those of an index the
		 * table has already, unless a size was asked for.
		 */
		if (brin_pages_per_range == 0)
			ppr = zorder_table_ppr(rel, indexes, nkeys, attnums);
		if (ppr == 0)
			ppr = new_index_ppr(rel, nkeys, attnums);
		table_close(rel, NoLock);
		newoid = create_brin_index(relid, nmissing, missing, ppr);
		if (OidIsValid(newoid))
			ereport(NOTICE,
					(errmsg("created BRIN index \"%s\" with pages_per_range = %d",
							get_rel_name(newoid), ppr)));
		rel = table_open(relid, NoLock);
		indexes = zorder_brin_indexes(rel);
	}

	layout_ppr = zorder_brin_layout_ppr(indexes, nkeys, attnums);
	table_close(rel, NoLock);

	zorder_layout_set_pages_per_range(relid, layout_ppr);
}

/*
 * zorder.suggest_pages_per_range(rel regclass)
 *
 * For pages_per_range 1, 2, 4 .. 1024: the size of a minmax BRIN index over
 * the key columns and what a point filter on one key column reads if the
 * layout reaches the ideal n^((d-1)/d) ranges, with the cost that
 * zorder.brin_pages_per_range = 0 minimises marked as recommended.  The
 * width of a varlena key column comes from its statistics only when the
 * caller could read them in pg_stats, so that the figures reveal no more.
 */
Datum
zorder_suggest_pages_per_range(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	BlockNumber nblocks;
	int			width;
	int			best;

	rel = zorder_open_for_reading(fcinfo, "zorder.suggest_pages_per_range");
	nkeys = zorder_get_keys_required(rel, attnums);
	InitMaterializedSRF(fcinfo, 0);

	nblocks = RelationGetNumberOfBlocks(rel);
	width = brin_tuple_width(rel, nkeys, attnums, true);
	best = choose_ppr(nblocks, nkeys, width);

	for (int ppr = 1; ppr <= 1024; ppr *= 2)
	{
		PprEstimate e;
		Datum		values[8];
		bool		nulls[8];

		estimate_ppr(nblocks, nkeys, width, ppr, &e);
		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(ppr);
		values[1] = Int64GetDatum(e.nranges);
		values[2] = Int64GetDatum(e.index_pages);
		values[3] = Float8GetDatum(e.ranges_read);
		values[4] = Float8GetDatum(e.heap_pages_read);
		values[5] = Float8GetDatum(nblocks > 0 ? e.heap_pages_read / nblocks : 0);
		values[6] = Float8GetDatum(e.cost);
		values[7] = BoolGetDatum(ppr == best);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}

/*
 * Desummarize and/or summarize, in every BRIN index of rel, the ranges that
 * cover blocks [from, to).
 */
void
zorder_brin_ranges(Relation rel, BlockNumber from, BlockNumber to,
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
void
zorder_brin_summarize_rest(Relation rel)
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

/*
 * Call fn for every step-th block range of the first nblocks heap blocks of
 * the table idx indexes, in order, with the range's summary as a scan sees
 * it: NULL where the range has no summary tuple or a placeholder (a range
 * being summarized), both of which every scan reads.  The summary is the
 * walk's and valid only during the call.  The reports (skipping.c) and the
 * planner's model (planner.c) read summaries this way.
 */
void
zorder_brin_each_range(Relation idx, BlockNumber nblocks, int64 step,
					   ZBrinRangeFn fn, void *arg)
{
	BrinDesc   *bdesc = brin_build_desc(idx);
	BlockNumber ppr;
	BrinRevmap *revmap = zorder_brin_revmap_init(idx, &ppr);
	BrinMemTuple *dtup = brin_new_memtuple(bdesc);
	BrinTuple  *btup = NULL;
	Size		btupsz = 0;
	Buffer		buf = InvalidBuffer;

	for (int64 r = 0; r * ppr < nblocks; r += step)
	{
		BrinTuple  *tup;
		OffsetNumber off;
		Size		size;

		CHECK_FOR_INTERRUPTS();
		tup = zorder_brin_range_tuple(revmap, (BlockNumber) (r * ppr), &buf,
									  &off, &size, BUFFER_LOCK_SHARE);
		if (tup == NULL)
		{
			fn(arg, r, NULL);
			continue;
		}

		/* copy, so that fn runs with no buffer lock held */
		btup = brin_copy_tuple(tup, size, btup, &btupsz);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		dtup = brin_deform_tuple(bdesc, btup, dtup);
		fn(arg, r, dtup->bt_placeholder ? NULL : dtup);
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	brinRevmapTerminate(revmap);
	brin_free_desc(bdesc);
}
