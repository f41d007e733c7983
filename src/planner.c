/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  The planner support: BRIN cost estimates for the tables zorder lays
 *	  out, from what their BRIN summaries say.
 *
 * PostgreSQL's brincostestimate (selfuncs.c) guesses the block ranges a
 * filter reads from the column's correlation with the heap order.  A curve
 * layout is sorted by no single column, so ANALYZE finds a correlation near
 * 0 for every key but one, the estimate says every range is read, and the
 * planner picks a sequential scan where the BRIN scan reads a tenth of the
 * blocks.
 *
 * For a table with a layout (a row in zorder.layouts), the relation hook
 * (get_relation_info_hook, build_simple_rel_hook from 19 on: pg_compat.h)
 * replaces the amcostestimate of its BRIN minmax indexes with ours, as
 * hypopg does.  Ours counts the ranges the filter reads from a model of
 * the index: per column, the minima and the maxima of the ranges' summaries
 * (all of them, or an even sample), each sorted.  A filter "col BETWEEN lo
 * AND hi" reads #(min <= hi) - #(max < lo) of them, two binary searches;
 * equality, IN, one-sided ranges and several clauses on one column are
 * cases of it.  Filters whose values the planner does not know yet (generic
 * plans) use the planner's selectivity widened by the fraction a value drawn
 * from the data reads (measured when the model is built).  Several columns
 * combine as independent (rangemodel.c).  The ranges read are then charged
 * the way brincostestimate charges the index, and handed to the bitmap heap
 * scan's costing so that it charges their pages as consecutive pages and
 * rechecks every row on them (rangemodel.c has the arithmetic).
 *
 * The models live in a backend-local cache keyed by the table's OID, built
 * on the first plan that needs one: a catalog query (is the table laid
 * out?) and one pass over the BRIN index.  An entry is dropped by any
 * relcache invalidation of the table or of one of its indexes (optimize,
 * VACUUM FULL, REPACK and pg_repack swap files; ANALYZE and VACUUM update
 * pg_class; an incremental optimize invalidates the table when it ends),
 * and rebuilt when the table has grown or shrunk by a block range since.
 * A database without the extension costs one cached lookup of its schema.
 *
 * The estimate reveals what pg_stats would: when the user may not see the
 * statistics of a column of the index (access.c), the index keeps
 * PostgreSQL's own estimate.
 *
 * Why one file of this size: the cache, the building of a model and the
 * estimate share the model's types and one rule, that a model being read
 * is never freed (invalidations only mark it; the next hook call frees),
 * which stays checkable only while all three are here.  The arithmetic
 * that needs no PostgreSQL state is rangemodel.c's, the walk over the
 * summaries brin.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/brin.h"
#include "access/brin_internal.h"
#include "access/brin_revmap.h"
#include "access/brin_tuple.h"
#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_opclass.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/index_selfuncs.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/spccache.h"
#include "utils/syscache.h"

#include "access.h"
#include "brin.h"
#include "layout.h"
#include "pg_compat.h"
#include "planner.h"
#include "quantile.h"
#include "rangemodel.h"
#include "subxact.h"
#include "zorder.h"

/* Most ranges a model keeps per index: an even sample beyond. */
#define MODEL_MAX_RANGES 4096

/* The ranges of one column of a BRIN index, as the model keeps them. */
typedef struct ColumnModel
{
	bool		usable;			/* a minmax summary of a plain column */
	AttrNumber	attnum;
	Oid			typid;			/* the btree opclass's input type */
	Oid			collid;
	Oid			btfamily;		/* the type's default btree family */
	int			nvalued;		/* ranges with a [min, max] */
	Datum	   *mins;			/* sorted */
	Datum	   *maxs;			/* sorted */
	double		point_fraction; /* of the valued ranges, for a value drawn
								 * from the data */
} ColumnModel;

typedef struct IndexModel
{
	Oid			indexoid;
	bool		visible;		/* to vis_user: the stats of its columns */
	int			ppr;
	int			ncols;
	ColumnModel cols[INDEX_MAX_KEYS];
	zrm_ranges	counts;			/* what the (sampled) ranges held */
	double		model_ranges;	/* the index's ranges when it was read */
} IndexModel;

