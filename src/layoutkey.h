/*-------------------------------------------------------------------------
 *
 * layoutkey.h
 *	  Boundary sets and the layout key (layoutkey.c): what the rest of
 *	  zorder calls.  layoutkey.c owns zorder.boundary_sets; layouts and
 *	  runs it records through layout.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_LAYOUTKEY_H
#define ZORDER_LAYOUTKEY_H

#include "layout.h"
#include "zorder.h"

/*
 * Store the boundaries of cols (a layout of relid) as a new boundary set and
 * return its id.  origin is "optimize" or "prepare".
 */
extern int	zorder_save_boundary_set(Oid relid, int nkeys, ZKeyColumn *cols,
									 ZCurve curve, int bits, int sample_rows,
									 const char *origin);

/*
 * Before an incremental zorder.optimize: if relid has a prepared boundary
 * set newer than its layout, check in one scan whether its heap is in that
 * set's key order (an external rewrite: pg_repack, CLUSTER, REPACK) and,
 * if so, record it as one sorted run of a layout with that set.
 */
extern void zorder_recognize_layout(Oid relid);

#endif							/* ZORDER_LAYOUTKEY_H */
