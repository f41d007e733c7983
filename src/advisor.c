/*-------------------------------------------------------------------------
 *
 * advisor.c
 *	  The key advisor: zorder.recommend_keys, which key columns would make
 *	  the recorded workload of a table read the fewest block ranges.
 *
 * The workload is what pg_qualstats recorded (or, without it, what
 * pg_stat_statements' texts say; workload.c reads either): per filter of a
 * query (an AND of simple predicates), which columns it compared with
 * constants, by which operators, how often, and the constants themselves
 * where the caller may see them.  Each filter instance becomes a set of
 * terms, one per column: a range of values, a list (IN, or equalities
 * ORed), or, when the constants are hidden, a selectivity.
 *
 * The estimate comes from the data.  One sample of the table's rows (as
 * optimize draws it, from at most ZORDER_SAMPLE_BLOCKS blocks) is laid out
 * along each candidate's curve with the code optimize lays a table out
 * with: the same boundaries (zorder_bounds_from_sorted), the same
 * coordinates (zorder_row_coordinates) and the same curve key; sorted by
 * it, the sample is cut into as many groups as the table has block
 * ranges.  Today's layout groups the same rows by the block range they lie
 * in.  advise.c summarises each grouping per column as planner.c
 * summarises a BRIN index (sorted minima and maxima) and counts the ranges
 * each filter reads with rangemodel.c's functions, the planner's own;
 * ranges read, times how often each filter ran, ranks the candidates.
 *
 * The advisor reveals what pg_stats and pg_qualstats would: the caller must
 * be able to SELECT the columns it reports on, row-level security must not
 * apply to it, and the workload is the caller's own queries unless it has
 * the privileges of pg_read_all_stats (workload.c).  The workload is read
 * as the caller; the rows are then read, and the types' functions run, as
 * the table's owner in a security-restricted operation (measure_as_owner).
 *
 * The same sample and model give zorder.estimate the ranges a point filter
 * on each key reads today and after a layout (zorder_point_ranges, with a
 * workload of point filters drawn from the sample).
 *
 * Why one file of this size: the workload's terms, the sample, the
 * layouts and the report all work on one Advice (its columns, instances
 * and sample positions); split, each piece would export that state and
 * the others' internals.  The reading of the workload, which needs none
 * of it, is apart (workload.c), and the arithmetic is in advise.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heaptoast.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/vacuum.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "access.h"
#include "advise.h"
#include "advisor.h"
#include "brin.h"
#include "layout.h"
#include "pg_compat.h"
#include "quantile.h"
#include "radix.h"
#include "subxact.h"
#include "workload.h"
#include "zorder.h"

PG_FUNCTION_INFO_V1(zorder_recommend_keys);

#define FNAME "zorder.recommend_keys"

/* Most columns whose subsets are tried, most filtered first. */
#define MAX_CANDIDATE_COLUMNS 8

/* Fewest sample rows per group: fewer groups than ranges below it. */
#define MIN_GROUP_ROWS 8

/* Values wider than this are left out of the sample, as in quantile.c. */
#define SAMPLE_WIDTH_LIMIT 1024

/* How a column is filtered. */
typedef enum How
{
	HOW_EQUAL,
	HOW_IN,
	HOW_RANGE,
	HOW_OTHER					/* an operator a minmax summary cannot use */
} How;

static const char *const how_names[] = {"equality", "IN", "range", "other"};

/* A column the workload filters. */
typedef struct AdvColumn
{
	AttrNumber	attnum;
	char	   *name;
	bool		usable;			/* readable, with a btree order */
	ZKeyColumn key;				/* type, order, and comparator */
	Oid			btfamily;
	int			nsorted;		/* non-NULL sample values */
	double		ndistinct;		/* ... distinct among them */
	Datum	   *sorted;
	double		weight;			/* calls of the filters on it */
} AdvColumn;

/* One column of one filter instance. */
typedef struct AdvTerm
{
	int			col;			/* into the columns */
	QualRow    *rows;			/* its predicates */
	int			nrows;
	How			how;
	int			neq;			/* equalities seen */
	bool		lower;			/* a lower bound seen (>, >=) */
	bool		upper;			/* an upper bound seen (<, <=) */
	Oid			other_op;		/* an operator of HOW_OTHER */
	const char *other_name;		/* ... or its name as written */
	bool		known;			/* constants parsed */
	bool		has_lo;
	bool		has_hi;
	double		lo;				/* positions [lo, hi) */
	double		hi;
	int			nitems;
	double	   *items;
	double		sel;
} AdvTerm;

typedef struct AdvInstance
{
	int			shape;
	double		calls;
	int			nterms;
	AdvTerm    *terms;
} AdvInstance;

/* A filter shape: its instances differ in their values only. */
typedef struct AdvShape
{
	int64		id;
	double		calls;
} AdvShape;

typedef struct Advice
{
	Relation	rel;
	int			ncols;
	AdvColumn  *cols;
	int			ninst;
	AdvInstance *inst;
	int			nshapes;
	AdvShape   *shapes;
	/* the sample */
	int			n;
	Datum	   *values;			/* n x ncols */
	bool	   *nulls;
	BlockNumber *blocks;
	double	   *pos;			/* ncols x n, NaN for NULL */
	double		total_rows;
	double		nranges;		/* the table's block ranges */
	int			ppr;
} Advice;

/* ----------------------------------------------------------------
 * Constants
 * ----------------------------------------------------------------
 */

/*
 * pg_qualstats writes a constant as literal::type, the literal quoted when
 * it is not a plain number, cut at 80 bytes.  Returns the literal, or NULL
 * for anything else (cut short, an expression); *is_array when the type
 * is an array.
 */
static char *
split_constant(const char *cv, bool *is_array)
{
	StringInfoData lit;
	const char *p = cv;
	const char *type;

	initStringInfo(&lit);
	if (*p == '\'')
	{
		for (p++;; p++)
		{
			if (*p == '\0')
				return NULL;	/* cut short */
			if (*p == '\'')
			{
				if (p[1] != '\'')
					break;
				p++;
			}
			appendStringInfoChar(&lit, *p);
		}
		p++;
	}
	else
		while (*p != '\0' && *p != ':')
			appendStringInfoChar(&lit, *p++);
	if (strncmp(p, "::", 2) != 0 || lit.len == 0)
		return NULL;
	type = p + 2;
	*is_array = strlen(type) > 2 && strcmp(type + strlen(type) - 2, "[]") == 0;
	return lit.data;
}

/* A constant to parse, in a subtransaction (parse_constant). */
typedef struct ConstInput
{
	const char *lit;
	bool		is_array;
	Oid			typid;
	Datum	   *values;
	int			n;
} ConstInput;

