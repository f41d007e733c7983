/*-------------------------------------------------------------------------
 *
 * advise.h
 *	  The arithmetic of the key advisor (advisor.c): a sample of rows laid
 *	  out in groups, one group per block range, summarised per column as
 *	  the planner's model summarises a BRIN index, and the block ranges a
 *	  workload's filters read from it.
 *
 * Pure C, no PostgreSQL headers, tested alone by test/unit/test_advise.c.
 *
 * Values are positions: a column's sample values, sorted, are numbered
 * 0 .. n - 1, and a filter becomes the half-open run of positions [lo, hi)
 * its values would take.  A filter whose values lie between two sample
 * values has lo == hi: it reads the groups that straddle that point.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_ADVISE_H
#define ZORDER_ADVISE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Per column, the sorted lower and upper ends (positions) of the groups
 * holding a value of it, as planner.c keeps the sorted minima and maxima
 * of a BRIN index's summaries.  ngroups counts every group (those with no
 * value of a column are read by no filter on it).
 */
typedef struct za_model
{
	int			ncols;
	int			ngroups;
	int		   *nvalued;		/* [ncols] */
	double	   *mins;			/* [ncols * ngroups], each column sorted */
	double	   *maxs;
	double	   *point_fraction; /* [ncols]: a value drawn from the data */
} za_model;

/*
 * Summarise n rows in ngroups groups: pos[c * n + i] is row i's position on
 * column c (NaN for NULL), group[i] its group (0 .. ngroups - 1).  A group
 * of s sample rows stands for many more rows; its extent on a column is
 * widened by the expected gap between the s rows' extent and the extent of
 * what they were drawn from, (s + 1) / (s - 1) for values spread evenly.
 * The model's arrays are allocated by the caller (za_model_space bytes for
 * scratch), ncols and ngroups set.
 */
extern size_t za_model_space(int ncols, int ngroups);
extern void za_model_build(za_model *m, int n, const double *pos,
						   const int32_t *group, const double *ncolvalues,
						   void *space);

/* Share of the groups a filter [lo, hi) on column col reads. */
extern double za_column_fraction(const za_model *m, int col, double lo,
								 double hi);

/* How a term of a filter is known. */
typedef enum za_term_kind
{
	ZA_RANGE,					/* [lo, hi) */
	ZA_LIST,					/* nitems runs [items[2i], items[2i + 1]) */
	ZA_GENERIC					/* values unknown: selectivity sel */
} za_term_kind;

typedef struct za_term
{
	int			col;
	za_term_kind kind;
	double		lo;
	double		hi;
	int			nitems;
	const double *items;
	double		sel;
} za_term;

/*
 * Share of the groups that a filter, the AND of nterms terms (at most one
 * per column), reads: per column with rangemodel.c's functions, combined
 * as the planner combines them (zrm_combine).
 */
extern double za_filter_fraction(const za_model *m, int nterms,
								 const za_term *terms);

/*
 * Whether a btree serves a single-column equality better than any layout:
 * it reads about the matching rows, where BRIN reads whole block ranges of
 * rows_per_range rows each.  True when the filter returns under 1 % of the
 * table's total_rows and the ranges it reads hold over 20 times the rows
 * it returns.
 */
extern int	za_btree_better(double matched_rows, double total_rows,
							double ranges_read, double rows_per_range);

/* Table too small for the layout to matter: fewer ranges than this. */
#define ZA_MIN_RANGES 8

/*
 * Every subset of 1 .. maxk of ncols columns, as bit masks in order of
 * size then of the columns' order, into out (room for za_subsets(ncols,
 * maxk, NULL)); returns how many.
 */
extern int	za_subsets(int ncols, int maxk, uint32_t *out);

#endif							/* ZORDER_ADVISE_H */
