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
 * A shard of the table, as shards.c found it, and what its commands did
 */
typedef struct ZShard
{
	char	   *name;			/* schema-qualified, quoted */
	int64		shardid;
	int32		groupid;		/* the node group that holds it */
	char	   *node;			/* the node's address, for shards.c alone */
	int			port;
	char	   *probe;			/* what its node answered to the probe */
	bool		failed;
	char	   *result;			/* what its last command returned */
} ZShard;

/*
 * A call on every shard: what the caller gives, then what it gets back.
 * command gives the text of step 0, 1, ... nsteps-1 for a shard (NULL: the
 * step is skipped on that shard); probe, if set, is a query run once on
 * each node first, whose answer the commands may read.
 */
typedef struct ZShardCall
{
	const char *fname;			/* the public call, for messages */
	const char *verb;			/* if set, a NOTICE per shard done */
	const char *probe;
	int			nsteps;
	char	   *(*command) (const ZShard *shard, int step, void *arg);
	void	   *arg;

	/* filled by zorder_shards_run, in the caller's memory context */
	char	   *relname;		/* the table's name, for messages */
	int			nshards;
	ZShard	   *shards;
	int			nfailed;
	char	   *first_error;	/* the first failure: the node's message */
	char	   *first_shard;	/* and on which shard */
} ZShardCall;

extern void zorder_shards_run(Oid relid, ZShardCall *call);
extern void zorder_shards_check(const ZShardCall *call);
extern char *zorder_shard_command_around(const ZShard *shard, int step,
										 void *arg);

#endif							/* ZORDER_SHARDS_H */
