/*-------------------------------------------------------------------------
 *
 * place.h
 *	  Placing an incremental call's newcomers into the main run (place.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_PLACE_H
#define ZORDER_PLACE_H

#include "batch.h"
#include "collect.h"

/* zorder.placement */
extern bool zorder_placement;
extern void zorder_place_init(void);

extern void zorder_main_run_by_range(Relation rel, IncrState *st,
									 Snapshot snapshot, MemoryContext tmpcxt,
									 bool just_written);
extern void zorder_main_run_ranges_written(Relation rel, int nkeys,
										   const AttrNumber *attnums);
extern int	zorder_place_newcomers(CallState *cs, Candidates *cand,
								   int64 main_rows);

#endif							/* ZORDER_PLACE_H */
