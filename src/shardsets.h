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

extern bool zorder_shard_set_where(Oid relid, int64 shardid, int32 *group,
								   int *set_id);
extern char *zorder_shard_set_get(Oid relid, int64 shardid);
extern int	zorder_shard_sets_record(Oid relid, int nshards,
									 const int64 *shardids,
									 const int32 *groups, char **docs);
extern void zorder_shard_sets_forget(Oid relid);
extern void zorder_shard_sets_forget_dropped(void);

#endif							/* ZORDER_SHARDSETS_H */
