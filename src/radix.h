/*-------------------------------------------------------------------------
 *
 * radix.h
 *	  Stable LSD radix sort of (64-bit key, payload) pairs.
 *
 * Pure C, tested alone by test/unit/test_radix.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_RADIX_H
#define ZORDER_RADIX_H

#include <stddef.h>
#include <stdint.h>

typedef struct zr_item
{
	uint64_t	key;
	uint64_t	val;			/* payload: an index or a pointer */
} zr_item;

/*
 * Sort items[0..n) by key, ascending, keeping the input order of equal keys.
 * tmp must have room for n items.  Byte positions that are equal in every
 * key are skipped, so narrow or clustered keys cost fewer passes.
 */
extern void zr_sort(zr_item *items, zr_item *tmp, size_t n);

/* qsort and bsearch comparator of plain 64-bit unsigned integers */
extern int	zr_cmp_u64(const void *a, const void *b);

#endif							/* ZORDER_RADIX_H */