static void
input_constant(void *arg)
{
	ConstInput *ci = (ConstInput *) arg;
	Oid			infunc;
	Oid			ioparam;

	if (ci->is_array)
	{
		Oid			arrtype = get_array_type(ci->typid);
		int16		typlen;
		bool		typbyval;
		char		typalign;
		bool	   *anull;
		Datum		arr;
		int			nelems;

		if (!OidIsValid(arrtype))
			elog(ERROR, "type %u has no array type", ci->typid);
		getTypeInputInfo(arrtype, &infunc, &ioparam);
		arr = OidInputFunctionCall(infunc, (char *) ci->lit, ioparam, -1);
		get_typlenbyvalalign(ci->typid, &typlen, &typbyval, &typalign);
		deconstruct_array(DatumGetArrayTypeP(arr), ci->typid, typlen,
						  typbyval, typalign, &ci->values, &anull, &nelems);
		/* a NULL element matches nothing: leave it out */
		ci->n = 0;
		for (int i = 0; i < nelems; i++)
			if (!anull[i])
				ci->values[ci->n++] = ci->values[i];
	}
	else
	{
		getTypeInputInfo(ci->typid, &infunc, &ioparam);
		ci->values = palloc(sizeof(Datum));
		ci->values[0] = OidInputFunctionCall(infunc, (char *) ci->lit,
											 ioparam, -1);
		ci->n = 1;
	}
}

/*
 * Parse a constant of type typid (an array of it with is_array) in a
 * subtransaction: a constant pg_qualstats cut short, or written in a form
 * the type's input function refuses, is unknown, not an error.  Returns
 * the number of values, -1 when it cannot be read.
 */
static int
parse_constant(const char *lit, bool is_array, Oid typid, Datum **values)
{
	ConstInput	ci = {lit, is_array, typid, NULL, -1};
	ErrorData  *edata = zorder_try_in_subxact(input_constant, &ci);

	if (edata == NULL)
	{
		*values = ci.values;
		return ci.n;
	}
	zorder_rethrow_if_fatal(edata);
	FreeErrorData(edata);
	return -1;
}

/*
 * Sample values of col below v (or at most v with or_equal), v of type
 * rtype, compared by the column's btree family, which may compare across
 * types (an int8 column with an int4 constant).
 */
