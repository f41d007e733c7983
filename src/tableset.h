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

#include "layout.h"

/*
 * Merge the shards' samples (documents of zorder._shard_sample_set for
 * curve, each weighed by its shard's pages; NULL for none) into one set of
 * shell, the distributed table on the coordinator, keyed by attnums, and
 * store it: returns its id.
 */
extern int	zorder_table_set_make(Relation shell, int nkeys,
								  const AttrNumber *attnums, int nsamples,
								  char **docs, const double *pages,
								  ZCurve curve);

/*
 * shell's newest such set, if it fits its keys now, else 0; *curve is
 * its curve if it has one.
 */
extern int	zorder_table_set_current(Relation shell, int nkeys,
									 const AttrNumber *attnums,
									 ZCurve *curve);

#endif							/* ZORDER_TABLESET_H */
