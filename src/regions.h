/*-------------------------------------------------------------------------
 *
 * regions.h
 *	  Regions of the key space for time-ordered keys and for narrow bands
 *	  of values that new rows crowd into (regions.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_REGIONS_H
#define ZORDER_REGIONS_H

#include "runs.h"

/* newcomers sampled for bands of values (IncrState.sample) */
#define ZR_SAMPLE	4096

/* A narrow band of values of one key column that newcomers crowd into. */
typedef struct ZBand
{
	int			k;				/* the key column */
	uint64		lo;				/* values in (lo, hi], zorder_ordered_u64's */
	uint64		hi;
	uint32		first;			/* the buckets they fall in */
	uint32		last;
	double		newcomers;		/* of this call's, about */
} ZBand;

extern void zorder_regions_see(IncrState *st, const Datum *values,
							   const bool *nulls, bool newcomer, bool region0);
extern bool zorder_regions_open(IncrState *st);
extern bool zorder_regions_find_band(IncrState *st, ZBand *band);
extern int	zorder_regions_band_extents(IncrState *st, const ZBand *band,
										int **extents);
extern bool zorder_regions_open_band(IncrState *st, const ZBand *band,
									 int64 laid_out);
extern void zorder_regions_raise_tops(IncrState *st);

#endif							/* ZORDER_REGIONS_H */