static int
count_below(AdvColumn *col, FmgrInfo *cmp, Datum v, bool or_equal)
{
	int			lo = 0;
	int			hi = col->nsorted;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int32		c = DatumGetInt32(FunctionCall2Coll(cmp, col->key.collid,
														col->sorted[mid], v));

		if (c < 0 || (or_equal && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Add one predicate "column op constant" of an instance to its term on the
 * column: an item of a list (equalities ORed, IN), a bound of a range, or
 * an operator a minmax summary cannot use.  A constant that cannot be read
 * makes the term's values unknown.
 */
static void
add_predicate(AdvColumn *col, AdvTerm *t, QualRow *r)
{
	int			strategy;
	Oid			ltype;
	Oid			rtype;
	FmgrInfo	cmp;
	Oid			proc;
	char	   *lit;
	bool		is_array = false;
	Datum	   *vals;
	int			nvals;

	strategy = col->usable ?
		get_op_opfamily_strategy(r->opno, col->btfamily) : 0;
	if (strategy == 0 || t->how == HOW_OTHER)
	{
		if (t->how != HOW_OTHER)
		{
			t->other_op = r->opno;
			t->other_name = r->opname;
		}
		t->how = HOW_OTHER;
		return;
	}
	if (r->sel >= 0)
		t->sel = r->sel;
	lit = r->constvalue ? split_constant(r->constvalue, &is_array) : NULL;
	if (strategy == BTEqualStrategyNumber)
	{
		t->how = (t->neq > 0 || is_array) ? HOW_IN : HOW_EQUAL;
		t->neq++;
	}
	else if (t->neq > 0)
		return;					/* a = 1 AND a > 0: the equality says it */
	else
	{
		t->how = HOW_RANGE;
		if (strategy == BTLessStrategyNumber ||
			strategy == BTLessEqualStrategyNumber)
			t->upper = true;
		else
			t->lower = true;
	}

	/* the constant, compared with the column as the operator compares */
	op_input_types(r->opno, &ltype, &rtype);
	proc = get_opfamily_proc(col->btfamily, col->key.typid, rtype,
							 BTORDER_PROC);
	if (lit == NULL || !OidIsValid(proc) ||
		(nvals = parse_constant(lit, is_array, rtype, &vals)) < 0)
	{
		t->known = false;
		return;
	}
	fmgr_info(proc, &cmp);
	if (strategy == BTEqualStrategyNumber)
	{
		t->items = t->nitems == 0 ?
			palloc(sizeof(double) * 2 * Max(nvals, 1)) :
			repalloc(t->items, sizeof(double) * 2 * (t->nitems + Max(nvals, 1)));
		for (int i = 0; i < nvals; i++)
		{
			t->items[2 * t->nitems] = count_below(col, &cmp, vals[i], false);
			t->items[2 * t->nitems + 1] = count_below(col, &cmp, vals[i], true);
			t->nitems++;
		}
		return;
	}
	if (nvals != 1)
	{
		t->known = false;
		return;
	}
	if (strategy == BTLessStrategyNumber ||
		strategy == BTLessEqualStrategyNumber)
	{
		double		hi = count_below(col, &cmp, vals[0],
									 strategy == BTLessEqualStrategyNumber);

		t->hi = t->has_hi ? Min(t->hi, hi) : hi;
		t->has_hi = true;
	}
	else
	{
		double		lo = count_below(col, &cmp, vals[0],
									 strategy == BTGreaterStrategyNumber);

		t->lo = t->has_lo ? Max(t->lo, lo) : lo;
		t->has_lo = true;
	}
}

/* Turn a term into advise.c's form, for the columns' positions. */
static void
to_za_term(Advice *a, AdvTerm *t, za_term *z)
{
	AdvColumn  *col = &a->cols[t->col];

	memset(z, 0, sizeof(*z));
	z->col = t->col;
	if (!t->known)
	{
		/*
		 * Values not known (hidden, or not constants): the selectivity
		 * pg_qualstats measured, else the planner's defaults for a range
		 * (selfuncs.h) and one value of the column's distinct ones.
		 */
		z->kind = ZA_GENERIC;
		if (t->sel >= 0)
			z->sel = t->sel;
		else if (t->how == HOW_RANGE)
			z->sel = (t->lower && t->upper) ? 0.005 : 1.0 / 3.0;
		else
			z->sel = Min(1.0, Max(t->neq, 1) / Max(col->ndistinct, 1.0));
		return;
	}
	if (t->nitems > 0)
	{
		z->kind = ZA_LIST;
		z->nitems = t->nitems;
		z->items = t->items;
		return;
	}
	z->kind = ZA_RANGE;
	z->lo = t->has_lo ? t->lo : 0;
	z->hi = t->has_hi ? t->hi : col->nsorted;
}

/* ----------------------------------------------------------------
 * The sample
 * ----------------------------------------------------------------
 */

/* qsort_arg over row numbers by their TIDs */
static int
cmp_tids(const void *x, const void *y, void *arg)
{
	ItemPointerData *tids = (ItemPointerData *) arg;

	return ItemPointerCompare(&tids[*(const int *) x], &tids[*(const int *) y]);
}

/*
 * Put the sample rows in the order of the heap.  A layout sorts rows by
 * their curve keys, and rows of the same key keep their order in the heap
 * (they are read in that order); evaluate_keys's sort is stable, so that
 * it keeps ties in the same order only if the rows come in it.  A layout
 * on a column of few values leaves the rows of each value in the order
 * they had, which is often the order of time.
 */
static void
heap_order(Advice *a, ItemPointerData *tids)
{
	int			nc = a->ncols;
	int		   *idx = palloc(sizeof(int) * Max(a->n, 1));
	Datum	   *values = palloc_extended(sizeof(Datum) * Max(a->n, 1) * nc,
										 MCXT_ALLOC_HUGE);
	bool	   *nulls = palloc_extended(sizeof(bool) * Max(a->n, 1) * nc,
									   MCXT_ALLOC_HUGE);
	BlockNumber *blocks = palloc(sizeof(BlockNumber) * Max(a->n, 1));

	for (int i = 0; i < a->n; i++)
		idx[i] = i;
	qsort_arg(idx, a->n, sizeof(int), cmp_tids, tids);
	for (int i = 0; i < a->n; i++)
	{
		memcpy(&values[(size_t) i * nc], &a->values[(size_t) idx[i] * nc],
			   sizeof(Datum) * nc);
		memcpy(&nulls[(size_t) i * nc], &a->nulls[(size_t) idx[i] * nc],
			   sizeof(bool) * nc);
		blocks[i] = a->blocks[idx[i]];
	}
	pfree(a->values);
	pfree(a->nulls);
	pfree(a->blocks);
	pfree(idx);
	a->values = values;
	a->nulls = nulls;
	a->blocks = blocks;
}

/*
 * How many rows the sample keeps: ZORDER_SAMPLE_ROWS, as optimize's, but
 * no more than maintenance_work_mem holds at the widest values kept (a
 * variable-width value is kept up to SAMPLE_WIDTH_LIMIT bytes): the caller
 * chooses the columns by the filters it runs, so their number and width
 * must not choose how much memory the call takes.
 */
static int
sample_rows(Advice *a)
{
	double		row_bytes = sizeof(BlockNumber) + sizeof(ItemPointerData);

	for (int c = 0; c < a->ncols; c++)
	{
		row_bytes += sizeof(Datum) + sizeof(bool);
		if (a->cols[c].usable && !a->cols[c].key.typbyval)
			row_bytes += a->cols[c].key.typlen > 0 ?
				MAXALIGN(a->cols[c].key.typlen) :
				MAXALIGN(SAMPLE_WIDTH_LIMIT + VARHDRSZ);
	}
	return (int) Max(Min((double) ZORDER_SAMPLE_ROWS,
						 (double) maintenance_work_mem * 1024.0 / row_bytes),
					 MIN_GROUP_ROWS);
}

/* What draw_sample keeps of each sampled row. */
typedef struct AdviceSample
{
	Advice	   *a;
	ItemPointerData *tids;
} AdviceSample;

static void
take_row(void *arg, int slot, HeapTuple tuple, BlockNumber blk)
{
	AdviceSample *as = (AdviceSample *) arg;
	Advice	   *a = as->a;
	TupleDesc	desc = RelationGetDescr(a->rel);
	int			nc = a->ncols;

	a->blocks[slot] = blk;
	as->tids[slot] = tuple->t_self;
	for (int c = 0; c < nc; c++)
	{
		size_t		at = (size_t) slot * nc + c;
		bool		isnull;
		Datum		d;

		/* a slot taken again frees the values of the row it held */
		if (!a->nulls[at] && !a->cols[c].key.typbyval)
			pfree(DatumGetPointer(a->values[at]));
		if (!a->cols[c].usable)
		{
			a->nulls[at] = true;
			continue;
		}
		d = heap_getattr(tuple, a->cols[c].attnum, desc, &isnull);
		if (!isnull && a->cols[c].key.typlen == -1 &&
			toast_raw_datum_size(d) > SAMPLE_WIDTH_LIMIT)
			isnull = true;
		a->nulls[at] = isnull;
		a->values[at] = isnull ? (Datum) 0 :
			zorder_copy_value(&a->cols[c].key, d);
	}
}

/*
 * Draw the sample optimize draws (zorder_sample_rows: the same blocks and
 * the same seed), keeping each row's block and the values of the filtered
 * columns, then put the rows in heap order.
 */
static void
draw_sample(Advice *a)
{
	int			targrows = sample_rows(a);
	int			nc = a->ncols;
	AdviceSample as;
	double		seen;
	BlockNumber nread;
	BlockNumber nblocks = RelationGetNumberOfBlocks(a->rel);

	a->values = palloc_extended(sizeof(Datum) * targrows * nc, MCXT_ALLOC_HUGE);
	a->nulls = palloc_extended(sizeof(bool) * targrows * nc, MCXT_ALLOC_HUGE);
	memset(a->nulls, true, sizeof(bool) * targrows * nc);
	a->blocks = palloc(sizeof(BlockNumber) * targrows);
	as.a = a;
	as.tids = palloc(sizeof(ItemPointerData) * targrows);
	a->n = zorder_sample_rows(a->rel, targrows, take_row, &as, &seen, &nread);
	a->total_rows = nread > 0 ? seen * (double) nblocks / nread : 0;
	heap_order(a, as.tids);
}

/* qsort_arg over row numbers by one column's values */
typedef struct RowOrder
{
	Advice	   *a;
	int			col;
} RowOrder;

static int
cmp_rows(const void *x, const void *y, void *arg)
{
	RowOrder   *o = (RowOrder *) arg;
	int			nc = o->a->ncols;
	int			i = *(const int *) x;
	int			j = *(const int *) y;

	return ApplySortComparator(o->a->values[(size_t) i * nc + o->col], false,
							   o->a->values[(size_t) j * nc + o->col], false,
							   &o->a->cols[o->col].key.ssup);
}

/* Each column's sorted values, and each row's position among them. */
static void
sort_columns(Advice *a)
{
	int			nc = a->ncols;
	int		   *idx = palloc(sizeof(int) * Max(a->n, 1));

	a->pos = palloc_extended(sizeof(double) * (size_t) nc * Max(a->n, 1),
							 MCXT_ALLOC_HUGE);
	for (int c = 0; c < nc; c++)
	{
		AdvColumn  *col = &a->cols[c];
		RowOrder	o = {a, c};
		int			m = 0;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < a->n; i++)
		{
			a->pos[(size_t) c * a->n + i] = NAN;
			if (!a->nulls[(size_t) i * nc + c])
				idx[m++] = i;
		}
		qsort_arg(idx, m, sizeof(int), cmp_rows, &o);
		col->nsorted = m;
		col->sorted = palloc(sizeof(Datum) * Max(m, 1));
		col->ndistinct = 0;
		for (int j = 0; j < m; j++)
		{
			col->sorted[j] = a->values[(size_t) idx[j] * nc + c];
			a->pos[(size_t) c * a->n + idx[j]] = j;
			if (j == 0 || ApplySortComparator(col->sorted[j - 1], false,
											  col->sorted[j], false,
											  &col->key.ssup) != 0)
				col->ndistinct++;
		}
	}
	pfree(idx);
}

/* ----------------------------------------------------------------
 * Layouts and their estimates
 * ----------------------------------------------------------------
 */

/*
 * Model the sample grouped by group[] (ngroups groups standing for the
 * table's ranges) and give each instance the ranges it reads, in out[].
 */
static void
evaluate(Advice *a, const int32 *group, int ngroups, double *out)
{
	za_model	m;
	double	   *ncolvalues = palloc(sizeof(double) * a->ncols);
	za_term    *zt;
	int			maxterms = 0;

	m.ncols = a->ncols;
	m.ngroups = ngroups;
	m.nvalued = palloc(sizeof(int) * a->ncols);
	m.mins = palloc_extended(sizeof(double) * a->ncols * ngroups, MCXT_ALLOC_HUGE);
	m.maxs = palloc_extended(sizeof(double) * a->ncols * ngroups, MCXT_ALLOC_HUGE);
	m.point_fraction = palloc(sizeof(double) * a->ncols);
	for (int c = 0; c < a->ncols; c++)
		ncolvalues[c] = a->cols[c].nsorted;
	za_model_build(&m, a->n, a->pos, group, ncolvalues,
				   palloc_extended(za_model_space(a->ncols, ngroups),
								   MCXT_ALLOC_HUGE));
	for (int i = 0; i < a->ninst; i++)
		maxterms = Max(maxterms, a->inst[i].nterms);
	zt = palloc(sizeof(za_term) * Max(maxterms, 1));
	for (int i = 0; i < a->ninst; i++)
	{
		AdvInstance *in = &a->inst[i];
		int			k = 0;

		for (int t = 0; t < in->nterms; t++)
			if (in->terms[t].how != HOW_OTHER)
				to_za_term(a, &in->terms[t], &zt[k++]);
		out[i] = za_filter_fraction(&m, k, zt) * a->nranges;
	}
}

/* Today's layout: the sample rows grouped by the range they lie in. */
static void
evaluate_now(Advice *a, double *out)
{
	int32	   *group = palloc(sizeof(int32) * Max(a->n, 1));
	BlockNumber nblocks = RelationGetNumberOfBlocks(a->rel);
	int64		nr = ((int64) nblocks + a->ppr - 1) / a->ppr;
	int32	   *ids = palloc(sizeof(int32) * Max(nr, 1));
	int			ngroups = 0;

	for (int64 r = 0; r < nr; r++)
		ids[r] = -1;
	for (int i = 0; i < a->n; i++)
	{
		int64		r = a->blocks[i] / a->ppr;

		if (ids[r] < 0)
			ids[r] = ngroups++;
		group[i] = ids[r];
	}
	evaluate(a, group, Max(ngroups, 1), out);
}

/*
 * A candidate: the sample laid out as optimize would lay the table out on
 * these keys, then cut into groups, one per block range.
 */
static void
evaluate_keys(Advice *a, int nkeys, const int *keycols, double *out)
{
	int			bits = zorder_curve_bits(nkeys);
	ZKeyColumn	kc[ZORDER_MAX_KEYS];
	zr_item    *items = palloc_extended(sizeof(zr_item) * Max(a->n, 1), MCXT_ALLOC_HUGE);
	zr_item    *tmp = palloc_extended(sizeof(zr_item) * Max(a->n, 1), MCXT_ALLOC_HUGE);
	int32	   *group = palloc(sizeof(int32) * Max(a->n, 1));
	int64		ngroups;

	for (int k = 0; k < nkeys; k++)
	{
		AdvColumn  *col = &a->cols[keycols[k]];

		kc[k] = col->key;
		zorder_bounds_from_sorted(&kc[k], col->sorted, col->nsorted, nkeys,
								  bits, CurrentMemoryContext);
	}
	for (int i = 0; i < a->n; i++)
	{
		Datum		v[ZORDER_MAX_KEYS];
		bool		isnull[ZORDER_MAX_KEYS];
		uint32		coords[ZORDER_MAX_KEYS];

		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		for (int k = 0; k < nkeys; k++)
		{
			v[k] = a->values[(size_t) i * a->ncols + keycols[k]];
			isnull[k] = a->nulls[(size_t) i * a->ncols + keycols[k]];
		}
		zorder_row_coordinates(kc, nkeys, v, isnull, bits, coords);
		items[i].key = zorder_curve_key(ZCURVE_HILBERT, nkeys, bits, coords);
		items[i].val = (uint64) i;
	}
	zr_sort(items, tmp, a->n);

	/* as many groups as ranges, unless they would be too thin to tell */
	ngroups = Min((int64) ceil(a->nranges), (int64) a->n / MIN_GROUP_ROWS);
	ngroups = Max(ngroups, 1);
	for (int r = 0; r < a->n; r++)
		group[items[r].val] = (int32) ((int64) r * ngroups / a->n);
	evaluate(a, group, (int) ngroups, out);
}

/* ----------------------------------------------------------------
 * Building the workload
 * ----------------------------------------------------------------
 */

static int
cmp_qualrows(const void *x, const void *y)
{
	const QualRow *a = x;
	const QualRow *b = y;

	if (a->shape != b->shape)
		return a->shape < b->shape ? -1 : 1;
	if (a->instance != b->instance)
		return a->instance < b->instance ? -1 : 1;
	return (a->attnum > b->attnum) - (a->attnum < b->attnum);
}

/* The column of attnum among a's columns, added if new. */
static int
column_of(Advice *a, AttrNumber attnum, int *maxcols)
{
	AdvColumn  *col;
	Form_pg_attribute att;

	for (int c = 0; c < a->ncols; c++)
		if (a->cols[c].attnum == attnum)
			return c;
	if (a->ncols == *maxcols)
	{
		*maxcols *= 2;
		a->cols = repalloc(a->cols, sizeof(AdvColumn) * *maxcols);
	}
	col = &a->cols[a->ncols];
	memset(col, 0, sizeof(*col));
	col->attnum = attnum;
	att = TupleDescAttr(RelationGetDescr(a->rel), attnum - 1);
	col->name = pstrdup(NameStr(att->attname));
	col->usable = !att->attisdropped && zorder_column_readable(a->rel, attnum);
	if (col->usable)
	{
		Oid			opclass = GetDefaultOpClass(att->atttypid, BTREE_AM_OID);

		col->usable = OidIsValid(opclass);
		if (col->usable)
		{
			col->btfamily = get_opclass_family(opclass);
			zorder_prepare_key_column(a->rel, attnum, &col->key);
		}
	}
	return a->ncols++;
}

/*
 * Keep as usable only the columns some filter compares by their btree
 * order: another operator's filter reads every range whatever the layout
 * (HOW_OTHER), so such a column is never a key and its values would only
 * take the sample's memory.
 */
static void
sampled_columns(Advice *a)
{
	bool	   *compared = palloc0(sizeof(bool) * Max(a->ncols, 1));

	for (int i = 0; i < a->ninst; i++)
		for (int t = 0; t < a->inst[i].nterms; t++)
		{
			AdvTerm    *term = &a->inst[i].terms[t];
			AdvColumn  *col = &a->cols[term->col];

			for (int r = 0; r < term->nrows && col->usable; r++)
				if (OidIsValid(term->rows[r].opno) &&
					get_op_opfamily_strategy(term->rows[r].opno,
											 col->btfamily) != 0)
					compared[term->col] = true;
		}
	for (int c = 0; c < a->ncols; c++)
		a->cols[c].usable = a->cols[c].usable && compared[c];
	pfree(compared);
}

/*
 * Instances from pg_qualstats's rows (sorted here, so that the rows of an
 * instance's column are together), each with a term per column, and the
 * shapes they are instances of.  The terms get their values later, once
 * the sample gives positions (read_terms).
 */
static void
build_workload(Advice *a, QualRow *rows, int nrows)
{
	int			maxcols = 8;

	qsort(rows, nrows, sizeof(QualRow), cmp_qualrows);
	a->cols = palloc(sizeof(AdvColumn) * maxcols);
	a->inst = palloc(sizeof(AdvInstance) * Max(nrows, 1));
	a->shapes = palloc0(sizeof(AdvShape) * Max(nrows, 1));
	for (int i = 0; i < nrows;)
	{
		int			j = i;
		AdvInstance *in = &a->inst[a->ninst++];

		while (j < nrows && rows[j].shape == rows[i].shape &&
			   rows[j].instance == rows[i].instance)
			j++;
		if (a->nshapes == 0 || a->shapes[a->nshapes - 1].id != rows[i].shape)
			a->shapes[a->nshapes++].id = rows[i].shape;
		in->shape = a->nshapes - 1;
		in->calls = 0;
		in->terms = palloc0(sizeof(AdvTerm) * (j - i));
		in->nterms = 0;
		for (int k = i; k < j; k++)
		{
			AdvTerm    *t;

			in->calls = Max(in->calls, rows[k].calls);
			if (k > i && rows[k].attnum == rows[k - 1].attnum)
			{
				in->terms[in->nterms - 1].nrows++;
				continue;
			}
			t = &in->terms[in->nterms++];
			t->col = column_of(a, rows[k].attnum, &maxcols);
			t->rows = &rows[k];
			t->nrows = 1;
			t->known = true;
			t->sel = -1;
		}
		a->shapes[in->shape].calls += in->calls;
		i = j;
	}
	sampled_columns(a);
}

/* Each term's values, as positions among the sample's. */
static void
read_terms(Advice *a)
{
	for (int i = 0; i < a->ninst; i++)
	{
		AdvInstance *in = &a->inst[i];

		CHECK_FOR_INTERRUPTS();
		for (int t = 0; t < in->nterms; t++)
		{
			AdvTerm    *term = &in->terms[t];

			for (int r = 0; r < term->nrows; r++)
				add_predicate(&a->cols[term->col], term, &term->rows[r]);
		}
	}
}

/* ----------------------------------------------------------------
 * The report
 * ----------------------------------------------------------------
 */

/* A candidate and what it reads. */
typedef struct Candidate
{
	int			nkeys;
	int			keycols[ZORDER_MAX_KEYS];
	double		total;			/* ranges read, times calls, summed */
	double	   *per_shape;		/* mean ranges a call reads */
} Candidate;

static int
cmp_candidates(const void *x, const void *y)
{
	const Candidate *a = x;
	const Candidate *b = y;

	/* equal within rounding: fewer keys first, then the order tried */
	if (fabs(a->total - b->total) > 1e-9 * Max(a->total, b->total))
		return a->total < b->total ? -1 : 1;
	if (a->nkeys != b->nkeys)
		return a->nkeys - b->nkeys;
	return 0;
}

/* The filter of a shape, in words: "a = ? AND b BETWEEN ? AND ?". */
static void
describe_shape(Advice *a, AdvInstance *in, StringInfo out)
{
	for (int t = 0; t < in->nterms; t++)
	{
		AdvTerm    *term = &in->terms[t];
		const char *name = quote_identifier(a->cols[term->col].name);

		if (t > 0)
			appendStringInfoString(out, " AND ");
		switch (term->how)
		{
			case HOW_EQUAL:
				appendStringInfo(out, "%s = ?", name);
				break;
			case HOW_IN:
				appendStringInfo(out, "%s IN (?)", name);
				break;
			case HOW_RANGE:
				if (term->lower && term->upper)
					appendStringInfo(out, "%s BETWEEN ? AND ?", name);
				else
					appendStringInfo(out, "%s %s ?", name,
									 term->lower ? ">" : "<");
				break;
			case HOW_OTHER:
				appendStringInfo(out, "%s %s ?", name,
								 OidIsValid(term->other_op) ?
								 get_opname(term->other_op) :
								 term->other_name ? term->other_name : "?");
				break;
		}
	}
}

/* Whether no layout can help an instance: no term a summary can use. */
static bool
unhelped(AdvInstance *in)
{
	for (int t = 0; t < in->nterms; t++)
		if (in->terms[t].how != HOW_OTHER)
			return false;
	return true;
}

/* Rows a single-column equality returns, estimated. */
static double
equality_rows(Advice *a, AdvInstance *in)
{
	AdvTerm    *t = &in->terms[0];
	AdvColumn  *col = &a->cols[t->col];
	double		share = 0;

	if (t->known && t->nitems > 0 && col->nsorted > 0)
	{
		/* at least half a sample row: it was asked for, so it may exist */
		for (int i = 0; i < t->nitems; i++)
			share += Max(t->items[2 * i + 1] - t->items[2 * i], 0.5);
		share /= col->nsorted;
	}
	else
		share = t->sel >= 0 ? t->sel : 1.0 / Max(col->nsorted, 1);
	return share * a->total_rows;
}

static char *
fmt_ranges(double x)
{
	return psprintf(x < 10 ? "%.1f" : "%.0f", x);
}

/* The workload as one candidate (or today's layout) reads it, as jsonb. */
static Datum
workload_json(Advice *a, const double *now, const double *cand,
			  const int *first_inst, const char *const *notes)
{
	StringInfoData j;

	initStringInfo(&j);
	appendStringInfoChar(&j, '[');
	for (int s = 0; s < a->nshapes; s++)
	{
		AdvInstance *in = &a->inst[first_inst[s]];
		StringInfoData d;

		initStringInfo(&d);
		describe_shape(a, in, &d);
		if (s > 0)
			appendStringInfoString(&j, ", ");
		appendStringInfoString(&j, "{\"filter\": ");
		escape_json(&j, d.data);
		appendStringInfo(&j, ", \"calls\": %.0f, \"columns\": {",
						 a->shapes[s].calls);
		for (int t = 0; t < in->nterms; t++)
		{
			if (t > 0)
				appendStringInfoString(&j, ", ");
			escape_json(&j, a->cols[in->terms[t].col].name);
			appendStringInfoString(&j, ": ");
			escape_json(&j, how_names[in->terms[t].how]);
		}
		appendStringInfo(&j, "}, \"ranges_read_now\": %s, \"ranges_read\": %s",
						 fmt_ranges(now[s]), fmt_ranges(cand[s]));
		if (notes[s])
		{
			appendStringInfoString(&j, ", \"note\": ");
			escape_json(&j, notes[s]);
		}
		appendStringInfoChar(&j, '}');
	}
	appendStringInfoChar(&j, ']');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(j.data));
}

static Datum
keys_array(Advice *a, Candidate *c)
{
	Datum	   *names = palloc(sizeof(Datum) * Max(c->nkeys, 1));

	for (int k = 0; k < c->nkeys; k++)
	{
		Name		n = palloc0(NAMEDATALEN);

		namestrcpy(n, a->cols[c->keycols[k]].name);
		names[k] = NameGetDatum(n);
	}
	return PointerGetDatum(construct_array(names, c->nkeys, NAMEOID,
										   NAMEDATALEN, false, TYPALIGN_CHAR));
}

/* Mean ranges a call of each shape reads, from per-instance figures. */
static void
per_shape(Advice *a, const double *inst, double *shape, double *total)
{
	*total = 0;
	for (int s = 0; s < a->nshapes; s++)
		shape[s] = 0;
	for (int i = 0; i < a->ninst; i++)
	{
		AdvInstance *in = &a->inst[i];

		shape[in->shape] += in->calls * inst[i];
		*total += in->calls * inst[i];
	}
	for (int s = 0; s < a->nshapes; s++)
		shape[s] /= Max(a->shapes[s].calls, 1);
}

static void
emit(ReturnSetInfo *rsinfo, int rank, Datum keys, double total,
	 double total_now, Datum workload, const char *reason)
{
	Datum		values[6];
	bool		nulls[6] = {false};

	values[0] = Int32GetDatum(rank);
	values[1] = keys;
	values[2] = Float8GetDatum(total);
	values[3] = Float8GetDatum(total_now);
	values[4] = workload;
	values[5] = CStringGetTextDatum(reason);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* What the measurements give the report. */
typedef struct Ranking
{
	double	   *shape_now;		/* per shape, today's layout */
	double		total_now;
	int			ncands;
	Candidate  *cands;			/* best first */
	int		   *first_inst;		/* per shape, an instance of it */
	const char **notes;			/* per shape, or NULL */
	int			nunhelped;		/* shapes no layout helps */
	int			nbtree;			/* shapes a btree serves better */
} Ranking;

/*
 * The workload as instances and terms.  Read as the caller: pg_qualstats
 * and pg_stat_statements show it what it may see.  An empty workload is an
 * error: there is nothing to rank keys by.
 */
static void
read_workload(Advice *a, MemoryContext cxt)
{
	QualRow    *rows;
	int			nrows;
	const char *source = NULL;

	nrows = zorder_read_workload(a->rel, &rows, cxt, &source, false);
	build_workload(a, rows, nrows);
	if (a->ninst == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no recorded filters on table \"%s\"",
						RelationGetRelationName(a->rel)),
				 errdetail("%s has recorded no WHERE clause on the table's columns%s.",
						   source,
						   has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) ?
						   "" : " in the current user's queries"),
				 errhint("Let the workload run with %s loaded%s.", source,
						 strcmp(source, "pg_qualstats") == 0 ?
						 "; set pg_qualstats.sample_rate to record more of it" : "")));
}

