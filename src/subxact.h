/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  Running a step in a subtransaction so that its error can be weighed
 *	  (subxact.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_SUBXACT_H
#define ZORDER_SUBXACT_H

#include "postgres.h"

typedef void (*ZSubxactFn) (void *arg);

extern ErrorData *zorder_try_in_subxact(ZSubxactFn fn, void *arg);

#endif							/* ZORDER_SUBXACT_H */
