/*-------------------------------------------------------------------------
 *
 * fillfactor.h
 *	  A table's fillfactor reloption (fillfactor.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_FILLFACTOR_H
#define ZORDER_FILLFACTOR_H

#include "postgres.h"

extern int	zorder_fillfactor_get(Oid relid);
extern void zorder_fillfactor_set(Oid relid, int ff);

#endif							/* ZORDER_FILLFACTOR_H */