/*
 * The columns worth a curve, most used first: a subset of at most
 * MAX_CANDIDATE_COLUMNS keeps the number of key sets tried small, and the
 * columns the workload filters least gain it least.
 */
static int
choose_columns(Advice *a, int *candcols)
{
	int			ncand = 0;

	for (int i = 0; i < a->ninst; i++)
		for (int t = 0; t < a->inst[i].nterms; t++)
			if (a->inst[i].terms[t].how != HOW_OTHER)
				a->cols[a->inst[i].terms[t].col].weight += a->inst[i].calls;
	for (int c = 0; c < a->ncols; c++)
	{
		int			at;

		if (!a->cols[c].usable || a->cols[c].weight <= 0 ||
			a->cols[c].nsorted == 0)
			continue;
		at = Min(ncand, MAX_CANDIDATE_COLUMNS - 1);
		if (ncand == MAX_CANDIDATE_COLUMNS &&
			a->cols[candcols[at]].weight >= a->cols[c].weight)
			continue;
		while (at > 0 && a->cols[candcols[at - 1]].weight < a->cols[c].weight)
		{
			candcols[at] = candcols[at - 1];
			at--;
		}
		candcols[at] = c;
		ncand = Min(ncand + 1, MAX_CANDIDATE_COLUMNS);
	}
	return ncand;
}

