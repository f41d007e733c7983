/*-------------------------------------------------------------------------
 *
 * regions.h
 *	  Regions of the key space for time-ordered keys (regions.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_REGIONS_H
#define ZORDER_REGIONS_H

#include "incremental.h"

extern void zorder_regions_see(IncrState *st, const Datum *values,
							   const bool *nulls, bool newcomer);
extern bool zorder_regions_open(IncrState *st);
extern void zorder_regions_raise_tops(IncrState *st);

#endif							/* ZORDER_REGIONS_H */
