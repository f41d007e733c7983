/*-------------------------------------------------------------------------
 *
 * planner.h
 *	  The planner support (planner.c): BRIN cost estimates that know the
 *	  layout of the tables zorder lays out.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_PLANNER_H
#define ZORDER_PLANNER_H

#include "postgres.h"

/* From _PG_init: install the planner hook and the cache's callbacks. */
extern void zorder_planner_init(void);

#endif							/* ZORDER_PLANNER_H */