/*
 * The table's block ranges: their size is the one a layout on these
 * columns would get (the BRIN indexes' pages_per_range), so that every
 * candidate is cut into as many groups as the table would have ranges.
 */
static void
choose_range_size(Advice *a, const int *candcols, int ncand)
{
	AttrNumber	attnums[MAX_CANDIDATE_COLUMNS];

	for (int k = 0; k < ncand; k++)
		attnums[k] = a->cols[candcols[k]].attnum;
	a->ppr = ncand > 0 ?
		zorder_table_ppr(a->rel, zorder_brin_indexes(a->rel), ncand, attnums) : 128;
	a->ppr = Max(a->ppr, 1);
	a->nranges = ceil((double) RelationGetNumberOfBlocks(a->rel) / a->ppr);
}

/*
 * Today's layout and every key set of at most max_keys candidate columns,
 * each as the ranges each shape reads.  A candidate's layout is built in a
 * context of its own, reset after each: only its figures are kept.
 */
static void
evaluate_candidates(Advice *a, Ranking *rk, const int *candcols, int ncand,
					int max_keys)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext cand_cxt;
	double	   *inst_now = palloc(sizeof(double) * a->ninst);
	double	   *inst_cand = palloc(sizeof(double) * a->ninst);
	uint32	   *masks;

	cand_cxt = AllocSetContextCreate(cxt, "zorder advisor candidate",
									 ALLOCSET_DEFAULT_SIZES);
	rk->shape_now = palloc(sizeof(double) * a->nshapes);
	evaluate_now(a, inst_now);
	per_shape(a, inst_now, rk->shape_now, &rk->total_now);

	rk->ncands = za_subsets(ncand, Min(max_keys, ncand), NULL);
	masks = palloc(sizeof(uint32) * Max(rk->ncands, 1));
	za_subsets(ncand, Min(max_keys, ncand), masks);
	rk->cands = palloc0(sizeof(Candidate) * Max(rk->ncands, 1));
	for (int m = 0; m < rk->ncands; m++)
	{
		Candidate  *c = &rk->cands[m];

		CHECK_FOR_INTERRUPTS();
		for (int k = 0; k < ncand; k++)
			if (masks[m] & (1U << k))
				c->keycols[c->nkeys++] = candcols[k];
		c->per_shape = palloc(sizeof(double) * a->nshapes);
		MemoryContextSwitchTo(cand_cxt);
		evaluate_keys(a, c->nkeys, c->keycols, inst_cand);
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(cand_cxt);
		per_shape(a, inst_cand, c->per_shape, &c->total);
	}
	MemoryContextDelete(cand_cxt);
}

