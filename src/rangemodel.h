/*-------------------------------------------------------------------------
 *
 * rangemodel.h
 *	  The arithmetic of zorder's BRIN cost estimate (planner.c): how many
 *	  block ranges a filter reads, from what the table's own BRIN summaries
 *	  say, and how to hand that to PostgreSQL's bitmap heap scan costing.
 *
 * Pure C, no PostgreSQL headers, tested alone by test/unit/test_rangemodel.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_RANGEMODEL_H
#define ZORDER_RANGEMODEL_H

#include <stdint.h>

/*
 * The ranges of one BRIN index as the model keeps them: how many ranges it
 * looked at (all, or an even sample), how many had no summary (read by
 * every scan) and how many held no value (read by none).  The rest are
 * "valued": the fractions below are fractions of those.
 */
typedef struct zrm_ranges
{
	double		nranges;		/* ranges looked at */
	double		nunsummarized;
	double		nempty;
} zrm_ranges;

/*
 * Fraction of the valued ranges that a filter on one column reads, given
 * the number of valued ranges whose minimum is at most the filter's upper
 * end (min_le_hi) and the number whose maximum is below its lower end
 * (max_lt_lo): a range is read unless it lies wholly on one side.
 */
extern double zrm_column_fraction(double nvalued, double min_le_hi,
								  double max_lt_lo);

/*
 * Fraction for a filter the planner cannot evaluate now (a parameter of a
 * generic plan, a join key): the fraction a value drawn from the data
 * reads (point_fraction, measured) widened by the share of the values the
 * filter selects (selectivity, the planner's own estimate).  A range of
 * quantile width w meets an interval of quantile width s placed at random
 * with probability w + s; point_fraction is the mean of w.
 */
extern double zrm_generic_fraction(double point_fraction, double selectivity);

/*
 * A list of values (IN, = ANY): the ranges that one of them reads.  The
 * sum of their fractions overcounts ranges that hold several; the span
 * from the smallest to the largest counts ranges between them that hold
 * none.  Both are upper bounds; take the smaller.
 */
extern double zrm_list_fraction(double sum_of_points, double span_fraction);

/*
 * Several key columns in one query: a range is read when its box meets the
 * filter on every column.  Taken as independent per column, which is what
 * a curve layout makes of its ranges (each is a box narrow in every key);
 * at least one range when any is read.
 */
extern double zrm_combine(int ncols, const double *fractions,
						  double nvalued);

/*
 * The ranges a scan reads today, out of current_ranges: those of the model
 * (unsummarized always, valued by fraction), plus every range the table
 * grew by since the model was taken (not yet summarized, or not yet
 * described).  model_ranges is the table's range count when the model was
 * taken, the ranges struct the (possibly sampled) counts.
 */
extern double zrm_ranges_read(const zrm_ranges *model, double model_ranges,
							  double current_ranges, double fraction);

/*
 * PostgreSQL's bitmap heap scan charges pages_fetched pages at a cost per
 * page between random_page_cost (few pages) and seq_page_cost (all of
 * them): cost(p) = p * (r - (r - s) * sqrt(p / T)).  zrm_pages_for_cost
 * returns the p at which that charge equals want (0 <= p <= T, on the
 * rising side of the curve), so that the ranges a BRIN scan reads, which
 * are runs of consecutive pages, are charged as what they are.
 */
extern double zrm_bitmap_page_cost(double pages, double T,
								   double random_cost, double seq_cost);
extern double zrm_pages_for_cost(double want, double T, double random_cost,
								 double seq_cost);

/*
 * The number of tuples for which the Mackert-Lohman formula that the
 * bitmap heap scan uses, pages = 2 T t / (2 T + t), gives the wanted pages
 * (at most 2 T, where the formula reaches T).
 */
extern double zrm_tuples_for_pages(double pages, double T);

/* Every how many ranges the model keeps one, to keep at most cap. */
extern int64_t zrm_sample_step(int64_t nranges, int64_t cap);

#endif							/* ZORDER_RANGEMODEL_H */
