/*-------------------------------------------------------------------------
 *
 * shardsets.h
 *	  On a Citus coordinator, the boundary set of each shard's last layout
 *	  (shardsets.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_SHARDSETS_H
#define ZORDER_SHARDSETS_H

#include "postgres.h"

extern char *zorder_shard_set_get(Oid relid, int64 shardid);
extern void zorder_shard_sets_record(Oid relid, int nshards,
									 const int64 *shardids, char **docs);
extern void zorder_shard_sets_forget(Oid relid);
extern void zorder_shard_sets_forget_dropped(void);

#endif							/* ZORDER_SHARDSETS_H */
