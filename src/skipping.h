/*-------------------------------------------------------------------------
 *
 * skipping.h
 *	  What skipping.c, which measures how well a layout serves skipping,
 *	  gives other modules: the rows outside a table's sorted runs, and the
 *	  ranges point filters read for a call's report.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_SKIPPING_H
#define ZORDER_SKIPPING_H

#include "postgres.h"

#include "storage/block.h"
#include "utils/rel.h"

extern bool zorder_count_outside_runs(Relation rel, BlockNumber nblocks,
									  int64 *inside, int64 *outside,
									  BlockNumber *outside_pages);

extern void zorder_report_point_ranges(Relation rel, int nkeys,
									   const AttrNumber *attnums,
									   double *mean);

#endif							/* ZORDER_SKIPPING_H */