typedef struct RelModel
{
	Oid			relid;			/* hash key */
	bool		valid;			/* false: an invalidation came */
	bool		laid_out;		/* false: not ours, leave its plans alone */
	BlockNumber nblocks;		/* heap blocks when built */
	int			minppr;
	int			nindexes;
	IndexModel *indexes;
	MemoryContext cxt;			/* everything above, NULL for none */

	/*
	 * Whom the indexes' visible flags are for (InvalidOid: nobody yet), and
	 * under which row_security.  Grants and policies on the table come with
	 * a relcache invalidation; role memberships and attributes with a
	 * syscache one (privs_callback).
	 */
	Oid			vis_user;
	bool		vis_row_security;
} RelModel;

static ZORDER_RELINFO_HOOK_TYPE prev_relinfo_hook = NULL;
static HTAB *models = NULL;

/* Whether this database has the extension: -1 not known yet. */
static int	extension_state = -1;

/* Set while we build a model: the catalog query plans too. */
static bool building = false;

/* Depth of our cost estimates on the stack: no model is freed meanwhile. */
static int	estimating = 0;

/* Some model was invalidated and waits to be freed. */
static bool any_invalid = false;

/* ----------------------------------------------------------------
 * Invalidation
 * ----------------------------------------------------------------
 */

static void
relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	RelModel   *m;

	if (models == NULL)
		return;

	/*
	 * Only mark: the callback may run in the middle of an estimate that
	 * reads a model (a catalog lookup that takes a lock accepts
	 * invalidations).  Stale models are freed by the next hook call.
	 */
	hash_seq_init(&status, models);
	while ((m = hash_seq_search(&status)) != NULL)
	{
		if (!OidIsValid(relid) || m->relid == relid)
			m->valid = false;
		for (int i = 0; i < m->nindexes && m->valid; i++)
			if (m->indexes[i].indexoid == relid)
				m->valid = false;
		if (!m->valid)
			any_invalid = true;
	}
}

/* Role memberships or attributes changed: check privileges again. */
static void
privs_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS status;
	RelModel   *m;

	if (models == NULL)
		return;
	hash_seq_init(&status, models);
	while ((m = hash_seq_search(&status)) != NULL)
		m->vis_user = InvalidOid;
}

/* A schema was created, renamed or dropped: maybe the extension's. */
static void
namespace_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	extension_state = -1;
	relcache_callback((Datum) 0, InvalidOid);
}

/*
 * Whether the extension is installed in this database.  Looked up once and
 * cached until a schema changes (CREATE and DROP EXTENSION zorder create and
 * drop the schema zorder), so that a database without it pays a test of a
 * static variable, and never a failing lookup: the catalog door is only
 * knocked at when the extension is there.
 */
static bool
extension_present(void)
{
	if (extension_state < 0)
		extension_state = OidIsValid(get_extension_oid("zorder", true)) ? 1 : 0;
	return extension_state == 1;
}

/* ----------------------------------------------------------------
 * Building a model
 * ----------------------------------------------------------------
 */

/* What read_index gathers from each range it samples. */
typedef struct ModelRead
{
	IndexModel *im;
	ZKeyColumn	keys[INDEX_MAX_KEYS];
	Datum	   *mins[INDEX_MAX_KEYS];
	Datum	   *maxs[INDEX_MAX_KEYS];
} ModelRead;

static void
read_range(void *arg, int64 r, const BrinMemTuple *summary)
{
	ModelRead  *mr = (ModelRead *) arg;
	IndexModel *im = mr->im;

	im->counts.nranges++;
	if (summary == NULL)
	{
		im->counts.nunsummarized++;
		return;
	}
	if (summary->bt_empty_range)
	{
		im->counts.nempty++;
		return;
	}
	for (int c = 0; c < im->ncols; c++)
	{
		ColumnModel *cm = &im->cols[c];
		const BrinValues *bval = &summary->bt_columns[c];

		/* an all-NULL column matches no filter the index serves */
		if (!cm->usable || bval->bv_allnulls)
			continue;
		mr->mins[c][cm->nvalued] = zorder_copy_value(&mr->keys[c],
													 bval->bv_values[0]);
		mr->maxs[c][cm->nvalued] = zorder_copy_value(&mr->keys[c],
													 bval->bv_values[1]);
		cm->nvalued++;
	}
}

/*
 * Read the summaries of one BRIN index into im (allocated in the current
 * memory context, which is the model's).  Ranges are taken evenly, at most
 * MODEL_MAX_RANGES of them.
 */
