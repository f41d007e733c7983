/*-------------------------------------------------------------------------
 *
 * skipping.c
 *	  Skipping statistics: zorder.clustering_information and
 *	  zorder.ranges_touched, which measure how many block ranges a filter on
 *	  a key column cannot skip, and who may read them.
 *
 * For each range and column we need the [min, max] a minmax summary holds.
 * When a BRIN index with the type's default minmax opclass covers the
 * column we read its summaries (revmap + deformed BRIN tuples), which is
 * cheap and exactly what a scan sees, unsummarized ranges included.
 * Otherwise we compute the same [min, max] per range from a heap scan with
 * the column's btree comparator, i.e. what a freshly built minmax index
 * would hold.
 *
 * From the sorted range minima and maxima, the number of ranges a point
 * filter "col = v" reads is #(min <= v) - #(max < v) plus the unsummarized
 * ranges, a pair of binary searches; we average it over values drawn from
 * the table's rows and compare it with the ideal n^((d-1)/d) for n ranges
 * and d key columns (a d-dimensional grid of n boxes, cut by a hyperplane).
 *
 * These functions answer only a caller who could read what they read with
 * SELECT: each column, and rows that row-level security would not hide
 * (see "Who may read a table's layout" below).
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
#include "citus.h"
#include "heappage.h"
#include "layout.h"
#include "pg_compat.h"
#include "preload.h"
#include "quantile.h"
#include "rangemodel.h"
#include "shardreport.h"
#include "skipping.h"
#include "tables.h"
#include "zorder.h"


PG_FUNCTION_INFO_V1(zorder_clustering_information);
PG_FUNCTION_INFO_V1(zorder_ranges_touched);

typedef enum RangeState
{
	RANGE_EMPTY,				/* no non-NULL value: no "col = v" matches */
	RANGE_VALUES,				/* [min, max] known */
	RANGE_UNSUMMARIZED			/* no summary: every filter reads it */
} RangeState;

/*
 * The block ranges of one column: [min, max] per range, then the derived
 * sorted arrays and statistics.
 */
typedef struct ColumnRanges
{
	ZKeyColumn	col;			/* type, collation, btree comparator */
	const char *name;
	int			ppr;
	Oid			indexoid;		/* summaries from here, or InvalidOid: heap */
	AttrNumber	indexattno;
	int64		step;			/* every step-th range read (a sample) */
	int64		nranges;		/* ranges read */
	Datum	   *mins;
	Datum	   *maxs;
	uint8	   *state;

	/* from finish_column() */
	int64		nvalued;
	int64		nunsummarized;
	Datum	   *sorted_min;
	Datum	   *sorted_max;

	/* probes */
	double		touched_sum;
	int64		nprobes;
} ColumnRanges;

/* ----------------------------------------------------------------
 * Per-range summaries
 * ----------------------------------------------------------------
 */

static void
free_value(ZKeyColumn *col, Datum value)
{
	if (!col->typbyval)
		pfree(DatumGetPointer(value));
}

static void
alloc_ranges(ColumnRanges *cr, BlockNumber nblocks, RangeState initial)
{
	int64		all = ((int64) nblocks + cr->ppr - 1) / cr->ppr;

	cr->step = Max(cr->step, 1);
	cr->nranges = (all + cr->step - 1) / cr->step;
	cr->mins = MemoryContextAllocHuge(CurrentMemoryContext,
									  sizeof(Datum) * Max(cr->nranges, 1));
	cr->maxs = MemoryContextAllocHuge(CurrentMemoryContext,
									  sizeof(Datum) * Max(cr->nranges, 1));
	cr->state = MemoryContextAllocHuge(CurrentMemoryContext,
									   Max(cr->nranges, 1));
	memset(cr->state, initial, Max(cr->nranges, 1));
}

/*
 * Fill the columns that have no minmax index from one heap scan: per range,
 * the smallest and largest value of the rows our snapshot sees, which is
 * what a freshly built minmax BRIN index would hold.
 */
