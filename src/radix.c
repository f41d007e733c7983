/*-------------------------------------------------------------------------
 *
 * radix.c
 *	  Stable LSD radix sort of (64-bit key, payload) pairs.
 *
 * The external sorter orders its in-memory tuples with this before it
 * writes a run or hands them out.  Keys are plain unsigned integers, so a
 * byte-wise least-significant-digit sort beats any comparison sort and is
 * stable for free, which is what keeps equal keys in input order.
 *
 * One read of the keys builds the histograms of all eight byte positions;
 * a position whose histogram has a single bucket holding every key does
 * not change the order and costs no pass.  Curve keys of a few columns or
 * of a clustered range often leave several such positions.
 *
 * Pure C, no PostgreSQL headers: tested alone by test/unit/test_radix.c.
 *
 *-------------------------------------------------------------------------
 */
#include "radix.h"

#include <string.h>

#define RADIX_BYTES		8
#define RADIX_BUCKETS	256

/*
 * Below this size, the histogram set-up (8 x 256 counters) costs more than
 * the sort itself.
 */
#define RADIX_SMALL		48

/* Stable insertion sort for short inputs. */
static void
insertion_sort(zr_item *items, size_t n)
{
	size_t		i;

	for (i = 1; i < n; i++)
	{
		zr_item		cur = items[i];
		size_t		j = i;

		/* strictly greater: equal keys never move past each other */
		while (j > 0 && items[j - 1].key > cur.key)
		{
			items[j] = items[j - 1];
			j--;
		}
		items[j] = cur;
	}
}

void
zr_sort(zr_item *items, zr_item *tmp, size_t n)
{
	size_t		counts[RADIX_BYTES][RADIX_BUCKETS];
	int			passes[RADIX_BYTES];
	int			npasses = 0;
	zr_item    *src = items;
	zr_item    *dst = tmp;
	size_t		i;
	int			b;
	int			p;

	if (n < RADIX_SMALL)
	{
		insertion_sort(items, n);
		return;
	}

	memset(counts, 0, sizeof(counts));
	for (i = 0; i < n; i++)
	{
		uint64_t	k = items[i].key;

		counts[0][k & 0xFF]++;
		counts[1][(k >> 8) & 0xFF]++;
		counts[2][(k >> 16) & 0xFF]++;
		counts[3][(k >> 24) & 0xFF]++;
		counts[4][(k >> 32) & 0xFF]++;
		counts[5][(k >> 40) & 0xFF]++;
		counts[6][(k >> 48) & 0xFF]++;
		counts[7][k >> 56]++;
	}

	/*
	 * A byte that is the same in every key leaves all keys in one bucket;
	 * the first key's byte is that bucket if any is.
	 */
	for (b = 0; b < RADIX_BYTES; b++)
	{
		unsigned	first = (unsigned) ((items[0].key >> (8 * b)) & 0xFF);

		if (counts[b][first] != n)
			passes[npasses++] = b;
	}

	for (p = 0; p < npasses; p++)
	{
		int			shift = 8 * passes[p];
		size_t	   *cnt = counts[passes[p]];
		size_t		offsets[RADIX_BUCKETS];
		size_t		sum = 0;
		zr_item    *swap;
		int			d;

		for (d = 0; d < RADIX_BUCKETS; d++)
		{
			offsets[d] = sum;
			sum += cnt[d];
		}
		for (i = 0; i < n; i++)
		{
			unsigned	digit = (unsigned) ((src[i].key >> shift) & 0xFF);

			dst[offsets[digit]++] = src[i];
		}
		swap = src;
		src = dst;
		dst = swap;
	}

	/* after an odd number of passes the result sits in tmp */
	if (src != items)
		memcpy(items, src, n * sizeof(zr_item));
}

int
zr_cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}
