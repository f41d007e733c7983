/*-------------------------------------------------------------------------
 *
 * test_radix.c
 *	  Unit tests of the stable radix sort (src/radix.c).
 *
 * Every case is checked against qsort on (key, input position): that
 * order is the only sorted order that is also stable, so equality with it
 * proves both properties at once.
 *
 *-------------------------------------------------------------------------
 */
#include "radix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	npassed = 0;
static int	nfailed = 0;

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

/* splitmix64: deterministic, so a failure reproduces */
static uint64_t
rnd(void)
{
	uint64_t	z = (rng_state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static int
cmp_key_then_pos(const void *a, const void *b)
{
	const zr_item *x = a;
	const zr_item *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->val != y->val)
		return x->val < y->val ? -1 : 1;
	return 0;
}

/*
 * Sort keys[0..n) both ways and compare.  val carries the input position
 * (scrambled, so a sort that ignored it still could not match by luck).
 */
static void
check(const char *name, const uint64_t *keys, size_t n)
{
	zr_item    *items = malloc((n + 1) * sizeof(zr_item));
	zr_item    *tmp = malloc((n + 1) * sizeof(zr_item));
	zr_item    *ref = malloc((n + 1) * sizeof(zr_item));
	size_t		i;
	int			ok = 1;

	if (!items || !tmp || !ref)
	{
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	for (i = 0; i < n; i++)
	{
		items[i].key = keys[i];
		items[i].val = (uint64_t) i * 1000003u;
	}
	memcpy(ref, items, n * sizeof(zr_item));
	qsort(ref, n, sizeof(zr_item), cmp_key_then_pos);

	zr_sort(items, tmp, n);

	for (i = 0; i < n; i++)
	{
		if (items[i].key != ref[i].key || items[i].val != ref[i].val)
		{
			fprintf(stderr, "FAIL %s (n=%zu): position %zu has key %llx val %llu, expected key %llx val %llu\n",
					name, n, i,
					(unsigned long long) items[i].key,
					(unsigned long long) items[i].val,
					(unsigned long long) ref[i].key,
					(unsigned long long) ref[i].val);
			ok = 0;
			break;
		}
	}
	if (ok)
		npassed++;
	else
		nfailed++;
	free(items);
	free(tmp);
	free(ref);
}

typedef enum
{
	GEN_RANDOM,
	GEN_EQUAL,
	GEN_FEW,
	GEN_SORTED,
	GEN_REVERSE,
	GEN_TOP_BYTE,
	GEN_LOW_BYTE,
	GEN_MIDDLE_BYTES,
	GEN_NARROW,
	GEN_EXTREMES
} Gen;

static const char *gen_names[] = {
	"random", "all-equal", "few-distinct", "sorted", "reverse",
	"top-byte-only", "low-byte-only", "middle-bytes", "narrow-20-bit",
	"extremes"
};

static void
generate(Gen g, uint64_t *keys, size_t n)
{
	size_t		i;
	uint64_t	base = rnd();

	for (i = 0; i < n; i++)
	{
		switch (g)
		{
			case GEN_RANDOM:
				keys[i] = rnd();
				break;
			case GEN_EQUAL:
				keys[i] = base;
				break;
			case GEN_FEW:
				/* 5 values spread over all bytes: long runs of ties */
				keys[i] = (base ^ (rnd() % 5) * 0x0101010101010101ULL);
				break;
			case GEN_SORTED:
				keys[i] = (uint64_t) i * 7919 + (base >> 8);
				break;
			case GEN_REVERSE:
				keys[i] = ~((uint64_t) i * 7919);
				break;
			case GEN_TOP_BYTE:
				keys[i] = (base & 0x00FFFFFFFFFFFFFFULL) | (rnd() << 56);
				break;
			case GEN_LOW_BYTE:
				keys[i] = (base & ~0xFFULL) | (rnd() & 0xFF);
				break;
			case GEN_MIDDLE_BYTES:
				keys[i] = (base & 0xFF00000000FFFFFFULL) |
					(rnd() & 0x00FFFFFFFF000000ULL);
				break;
			case GEN_NARROW:
				keys[i] = rnd() & 0xFFFFF;
				break;
			case GEN_EXTREMES:
				keys[i] = (rnd() & 1) ? UINT64_MAX : 0;
				break;
		}
	}
}

int
main(void)
{
	static const size_t sizes[] = {0, 1, 2, 3, 10, 47, 48, 49, 255, 256, 257,
	1000, 65537, 1000000};
	size_t		maxn = 1000000;
	uint64_t   *keys = malloc(maxn * sizeof(uint64_t) + 1);
	size_t		s;
	int			g;

	if (!keys)
		return 2;

	for (g = GEN_RANDOM; g <= GEN_EXTREMES; g++)
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		{
			generate((Gen) g, keys, sizes[s]);
			check(gen_names[g], keys, sizes[s]);
		}

	/* n = 2 in both orders and tied: the smallest cases spelled out */
	{
		uint64_t	k[2];

		k[0] = 2;
		k[1] = 1;
		check("pair-swapped", k, 2);
		k[0] = 1;
		k[1] = 2;
		check("pair-ordered", k, 2);
		k[0] = 5;
		k[1] = 5;
		check("pair-tied", k, 2);
	}

	/* large, skewed: most keys tied, some random */
	{
		size_t		n = 1000000;
		size_t		i;

		for (i = 0; i < n; i++)
			keys[i] = (rnd() % 10 == 0) ? rnd() : 42;
		check("skewed-large", keys, n);
	}

	/*
	 * zr_cmp_u64 orders the whole unsigned range: a comparator written as
	 * a subtraction would call 0 greater than 2^63.
	 */
	{
		uint64_t	v[] = {UINT64_MAX, 0, (uint64_t) 1 << 63, 7, 7, 1};
		uint64_t	want[] = {0, 1, 7, 7, (uint64_t) 1 << 63, UINT64_MAX};
		int			ok = 1;
		size_t		i;

		qsort(v, 6, sizeof(uint64_t), zr_cmp_u64);
		for (i = 0; i < 6; i++)
			ok &= v[i] == want[i];
		ok &= zr_cmp_u64(&v[2], &v[3]) == 0;
		if (ok)
			npassed++;
		else
		{
			nfailed++;
			printf("FAIL zr_cmp_u64 orders unsigned 64-bit values\n");
		}
	}

	free(keys);
	printf("radix: %d passed, %d failed\n", npassed, nfailed);
	return nfailed == 0 ? 0 : 1;
}
