/*-------------------------------------------------------------------------
 *
 * brin.h
 *	  BRIN management and skipping statistics (brin.c): what the rest of
 *	  zorder calls.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_BRIN_H
#define ZORDER_BRIN_H

#include "postgres.h"

#include "access/attnum.h"

/* Define the zorder.create_brin and zorder.brin_pages_per_range GUCs. */
extern void zorder_brin_init(void);

/*
 * Called by zorder.optimize once the new heap is in place and its layout
 * row is saved: creates a BRIN index on the key columns that no BRIN index
 * covers yet (if zorder.create_brin is on) and records in zorder.layouts
 * the pages_per_range the layout is aligned to.
 */
extern void zorder_brin_after_optimize(Oid relid, int nkeys,
									   const AttrNumber *attnums);

#endif							/* ZORDER_BRIN_H */