static void
read_index(Relation heap, BrinIndexInfo *info, BlockNumber nblocks,
		   IndexModel *im)
{
	Relation	idx = index_open(info->indexoid, AccessShareLock);
	BlockNumber ppr = BrinGetPagesPerRange(idx);
	int64		nranges = ((int64) nblocks + ppr - 1) / ppr;
	int64		step = zrm_sample_step(nranges, MODEL_MAX_RANGES);
	int			cap = (int) (nranges / step + 1);
	ModelRead	mr;
	ZKeyColumn *keys = mr.keys;
	Datum	  **mins = mr.mins;
	Datum	  **maxs = mr.maxs;
	Oid			opclass;

	mr.im = im;
	im->indexoid = info->indexoid;
	im->ppr = (int) ppr;
	im->ncols = info->natts;
	im->model_ranges = (double) nranges;
	memset(&im->counts, 0, sizeof(im->counts));
	for (int c = 0; c < im->ncols; c++)
	{
		ColumnModel *cm = &im->cols[c];

		memset(cm, 0, sizeof(ColumnModel));
		cm->usable = info->heapattno[c] > 0 && info->minmax[c];
		if (!cm->usable)
			continue;
		cm->attnum = info->heapattno[c];
		zorder_prepare_key_column(heap, cm->attnum, &keys[c]);
		cm->collid = keys[c].collid;
		opclass = GetDefaultOpClass(keys[c].typid, BTREE_AM_OID);
		cm->btfamily = get_opclass_family(opclass);

		/*
		 * The type the family's comparisons are registered for: text for a
		 * varchar column, the base type for a domain; polymorphic ones
		 * (arrays, enums) find no comparison and get the generic estimate.
		 */
		cm->typid = get_opclass_input_type(opclass);
		if (IsPolymorphicType(cm->typid))
			cm->typid = getBaseType(keys[c].typid);
		mins[c] = palloc(sizeof(Datum) * cap);
		maxs[c] = palloc(sizeof(Datum) * cap);
	}
	zorder_brin_each_range(idx, nblocks, step, read_range, &mr);
	index_close(idx, AccessShareLock);

	/*
	 * Sort, and measure what a value drawn from the data reads: the ranges'
	 * own minima and maxima stand for the data, each range twice.
	 */
	for (int c = 0; c < im->ncols; c++)
	{
		ColumnModel *cm = &im->cols[c];
		SortSupport ssup = &keys[c].ssup;
		double		sum = 0;

		if (!cm->usable)
			continue;
		qsort_arg(mins[c], cm->nvalued, sizeof(Datum), zorder_cmp_datums, ssup);
		qsort_arg(maxs[c], cm->nvalued, sizeof(Datum), zorder_cmp_datums, ssup);
		for (int i = 0; i < cm->nvalued; i++)
		{
			Datum		probe[2] = {mins[c][i], maxs[c][i]};

			for (int k = 0; k < 2; k++)
				sum += zorder_count_below(ssup, mins[c], cm->nvalued, probe[k],
										true) -
					zorder_count_below(ssup, maxs[c], cm->nvalued, probe[k],
									 false);
		}
		cm->point_fraction = cm->nvalued > 0 ?
			sum / (2.0 * cm->nvalued * cm->nvalued) : 1.0;
		cm->mins = mins[c];
		cm->maxs = maxs[c];
	}
}

/*
 * Whether the table has a layout, by the catalog door, read-only with the
 * active snapshot (the planner must not advance the command counter of the
 * statement it plans), in a subtransaction: an error costs the table its
 * model, never the query, unless it is a cancel, a shutdown or out of
 * memory.
 */
typedef struct LayoutLookup
{
	Oid			relid;
	bool		found;
} LayoutLookup;

static void
lookup_layout(void *arg)
{
	LayoutLookup *ll = (LayoutLookup *) arg;

	ll->found = zorder_layout_exists_read(ll->relid);
}

static bool
has_layout(Oid relid)
{
	LayoutLookup ll = {relid, false};
	ErrorData  *edata = zorder_try_in_subxact(lookup_layout, &ll);

	if (edata == NULL)
		return ll.found;

	/*
	 * A query on some table must not fail for want of a model: the door's
	 * refusals (an extension to update, a schema renamed), a catalog dropped
	 * by a concurrent DROP EXTENSION, anything, costs the model only.  A
	 * cancel, a shutdown or running out of memory is for the query.
	 */
	zorder_rethrow_if_fatal(edata);
	ereport(DEBUG1,
			(errmsg_internal("zorder: no layout model for relation %u: %s",
							 relid, edata->message)));
	FreeErrorData(edata);
	return false;
}

