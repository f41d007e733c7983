/*-------------------------------------------------------------------------
 *
 * advise.c
 *	  The arithmetic of the key advisor: groups of sample rows summarised
 *	  per column, and the share of them a filter reads (see advise.h).
 *
 * The share is counted as planner.c counts it from a BRIN index: a group
 * is read unless it lies wholly on one side of the filter, and the columns
 * of a filter combine through rangemodel.c's functions, so that the
 * advisor ranks layouts by the same model the planner costs them with.
 *
 * Pure C: tested without a server (test/unit/test_advise.c).
 *
 *-------------------------------------------------------------------------
 */
#include "advise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rangemodel.h"

/* Points at which a column's point fraction is measured. */
#define POINT_PROBES 101

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* How many of sorted[0 .. n) are below v. */
static int
count_below(const double *sorted, int n, double v)
{
	int			lo = 0;
	int			hi = n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (sorted[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t
za_model_space(int ncols, int ngroups)
{
	/* per group and column: lowest, highest, rows */
	return sizeof(double) * 3 * (size_t) ncols * (size_t) ngroups;
}

void
za_model_build(za_model *m, int n, const double *pos, const int32_t *group,
			   const double *ncolvalues, void *space)
{
	int			ncols = m->ncols;
	int			ng = m->ngroups;
	double	   *lo = (double *) space;
	double	   *hi = lo + (size_t) ncols * ng;
	double	   *cnt = hi + (size_t) ncols * ng;

	for (size_t j = 0; j < (size_t) ncols * ng; j++)
	{
		lo[j] = INFINITY;
		hi[j] = -INFINITY;
		cnt[j] = 0;
	}
	for (int c = 0; c < ncols; c++)
		for (int i = 0; i < n; i++)
		{
			double		p = pos[(size_t) c * n + i];
			size_t		j = (size_t) c * ng + group[i];

			if (isnan(p))
				continue;
			if (p < lo[j])
				lo[j] = p;
			if (p > hi[j])
				hi[j] = p;
			cnt[j] += 1;
		}

	for (int c = 0; c < ncols; c++)
	{
		double	   *mins = m->mins + (size_t) c * ng;
		double	   *maxs = m->maxs + (size_t) c * ng;
		int			k = 0;
		double		sum = 0;

		for (int g = 0; g < ng; g++)
		{
			size_t		j = (size_t) c * ng + g;
			double		widen = 0;

			if (cnt[j] == 0)
				continue;

			/*
			 * s rows drawn evenly from an interval span (s - 1) / (s + 1) of
			 * it on average: widen each side by half the difference.  One
			 * row says nothing of the width; it is left a point.
			 */
			if (cnt[j] >= 2)
				widen = (hi[j] - lo[j]) / (cnt[j] - 1);
			mins[k] = lo[j] - widen;
			maxs[k] = hi[j] + widen;
			k++;
		}
		m->nvalued[c] = k;
		qsort(mins, k, sizeof(double), cmp_double);
		qsort(maxs, k, sizeof(double), cmp_double);

		/* the share a value drawn from the data reads, for unknown values */
		for (int t = 0; t < POINT_PROBES; t++)
		{
			double		p = floor((t + 0.5) * ncolvalues[c] / POINT_PROBES);

			sum += za_column_fraction(m, c, p, p + 1);
		}
		m->point_fraction[c] = ncolvalues[c] > 0 ? sum / POINT_PROBES : 0;
	}
}

double
za_column_fraction(const za_model *m, int col, double lo, double hi)
{
	int			k = m->nvalued[col];
	const double *mins = m->mins + (size_t) col * m->ngroups;
	const double *maxs = m->maxs + (size_t) col * m->ngroups;
	double		min_le_hi;
	double		max_lt_lo;

	if (hi < lo)
		return 0;

	/*
	 * A group spans [min, max] of positions and the filter takes [lo, hi):
	 * read unless max < lo or min >= hi.  A point between two sample values
	 * (lo == hi) is read by groups with min < lo <= max.  The groups with
	 * max < lo are among those with min < hi, so the difference counts the
	 * groups read, as rangemodel.c's column fraction does.
	 */
	min_le_hi = count_below(mins, k, hi > lo ? hi : lo);
	max_lt_lo = count_below(maxs, k, lo);
	return zrm_column_fraction((double) m->ngroups, min_le_hi, max_lt_lo);
}

static double
term_fraction(const za_model *m, const za_term *t)
{
	switch (t->kind)
	{
		case ZA_RANGE:
			return za_column_fraction(m, t->col, t->lo, t->hi);
		case ZA_LIST:
			{
				double		sum = 0;
				double		first = INFINITY;
				double		last = -INFINITY;

				for (int i = 0; i < t->nitems; i++)
				{
					double		a = t->items[2 * i];
					double		b = t->items[2 * i + 1];

					sum += za_column_fraction(m, t->col, a, b);
					if (a < first)
						first = a;
					if (b > last)
						last = b;
				}
				if (t->nitems == 0)
					return 0;
				return zrm_list_fraction(sum,
										 za_column_fraction(m, t->col,
															first, last));
			}
		case ZA_GENERIC:
			return zrm_generic_fraction(m->point_fraction[t->col], t->sel);
	}
	return 1;
}

double
za_filter_fraction(const za_model *m, int nterms, const za_term *terms)
{
	double		f[64];
	int			k = nterms < 64 ? nterms : 64;

	if (nterms == 0)
		return 1;
	for (int i = 0; i < k; i++)
		f[i] = term_fraction(m, &terms[i]);
	return zrm_combine(k, f, (double) m->ngroups);
}

int
za_btree_better(double matched_rows, double total_rows, double ranges_read,
				double rows_per_range)
{
	double		rows_read = ranges_read * rows_per_range;

	return total_rows > 0 && matched_rows < 0.01 * total_rows &&
		matched_rows * 20.0 < rows_read;
}

int
za_subsets(int ncols, int maxk, uint32_t *out)
{
	int			n = 0;

	if (ncols > 16)
		ncols = 16;
	for (int k = 1; k <= maxk && k <= ncols; k++)
		for (uint32_t mask = 1; mask < (UINT32_C(1) << ncols); mask++)
		{
			int			bits = 0;

			for (uint32_t b = mask; b; b &= b - 1)
				bits++;
			if (bits != k)
				continue;
			if (out)
				out[n] = mask;
			n++;
		}
	return n;
}
