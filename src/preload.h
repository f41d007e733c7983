/*-------------------------------------------------------------------------
 *
 * preload.h
 *	  Whether the library was loaded by shared_preload_libraries (preload.c):
 *	  the planner support (planner.c) is only in every session then.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_PRELOAD_H
#define ZORDER_PRELOAD_H

#include "postgres.h"

/* From _PG_init: remember how the library is being loaded. */
extern void zorder_preload_init(void);

extern bool zorder_preloaded(void);

/* A NOTICE, from fname, that the planner will not see layouts. */
extern void zorder_notice_not_preloaded(const char *fname);

#endif							/* ZORDER_PRELOAD_H */