/* Build the model of a table, in a context of its own. */
static void
build_model(RelModel *m, Oid relid, BlockNumber nblocks)
{
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	MemoryContext oldcxt;
	int			n = 0;

	m->laid_out = false;
	m->nindexes = 0;
	m->indexes = NULL;
	m->cxt = NULL;
	m->nblocks = nblocks;
	m->minppr = 0;

	rel = table_open(relid, NoLock);	/* the planner holds a lock */
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_MATVIEW)
	{
		table_close(rel, NoLock);
		return;
	}
	if (!has_layout(relid))
	{
		table_close(rel, NoLock);
		return;
	}

	/*
	 * Under the current context until the model is whole, so that an error
	 * (a cancel while the index is read) leaves nothing behind in
	 * CacheMemoryContext.
	 */
	m->cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder planner model",
								   ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(m->cxt);
	indexes = zorder_brin_indexes(rel);
	m->indexes = palloc0(sizeof(IndexModel) * Max(list_length(indexes), 1));
	foreach(lc, indexes)
	{
		BrinIndexInfo *info = lfirst(lc);

		read_index(rel, info, nblocks, &m->indexes[n]);
		if (m->minppr == 0 || m->indexes[n].ppr < m->minppr)
			m->minppr = m->indexes[n].ppr;
		n++;
	}
	m->nindexes = n;
	m->laid_out = true;
	MemoryContextSwitchTo(oldcxt);
	MemoryContextSetParent(m->cxt, CacheMemoryContext);
	table_close(rel, NoLock);
}

static void
free_model(RelModel *m)
{
	if (m->cxt)
		MemoryContextDelete(m->cxt);
	m->cxt = NULL;
	m->nindexes = 0;
	m->indexes = NULL;
}

/*
 * The model of a table whose heap has pages blocks now, built if need be;
 * NULL if there is none to be had now.
 */
