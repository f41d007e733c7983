/*-------------------------------------------------------------------------
 *
 * placement.c
 *	  Where an incremental call puts a newcomer: the pure decisions (see
 *	  placement.h).
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>

#include "placement.h"

/* rows a call may move in all, per row that arrived since the last call */
#define MOVES_PER_ARRIVAL	5
/* and, for calls with few newcomers, at least this many ranges' worth */
#define SPLIT_RANGES_ALWAYS		2

/*
 * A region's bands, in point filters' reads of a full optimize (see
 * placement.h): more bands cost filters on a recent time, fewer cost
 * filters on the other columns.  In test/bench/upkeep.sh (time), with
 * twice as many bands the first read 1.2 times what a full optimize's do,
 * with as many, the second.
 */
#define REGION_SPAN				1.5

size_t
zp_find_range(const uint64_t *key_lo, size_t n, uint64_t key)
{
	size_t		lo = 0;
	size_t		hi = n;

	/* the first index whose lowest key is above key, in [lo, hi] */
	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (key_lo[mid] <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? 0 : lo - 1;
}

bool
zp_fits(uint64_t room, uint64_t need, uint32_t npages, uint32_t maxrow)
{
	uint64_t	waste = (uint64_t) npages * maxrow;

	return room > waste && need <= room - waste;
}

uint32_t
zp_fill_ways(uint64_t total, uint64_t range_bytes, int fill_pct)
{
	uint64_t	cap;
	uint64_t	ways;

	if (fill_pct < 10)
		fill_pct = 10;
	if (fill_pct > 100)
		fill_pct = 100;
	cap = range_bytes / 100 * (uint64_t) fill_pct;
	if (cap == 0)
		cap = 1;
	ways = (total + cap - 1) / cap;
	if (ways < 1)
		ways = 1;
	if (ways > UINT32_MAX)
		ways = UINT32_MAX;
	return (uint32_t) ways;
}

uint32_t
zp_split_ways(uint64_t total, uint64_t range_bytes, int fill_pct)
{
	uint32_t	ways = zp_fill_ways(total, range_bytes, fill_pct);

	return ways < 2 ? 2 : ways;
}

/*
 * From row *j on, with *acc bytes before it, the first row whose bytes
 * before it reach num / den of total (n if none); *j and *acc move there.
 */
static size_t
share_cut(const uint32_t *len, size_t n, size_t *j, uint64_t *acc,
		  uint64_t total, uint64_t num, uint64_t den)
{
	while (*j < n && *acc * den < total * num)
		*acc += len[(*j)++];
	return *j;
}

static uint64_t
sum_len(const uint32_t *len, size_t n)
{
	uint64_t	total = 0;

	for (size_t j = 0; j < n; j++)
		total += len[j];
	return total;
}

void
zp_split_points(const uint32_t *len, size_t n, uint32_t ways, size_t *start)
{
	uint64_t	total = sum_len(len, n);
	uint64_t	acc = 0;
	size_t		j = 0;

	start[0] = 0;
	for (uint32_t piece = 1; piece < ways; piece++)
		start[piece] = share_cut(len, n, &j, &acc, total, piece, ways);
	start[ways] = n;
}

uint32_t
zp_split_share(uint64_t total, uint64_t range_bytes, int fill_pct,
			   uint32_t tilt)
{
	uint64_t	most;

	if (total == 0)
		return 50;
	most = range_bytes * (uint64_t) fill_pct / total;	/* percent */
	if (most > 100)
		most = 100;
	if (most < 50)
		return 50;
	if (tilt > most)
		return (uint32_t) most;
	if (tilt < 100 - most)
		return (uint32_t) (100 - most);
	return tilt;
}

void
zp_split_two(const uint32_t *len, size_t n, uint32_t first_pct, size_t *start)
{
	uint64_t	acc = 0;
	size_t		j = 0;

	start[0] = 0;
	start[1] = share_cut(len, n, &j, &acc, sum_len(len, n), first_pct, 100);
	start[2] = n;
}

size_t
zp_shift_cut(const uint64_t *key, const uint32_t *len, const bool *is_new,
			 size_t n, int64_t room, int64_t nroom, uint32_t lp,
			 bool at_edge)
{
	return zp_tilted_cut(key, len, is_new, n, room, nroom, room, lp, at_edge,
						 50);
}

size_t
zp_tilted_cut(const uint64_t *key, const uint32_t *len, const bool *is_new,
			  size_t n, int64_t room, int64_t nroom, int64_t room_now,
			  uint32_t lp, bool at_edge, uint32_t stay_pct)
{
	int64_t		stay_new = 0;	/* newcomers' bytes that stay */
	int64_t		freed = 0;		/* own rows' bytes that leave */
	int64_t		moved = 0;		/* every leaving row's bytes */
	size_t		best = n;
	int64_t		best_gap = 0;
	size_t		first_new = n;

	for (size_t j = 0; j < n; j++)
		if (is_new[j])
		{
			stay_new += len[j];
			first_new = j < first_new ? j : first_new;
		}

	/*
	 * Newcomers above the range's rows, as rows arriving in key order come:
	 * the cut below the lowest newcomer moves few rows of the range's, or
	 * none (a B-tree splits its rightmost leaf so), if the other side takes
	 * them.  Rows of the range's above it are those that came to its own
	 * pages by INSERT at the same time as the newcomers; more of them than
	 * newcomers, and the rows do not arrive in key order.
	 */
	if (at_edge && first_new > 0 && first_new < n &&
		key[first_new - 1] != key[first_new])
	{
		int64_t		need = 0;
		size_t		own_above = 0;

		for (size_t j = first_new; j < n; j++)
		{
			need += len[j];
			own_above += !is_new[j];
		}
		if (need <= nroom && own_above * 2 <= n - first_new)
			return first_new;
	}

	/*
	 * Move rows one by one from the top: the range's room grows and the
	 * neighbour's shrinks, so the two cross once.  The rooms compared are
	 * those once the pages the rows left are pruned or vacuumed; the
	 * newcomers that stay must fit room_now, the room there is before that
	 * unless the caller can wait for the prune (which an open snapshot can
	 * hold back).
	 */
	for (size_t c = n; c-- > 0;)
	{
		int64_t		here;
		int64_t		there;
		int64_t		gap;

		if (is_new[c])
			stay_new -= len[c];
		else
			freed += len[c] - lp;
		moved += len[c];
		here = room + freed - stay_new;
		there = nroom - moved;
		if (there < 0)
			break;
		if (c == 0 || key[c - 1] == key[c] || here < 0 ||
			(stay_new > 0 && room_now < stay_new))
			continue;
		gap = here * (int64_t) (100 - stay_pct) - there * (int64_t) stay_pct;
		gap = gap < 0 ? -gap : gap;
		if (best == n || gap < best_gap)
		{
			best = c;
			best_gap = gap;
		}
	}
	return best;
}

uint32_t
zp_split_tilt(uint64_t key)
{
	/* splitmix64's finalizer: nearby keys get unrelated tilts */
	key ^= key >> 30;
	key *= UINT64_C(0xbf58476d1ce4e5b9);
	key ^= key >> 27;
	key *= UINT64_C(0x94d049bb133111eb);
	key ^= key >> 31;
	return 30 + (uint32_t) (key % 41);
}

size_t
zp_split_ahead(const uint64_t *cost, size_t n, uint64_t next_budget)
{
	uint64_t	left = 0;
	size_t		k = 0;

	for (size_t i = 0; i < n; i++)
		left += cost[i];
	while (k < n && left > next_budget)
		left -= cost[k++];
	return k;
}

bool
zp_time_ordered(uint64_t beyond, uint64_t seen)
{
	return beyond > 0 && beyond * 2 > seen;
}

static int
compare_doubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

double
zp_rank_span(double *ranks, size_t n)
{
	if (n == 0)
		return 0.0;
	qsort(ranks, n, sizeof(double), compare_doubles);
	return ranks[n - 1 - (n - 1) / 10] - ranks[(n - 1) / 10];
}

zp_arrivals
zp_key_arrivals(double tail_span, size_t ntail, double base_span, size_t nbase)
{
	if (ntail < ZP_ARRIVALS_ROWS || nbase < ZP_ARRIVALS_ROWS ||
		base_span < ZP_ARRIVALS_LEAST_SPAN)
		return ZP_ARRIVALS_UNKNOWN;
	return tail_span * 2.0 >= base_span ? ZP_ARRIVALS_SPREAD :
		ZP_ARRIVALS_CROWDED;
}

uint32_t
zp_region_bands(uint64_t nranges, int nkeys, uint64_t rows, uint32_t ppr)
{
	double		bands;
	uint64_t	most = rows / (ppr > 0 ? ppr : 1);

	if (nkeys < 2 || most < 2)
		return 1;
	if (nranges < 1)
		nranges = 1;
	bands = floor(REGION_SPAN *
				  pow((double) nranges, (double) (nkeys - 1) / nkeys) + 0.5);
	if (bands < 1)
		return 1;
	if (bands > (double) most)
		bands = (double) most;
	if (bands > ZP_MAX_BANDS)
		return ZP_MAX_BANDS;
	return (uint32_t) bands;
}

uint64_t
zp_split_budget(uint64_t arrived, uint64_t moving, uint64_t range_rows)
{
	uint64_t	all = MOVES_PER_ARRIVAL * arrived;
	uint64_t	per_row = all > moving ? all - moving : 0;
	uint64_t	least = SPLIT_RANGES_ALWAYS * range_rows;

	return per_row > least ? per_row : least;
}
