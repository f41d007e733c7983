/*-------------------------------------------------------------------------
 *
 * sorter.h
 *	  External sort of heap tuples by a 64-bit layout key.
 *
 * Tuples are held in memory up to a budget, sorted by radix sort, and
 * spilled as zstd-compressed sorted runs to temporary files (BufFile, so
 * they vanish on error or cancel), then merged.  Equal keys keep their
 * input order.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_SORTER_H
#define ZORDER_SORTER_H

#include "access/htup.h"

typedef struct ZSorter ZSorter;

typedef struct ZSorterStats
{
	int64		ntuples;		/* tuples put */
	int			nruns;			/* runs spilled to disk (0: in memory) */
	int			nmerges;		/* intermediate merge passes */
	int64		raw_bytes;		/* bytes of run data before compression */
	int64		spill_bytes;	/* compressed bytes written to temp files */
} ZSorterStats;

/* work_mem_kb: memory budget in kilobytes (e.g. maintenance_work_mem) */
extern ZSorter *zsorter_begin(int work_mem_kb);

/*
 * Optional hint: about how many bytes of tuples will be put (e.g. the
 * table's size).  Call before the first put.
 */
extern void zsorter_expect(ZSorter *s, double bytes);

/* Copy tup (header, data and t_self) into the sorter under key. */
extern void zsorter_put(ZSorter *s, uint64 key, HeapTuple tup);

extern void zsorter_performsort(ZSorter *s);

/*
 * Next tuple in key order, or NULL at the end.  The tuple, with its
 * original t_self, stays valid until the next call.
 */
extern HeapTuple zsorter_next(ZSorter *s, uint64 *key);

extern void zsorter_stats(ZSorter *s, ZSorterStats *stats);

/* Release memory and temporary files. */
extern void zsorter_end(ZSorter *s);

#endif							/* ZORDER_SORTER_H */
