/*-------------------------------------------------------------------------
 *
 * citus.h
 *	  Tables that Citus distributes, which zorder refuses (citus.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_CITUS_H
#define ZORDER_CITUS_H

#include "postgres.h"

extern void zorder_check_not_citus(Oid relid, const char *fname);

#endif							/* ZORDER_CITUS_H */