/*
 * Everything that reads the table's rows or runs its types' functions,
 * done as the table's owner: the one owner switch of the advisor, undone
 * here (an error undoes it with the transaction).
 */
static void
measure_as_owner(Advice *a, Ranking *rk, int max_keys)
{
	ZOwnerSwitch sw;
	int			candcols[MAX_CANDIDATE_COLUMNS];
	int			ncand;

	zorder_become_owner(a->rel->rd_rel->relowner, &sw);
	draw_sample(a);
	sort_columns(a);
	read_terms(a);
	ncand = choose_columns(a, candcols);
	choose_range_size(a, candcols, ncand);
	evaluate_candidates(a, rk, candcols, ncand, max_keys);
	zorder_restore_user(&sw);
}

/*
 * The note of a single-column equality a btree serves better than any
 * layout (it returns fewer rows than the ranges read hold), or NULL.
 */
static const char *
btree_note(Advice *a, int s, double best)
{
	AdvInstance *in = NULL;
	double		matched = 0;

	for (int i = 0; i < a->ninst; i++)
		if (a->inst[i].shape == s)
		{
			in = in ? in : &a->inst[i];
			matched += a->inst[i].calls * equality_rows(a, &a->inst[i]);
		}
	matched /= Max(a->shapes[s].calls, 1);
	if (!za_btree_better(matched, a->total_rows, best,
						 a->total_rows / Max(a->nranges, 1)))
		return NULL;
	return psprintf("a btree index on %s serves this selective equality better: it returns about %.0f rows, where the block ranges read hold about %.0f",
					quote_identifier(a->cols[in->terms[0].col].name),
					matched, best * a->total_rows / Max(a->nranges, 1));
}