static void
summarize_from_heap(Relation rel, BlockNumber nblocks, int ncols,
					ColumnRanges **cols)
{
	TableScanDesc scan;
	TupleTableSlot *slot;

	for (int c = 0; c < ncols; c++)
		alloc_ranges(cols[c], nblocks, RANGE_EMPTY);

	scan = zorder_table_beginscan(rel, GetActiveSnapshot());
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		BlockNumber blk = ItemPointerGetBlockNumber(&slot->tts_tid);

		CHECK_FOR_INTERRUPTS();
		if (blk >= nblocks)
			continue;			/* the table grew since we looked */
		for (int c = 0; c < ncols; c++)
		{
			ColumnRanges *cr = cols[c];
			int64		r = blk / cr->ppr;
			bool		isnull;
			Datum		v = slot_getattr(slot, cr->col.attnum, &isnull);

			if (isnull)
				continue;
			if (cr->state[r] != RANGE_VALUES)
			{
				cr->mins[r] = zorder_copy_value(&cr->col, v);
				cr->maxs[r] = zorder_copy_value(&cr->col, v);
				cr->state[r] = RANGE_VALUES;
				continue;
			}
			if (ApplySortComparator(v, false, cr->mins[r], false,
									&cr->col.ssup) < 0)
			{
				free_value(&cr->col, cr->mins[r]);
				cr->mins[r] = zorder_copy_value(&cr->col, v);
			}
			else if (ApplySortComparator(v, false, cr->maxs[r], false,
										 &cr->col.ssup) > 0)
			{
				free_value(&cr->col, cr->maxs[r]);
				cr->maxs[r] = zorder_copy_value(&cr->col, v);
			}
		}
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
}

/* What summarize_from_index passes to each range. */
typedef struct SummaryFill
{
	Oid			indexoid;
	int			ncols;
	ColumnRanges **cols;
} SummaryFill;

static void
fill_range(void *arg, int64 r, const BrinMemTuple *summary)
{
	SummaryFill *sf = (SummaryFill *) arg;

	for (int c = 0; c < sf->ncols; c++)
	{
		ColumnRanges *cr = sf->cols[c];
		const BrinValues *bval;
		int64		at;

		if (cr->indexoid != sf->indexoid)
			continue;
		/* every cr->step-th range is read: stored one after another */
		at = r / cr->step;
		if (summary == NULL)
			continue;			/* stays unsummarized: every scan reads it */
		bval = &summary->bt_columns[cr->indexattno - 1];
		if (summary->bt_empty_range || bval->bv_allnulls)
		{
			cr->state[at] = RANGE_EMPTY;
			continue;
		}
		cr->mins[at] = zorder_copy_value(&cr->col, bval->bv_values[0]);
		cr->maxs[at] = zorder_copy_value(&cr->col, bval->bv_values[1]);
		cr->state[at] = RANGE_VALUES;
	}
}

/*
 * Fill the columns summarized by one BRIN index from its summaries, as
 * bringetbitmap sees them: a range without a summary tuple, or with a
 * placeholder, is unsummarized; an empty or all-NULL range matches no
 * "col = v".
 */
static void
summarize_from_index(Oid indexoid, BlockNumber nblocks, int ncols,
					 ColumnRanges **cols, int64 max_ranges)
{
	SummaryFill sf = {indexoid, ncols, cols};
	Relation	idx;
	int64		step = 1;
	bool		any = false;

	for (int c = 0; c < ncols; c++)
		if (cols[c]->indexoid == indexoid)
		{
			step = zrm_sample_step(((int64) nblocks + cols[c]->ppr - 1) /
								   cols[c]->ppr, max_ranges);
			cols[c]->step = step;
			alloc_ranges(cols[c], nblocks, RANGE_UNSUMMARIZED);
			any = true;
		}
	if (!any)
		return;
	idx = index_open(indexoid, AccessShareLock);
	zorder_brin_each_range(idx, nblocks, step, fill_range, &sf);
	index_close(idx, AccessShareLock);
}

/*
 * Set up the columns and fill their summaries.  requested_ppr > 0 forces
 * that range size (and the heap, unless an index has it).  max_ranges > 0:
 * an index's summaries are read for an even sample of at most about that
 * many ranges.
 */
