/*-------------------------------------------------------------------------
 *
 * incremental.h
 *	  The incremental zorder.optimize: its entry point and its settings.
 *
 * An incremental call is orchestrated by incremental.c over modules that
 * each have their header, lowest first: runs.h (the runs' extents and the
 * state the call shares), collect.h (the rows it collects), regions.h
 * (regions of the key space), mover.h (moving one row), batch.h (bounded
 * batches and the call's state), place.h (placement into the main run).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_INCREMENTAL_H
#define ZORDER_INCREMENTAL_H

/* zorder.merge_threshold, zorder.band_regions */
extern double zorder_merge_threshold;
extern bool zorder_band_regions;
extern void zorder_incremental_init(void);

/* The entry point (incremental.c). */
extern bool zorder_optimize_incremental(Oid relid, const char *curve,
										bool can_commit);

#endif							/* ZORDER_INCREMENTAL_H */
