/*-------------------------------------------------------------------------
 *
 * test_placement.c
 *	  Unit tests of the placement decisions in placement.c.
 *
 * Plain C, no server: built and run by "make unittest".  Each decision is
 * checked against a slow, obvious version written here, over many random
 * inputs, and on the edges (keys below every range, one range, a full
 * range).
 *
 * The last line printed is "placement: N passed, M failed"; the exit status
 * is non-zero when anything failed.
 *
 *-------------------------------------------------------------------------
 */
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>

static int	n_passed = 0;
static int	n_failed = 0;

#define CHECK(name, cond) \
	do { \
		if (cond) \
			n_passed++; \
		else \
		{ \
			n_failed++; \
			printf("FAIL %s: %s (line %d)\n", name, #cond, __LINE__); \
		} \
	} while (0)

#define CHECK_NEAR(name, got, want, tol) \
	CHECK(name, (got) >= (want) - (tol) && (got) <= (want) + (tol))

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* the range of key by a linear scan */
static size_t
slow_find(const uint64_t *key_lo, size_t n, uint64_t key)
{
	size_t		best = 0;

	for (size_t i = 0; i < n; i++)
		if (key_lo[i] <= key)
			best = i;
	return best;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

static void
test_find_range(void)
{
	uint64_t	keys[200];
	int			bad = 0;

	/* one range takes every key */
	keys[0] = 1000;
	CHECK("find one range, key below", zp_find_range(keys, 1, 5) == 0);
	CHECK("find one range, key above", zp_find_range(keys, 1, UINT64_MAX) == 0);

	for (int round = 0; round < 2000; round++)
	{
		size_t		n = 1 + rnd() % 200;

		for (size_t i = 0; i < n; i++)
			keys[i] = rnd() % 1000;	/* duplicates on purpose */
		qsort(keys, n, sizeof(uint64_t), cmp_u64);
		for (int k = 0; k < 50; k++)
		{
			uint64_t	key = rnd() % 1100;

			if (zp_find_range(keys, n, key) != slow_find(keys, n, key))
				bad++;
		}
		/* every lowest key falls in a range starting with that key */
		for (size_t i = 0; i < n; i++)
			if (keys[zp_find_range(keys, n, keys[i])] != keys[i])
				bad++;
	}
	CHECK("find range against a linear scan", bad == 0);
}

static void
test_fits(void)
{
	CHECK("fits: room for it", zp_fits(8000, 4000, 1, 100));
	CHECK("fits: one row's waste per page", !zp_fits(8000, 7950, 1, 100));
	CHECK("fits: exactly", zp_fits(8000, 7900, 1, 100));
	CHECK("fits: no room", !zp_fits(0, 1, 16, 100));
	CHECK("fits: nothing needed, room", zp_fits(16 * 100 + 1, 0, 16, 100));
	CHECK("fits: waste larger than room", !zp_fits(1000, 10, 16, 100));
}

static void
test_split_ways(void)
{
	int			bad = 0;

	CHECK("split at least two ways", zp_split_ways(10, 1000000, 85) == 2);
	CHECK("split of a full range, fillfactor 85", zp_split_ways(100000, 100000, 85) == 2);
	CHECK("split of a range and as much again", zp_split_ways(200000, 100000, 85) == 3);
	CHECK("fill below 10 % taken as 10 %", zp_split_ways(100000, 100000, 0) == 10);
	for (int round = 0; round < 10000; round++)
	{
		uint64_t	range = 1 + rnd() % 200000;
		uint64_t	total = rnd() % 2000000;
		int			fill = 10 + rnd() % 91;
		uint32_t	ways = zp_split_ways(total, range, fill);
		uint64_t	cap = range / 100 * fill;

		if (cap == 0)
			cap = 1;
		/* each piece fits the cap, and one way fewer would not */
		if (ways < 2 || (uint64_t) ways * cap < total ||
			(ways > 2 && (uint64_t) (ways - 1) * cap >= total))
			bad++;
	}
	CHECK("split ways: enough and no more", bad == 0);
}

static void
test_split_points(void)
{
	uint32_t	len[500];
	size_t		start[12];
	int			bad = 0;

	for (int round = 0; round < 5000; round++)
	{
		size_t		n = rnd() % 500;
		uint32_t	ways = 2 + rnd() % 10;
		uint64_t	total = 0;
		uint32_t	maxlen = 0;

		for (size_t j = 0; j < n; j++)
		{
			len[j] = 1 + rnd() % (round % 2 ? 100 : 8000);
			total += len[j];
			if (len[j] > maxlen)
				maxlen = len[j];
		}
		zp_split_points(len, n, ways, start);
		if (start[0] != 0 || start[ways] != n)
			bad++;
		for (uint32_t p = 0; p < ways; p++)
		{
			uint64_t	bytes = 0;

			if (start[p] > start[p + 1])
			{
				bad++;
				continue;
			}
			for (size_t j = start[p]; j < start[p + 1]; j++)
				bytes += len[j];
			/* a piece's share, give or take one row */
			if (bytes > total / ways + maxlen + 1)
				bad++;
			if (n > 0 && bytes + maxlen + 1 < total / ways)
				bad++;
		}
	}
	CHECK("split points: contiguous, equal shares of bytes", bad == 0);

	/* in two, tilted: the first piece's share, within what fits */
	for (int j = 0; j < 100; j++)
		len[j] = 100;
	zp_split_two(len, 100, 30, start);
	CHECK("split in two: 30 % first", start[0] == 0 && start[1] == 30 &&
		  start[2] == 100);
	zp_split_two(len, 100, 50, start);
	CHECK("split in two: even", start[1] == 50);
	zp_split_two(len, 0, 50, start);
	CHECK("split in two: nothing", start[1] == 0 && start[2] == 0);
	CHECK("split share: the tilt when both pieces fit",
		  zp_split_share(10000, 10000, 100, 30) == 30 &&
		  zp_split_share(10000, 10000, 100, 70) == 70);
	CHECK("split share: no piece above the fillfactor",
		  zp_split_share(14000, 10000, 75, 70) == 53 &&
		  zp_split_share(14000, 10000, 75, 30) == 47);
	CHECK("split share: even when nothing else fits",
		  zp_split_share(20000, 10000, 75, 70) == 50);
}

/* The obvious version of zp_tilted_cut: every cut tried. */
static size_t
slow_shift_cut(const uint64_t *key, const uint32_t *len, const bool *is_new,
			   size_t n, int64_t room, int64_t nroom, int64_t room_now,
			   uint32_t lp, uint32_t pct)
{
	size_t		best = n;
	int64_t		best_gap = 0;

	for (size_t c = n; c-- > 1;)
	{
		int64_t		here = room;
		int64_t		there = nroom;
		int64_t		stay = 0;
		int64_t		gap;

		for (size_t j = 0; j < n; j++)
		{
			if (j >= c)
				there -= len[j];
			if (j < c && is_new[j])
				here -= len[j];
			if (j >= c && !is_new[j])
				here += len[j] - lp;
		}
		/* the newcomers that stay fit the room there is before pruning */
		for (size_t j = 0; j < c; j++)
			if (is_new[j])
				stay += len[j];
		if ((stay > 0 && stay > room_now) || here < 0 || there < 0 ||
			key[c - 1] == key[c])
			continue;
		gap = here * (int64_t) (100 - pct) - there * (int64_t) pct;
		gap = gap < 0 ? -gap : gap;
		if (best == n || gap < best_gap)
		{
			best = c;
			best_gap = gap;
		}
	}
	return best;
}

static void
test_shift_cut(void)
{
	uint64_t	key[300];
	uint32_t	len[300];
	bool		is_new[300];
	int			bad = 0;
	int			found = 0;

	/* ten own rows of 100 bytes and two newcomers (rows 3 and 8) */
	for (int j = 0; j < 12; j++)
	{
		key[j] = j * 10;
		len[j] = 100;
		is_new[j] = (j == 3 || j == 8);
	}
	CHECK("shift: the rooms end even",
		  zp_shift_cut(key, len, is_new, 12, 250, 1000, 4, false) == 7);
	CHECK("shift: no room next door",
		  zp_shift_cut(key, len, is_new, 12, 250, 50, 4, false) == 12);
	CHECK("shift: the newcomers that stay must fit now",
		  zp_shift_cut(key, len, is_new, 12, 150, 300, 4, false) == 12);
	CHECK("shift: a newcomer leaves to make them fit",
		  zp_shift_cut(key, len, is_new, 12, 150, 1000, 4, false) == 7);
	key[6] = key[7];
	CHECK("shift: equal keys stay together",
		  zp_shift_cut(key, len, is_new, 12, 250, 1000, 4, false) == 8);
	CHECK("shift: a range without any room keeps no newcomer",
		  zp_shift_cut(key, len, is_new, 12, -100, 2000, 4, false) == 1);
	CHECK("shift: no room for the newcomers that must stay",
		  zp_shift_cut(key, len, is_new, 12, -100, 700, 4, false) == 12);
	CHECK("shift: nothing to cut",
		  zp_shift_cut(key, len, is_new, 0, 0, 1000, 4, false) == 0);

	for (int round = 0; round < 5000; round++)
	{
		size_t		n = rnd() % 300;
		uint64_t	k = 0;
		int64_t		room = (int64_t) (rnd() % 8000) - 1000;
		int64_t		nroom = (int64_t) (rnd() % 20000) - 1000;
		size_t		c;
		uint32_t	pct;
		int64_t		now;

		for (size_t j = 0; j < n; j++)
		{
			k += rnd() % 3;
			key[j] = k;
			len[j] = 24 + rnd() % 200;
			is_new[j] = rnd() % 4 == 0;
		}
		pct = round % 2 ? 50 : 30 + rnd() % 41;
		now = round % 4 == 2 ? INT64_MAX : room;
		c = round % 2 ? zp_shift_cut(key, len, is_new, n, room, nroom, 4, false) :
			zp_tilted_cut(key, len, is_new, n, room, nroom, now, 4, false, pct);
		if (c != slow_shift_cut(key, len, is_new, n, room, nroom, now, 4, pct))
			bad++;
		if (c < n)
			found++;
	}
	CHECK("shift cut: as trying every cut, tilted or not", bad == 0);
	CHECK("shift cut: random inputs often have one", found > 1000);

	/*
	 * Tilted splits: twenty own rows of 100 bytes, a full range and a new
	 * one; the more room the range keeps, the more rows leave it.  The
	 * tilt of a range is 30 to 70 percent and differs between ranges, so
	 * that ranges filled alike do not all fill up again at once.
	 */
	for (int j = 0; j < 20; j++)
	{
		key[j] = j;
		len[j] = 100;
		is_new[j] = false;
	}
	CHECK("tilt: even as zp_shift_cut at 50",
		  zp_tilted_cut(key, len, is_new, 20, 0, 2000, 0, 0, false, 50) ==
		  zp_shift_cut(key, len, is_new, 20, 0, 2000, 0, false));
	CHECK("tilt: 70 keeps more room than 30",
		  zp_tilted_cut(key, len, is_new, 20, 0, 2000, 0, 0, false, 70) == 6 &&
		  zp_tilted_cut(key, len, is_new, 20, 0, 2000, 0, 0, false, 30) == 14);

	/*
	 * A full range whose newcomers lie all over its keys (rows 2, 9 and
	 * 16 of twenty): while they must fit the room there is now, only a cut
	 * below the lowest one does, moving nearly every row; when they can
	 * wait for the prune, the cut is where the tilt puts it.
	 */
	is_new[2] = is_new[9] = is_new[16] = true;
	CHECK("stay later: they must fit now, most rows move",
		  zp_tilted_cut(key, len, is_new, 20, 0, 2000, 0, 0, true, 50) == 2);
	CHECK("stay later: they wait for the prune, half the rows move",
		  zp_tilted_cut(key, len, is_new, 20, 0, 2000, INT64_MAX, 0, true,
						50) == 9);
	is_new[2] = is_new[9] = is_new[16] = false;
	{
		int			lo = 100;
		int			hi = 0;
		int			distinct = 0;
		bool		seen[101] = {false};

		for (uint64_t k = 0; k < 10000; k++)
		{
			uint32_t	t = zp_split_tilt(k * 1000003);

			lo = t < (uint32_t) lo ? (int) t : lo;
			hi = t > (uint32_t) hi ? (int) t : hi;
			if (t <= 100 && !seen[t])
			{
				seen[t] = true;
				distinct++;
			}
		}
		CHECK("tilt: 30 to 70 percent, every value taken",
			  lo == 30 && hi == 70 && distinct == 41);
		CHECK("tilt: neighbouring keys differ",
			  zp_split_tilt(1000) != zp_split_tilt(1001) ||
			  zp_split_tilt(1001) != zp_split_tilt(1002));
	}

	/* at the edge: ten own rows, then four newcomers above them all */
	for (int j = 0; j < 14; j++)
	{
		key[j] = j * 10;
		len[j] = 100;
		is_new[j] = j >= 10;
	}
	CHECK("edge: the cut between own rows and newcomers",
		  zp_shift_cut(key, len, is_new, 14, 0, 1000, 4, true) == 10);
	CHECK("edge: not asked for, the most even room",
		  zp_shift_cut(key, len, is_new, 14, 0, 1000, 4, false) < 10);
	CHECK("edge: the other side must take them",
		  zp_shift_cut(key, len, is_new, 14, 0, 300, 4, true) != 10);
	is_new[8] = true;
	CHECK("edge: a few own rows above the lowest newcomer move with them",
		  zp_shift_cut(key, len, is_new, 14, 0, 1000, 4, true) == 8);
	is_new[8] = false;
	is_new[3] = true;
	CHECK("edge: more own rows than newcomers above it, no edge",
		  zp_shift_cut(key, len, is_new, 14, 0, 1000, 4, true) ==
		  zp_shift_cut(key, len, is_new, 14, 0, 1000, 4, false));
	is_new[3] = false;
	key[10] = key[9];
	CHECK("edge: never between equal keys",
		  zp_shift_cut(key, len, is_new, 14, 0, 1000, 4, true) != 10);
}

static void
test_budget(void)
{
	CHECK("budget grows with newcomers",
		  zp_split_budget(1000, 1000, 100) < zp_split_budget(2000, 2000, 100));
	CHECK("budget: a bounded constant without newcomers",
		  zp_split_budget(0, 0, 1300) == 2 * 1300);
	CHECK("budget: four rows per newcomer", zp_split_budget(10, 10, 0) == 40);
	CHECK("budget: four rows per newcomer, not more, past the constant",
		  zp_split_budget(10000, 10000, 1300) == 40000);
	CHECK("budget: the constant when few arrived",
		  zp_split_budget(100, 100, 1300) == 2 * 1300);
	CHECK("budget: rows left by earlier calls count against it",
		  zp_split_budget(500, 747, 0) == 5 * 500 - 747);
	CHECK("budget: more left over than five times what arrived",
		  zp_split_budget(100, 600, 0) == 0);
}

static void
test_split_ahead(void)
{
	uint64_t	cost[40];

	for (int i = 0; i < 40; i++)
		cost[i] = 700;
	CHECK("ahead: none when the next call's budget takes them",
		  zp_split_ahead(cost, 20, 14000) == 0);
	CHECK("ahead: the first ones, until the budget takes the rest",
		  zp_split_ahead(cost, 40, 20000) == 12);
	CHECK("ahead: all of them without a budget",
		  zp_split_ahead(cost, 40, 0) == 40);
	CHECK("ahead: nothing predicted", zp_split_ahead(cost, 0, 0) == 0);
	cost[0] = 30000;
	CHECK("ahead: one big one may be enough",
		  zp_split_ahead(cost, 10, 20000) == 1);
}

static void
test_regions(void)
{
	CHECK("fill ways: one range for little", zp_fill_ways(10, 1000000, 85) == 1);
	CHECK("fill ways: enough at the fillfactor",
		  zp_fill_ways(200000, 100000, 85) == 3);
	CHECK("split ways: two at least, as before", zp_split_ways(10, 1000000, 85) == 2);
	CHECK("time-ordered: most newcomers beyond", zp_time_ordered(51, 100));
	CHECK("time-ordered: not half", !zp_time_ordered(50, 100));
	CHECK("time-ordered: none beyond", !zp_time_ordered(0, 0));
	CHECK("bands: two keys, 1.5 times the square root",
		  zp_region_bands(900, 2, 100000, 16) == 45);
	CHECK("bands: a small table", zp_region_bands(16, 2, 100000, 16) == 6);
	CHECK("bands: an empty table", zp_region_bands(0, 2, 100000, 16) == 2);
	CHECK("bands: at most ZP_MAX_BANDS",
		  zp_region_bands(UINT64_MAX / 2, 2, UINT64_MAX, 1) == ZP_MAX_BANDS);
	CHECK("bands: three keys, the 2/3 power",
		  zp_region_bands(1000, 3, 100000, 16) == 150);
	CHECK("bands: one key, one band", zp_region_bands(1000, 1, 100000, 16) == 1);
	CHECK("bands: a row per page of each band's first range",
		  zp_region_bands(900, 2, 1000, 128) == 7);
	CHECK("bands: too few rows for two", zp_region_bands(900, 2, 200, 128) == 1);
}

static void
test_arrivals(void)
{
	double		spread[1000];
	double		top[1000];
	double		band[1000];
	double		few[3] = {0.9, 0.1, 0.5};

	for (int i = 0; i < 1000; i++)
	{
		/* a permutation of evenly spread ranks, out of order */
		spread[i] = ((i * 617) % 1000) / 999.0;
		top[i] = 1.0;
		band[i] = 0.5 + (i % 10) * 0.0001;
	}
	CHECK_NEAR("span: evenly spread, 10th to 90th percentile",
			   zp_rank_span(spread, 1000), 0.8, 0.002);
	CHECK("span: sorted in place", spread[0] == 0.0 && spread[999] == 1.0);
	CHECK_NEAR("span: all above", zp_rank_span(top, 1000), 0.0, 0.0);
	CHECK_NEAR("span: a band", zp_rank_span(band, 1000), 0.0009, 1e-9);
	CHECK_NEAR("span: three", zp_rank_span(few, 3), 0.8, 1e-9);
	CHECK_NEAR("span: none", zp_rank_span(few, 0), 0.0, 0.0);
	CHECK("arrivals: spread as the rows before",
		  zp_key_arrivals(0.8, 500, 0.8, 500) == ZP_ARRIVALS_SPREAD);
	CHECK("arrivals: half the span is spread",
		  zp_key_arrivals(0.4, 500, 0.8, 500) == ZP_ARRIVALS_SPREAD);
	CHECK("arrivals: under half is crowded",
		  zp_key_arrivals(0.39, 500, 0.8, 500) == ZP_ARRIVALS_CROWDED);
	CHECK("arrivals: time-ordered",
		  zp_key_arrivals(0.0, 500, 0.8, 500) == ZP_ARRIVALS_CROWDED);
	CHECK("arrivals: too few latest rows",
		  zp_key_arrivals(0.0, ZP_ARRIVALS_ROWS - 1, 0.8, 500) == ZP_ARRIVALS_UNKNOWN);
	CHECK("arrivals: too few earlier rows",
		  zp_key_arrivals(0.0, 500, 0.8, ZP_ARRIVALS_ROWS - 1) == ZP_ARRIVALS_UNKNOWN);
	CHECK("arrivals: a key of few values tells nothing",
		  zp_key_arrivals(0.0, 500, 0.1, 500) == ZP_ARRIVALS_UNKNOWN);
}

int
main(void)
{
	test_find_range();
	test_fits();
	test_split_ways();
	test_split_points();
	test_shift_cut();
	test_budget();
	test_split_ahead();
	test_regions();
	test_arrivals();
	printf("placement: %d passed, %d failed\n", n_passed, n_failed);
	return n_failed > 0;
}
