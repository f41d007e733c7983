/*-------------------------------------------------------------------------
 *
 * zorder.h
 *	  What every zorder module that uses PostgreSQL shares: a key column
 *	  of a layout.  Each module's own declarations are in its header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_H
#define ZORDER_H

#include "access/htup_details.h"
#include "fmgr.h"
#include "storage/bufpage.h"
#include "storage/lockdefs.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sortsupport.h"

#include "keyenc.h"

/* Most key columns a table can have. */
#define ZORDER_MAX_KEYS 8

/*
 * Comparators that PostgreSQL's fast sort support reduces to an integer
 * comparison of the Datums; bucket search then works on integers.
 */
#define ZCMP_GENERIC	0
#define ZCMP_SIGNED		1
#define ZCMP_INT32		2
#define ZCMP_UNSIGNED	3

/*
 * One key column of a layout: its quantile boundaries, compared with the
 * column's default btree ordering.  A value equal to no boundary is in
 * bucket i, the number of boundaries below it (0 .. nbounds).  A value
 * equal to r boundaries owns the r buckets that start at them, and a seed
 * drawn from the row's buckets on every key column picks one, so that a
 * row's key depends on its values alone (zorder_row_coordinates).  A NULL
 * has no bucket: it takes the last coordinate of the axis, in the cells of
 * the last bucket.
 */
typedef struct ZKeyColumn
{
	AttrNumber	attnum;
	Oid			typid;
	int32		typmod;
	Oid			collid;
	int16		typlen;
	bool		typbyval;
	SortSupportData ssup;
	int			cmpkind;		/* ZCMP_*: how bucket search compares */
	int			nbounds;
	Datum	   *bounds;
	/* set up by zorder_prepare_bounds, in the context of bounds: */
	int			coord_bits;
	uint32	   *coord;			/* coordinate of each bucket 0 .. nbounds */
	uint64	   *ubounds;		/* integer kinds: bounds as ordered uint64 */
	ZkBoundTable btable;		/* ... and their slice table */
} ZKeyColumn;

/*
 * Growable arrays: ZORDER_RESERVE(arr, max, need, min, cxt) makes arr,
 * which has room for max elements, hold at least need, doubling (at least
 * min), the first allocation in cxt and later ones in arr's own context.
 * Arrays may pass 1 GB (a call's candidates on a large table).
 */
static inline void *
zorder_grow_array(void *array, Size elem, Size need, Size max, Size min,
				  MemoryContext cxt, Size *newmax)
{
	Size		n = Max(Max(need, min), max * 2);

	*newmax = n;
	if (array == NULL)
		return MemoryContextAllocHuge(cxt, elem * n);
	return repalloc_huge(array, elem * n);
}

#define ZORDER_RESERVE(arr, max, need, min, cxt) \
	do { \
		if ((Size) (need) > (Size) (max)) \
		{ \
			Size		newmax_; \
			(arr) = zorder_grow_array((arr), sizeof(*(arr)), (need), (max), \
									  (min), (cxt), &newmax_); \
			(max) = newmax_; \
		} \
	} while (0)

#endif							/* ZORDER_H */