static ColumnRanges *
build_column_ranges(Relation rel, int ncols, const AttrNumber *attnums,
					int requested_ppr, int default_ppr, List *indexes,
					int64 max_ranges)
{
	ColumnRanges *cols = palloc0(sizeof(ColumnRanges) * ncols);
	ColumnRanges **heapcols = palloc(sizeof(ColumnRanges *) * ncols);
	ColumnRanges **all = palloc(sizeof(ColumnRanges *) * ncols);
	int			nheap = 0;
	List	   *used = NIL;
	ListCell   *lc;
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);

	for (int c = 0; c < ncols; c++)
	{
		ColumnRanges *cr = &cols[c];
		BrinIndexInfo *info;

		zorder_prepare_key_column(rel, attnums[c], &cr->col);
		cr->name = get_attname(RelationGetRelid(rel), attnums[c], false);
		all[c] = cr;
		info = zorder_brin_covering(indexes, attnums[c], true, &cr->indexattno);
		if (info && (requested_ppr == 0 || requested_ppr == info->ppr))
		{
			cr->indexoid = info->indexoid;
			cr->ppr = info->ppr;
			used = list_append_unique_oid(used, info->indexoid);
		}
		else
		{
			cr->indexoid = InvalidOid;
			cr->ppr = requested_ppr > 0 ? requested_ppr : default_ppr;
			heapcols[nheap++] = cr;
		}
	}

	foreach(lc, used)
		summarize_from_index(lfirst_oid(lc), nblocks, ncols, all, max_ranges);
	if (nheap > 0)
		summarize_from_heap(rel, nblocks, nheap, heapcols);
	return cols;
}

/* ----------------------------------------------------------------
 * Statistics over the summaries
 * ----------------------------------------------------------------
 */

/* Sort the minima and maxima of the ranges that have values. */
static void
finish_column(ColumnRanges *cr)
{
	int64		m = 0;

	cr->sorted_min = MemoryContextAllocHuge(CurrentMemoryContext,
											sizeof(Datum) * Max(cr->nranges, 1));
	cr->sorted_max = MemoryContextAllocHuge(CurrentMemoryContext,
											sizeof(Datum) * Max(cr->nranges, 1));
	cr->nunsummarized = 0;
	for (int64 r = 0; r < cr->nranges; r++)
	{
		if (cr->state[r] == RANGE_UNSUMMARIZED)
			cr->nunsummarized++;
		else if (cr->state[r] == RANGE_VALUES)
		{
			cr->sorted_min[m] = cr->mins[r];
			cr->sorted_max[m] = cr->maxs[r];
			m++;
		}
	}
	cr->nvalued = m;
	qsort_arg(cr->sorted_min, m, sizeof(Datum), zorder_cmp_datums, &cr->col.ssup);
	qsort_arg(cr->sorted_max, m, sizeof(Datum), zorder_cmp_datums, &cr->col.ssup);
}

/* Ranges that "col BETWEEN lo AND hi" reads (lo = hi: a point filter). */
static int64
ranges_touched(ColumnRanges *cr, Datum lo, Datum hi)
{
	return cr->nunsummarized +
		zorder_count_below(&cr->col.ssup, cr->sorted_min, cr->nvalued, hi, true) -
		zorder_count_below(&cr->col.ssup, cr->sorted_max, cr->nvalued, lo, false);
}

/*
 * Histogram of depths, as Snowflake draws it: buckets 0 to 16 hold one
 * depth each, then bucket 32 holds 17..32, 64 holds 33..64, and so on.
 * Slot i of the counts array is bucket i for i <= 16, bucket 2^(i - 12)
 * above.
 */
static int
bucket_index(int64 depth)
{
	int			i = 17;
	int64		b = 32;

	if (depth <= 16)
		return (int) depth;
	while (b < depth)
	{
		b *= 2;
		i++;
	}
	return i;
}

static int64
bucket_depth(int i)
{
	return i <= 16 ? i : ((int64) 1) << (i - 12);
}

/*
 * Overlaps and depths of the ranges of one column.  A range's overlaps are
 * the other ranges whose [min, max] meets its own; its depth is the largest
 * number of ranges that contain one same value within its [min, max] (so
 * at least 1): the most ranges a point filter inside it reads.  A range
 * without a summary meets everything.  Averages are over the ranges that
 * hold values or have no summary; the histogram counts every range (depth
 * 0: empty or only NULLs).
 */
