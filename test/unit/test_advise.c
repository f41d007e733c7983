/*-------------------------------------------------------------------------
 *
 * test_advise.c
 *	  Unit tests of the key advisor's arithmetic (src/advise.c).
 *
 *-------------------------------------------------------------------------
 */
#include "advise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int	npassed = 0;
static int	nfailed = 0;

static void
check(const char *what, int ok)
{
	if (ok)
		npassed++;
	else
	{
		nfailed++;
		printf("FAIL %s\n", what);
	}
}

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

#define N 1000
#define G 10

static double pos[2 * N];
static int32_t group[N];
static double mins[2 * G];
static double maxs[2 * G];
static int	nvalued[2];
static double pointf[2];

static void
build(za_model *m, int ncols)
{
	double		nv[2] = {N, N};
	void	   *space = malloc(za_model_space(ncols, G));

	m->ncols = ncols;
	m->ngroups = G;
	m->nvalued = nvalued;
	m->mins = mins;
	m->maxs = maxs;
	m->point_fraction = pointf;
	za_model_build(m, N, pos, group, nv, space);
	free(space);
}

/*
 * Column 0 sorted (row i at position i, group i / 100), column 1 spread
 * over every group (group g holds g, g + 10, g + 20 ...).
 */
static void
test_layouts(void)
{
	za_model	m;
	za_term		t[2];
	double		items[4];

	for (int i = 0; i < N; i++)
	{
		pos[i] = i;
		pos[N + i] = (i % (N / G)) * G + i / (N / G);
		group[i] = i / (N / G);
	}
	build(&m, 2);

	/* a tenth of the sorted column: its group and the neighbour it touches */
	check_near("sorted, a tenth", za_column_fraction(&m, 0, 0, 100), 0.2, 1e-9);
	check_near("sorted, one value", za_column_fraction(&m, 0, 450, 451), 0.1, 1e-9);
	check_near("sorted, nothing", za_column_fraction(&m, 0, 2000, 2100), 0, 0);
	check_near("spread, one value", za_column_fraction(&m, 1, 450, 451), 1, 0);
	check("sorted, point fraction small", pointf[0] <= 0.2 && pointf[0] >= 0.1);
	check_near("spread, point fraction", pointf[1], 1, 0);

	/* the columns combine as the planner combines them */
	t[0] = (za_term) {.col = 0,.kind = ZA_RANGE,.lo = 450,.hi = 451};
	t[1] = (za_term) {.col = 1,.kind = ZA_RANGE,.lo = 0,.hi = 500};
	check_near("two columns", za_filter_fraction(&m, 2, t), 0.1, 1e-9);

	/* a list: two values in one group read it once, far apart twice */
	items[0] = 410;
	items[1] = 411;
	items[2] = 420;
	items[3] = 421;
	t[0] = (za_term) {.col = 0,.kind = ZA_LIST,.nitems = 2,.items = items};
	check_near("list, one group", za_filter_fraction(&m, 1, t), 0.1, 1e-9);
	items[2] = 950;
	items[3] = 951;
	check_near("list, two groups", za_filter_fraction(&m, 1, t), 0.2, 1e-9);

	/* unknown values: a drawn value's fraction widened by the selectivity */
	t[0] = (za_term) {.col = 0,.kind = ZA_GENERIC,.sel = 0.3};
	check_near("generic", za_filter_fraction(&m, 1, t), pointf[0] + 0.3, 1e-9);

	/* no term: everything */
	check_near("no filter", za_filter_fraction(&m, 0, t), 1, 0);
}

/* Few rows in a group stand for a wider extent; NULLs are left out. */
static void
test_widening(void)
{
	za_model	m;

	for (int i = 0; i < N; i++)
	{
		pos[i] = NAN;
		group[i] = 0;
	}
	pos[0] = 100;
	pos[1] = 200;
	pos[2] = 300;
	group[2] = 1;
	build(&m, 1);
	/* rows 100 and 200 (group 0) stand for [0, 300]; 300 alone is a point */
	check("widened to the left", za_column_fraction(&m, 0, 10, 11) > 0);
	check("widened to the right", za_column_fraction(&m, 0, 290, 291) > 0);
	check_near("beyond the widening", za_column_fraction(&m, 0, 310, 320), 0, 0);
	check_near("the single row", za_column_fraction(&m, 0, 300, 301), 0.2, 1e-9);
	check("NULLs hold no value", nvalued[0] == 2);
}

static void
test_rest(void)
{
	uint32_t	sets[64];
	int			n = za_subsets(6, 3, sets);
	int			ok = 1;

	check("subsets of 1 to 3 of 6", n == 6 + 15 + 20);
	check("subsets counted", za_subsets(6, 3, NULL) == n);
	for (int i = 1; i < n; i++)
		if (__builtin_popcount(sets[i]) < __builtin_popcount(sets[i - 1]))
			ok = 0;
	check("smallest sets first", ok);
	check("subsets capped by the columns", za_subsets(2, 4, NULL) == 3);

	/* 10 rows of 1e6 where 5 ranges of 10,000 rows are read: btree */
	check("btree better", za_btree_better(10, 1e6, 5, 1e4));
	check("btree not better, many rows", !za_btree_better(2e4, 1e6, 5, 1e4));
	check("btree not better, few ranges", !za_btree_better(1000, 1e6, 1, 1e4));
}

int
main(void)
{
	test_layouts();
	test_widening();
	test_rest();
	printf("test_advise: %d passed, %d failed\n", npassed, nfailed);
	return nfailed > 0;
}
