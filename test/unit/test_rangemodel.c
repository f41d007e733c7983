/*-------------------------------------------------------------------------
 *
 * test_rangemodel.c
 *	  Unit tests of the arithmetic of zorder's BRIN cost estimate
 *	  (src/rangemodel.c).
 *
 *-------------------------------------------------------------------------
 */
#include "rangemodel.h"

#include <math.h>
#include <stdio.h>

static int	npassed = 0;
static int	nfailed = 0;

static void
check_near(const char *what, double got, double want, double tol)
{
	if (fabs(got - want) <= tol)
		npassed++;
	else
	{
		nfailed++;
		printf("FAIL %s: got %.6g, want %.6g\n", what, got, want);
	}
}

static void
test_fractions(void)
{
	double		f2[2];

	/* 100 valued ranges, 30 start at or below hi, 10 end below lo */
	check_near("column fraction", zrm_column_fraction(100, 30, 10), 0.2, 1e-12);
	check_near("column fraction, none valued", zrm_column_fraction(0, 0, 0), 0, 0);
	check_near("column fraction clamps", zrm_column_fraction(10, 20, 0), 1, 0);
	check_near("generic", zrm_generic_fraction(0.1, 0.05), 0.15, 1e-12);
	check_near("generic clamps", zrm_generic_fraction(0.8, 0.5), 1, 0);
	check_near("generic NaN", zrm_generic_fraction(NAN, 0.5), 0.5, 0);
	check_near("list: sum", zrm_list_fraction(0.1, 0.6), 0.1, 1e-12);
	check_near("list: span", zrm_list_fraction(0.9, 0.2), 0.2, 1e-12);

	f2[0] = 0.1;
	f2[1] = 0.2;
	check_near("combine", zrm_combine(2, f2, 1000), 0.02, 1e-12);
	f2[0] = 0.01;
	f2[1] = 0.01;
	check_near("combine: at least a range", zrm_combine(2, f2, 100), 0.01, 1e-12);
	f2[0] = 0;
	check_near("combine: nothing", zrm_combine(2, f2, 100), 0, 0);
	check_near("combine: no column", zrm_combine(0, f2, 100), 1, 0);
}

static void
test_ranges_read(void)
{
	zrm_ranges m = {100, 10, 10};

	/* 10 unsummarized + 80 * 0.25 = 30 of 100 */
	check_near("read", zrm_ranges_read(&m, 100, 100, 0.25), 30, 1e-9);
	/* a sample of 100 standing for 1000 ranges */
	check_near("read, sampled", zrm_ranges_read(&m, 1000, 1000, 0.25), 300, 1e-9);
	/* the table grew by 5 ranges since */
	check_near("read, grown", zrm_ranges_read(&m, 100, 105, 0.25), 35, 1e-9);
	/* shrank: never more than there are */
	check_near("read, shrunk", zrm_ranges_read(&m, 100, 20, 1.0), 20, 1e-9);
}

static void
test_bitmap_costs(void)
{
	double		T = 10000;
	double		p;

	check_near("page cost, one page", zrm_bitmap_page_cost(1, T, 4, 1),
			   4 - 3 * sqrt(1 / T), 1e-9);
	check_near("page cost, all", zrm_bitmap_page_cost(T, T, 4, 1), T, 1e-6);

	/* pages_for_cost inverts page cost on the rising side */
	for (double want = 10; want < T; want *= 3)
	{
		p = zrm_pages_for_cost(want, T, 4, 1);
		check_near("inverse", zrm_bitmap_page_cost(p, T, 4, 1), want,
				   want * 1e-9);
	}
	/* beyond the peak (about 1.05 T): the peak's pages */
	p = zrm_pages_for_cost(2 * T, T, 4, 1);
	check_near("beyond the peak", p, T * (4 / 4.5) * (4 / 4.5), 1e-6);
	/* random = seq: the charge is linear */
	check_near("linear", zrm_pages_for_cost(500, T, 1, 1), 500, 1e-6);

	/* Mackert-Lohman, inverted */
	for (double pages = 1; pages < T; pages *= 4)
	{
		double		t = zrm_tuples_for_pages(pages, T);

		check_near("ML inverse", 2 * T * t / (2 * T + t), pages, 1e-6);
	}
	check_near("ML all", zrm_tuples_for_pages(T, T), 2 * T, 0);
}

static void
test_sample_step(void)
{
	check_near("step, small", (double) zrm_sample_step(100, 4096), 1, 0);
	check_near("step, exact", (double) zrm_sample_step(8192, 4096), 2, 0);
	check_near("step, above", (double) zrm_sample_step(8193, 4096), 3, 0);
}

int
main(void)
{
	test_fractions();
	test_ranges_read();
	test_bitmap_costs();
	test_sample_step();
	printf("test_rangemodel: %d passed, %d failed\n", npassed, nfailed);
	return nfailed == 0 ? 0 : 1;
}
