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
extern void zorder_rethrow_if_fatal(ErrorData *edata);

#endif							/* ZORDER_SUBXACT_H */