static void
overlap_stats(ColumnRanges *cr, double *avg_overlaps, double *avg_depth,
			  char **histogram)
{
	int64		m = cr->nvalued;
	int64		u = cr->nunsummarized;
	uint32	   *tree;
	int64		maxdepth = 0;
	double		sum_overlaps = 0;
	double		sum_depth = 0;
	int64	   *buckets;
	int64		nbuckets;
	StringInfoData str;
	bool		first = true;

	/* no depth exceeds the number of ranges */
	nbuckets = bucket_index(Max(cr->nranges, 1)) + 1;
	buckets = palloc0(sizeof(int64) * nbuckets);

	/*
	 * Coverage at each range's minimum (coverage only rises at a minimum, so
	 * the deepest point of a range is one of the minima inside it), in a
	 * segment tree over the sorted minima for range-maximum queries.
	 */
	tree = MemoryContextAllocHuge(CurrentMemoryContext,
								  sizeof(uint32) * Max(2 * m, 1));
	for (int64 i = 0; i < m; i++)
	{
		CHECK_FOR_INTERRUPTS();
		tree[m + i] = (uint32) (zorder_count_below(&cr->col.ssup, cr->sorted_min, m,
											cr->sorted_min[i], true) -
								zorder_count_below(&cr->col.ssup, cr->sorted_max, m,
											cr->sorted_min[i], false));
		maxdepth = Max(maxdepth, (int64) tree[m + i]);
	}
	for (int64 i = m - 1; i > 0; i--)
		tree[i] = Max(tree[2 * i], tree[2 * i + 1]);

	for (int64 r = 0; r < cr->nranges; r++)
	{
		int64		depth = 0;

		CHECK_FOR_INTERRUPTS();
		if (cr->state[r] == RANGE_VALUES)
		{
			int64		lo = zorder_count_below(&cr->col.ssup, cr->sorted_min, m, cr->mins[r], false) + m;
			int64		hi = zorder_count_below(&cr->col.ssup, cr->sorted_min, m, cr->maxs[r], true) + m;
			uint32		best = 0;

			/* max over leaves [lo, hi) */
			while (lo < hi)
			{
				if (lo & 1)
				{
					best = Max(best, tree[lo]);
					lo++;
				}
				if (hi & 1)
				{
					hi--;
					best = Max(best, tree[hi]);
				}
				lo /= 2;
				hi /= 2;
			}
			depth = best + u;
			sum_depth += depth;
			sum_overlaps += zorder_count_below(&cr->col.ssup, cr->sorted_min, m, cr->maxs[r], true) -
				zorder_count_below(&cr->col.ssup, cr->sorted_max, m, cr->mins[r], false) - 1 + u;
		}
		else if (cr->state[r] == RANGE_UNSUMMARIZED)
		{
			depth = maxdepth + u;
			sum_depth += depth;
			sum_overlaps += m + u - 1;
		}
		buckets[bucket_index(depth)]++;
	}

	if (m + u > 0)
	{
		*avg_overlaps = sum_overlaps / (m + u);
		*avg_depth = sum_depth / (m + u);
	}
	else
	{
		*avg_overlaps = 0;
		*avg_depth = 0;
	}

	/* keys zero-padded, so that jsonb (shorter keys first) keeps them in order */
	initStringInfo(&str);
	appendStringInfoChar(&str, '{');
	for (int64 i = 0; i < nbuckets; i++)
	{
		if (buckets[i] == 0)
			continue;
		appendStringInfo(&str, "%s\"%05lld\": %lld", first ? "" : ", ",
						 (long long) bucket_depth(i), (long long) buckets[i]);
		first = false;
	}
	appendStringInfoChar(&str, '}');
	*histogram = str.data;
	pfree(tree);
	pfree(buckets);
}

/* ----------------------------------------------------------------
 * Probe values
 * ----------------------------------------------------------------
 */

/*
 * Add to each column the ranges touched by "col = v" for values v drawn
 * from the rows: target rows sampled as ANALYZE does (at most one block per
 * wanted row, a reservoir over their live rows, a fixed seed so that the
 * same table gives the same figures), or every row when target is 0.  NULLs
 * are skipped: no "col = v" matches them.
 */
