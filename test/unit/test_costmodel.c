/*-------------------------------------------------------------------------
 *
 * test_costmodel.c
 *	  Unit tests of the arithmetic of zorder.estimate (src/costmodel.c).
 *
 *-------------------------------------------------------------------------
 */
#include "costmodel.h"

#include <math.h>
#include <stdio.h>

static int	npassed = 0;
static int	nfailed = 0;

static const zcm_page pg8k = {8192, 24, 4, 291};

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
test_pages(void)
{
	/* 8168 usable bytes: 8168 / (96 + 4) = 81 rows of 96 bytes */
	check_near("rows per page at 100", zcm_rows_per_page(&pg8k, 96, 100), 81, 0);
	/* fillfactor 90 keeps 819.2 bytes: (8168 - 819.2) / 100 = 73 */
	check_near("rows per page at 90", zcm_rows_per_page(&pg8k, 96, 90), 73, 0);
	check_near("a wide row still gets a page", zcm_rows_per_page(&pg8k, 7000, 50), 1, 0);
	check_near("narrow rows stop at MaxHeapTuplesPerPage",
			   zcm_rows_per_page(&pg8k, 24, 100), 291, 0);
	check_near("pages for rows", zcm_pages_for_rows(1000, 81), 13, 0);
	check_near("pages for no rows", zcm_pages_for_rows(0, 81), 0, 0);

	/* a few rows over many pages: one page each; many: every page */
	check_near("spread: few rows", zcm_spread_pages(10, 1e6), 10, 1e-3);
	check_near("spread: many rows", zcm_spread_pages(1e6, 100), 100, 1e-9);
	check_near("spread: as many rows as pages", zcm_spread_pages(1000, 1000),
			   1000 * (1 - exp(-1)), 1e-9);
	check_near("spread: nothing", zcm_spread_pages(0, 1000), 0, 0);
}

static void
test_splits(void)
{
	/* a tenth of a row per range against room for 50: no split */
	check_near("no split with room", zcm_split_rows(100, 1000, 8000, 50), 0, 1e-9);
	/* no room at all: every pair with a newcomer splits (capped at 4 n) */
	check_near("no room: capped", zcm_split_rows(1000, 100, 8000, 0), 4000, 1e-9);
	/* Poisson(2): P(X > 2) = 1 - 5 e^-2 */
	check_near("one newcomer a range, room for one",
			   zcm_split_rows(100, 100, 2, 1), 100 * (1 - 5 * exp(-2)), 1e-9);

	/*
	 * The normal approximation takes over from the sum at lambda 600, while
	 * e^-lambda is still a double, and must agree with it there.
	 */
	{
		double		below = zcm_split_rows(14990.0, 50, 1000, 320);
		double		above = zcm_split_rows(15010.0, 50, 1000, 320);

		check_near("sum and normal approximation agree", above / below, 1, 0.05);
	}
}

static void
test_bytes(void)
{
	/*
	 * 1000 rows of 16-byte entries at fillfactor 90: (8192 - 40) * 0.9 /
	 * 20 = 366 a leaf, 3 leaves, one root, one metapage
	 */
	check_near("btree", zcm_btree_bytes(&pg8k, 1000, 16, 90), 5 * 8192, 0);
	check_near("empty btree", zcm_btree_bytes(&pg8k, 0, 16, 90), 2 * 8192, 0);
	check_near("sort in memory", zcm_temp_bytes(1e6, 64e6), 0, 0);
	check_near("sort spills", zcm_temp_bytes(1e9, 64e6), ZCM_TEMP_RATIO * 1e9, 0);
	/* (60 + 70 + 100 + 2 * (64 + 16)) = 390 a row, and two 4000-byte images */
	check_near("incremental WAL", zcm_incremental_wal(10, 100, 2, 16, 2, 4000),
			   3900 + 8000, 1e-9);
	check_near("incremental WAL of nothing",
			   zcm_incremental_wal(0, 100, 2, 16, 2, 4000), 0, 0);
}

static void
test_seconds(void)
{
	check_near("full model grows with rows",
			   zcm_full_seconds(2e6, 2e8, 5e7) - 2 * zcm_full_seconds(1e6, 1e8, 2.5e7),
			   0, 1e-9);
	check_near("incremental model: the fixed cost",
			   zcm_incremental_seconds(0, 0), ZCM_INCREMENTAL_FIXED_SECONDS, 0);
	check_near("incremental model: pages cost more than rows",
			   zcm_incremental_seconds(1000, 1000) - zcm_incremental_seconds(1000, 10) >
			   zcm_incremental_seconds(1000, 10) - zcm_incremental_seconds(10, 10),
			   1, 0);
	/* 2 s for 1000 rows with 0.05 fixed: 1.95 s per 1000 */
	check_near("scaled", zcm_scaled_seconds(2000, 1000, 2, 0.05), 0.05 + 3.9, 1e-9);
	check_near("scaled: the fixed part only",
			   zcm_scaled_seconds(1000, 1000, 0.01, 0.05), 0.05, 1e-12);
	check_near("scaled: no history", zcm_scaled_seconds(1000, 0, 2, 0), -1, 0);
}

int
main(void)
{
	test_pages();
	test_splits();
	test_bytes();
	test_seconds();
	printf("test_costmodel: %d passed, %d failed\n", npassed, nfailed);
	return nfailed > 0;
}
