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

/* The set of a shard's last layout, as the coordinator recorded it */
typedef struct ZShardSet
{
	int64		shardid;
	int32		group;			/* the node group that held the shard */
	int			set_id;			/* the set's id there */
	char	   *doc;			/* the set, as a jsonb document */
} ZShardSet;

extern ZShardSet *zorder_shard_sets_load(Oid relid, int *nsets);
extern int	zorder_shard_sets_record(Oid relid, int nshards,
									 const int64 *shardids,
									 const int32 *groups, char **docs);
extern void zorder_shard_sets_forget(Oid relid);
extern void zorder_shard_sets_forget_dropped(void);

#endif							/* ZORDER_SHARDSETS_H */
