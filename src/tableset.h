/*-------------------------------------------------------------------------
 *
 * tableset.h
 *	  One boundary set for a whole Citus distributed table, made on its
 *	  coordinator from a sample of every shard (tableset.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_TABLESET_H
#define ZORDER_TABLESET_H

#include "postgres.h"

#include "utils/relcache.h"

/*
 * Merge the shards' samples (documents of zorder._shard_sample_set, each
 * weighed by its shard's pages) into one set of shell, the distributed
 * table on the coordinator, keyed by attnums, and store it with id.
 */
extern void zorder_table_set_make(Relation shell, int nkeys,
								  const AttrNumber *attnums, int nsamples,
								  char **docs, const double *pages, int id);

/* shell's newest such set, if it fits its keys now; else 0 */
extern int	zorder_table_set_current(Relation shell, int nkeys,
									 const AttrNumber *attnums);

#endif							/* ZORDER_TABLESET_H */