static void
probe_columns(Relation rel, int ncols, ColumnRanges *cols, int target)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	MemoryContext probe_cxt;
	MemoryContext oldcxt;

	probe_cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder probes",
									  ALLOCSET_DEFAULT_SIZES);

	if (target == 0)
	{
		TableScanDesc scan = zorder_table_beginscan(rel, GetActiveSnapshot());

		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			CHECK_FOR_INTERRUPTS();
			oldcxt = MemoryContextSwitchTo(probe_cxt);
			for (int c = 0; c < ncols; c++)
			{
				bool		isnull;
				Datum		v = slot_getattr(slot, cols[c].col.attnum, &isnull);

				if (isnull)
					continue;
				cols[c].touched_sum += ranges_touched(&cols[c], v, v);
				cols[c].nprobes++;
			}
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(probe_cxt);
		}
		table_endscan(scan);
	}
	else
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
		BlockSamplerData bs;
		pg_prng_state prng;
		ZorderAnalyzeSample sample;
		Datum	   *values = palloc(sizeof(Datum) * target * ncols);
		bool	   *nulls = palloc(sizeof(bool) * target * ncols);
		int			nsampled = 0;
		double		seen = 0;
		double		liverows = 0;
		double		deadrows = 0;

		pg_prng_seed(&prng, UINT64CONST(0x70726f6265) ^ RelationGetRelid(rel));
		BlockSampler_Init(&bs, nblocks, target, (uint32) pg_prng_uint32(&prng));
		zorder_analyze_sample_begin(&sample, rel, &bs);
		while (zorder_analyze_sample_next_block(&sample))
		{
			CHECK_FOR_INTERRUPTS();
			while (zorder_analyze_sample_next_tuple(&sample, &liverows,
													&deadrows, slot))
			{
				int			at;

				/* reservoir (algorithm R) */
				if (nsampled < target)
					at = nsampled++;
				else
				{
					uint64		x = pg_prng_uint64_range(&prng, 0, (uint64) seen);

					at = x < (uint64) target ? (int) x : -1;
				}
				seen += 1;
				if (at < 0)
					continue;
				oldcxt = MemoryContextSwitchTo(probe_cxt);
				for (int c = 0; c < ncols; c++)
				{
					bool		isnull;
					Datum		v = slot_getattr(slot, cols[c].col.attnum, &isnull);

					nulls[at * ncols + c] = isnull;
					values[at * ncols + c] = isnull ? (Datum) 0 :
						zorder_copy_value(&cols[c].col, v);
				}
				MemoryContextSwitchTo(oldcxt);
			}
		}
		zorder_analyze_sample_end(&sample);

		for (int i = 0; i < nsampled; i++)
		{
			CHECK_FOR_INTERRUPTS();
			for (int c = 0; c < ncols; c++)
			{
				if (nulls[i * ncols + c])
					continue;
				cols[c].touched_sum += ranges_touched(&cols[c],
													  values[i * ncols + c],
													  values[i * ncols + c]);
				cols[c].nprobes++;
			}
		}
	}
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(probe_cxt);
}

/* Rows a call's report draws point filters from (one block each at most). */
#define REPORT_PROBES 300

/* Most BRIN ranges whose summaries a call's report reads: a sample beyond. */
#define REPORT_MAX_RANGES 4096

/*
 * For zorder.optimize's report: per key column, the mean block ranges a
 * point filter on it reads, its values drawn from REPORT_PROBES sampled
 * rows, where a BRIN minmax index covers the column (reading the summaries
 * of at most about REPORT_MAX_RANGES of its ranges, evenly spread, is
 * cheap whatever the table's size); -1 where none does (a scan of the heap would not be), and for
 * every key of a table whose row-level security binds its owner (the
 * figures come from the rows' values).  The caller runs as the table's
 * owner.
 */
void
zorder_report_point_ranges(Relation rel, int nkeys, const AttrNumber *attnums,
						   double *mean)
{
	List	   *indexes;
	AttrNumber	covered[ZORDER_MAX_KEYS];
	int			key_of[ZORDER_MAX_KEYS];
	int			n = 0;
	MemoryContext cxt;
	MemoryContext oldcxt;
	ColumnRanges *cols;

	for (int k = 0; k < nkeys; k++)
		mean[k] = -1;
	if (rel->rd_rel->relrowsecurity && rel->rd_rel->relforcerowsecurity)
		return;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder report ranges",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	indexes = zorder_brin_indexes(rel);
	for (int k = 0; k < nkeys; k++)
	{
		AttrNumber	indexattno;

		if (zorder_brin_covering(indexes, attnums[k], true, &indexattno))
		{
			key_of[n] = k;
			covered[n++] = attnums[k];
		}
	}
	if (n > 0)
	{
		cols = build_column_ranges(rel, n, covered, 0, 0, indexes,
								   REPORT_MAX_RANGES);
		for (int c = 0; c < n; c++)
			finish_column(&cols[c]);
		probe_columns(rel, n, cols, REPORT_PROBES);
		/* a sample of every step-th range stands for the step ranges */
		for (int c = 0; c < n; c++)
			if (cols[c].nprobes > 0)
				mean[key_of[c]] = cols[c].touched_sum / cols[c].nprobes *
					cols[c].step;
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
}

/* The probes argument of the reports: 0 (every row) to a million */
static int
check_probes_arg(FunctionCallInfo fcinfo, int argno)
{
	int			probes;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("probes must not be null"),
				 errhint("Use 0 to probe with every row.")));
	probes = PG_GETARG_INT32(argno);
	if (probes < 0 || probes > 1000000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("probes must be between 0 and 1000000"),
				 errdetail("0 probes with every row of the table.")));
	return probes;
}