/*
 * Per shape, the note saying when Z-ordering is the wrong tool for it: no
 * layout helps its operators, or a btree serves it better.  A ranking
 * that hides these would promise gains no layout gives.
 */
static void
note_shapes(Advice *a, Ranking *rk)
{
	rk->first_inst = palloc(sizeof(int) * a->nshapes);
	rk->notes = palloc0(sizeof(char *) * a->nshapes);
	for (int i = a->ninst - 1; i >= 0; i--)
		rk->first_inst[a->inst[i].shape] = i;
	for (int s = 0; s < a->nshapes; s++)
	{
		AdvInstance *in = &a->inst[rk->first_inst[s]];
		double		best = rk->ncands > 0 ?
			rk->cands[0].per_shape[s] : rk->shape_now[s];

		if (unhelped(in))
		{
			rk->notes[s] = "no layout helps this filter: a BRIN minmax summary cannot use its operators, or its columns cannot be read or sorted";
			rk->nunhelped++;
		}
		else if (in->nterms == 1 && in->terms[0].how == HOW_EQUAL &&
				 (rk->notes[s] = btree_note(a, s, best)) != NULL)
			rk->nbtree++;
	}
}

/*
 * One row, and no keys, when no candidate exists or the table has too few
 * ranges for skipping to matter: a ranking would only mislead.
 */
static void
emit_wrong_tool(ReturnSetInfo *rsinfo, Advice *a, Ranking *rk)
{
	Candidate	none = {0};
	StringInfoData reason;

	initStringInfo(&reason);
	if (rk->ncands == 0)
		appendStringInfoString(&reason,
							   "Z-ordering is the wrong tool here: no recorded filter compares a column a layout can order.");
	else
		appendStringInfo(&reason,
						 "Z-ordering is the wrong tool here: the table has %.0f block range%s of %d pages, too few for skipping to matter.",
						 a->nranges, a->nranges == 1 ? "" : "s", a->ppr);
	emit(rsinfo, 1, keys_array(a, &none), rk->total_now, rk->total_now,
		 workload_json(a, rk->shape_now, rk->shape_now, rk->first_inst,
					   rk->notes),
		 reason.data);
}

/* The first choice's reason: the gain over today, and the notes' count. */
static void
first_reason(Advice *a, Ranking *rk, StringInfo reason)
{
	Candidate  *c = &rk->cands[0];
	double		calls = 0;

	for (int s = 0; s < a->nshapes; s++)
		calls += a->shapes[s].calls;
	appendStringInfo(reason,
					 "The %.0f recorded filter calls would read about %s block ranges in all, against %s with today's layout",
					 calls, fmt_ranges(c->total), fmt_ranges(rk->total_now));
	if (c->total > 0.9 * rk->total_now)
		appendStringInfoString(reason,
							   ": Z-ordering gains little here, today's layout already skips about as well.");
	else
		appendStringInfo(reason, " (%.1f times fewer).",
						 rk->total_now / Max(c->total, 1e-9));
	if (rk->nbtree > 0)
		appendStringInfo(reason,
						 " %d filter shape%s would be served better by a btree index (see the notes).",
						 rk->nbtree, rk->nbtree == 1 ? "" : "s");
	if (rk->nunhelped > 0)
		appendStringInfo(reason,
						 " %d filter shape%s no layout can help (see the notes).",
						 rk->nunhelped, rk->nunhelped == 1 ? "" : "s");
}

/* The candidates, best first, each against the first choice. */
static void
emit_ranking(ReturnSetInfo *rsinfo, Advice *a, Ranking *rk)
{
	StringInfoData reason;

	initStringInfo(&reason);
	for (int r = 0; r < rk->ncands; r++)
	{
		Candidate  *c = &rk->cands[r];

		resetStringInfo(&reason);
		if (r == 0)
			first_reason(a, rk, &reason);
		else
			appendStringInfo(&reason,
							 "Would read about %s block ranges in all, %.2f times the first choice.",
							 fmt_ranges(c->total),
							 c->total / Max(rk->cands[0].total, 1e-9));
		emit(rsinfo, r + 1, keys_array(a, c), c->total, rk->total_now,
			 workload_json(a, rk->shape_now, c->per_shape, rk->first_inst,
						   rk->notes),
			 reason.data);
	}
}

/* Point filters drawn per key column for zorder_point_ranges. */
#define POINTS_PER_COLUMN 32

/*
 * Point filters on each column: POINTS_PER_COLUMN values spread evenly over
 * the sample's sorted values, each the run of positions its equal values
 * take; one shape per column.
 */
static void
point_workload(Advice *a)
{
	a->inst = palloc0(sizeof(AdvInstance) * Max(a->ncols * POINTS_PER_COLUMN, 1));
	a->shapes = palloc0(sizeof(AdvShape) * Max(a->ncols, 1));
	a->nshapes = a->ncols;
	for (int c = 0; c < a->ncols; c++)
	{
		AdvColumn  *col = &a->cols[c];

		a->shapes[c].id = c;
		for (int p = 0; p < POINTS_PER_COLUMN && col->nsorted > 0; p++)
		{
			AdvInstance *in = &a->inst[a->ninst++];
			AdvTerm    *t = palloc0(sizeof(AdvTerm));
			int			j = (int) (((int64) 2 * p + 1) * col->nsorted /
								   (2 * POINTS_PER_COLUMN));
			int			lo = j;
			int			hi = j + 1;

			while (lo > 0 && ApplySortComparator(col->sorted[lo - 1], false,
												 col->sorted[j], false,
												 &col->key.ssup) == 0)
				lo--;
			while (hi < col->nsorted &&
				   ApplySortComparator(col->sorted[hi], false, col->sorted[j],
									   false, &col->key.ssup) == 0)
				hi++;
			t->col = c;
			t->how = HOW_EQUAL;
			t->known = true;
			t->nitems = 1;
			t->items = palloc(sizeof(double) * 2);
			t->items[0] = lo;
			t->items[1] = hi;
			in->shape = c;
			in->calls = 1;
			in->nterms = 1;
			in->terms = t;
			a->shapes[c].calls += 1;
		}
	}
}

