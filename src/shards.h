/*-------------------------------------------------------------------------
 *
 * shards.h
 *	  A zorder call on every shard of a Citus distributed table, driven
 *	  from the coordinator (shards.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_SHARDS_H
#define ZORDER_SHARDS_H

#include "postgres.h"

/*
 * A command for a shard: before, the shard's name as a quoted literal,
 * what middle gives for the shard (if anything), after.  In parts so that
 * nothing in them is read as a format.
 */
typedef struct ZShardCommand
{
	const char *before;
	const char *after;
	/*
	 * If set, text of this shard's own that goes after its name, given
	 * the shard and the node group that holds it.
	 */
	char	   *(*middle) (int64 shardid, int32 groupid, void *arg);
	void	   *arg;
} ZShardCommand;

/* What a shard's last command returned */
typedef struct ZShardResult
{
	char	   *shard;			/* the shard's qualified name */
	int64		shardid;
	int32		groupid;		/* the node group that holds it */
	char	   *result;
} ZShardResult;

extern int	zorder_shards_run(Oid relid, const char *fname,
							  const ZShardCommand *cmds, int ncmds,
							  const char *verb, ZShardResult **results);

#endif							/* ZORDER_SHARDS_H */