static int
check_ppr_arg(FunctionCallInfo fcinfo, int argno)
{
	int			ppr;

	if (PG_ARGISNULL(argno))
		return 0;
	ppr = PG_GETARG_INT32(argno);
	if (ppr < 1 || ppr > ZORDER_MAX_PAGES_PER_RANGE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pages_per_range must be between 1 and %d",
						ZORDER_MAX_PAGES_PER_RANGE)));
	return ppr;
}

/*
 * zorder.clustering_information(rel regclass, probes int DEFAULT 500,
 *								 pages_per_range int DEFAULT NULL)
 *
 * One row per key column: how many block ranges a point filter on it reads,
 * against the ideal, and how deeply the ranges overlap; plus the table's
 * keys, curve, last optimize and the share of pages added since.
 */
/* Visible rows on the pages in [from, to). */
static int64
count_rows(Relation rel, BlockNumber from, BlockNumber to, Snapshot snapshot)
{
	int64		n = 0;

	for (BlockNumber blk = from; blk < to; blk++)
	{
		CHECK_FOR_INTERRUPTS();
		n += zorder_block_rows(rel, blk, NULL, zorder_row_visible, snapshot,
							   NULL);
	}
	return n;
}

/*
 * The rows of rel in its first nblocks pages that lie outside every sorted
 * run (*outside, on *outside_pages pages no run covers, all read) and the
 * rows the runs were written with (*inside).  False when the table has no
 * runs.
 */
bool
zorder_count_outside_runs(Relation rel, BlockNumber nblocks, int64 *inside,
						  int64 *outside, BlockNumber *outside_pages)
{
	ZRunExtent *runs;
	int			n;
	BlockNumber next = 0;
	Snapshot	snapshot = GetActiveSnapshot();

	*inside = 0;
	*outside = 0;
	*outside_pages = 0;
	n = zorder_runs_load(RelationGetRelid(rel), &runs);
	if (n == 0)
		return false;
	for (int i = 0; i < n; i++)
	{
		BlockNumber first = Min(runs[i].first_block, nblocks);
		BlockNumber end = (BlockNumber) Min((int64) runs[i].first_block +
											(int64) runs[i].nblocks,
											(int64) nblocks);

		if (first > next)
		{
			*outside += count_rows(rel, next, first, snapshot);
			*outside_pages += first - next;
		}
		next = Max(next, end);
		*inside += runs[i].rows;
	}
	if (nblocks > next)
	{
		*outside += count_rows(rel, next, nblocks, snapshot);
		*outside_pages += nblocks - next;
	}
	return true;
}

/*
 * Share of the table's rows that lie outside every sorted run: the rows on
 * pages no run covers, against those plus the rows the runs were written
 * with.  Only the pages outside the runs are read.
 */
static double
rows_outside_runs(Relation rel, BlockNumber nblocks)
{
	int64		inside;
	int64		outside;
	BlockNumber pages;

	if (nblocks == 0)
		return 0;
	if (!zorder_count_outside_runs(rel, nblocks, &inside, &outside, &pages))
		return 1;
	if (inside + outside == 0)
		return 0;
	return (double) outside / (double) (inside + outside);
}

/*
 * zorder.shard_clustering_information(rel, probes, with_pages_per_range):
 * the figures of each shard of a Citus distributed table, on the
 * coordinator, the shards that skip worst first (shardreport.c).
 */
