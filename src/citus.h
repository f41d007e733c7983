/*-------------------------------------------------------------------------
 *
 * citus.h
 *	  Tables that Citus distributes: which zorder lays out shard by shard,
 *	  and the refusal of the others (citus.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_CITUS_H
#define ZORDER_CITUS_H

#include "postgres.h"

extern bool zorder_citus_sharded(Oid relid);
extern bool zorder_citus_distributed(Oid relid);
extern void zorder_check_not_citus(Oid relid, const char *fname);

#endif							/* ZORDER_CITUS_H */