static RelModel *
get_model(Oid relid, BlockNumber pages)
{
	RelModel   *m;
	RelModel	fresh;
	bool		found;

	if (models == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(RelModel);
		ctl.hcxt = CacheMemoryContext;
		models = hash_create("zorder planner models", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	/* free what invalidations left behind (tables dropped, rewritten) */
	if (any_invalid && estimating == 0 && !building)
	{
		HASH_SEQ_STATUS status;
		RelModel   *old;

		any_invalid = false;
		hash_seq_init(&status, models);
		while ((old = hash_seq_search(&status)) != NULL)
			if (!old->valid)
			{
				free_model(old);
				hash_search(models, &old->relid, HASH_REMOVE, NULL);
			}
	}

	m = hash_search(models, &relid, HASH_FIND, &found);
	if (found && m->valid)
	{
		/* grown or shrunk by a range: the summaries moved on */
		int64		diff = (int64) pages - (int64) m->nblocks;

		if (!m->laid_out || (diff < Max(m->minppr, 1) && -diff < Max(m->minppr, 1)))
			return m;
	}
	if (estimating > 0 || building)
		return NULL;
	/* the catalog query needs a snapshot: not there, try next time */
	if (!ActiveSnapshotSet())
		return NULL;

	/*
	 * Nor in parallel mode (a parallel worker, or a leader while a Gather
	 * runs): a subtransaction cannot start there before PostgreSQL 17, and
	 * a worker must not look at the catalog with a snapshot of its own.
	 * PostgreSQL's estimate serves until a plan is made outside it.
	 */
	if (IsInParallelMode())
		return NULL;
	if (found)
	{
		free_model(m);
		hash_search(models, &relid, HASH_REMOVE, NULL);
	}

	building = true;
	PG_TRY();
	{
		build_model(&fresh, relid, pages);
	}
	PG_FINALLY();
	{
		building = false;
	}
	PG_END_TRY();

	m = hash_search(models, &relid, HASH_ENTER, &found);
	m->valid = true;
	m->laid_out = fresh.laid_out;
	m->nblocks = fresh.nblocks;
	m->minppr = fresh.minppr;
	m->nindexes = fresh.nindexes;
	m->indexes = fresh.indexes;
	m->cxt = fresh.cxt;
	m->vis_user = InvalidOid;
	m->vis_row_security = false;
	return m;
}

static IndexModel *
find_index_model(RelModel *m, Oid indexoid)
{
	for (int i = 0; i < m->nindexes; i++)
		if (m->indexes[i].indexoid == indexoid)
			return &m->indexes[i];
	return NULL;
}

/* ----------------------------------------------------------------
 * The estimate
 * ----------------------------------------------------------------
 */

/* What the clauses on one index column say. */
typedef struct ColumnFilter
{
	bool		any;			/* some clause is on this column */
	List	   *generic;		/* RestrictInfos we cannot evaluate now */

	/* the constant interval: ranges with min <= hi and max >= lo */
	bool		has_hi;
	Datum		hi;
	Oid			hi_type;
	bool		hi_strict;
	bool		has_lo;
	Datum		lo;
	Oid			lo_type;
	bool		lo_strict;
	bool		empty;			/* a NULL constant: nothing matches */

	/* IN lists, each as its elements */
	List	   *lists;			/* of ArrayType * */
} ColumnFilter;

/*
 * Sort one index qual into its column's filter: a comparison or IN with a
 * value known now, else generic.
 */
static void
classify_qual(PlannerInfo *root, IndexOptInfo *index, int indexcol,
			  RestrictInfo *rinfo, ColumnFilter *cf)
{
	Expr	   *clause = rinfo->clause;
	Oid			opno;
	Node	   *other;
	int			strategy;

	cf->any = true;
	if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
	{
		opno = ((OpExpr *) clause)->opno;
		other = lsecond(((OpExpr *) clause)->args);
	}
	else if (IsA(clause, ScalarArrayOpExpr) &&
			 ((ScalarArrayOpExpr *) clause)->useOr)
	{
		opno = ((ScalarArrayOpExpr *) clause)->opno;
		other = lsecond(((ScalarArrayOpExpr *) clause)->args);
	}
	else
	{
		cf->generic = lappend(cf->generic, rinfo);
		return;
	}

	strategy = get_op_opfamily_strategy(opno, index->opfamily[indexcol]);
	other = estimate_expression_value(root, other);
	if (strategy == 0 || !IsA(other, Const))
	{
		cf->generic = lappend(cf->generic, rinfo);
		return;
	}
	if (((Const *) other)->constisnull)
	{
		cf->empty = true;
		return;
	}

	if (IsA(clause, ScalarArrayOpExpr))
	{
		if (strategy != BTEqualStrategyNumber)
			cf->generic = lappend(cf->generic, rinfo);
		else
			cf->lists = lappend(cf->lists,
								DatumGetArrayTypeP(((Const *) other)->constvalue));
		return;
	}

	switch (strategy)
	{
		case BTLessStrategyNumber:
		case BTLessEqualStrategyNumber:
			/* several upper ends: the last one wins, a good enough guess */
			cf->has_hi = true;
			cf->hi = ((Const *) other)->constvalue;
			cf->hi_type = ((Const *) other)->consttype;
			cf->hi_strict = strategy == BTLessStrategyNumber;
			break;
		case BTGreaterStrategyNumber:
		case BTGreaterEqualStrategyNumber:
			cf->has_lo = true;
			cf->lo = ((Const *) other)->constvalue;
			cf->lo_type = ((Const *) other)->consttype;
			cf->lo_strict = strategy == BTGreaterStrategyNumber;
			break;
		case BTEqualStrategyNumber:
			cf->has_hi = cf->has_lo = true;
			cf->hi = cf->lo = ((Const *) other)->constvalue;
			cf->hi_type = cf->lo_type = ((Const *) other)->consttype;
			cf->hi_strict = cf->lo_strict = false;
			break;
		default:
			cf->generic = lappend(cf->generic, rinfo);
			break;
	}
}

/* The btree comparison of the column's values with values of type other. */
static bool
column_comparator(ColumnModel *cm, Oid other, FmgrInfo *finfo)
{
	Oid			proc;

	proc = get_opfamily_proc(cm->btfamily, cm->typid, other, BTORDER_PROC);
	if (!OidIsValid(proc))
		proc = get_opfamily_proc(cm->btfamily, cm->typid, getBaseType(other),
								 BTORDER_PROC);
	if (!OidIsValid(proc))
		return false;
	fmgr_info(proc, finfo);
	return true;
}

/* Number of sorted[0..n) below v (or at most v with or_equal). */
static int
count_below(FmgrInfo *cmp, Oid collid, const Datum *sorted, int n, Datum v,
			bool or_equal)
{
	int			lo = 0;
	int			hi = n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int32		c = DatumGetInt32(FunctionCall2Coll(cmp, collid,
														sorted[mid], v));

		if (c < 0 || (or_equal && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Fraction of the valued ranges of one column that its filter reads; a
 * negative result: nothing known, use the generic estimate alone.
 */
static double
constant_fraction(ColumnModel *cm, ColumnFilter *cf)
{
	double		f = -1.0;
	FmgrInfo	cmp;
	int			n = cm->nvalued;

	if (cf->empty)
		return 0.0;
	if (n == 0)
		return (cf->has_hi || cf->has_lo || cf->lists) ? 0.0 : -1.0;

	if (cf->has_hi || cf->has_lo)
	{
		double		min_le_hi = n;
		double		max_lt_lo = 0;

		if (cf->has_hi)
		{
			if (!column_comparator(cm, cf->hi_type, &cmp))
				return -1.0;
			min_le_hi = count_below(&cmp, cm->collid, cm->mins, n, cf->hi,
									!cf->hi_strict);
		}
		if (cf->has_lo)
		{
			if (!column_comparator(cm, cf->lo_type, &cmp))
				return -1.0;
			max_lt_lo = count_below(&cmp, cm->collid, cm->maxs, n, cf->lo,
									cf->lo_strict);
		}
		f = zrm_column_fraction(n, min_le_hi, max_lt_lo);
	}

	if (cf->lists)
	{
		ListCell   *lc;

		foreach(lc, cf->lists)
		{
			ArrayType  *arr = (ArrayType *) lfirst(lc);
			Oid			elemtype = ARR_ELEMTYPE(arr);
			int16		elmlen;
			bool		elmbyval;
			char		elmalign;
			Datum	   *elems;
			bool	   *nulls;
			int			nelems;
			double		sum = 0;
			double		top = 0;
			double		bottom = n;
			double		lf;

			if (!column_comparator(cm, elemtype, &cmp))
				return -1.0;
			get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
			deconstruct_array(arr, elemtype, elmlen, elmbyval, elmalign,
							  &elems, &nulls, &nelems);
			for (int i = 0; i < nelems; i++)
			{
				double		le;
				double		lt;

				if (nulls[i])
					continue;
				le = count_below(&cmp, cm->collid, cm->mins, n, elems[i], true);
				lt = count_below(&cmp, cm->collid, cm->maxs, n, elems[i], false);
				sum += zrm_column_fraction(n, le, lt);
				top = Max(top, le);
				bottom = Min(bottom, lt);
			}
			lf = zrm_list_fraction(sum, zrm_column_fraction(n, top, bottom));
			f = f < 0 ? lf : Min(f, lf);
		}
	}
	return f;
}

/*
 * The share of a scan's per-row work one process does when the planner may
 * scan this table in parallel, as costsize.c counts it (the leader helps
 * less the more workers there are).
 *
 * The recheck of the rows on the ranges a BRIN scan reads is charged at
 * that rate, whether the bitmap heap scan runs in parallel or not: the
 * index path's cost is the same for both, and a parallel sequential scan
 * divides its CPU among processes but not the blocks it reads.  Charged in
 * full, a filter whose BRIN scan reads two thirds of the blocks would lose
 * to a parallel scan of all of them.  A plan charged as if parallel also
 * pays parallel_setup_cost, so that a filter whose BRIN scan reads nearly
 * every block keeps its parallel scan.
 */
static double
parallel_divisor(RelOptInfo *baserel)
{
	int			workers;
	double		divisor;

	/* too small to scan in parallel (for partitions too, unlike costsize.c) */
	if (!baserel->consider_parallel || max_parallel_workers_per_gather <= 0 ||
		baserel->pages < (BlockNumber) min_parallel_table_scan_size)
		return 1.0;
	workers = compute_parallel_worker(baserel, baserel->pages, -1,
									  max_parallel_workers_per_gather);
	if (workers <= 0)
		return 1.0;
	divisor = workers;
	if (parallel_leader_participation && 1.0 - 0.3 * workers > 0)
		divisor += 1.0 - 0.3 * workers;
	return divisor;
}

/*
 * The fraction of block ranges each filtered column of index reads, from
 * the model of its table: how many into fractions, and the index's counts
 * into *used; 0 (or -1) if the model has none to give.  Called with
 * estimating raised (see zorder_brincostestimate).
 */
static int
model_fractions(PlannerInfo *root, IndexOptInfo *index,
				ColumnFilter *filters, const double *gsel, double *fractions,
				IndexModel *used)
{
	Oid			relid = planner_rt_fetch(index->rel->relid, root)->relid;
	RelModel   *m = NULL;
	IndexModel *im;
	int			nf = 0;

	if (models)
		m = hash_search(models, &relid, HASH_FIND, NULL);
	if (m == NULL || !m->valid || !m->laid_out)
		return 0;
	im = find_index_model(m, index->indexoid);
	if (im == NULL || im->ncols != index->nkeycolumns)
		return 0;

	for (int c = 0; c < index->nkeycolumns; c++)
	{
		ColumnModel *cm = &im->cols[c];
		double		fc = -1.0;

		if (!filters[c].any)
			continue;
		if (!cm->usable)
			return 0;			/* a column we know nothing of */
		fc = constant_fraction(cm, &filters[c]);
		if (gsel[c] >= 0)
		{
			double		g = zrm_generic_fraction(cm->point_fraction, gsel[c]);

			fc = fc < 0 ? g : Min(fc, g);
		}
		if (fc < 0)
			return 0;
		fractions[nf++] = fc;
	}
	used->ppr = im->ppr;
	used->counts = im->counts;
	used->model_ranges = im->model_ranges;
	return nf;
}

/*
 * The amcostestimate of a BRIN index of a table zorder lays out.
 * brincostestimate's figures for the index itself are kept, but for the
 * share of its per-range work; the selectivity (a fraction of the table's
 * tuples, which the bitmap heap scan turns into heap pages and rechecks)
 * and an extra cost are chosen so that the heap scan is charged the pages
 * of the ranges read at sequential cost and a recheck of all their rows.
 */
static void
zorder_brincostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
						Cost *indexStartupCost, Cost *indexTotalCost,
						Selectivity *indexSelectivity, double *indexCorrelation,
						double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	RelOptInfo *baserel = index->rel;
	ColumnFilter filters[INDEX_MAX_KEYS];
	double		gsel[INDEX_MAX_KEYS];
	double		fractions[INDEX_MAX_KEYS];
	int			nf = 0;
	ListCell   *lc;
	IndexModel	used;			/* what the estimate needs of the model */
	IndexModel *im;
	double		T;
	double		N;
	double		indexRanges;
	double		current_ranges;
	double		f;
	double		R;
	double		P;
	double		spc_random;
	double		spc_seq;
	double		want;
	double		p_star;
	double		t_star;
	double		sel;
	double		extra;
	double		cpu_per_tuple;
	double		nvalued_scaled;
	double		divisor;

	/* PostgreSQL's own first: the index's part we keep, the fallback */
	brincostestimate(root, path, loop_count, indexStartupCost, indexTotalCost,
					 indexSelectivity, indexCorrelation, indexPages);

	/* repeated scans (a join's inner side): PostgreSQL's arithmetic */
	if (loop_count > 1 || baserel->tuples <= 0 || baserel->pages == 0)
		return;

	/*
	 * First all that may call out (folding constants, selectivity), then
	 * the model, which an invalidation in between would have made stale.
	 */
	estimating++;
	PG_TRY();
	{
		memset(filters, 0, sizeof(filters));
		foreach(lc, path->indexclauses)
		{
			IndexClause *iclause = lfirst_node(IndexClause, lc);
			ListCell   *lc2;

			if (iclause->indexcol >= index->nkeycolumns)
				continue;
			foreach(lc2, iclause->indexquals)
				classify_qual(root, index, iclause->indexcol,
							  lfirst_node(RestrictInfo, lc2),
							  &filters[iclause->indexcol]);
		}
		for (int c = 0; c < index->nkeycolumns; c++)
			gsel[c] = filters[c].generic ?
				clauselist_selectivity(root, filters[c].generic,
									   baserel->relid, JOIN_INNER, NULL) : -1.0;

		/*
		 * The model too, still guarded: the comparisons of constant_fraction
		 * are the key type's functions, which might plan a query of their
		 * own, whose get_model must not free the model read here.
		 */
		nf = model_fractions(root, index, filters, gsel, fractions, &used);
	}
	PG_FINALLY();
	{
		estimating--;
	}
	PG_END_TRY();

	if (nf <= 0)
		return;
	im = &used;

	T = (double) baserel->pages;
	N = baserel->tuples;
	current_ranges = ceil(T / im->ppr);
	indexRanges = Max(current_ranges, 1.0);
	nvalued_scaled = im->counts.nranges > 0 ?
		(im->counts.nranges - im->counts.nunsummarized - im->counts.nempty) /
		im->counts.nranges * im->model_ranges : 0;
	f = zrm_combine(nf, fractions, nvalued_scaled);
	R = zrm_ranges_read(&im->counts, im->model_ranges, current_ranges, f);
	P = Min(R * im->ppr, T);

	/* the index: brincostestimate's, with our ranges in its per-range part */
	*indexTotalCost += 0.1 * cpu_operator_cost * im->ppr *
		(R - *indexSelectivity * indexRanges);

	/*
	 * The heap: the pages of the ranges read, one random access per range
	 * and the rest sequential; every row on them rechecked.
	 */
	get_tablespace_page_costs(baserel->reltablespace, &spc_random, &spc_seq);
	want = P * spc_seq + R * Max(spc_random - spc_seq, 0.0);
	p_star = zrm_pages_for_cost(want, T, spc_random, spc_seq);
	extra = want - zrm_bitmap_page_cost(p_star, T, spc_random, spc_seq);
	t_star = zrm_tuples_for_pages(p_star, T);
	sel = Min(Max(t_star / N, 0.0), 1.0);
	cpu_per_tuple = cpu_tuple_cost + baserel->baserestrictcost.per_tuple;
	divisor = parallel_divisor(baserel);
	extra += Max(P / T * N - sel * N, 0.0) * cpu_per_tuple / divisor;
	/* ... and what a parallel plan pays to start, as if it were one */
	if (divisor > 1.0)
		extra += parallel_setup_cost;

	*indexSelectivity = sel;
	*indexTotalCost += Max(extra, 0.0);

	if (message_level_is_interesting(DEBUG1))
		elog(DEBUG1, "zorder: index %u reads %.0f of %.0f block ranges, %.0f heap pages",
			 index->indexoid, R, current_ranges, P);
}

/* ----------------------------------------------------------------
 * The hook
 * ----------------------------------------------------------------
 */

static void
zorder_relinfo_hook(ZORDER_RELINFO_HOOK_ARGS)
{
	Oid			relid = ZORDER_RELINFO_RELID;
	bool		any_brin = false;
	RelModel   *m;
	Relation	heap;
	ListCell   *lc;

	if (prev_relinfo_hook)
		prev_relinfo_hook(ZORDER_RELINFO_HOOK_PASS);

	/* an inheritance parent has no index paths of its own */
	if (!OidIsValid(relid) || ZORDER_RELINFO_INH || rel->indexlist == NIL)
		return;
	foreach(lc, rel->indexlist)
		if (((IndexOptInfo *) lfirst(lc))->relam == BRIN_AM_OID)
			any_brin = true;
	if (!any_brin || building || !extension_present())
		return;

	m = get_model(relid, rel->pages);
	if (m == NULL || !m->laid_out || m->nindexes == 0)
		return;

	/* what pg_stats would show this user, checked once per user */
	if (m->vis_user != GetUserId() || m->vis_row_security != row_security)
	{
		heap = table_open(relid, NoLock);
		for (int i = 0; i < m->nindexes; i++)
		{
			IndexModel *im = &m->indexes[i];

			im->visible = true;
			for (int c = 0; c < im->ncols && im->visible; c++)
				if (im->cols[c].usable &&
					!zorder_stats_visible(heap, im->cols[c].attnum))
					im->visible = false;
		}
		table_close(heap, NoLock);
		m->vis_user = GetUserId();
		m->vis_row_security = row_security;
	}

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = (IndexOptInfo *) lfirst(lc);
		IndexModel *im;

		if (index->relam != BRIN_AM_OID)
			continue;
		im = find_index_model(m, index->indexoid);
		if (im != NULL && im->visible)
			index->amcostestimate = zorder_brincostestimate;
	}
}

void
zorder_planner_init(void)
{
	prev_relinfo_hook = ZORDER_RELINFO_HOOK;
	ZORDER_RELINFO_HOOK = zorder_relinfo_hook;
	CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, namespace_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, privs_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, privs_callback, (Datum) 0);
}