PG_FUNCTION_INFO_V1(zorder_shard_clustering_information);
Datum
zorder_shard_clustering_information(PG_FUNCTION_ARGS)
{
	int			probes;
	int			requested_ppr;

	zorder_arg_required(fcinfo, 0, "table");
	probes = check_probes_arg(fcinfo, 1);
	requested_ppr = check_ppr_arg(fcinfo, 2);
	if (get_rel_name(PG_GETARG_OID(0)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", PG_GETARG_OID(0))));
	if (!zorder_citus_sharded(PG_GETARG_OID(0)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("table \"%s\" is not a distributed table zorder lays out shard by shard",
						get_rel_name(PG_GETARG_OID(0))),
				 errdetail("zorder.shard_clustering_information reports the shards of a hash-distributed or single-shard Citus table, on the coordinator."),
				 errhint("Use zorder.clustering_information.")));
	zorder_shard_report_each(fcinfo, probes, requested_ppr);
	return (Datum) 0;
}

Datum
zorder_clustering_information(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	int			probes;
	int			requested_ppr;
	List	   *indexes;
	ColumnRanges *cols;
	MemoryContext work_cxt;
	MemoryContext oldcxt;
	Datum		keynames[ZORDER_MAX_KEYS];
	Datum		keysarr;
	Datum		curve;
	bool		curve_null;
	Datum		optimized_at;
	bool		optimized_null;
	Datum		nruns;
	bool		runs_null;
	BlockNumber nblocks;
	double		unclustered;
	char	   *room;
	int			table_ppr;
	ZOwnerSwitch sw;

	zorder_notice_not_preloaded("zorder.clustering_information");

	probes = check_probes_arg(fcinfo, 1);
	requested_ppr = check_ppr_arg(fcinfo, 2);

	/* a Citus distributed table: measured on its shards (shardreport.c) */
	if (!PG_ARGISNULL(0) && zorder_citus_sharded(PG_GETARG_OID(0)))
	{
		zorder_shard_report(fcinfo, probes, requested_ppr);
		return (Datum) 0;
	}

	rel = zorder_open_for_reading(fcinfo, "zorder.clustering_information");
	nkeys = zorder_get_keys_required(rel, attnums);
	zorder_check_columns_readable(rel, nkeys, attnums);
	zorder_check_no_rls(rel, "zorder.clustering_information");

	InitMaterializedSRF(fcinfo, 0);

	/* the layout record, read as the catalog's owner */
	zorder_layout_info(RelationGetRelid(rel), &curve, &curve_null,
					   &optimized_at, &optimized_null, &nruns, &runs_null);

	work_cxt = AllocSetContextCreate(CurrentMemoryContext,
									 "zorder clustering information",
									 ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(work_cxt);

	/* the comparisons are code of the owner's choosing: run as the owner */
	nblocks = RelationGetNumberOfBlocks(rel);
	indexes = zorder_brin_indexes(rel);
	table_ppr = zorder_table_ppr(rel, indexes, nkeys, attnums);
	zorder_become_owner(rel->rd_rel->relowner, &sw);
	cols = build_column_ranges(rel, nkeys, attnums, requested_ppr, table_ppr,
							   indexes, 0);
	for (int k = 0; k < nkeys; k++)
		finish_column(&cols[k]);
	probe_columns(rel, nkeys, cols, probes);
	zorder_restore_user(&sw);

	/* rows outside every sorted run: appended, or left behind since */
	unclustered = rows_outside_runs(rel, nblocks);
	/* room.c: the room zorder chose last, and why */
	room = zorder_history_room_reason(RelationGetRelid(rel));

	MemoryContextSwitchTo(oldcxt);
	for (int k = 0; k < nkeys; k++)
		keynames[k] = DirectFunctionCall1(namein, CStringGetDatum(cols[k].name));
	keysarr = PointerGetDatum(construct_array(keynames, nkeys, NAMEOID,
											  NAMEDATALEN, false,
											  TYPALIGN_CHAR));

	for (int k = 0; k < nkeys; k++)
	{
		ColumnRanges *cr = &cols[k];
		/* a 0.3 catalog declares the first 19, and only those are used */
		Datum		values[21];
		bool		nulls[21];
		double		ideal = zorder_ideal_ranges(cr->nranges, nkeys);
		double		mean = cr->nprobes > 0 ? cr->touched_sum / cr->nprobes : 0;
		double		avg_overlaps;
		double		avg_depth;
		char	   *histogram;

		oldcxt = MemoryContextSwitchTo(work_cxt);
		overlap_stats(cr, &avg_overlaps, &avg_depth, &histogram);
		MemoryContextSwitchTo(oldcxt);

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(k + 1);
		values[1] = DirectFunctionCall1(namein, CStringGetDatum(cr->name));
		values[2] = ObjectIdGetDatum(cr->indexoid);
		nulls[2] = !OidIsValid(cr->indexoid);
		values[3] = Int32GetDatum(cr->ppr);
		values[4] = Int64GetDatum(cr->nranges);
		values[5] = Int64GetDatum(cr->nunsummarized);
		values[6] = Int64GetDatum(cr->nprobes);
		values[7] = Float8GetDatum(mean);
		nulls[7] = cr->nprobes == 0;
		values[8] = Float8GetDatum(ideal);
		values[9] = Float8GetDatum(ideal > 0 ? mean / ideal : 0);
		nulls[9] = cr->nprobes == 0 || ideal <= 0;
		values[10] = Float8GetDatum(avg_overlaps);
		values[11] = Float8GetDatum(avg_depth);
		values[12] = DirectFunctionCall1(jsonb_in, CStringGetDatum(histogram));
		values[13] = keysarr;
		values[14] = curve;
		nulls[14] = curve_null;
		values[15] = optimized_at;
		nulls[15] = optimized_null;
		values[16] = Int64GetDatum((int64) nblocks);
		values[17] = Float8GetDatum(unclustered);
		values[18] = Int32GetDatum((int32) DatumGetInt64(nruns));
		values[19] = Int32GetDatum(RelationGetFillFactor(rel,
														 HEAP_DEFAULT_FILLFACTOR));
		values[20] = room ? CStringGetTextDatum(room) : (Datum) 0;
		nulls[20] = room == NULL;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	MemoryContextDelete(work_cxt);
	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}

/*
 * zorder.ranges_touched(rel regclass, column_name name, value text,
 *						 upper text DEFAULT NULL,
 *						 pages_per_range int DEFAULT NULL) -> bigint
 *
 * Block ranges that "column = value" (or "column BETWEEN value AND upper")
 * cannot skip.  Any column with a default btree opclass; the value is
 * given as text and read with the column type's input function.
 */
Datum
zorder_ranges_touched(PG_FUNCTION_ARGS)
{
	Relation	rel;
	char	   *colname;
	AttrNumber	attnum;
	AttrNumber	keys[ZORDER_MAX_KEYS];
	int			nkeys;
	int			requested_ppr;
	List	   *indexes;
	ColumnRanges *cr;
	Oid			typinput;
	Oid			typioparam;
	int32		typmod;
	Datum		lo;
	Datum		hi;
	int64		result;
	MemoryContext work_cxt;
	MemoryContext oldcxt;
	int			table_ppr;
	ZOwnerSwitch sw;

	zorder_arg_required(fcinfo, 1, "column name");
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("value must not be null"),
				 errdetail("No block range matches \"column = NULL\".")));
	requested_ppr = check_ppr_arg(fcinfo, 4);
	rel = zorder_open_for_reading(fcinfo, "zorder.ranges_touched");

	colname = NameStr(*PG_GETARG_NAME(1));
	attnum = zorder_user_attnum(rel, colname);
	zorder_check_columns_readable(rel, 1, &attnum);
	zorder_check_no_rls(rel, "zorder.ranges_touched");

	work_cxt = AllocSetContextCreate(CurrentMemoryContext,
									 "zorder ranges touched",
									 ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(work_cxt);

	/* ranges of a column without an index are sized like the table's */
	nkeys = zorder_get_keys(rel, keys);
	if (nkeys == 0)
	{
		keys[0] = attnum;
		nkeys = 1;
	}
	/*
	 * The value's input function (a domain's CHECK, at any depth) and the
	 * comparisons are code the table's owner may have chosen: they run as
	 * the owner, never as the caller (a superuser, say).
	 */
	indexes = zorder_brin_indexes(rel);
	table_ppr = zorder_table_ppr(rel, indexes, nkeys, keys);
	zorder_become_owner(rel->rd_rel->relowner, &sw);
	cr = build_column_ranges(rel, 1, &attnum, requested_ppr, table_ppr,
							 indexes, 0);
	finish_column(cr);

	typmod = TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypmod;
	getTypeInputInfo(cr->col.typid, &typinput, &typioparam);
	lo = OidInputFunctionCall(typinput, text_to_cstring(PG_GETARG_TEXT_PP(2)),
							  typioparam, typmod);
	hi = PG_ARGISNULL(3) ? lo :
		OidInputFunctionCall(typinput, text_to_cstring(PG_GETARG_TEXT_PP(3)),
							 typioparam, typmod);
	result = ranges_touched(cr, lo, hi);
	if (ApplySortComparator(lo, false, hi, false, &cr->col.ssup) > 0)
		result = 0;				/* an empty interval reads nothing */
	zorder_restore_user(&sw);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(work_cxt);
	relation_close(rel, AccessShareLock);
	PG_RETURN_INT64(result);
}