/*
 * The block ranges a point filter on each key column reads, on average
 * over values drawn from the table's rows: with today's layout (now[]),
 * and with the table laid out along the curve on these keys in
 * nranges_after ranges (after[]).  zorder.estimate's skipping afterwards,
 * from the advisor's sample and model, so that the estimate, the advisor
 * and the planner count ranges alike.  The caller runs as the table's
 * owner and owns the memory context.
 */
void
zorder_point_ranges(Relation rel, int nkeys, const AttrNumber *attnums,
					double nranges_after, double *now, double *after)
{
	Advice		a = {0};
	int			maxcols = Max(nkeys, 1);
	int			keycols[ZORDER_MAX_KEYS];
	double	   *inst;
	double		total;

	a.rel = rel;
	a.cols = palloc(sizeof(AdvColumn) * maxcols);
	for (int k = 0; k < nkeys; k++)
		keycols[k] = column_of(&a, attnums[k], &maxcols);
	draw_sample(&a);
	sort_columns(&a);
	point_workload(&a);
	a.ppr = Max(zorder_table_ppr(rel, zorder_brin_indexes(rel), nkeys,
								 attnums), 1);
	a.nranges = ceil((double) RelationGetNumberOfBlocks(rel) / a.ppr);
	inst = palloc(sizeof(double) * Max(a.ninst, 1));
	evaluate_now(&a, inst);
	per_shape(&a, inst, now, &total);
	a.nranges = Max(nranges_after, 1);
	evaluate_keys(&a, nkeys, keycols, inst);
	per_shape(&a, inst, after, &total);
}

/* The most keys a recommendation may have: 1 to 4. */
void
zorder_check_max_keys(int max_keys)
{
	if (max_keys < 1 || max_keys > 4)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_keys must be between 1 and 4"),
				 errdetail("Each key added to a curve weakens the others: more than four rarely pays.")));
}

/*
 * The advisor's first choice for automatic keys (autokeys.c): the key set
 * of at most max_keys columns that makes the recorded workload read the
 * fewest block ranges (out->best), and the ranges the same workload would
 * read with current[] laid out along the curve alike (out->current, -1
 * when a current key cannot be weighed).  False, with out->why, when
 * there is nothing to choose from: no record of the workload, no filter on
 * the table, no column a layout can order, or too few block ranges for
 * skipping to matter.  As recommend_keys: the workload is read as the
 * caller, the rows as the owner; the caller owns the memory context.
 */
bool
zorder_advise_keys(Relation rel, int max_keys, int ncurrent,
				   const AttrNumber *current, ZKeyAdvice *out)
{
	Advice		a = {0};
	Ranking		rk = {0};
	QualRow    *rows;
	int			nrows;
	const char *source = NULL;
	int			maxcols;
	int			curcols[ZORDER_MAX_KEYS];
	bool		weighable = true;
	int			candcols[MAX_CANDIDATE_COLUMNS];
	int			ncand;
	ZOwnerSwitch sw;

	memset(out, 0, sizeof(*out));
	out->current = -1;
	a.rel = rel;
	nrows = zorder_read_workload(rel, &rows, CurrentMemoryContext, &source,
								 true);
	if (nrows < 0)
	{
		out->why = "neither pg_qualstats nor pg_stat_statements is installed in the database";
		return false;
	}
	build_workload(&a, rows, nrows);
	if (a.ninst == 0)
	{
		out->why = psprintf("%s has recorded no filter on the table", source);
		return false;
	}
	for (int i = 0; i < a.ninst; i++)
		out->calls += a.inst[i].calls;

	/* the current keys' columns too, filtered or not */
	maxcols = a.ncols + ZORDER_MAX_KEYS;
	a.cols = repalloc(a.cols, sizeof(AdvColumn) * maxcols);
	for (int k = 0; k < ncurrent; k++)
	{
		curcols[k] = column_of(&a, current[k], &maxcols);
		weighable = weighable && a.cols[curcols[k]].usable;
	}

	zorder_become_owner(rel->rd_rel->relowner, &sw);
	draw_sample(&a);
	sort_columns(&a);
	read_terms(&a);
	ncand = choose_columns(&a, candcols);
	choose_range_size(&a, candcols, ncand);
	evaluate_candidates(&a, &rk, candcols, ncand, max_keys);
	if (rk.ncands > 0 && ncurrent > 0 && weighable)
	{
		double	   *inst = palloc(sizeof(double) * Max(a.ninst, 1));
		double	   *shape = palloc(sizeof(double) * Max(a.nshapes, 1));

		evaluate_keys(&a, ncurrent, curcols, inst);
		per_shape(&a, inst, shape, &out->current);
	}
	zorder_restore_user(&sw);

	if (rk.ncands == 0)
	{
		out->why = "no recorded filter compares a column a layout can order";
		return false;
	}
	if (a.nranges < ZA_MIN_RANGES)
	{
		out->why = psprintf("the table has %.0f block range%s of %d pages, too few for skipping to matter",
							a.nranges, a.nranges == 1 ? "" : "s", a.ppr);
		return false;
	}
	qsort(rk.cands, rk.ncands, sizeof(Candidate), cmp_candidates);
	out->nkeys = rk.cands[0].nkeys;
	for (int k = 0; k < out->nkeys; k++)
		out->attnums[k] = a.cols[rk.cands[0].keycols[k]].attnum;
	out->best = rk.cands[0].total;
	out->now = rk.total_now;
	return true;
}

/*
 * zorder.recommend_keys(table, max_keys): the phases in order, all in one
 * memory context dropped at the end.  The caller's privileges are checked
 * before anything is read (zorder_open_for_reading, no row-level security).
 */
Datum
zorder_recommend_keys(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	int			max_keys;
	Advice		adv = {0};
	Ranking		rk = {0};
	MemoryContext cxt;
	MemoryContext oldcxt;

	rel = zorder_open_for_reading(fcinfo, FNAME);
	zorder_arg_required(fcinfo, 1, "max_keys");
	max_keys = PG_GETARG_INT32(1);
	zorder_check_max_keys(max_keys);
	zorder_check_no_rls(rel, FNAME);
	InitMaterializedSRF(fcinfo, 0);

	cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder advisor",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	adv.rel = rel;
	read_workload(&adv, cxt);
	measure_as_owner(&adv, &rk, max_keys);
	qsort(rk.cands, rk.ncands, sizeof(Candidate), cmp_candidates);
	note_shapes(&adv, &rk);
	if (adv.nranges < ZA_MIN_RANGES || rk.ncands == 0)
		emit_wrong_tool(rsinfo, &adv, &rk);
	else
		emit_ranking(rsinfo, &adv, &rk);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}
