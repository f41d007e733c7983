/*-------------------------------------------------------------------------
 *
 * autokeys.h
 *	  Automatic keys (autokeys.c): zorder.cluster_by_auto, and the weighing
 *	  of a table's automatic keys before a zorder.optimize call.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_AUTOKEYS_H
#define ZORDER_AUTOKEYS_H

#include "postgres.h"

extern void zorder_autokeys_init(void);
extern void zorder_autokeys_before_call(Oid relid);

#endif							/* ZORDER_AUTOKEYS_H */
