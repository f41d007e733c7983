/*-------------------------------------------------------------------------
 *
 * rangemodel.c
 *	  The arithmetic of zorder's BRIN cost estimate: fractions of block
 *	  ranges read, combined over key columns, and the translation into the
 *	  terms of PostgreSQL's bitmap heap scan costing (see rangemodel.h).
 *
 * Pure C: everything here is a function of numbers, so that it can be
 * tested without a server (test/unit/test_rangemodel.c).
 *
 *-------------------------------------------------------------------------
 */
#include "rangemodel.h"

#include <math.h>

static double
clamp01(double x)
{
	if (!(x > 0.0))				/* also NaN */
		return 0.0;
	return x > 1.0 ? 1.0 : x;
}

double
zrm_column_fraction(double nvalued, double min_le_hi, double max_lt_lo)
{
	if (nvalued <= 0.0)
		return 0.0;
	return clamp01((min_le_hi - max_lt_lo) / nvalued);
}

double
zrm_generic_fraction(double point_fraction, double selectivity)
{
	return clamp01(clamp01(point_fraction) + clamp01(selectivity));
}

double
zrm_list_fraction(double sum_of_points, double span_fraction)
{
	double		s = clamp01(sum_of_points);
	double		h = clamp01(span_fraction);

	return s < h ? s : h;
}

double
zrm_combine(int ncols, const double *fractions, double nvalued)
{
	double		f = 1.0;

	for (int i = 0; i < ncols; i++)
		f *= clamp01(fractions[i]);
	if (f > 0.0 && nvalued > 0.0 && f * nvalued < 1.0)
		f = 1.0 / nvalued;		/* a filter that matches reads a range */
	return clamp01(f);
}

double
zrm_ranges_read(const zrm_ranges *model, double model_ranges,
				double current_ranges, double fraction)
{
	double		looked = model->nranges > 0.0 ? model->nranges : 1.0;
	double		valued = looked - model->nunsummarized - model->nempty;
	double		share;
	double		read;
	double		grown;

	if (valued < 0.0)
		valued = 0.0;
	/* share of the model's ranges read, then scaled to what it stood for */
	share = (model->nunsummarized + valued * clamp01(fraction)) / looked;
	read = share * model_ranges;
	grown = current_ranges - model_ranges;
	if (grown > 0.0)
		read += grown;
	if (read > current_ranges)
		read = current_ranges;
	if (read < 0.0)
		read = 0.0;
	return read;
}

double
zrm_bitmap_page_cost(double pages, double T, double random_cost,
					 double seq_cost)
{
	if (T < 1.0)
		T = 1.0;
	if (pages > T)
		pages = T;
	if (pages <= 0.0)
		return 0.0;
	return pages * (random_cost - (random_cost - seq_cost) * sqrt(pages / T));
}

double
zrm_pages_for_cost(double want, double T, double random_cost,
				   double seq_cost)
{
	double		lo = 0.0;
	double		hi;
	double		peak;

	if (T < 1.0)
		T = 1.0;
	if (want <= 0.0)
		return 0.0;

	/*
	 * The charge rises up to where its derivative r - 1.5 (r - s) sqrt(p/T)
	 * is zero, then falls towards s T at p = T.  Search the rising side.
	 */
	if (random_cost > seq_cost)
	{
		double		x = random_cost / (1.5 * (random_cost - seq_cost));

		peak = x >= 1.0 ? T : x * x * T;
	}
	else
		peak = T;
	hi = peak;
	if (zrm_bitmap_page_cost(hi, T, random_cost, seq_cost) <= want)
		return hi;
	for (int i = 0; i < 60; i++)
	{
		double		mid = (lo + hi) / 2.0;

		if (zrm_bitmap_page_cost(mid, T, random_cost, seq_cost) < want)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2.0;
}

double
zrm_tuples_for_pages(double pages, double T)
{
	if (T < 1.0)
		T = 1.0;
	if (pages <= 0.0)
		return 0.0;
	if (pages >= T)
		return 2.0 * T;
	return 2.0 * T * pages / (2.0 * T - pages);
}

int64_t
zrm_sample_step(int64_t nranges, int64_t cap)
{
	if (cap < 1 || nranges <= cap)
		return 1;
	return (nranges + cap - 1) / cap;
}
