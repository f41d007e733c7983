/*-------------------------------------------------------------------------
 *
 * brin.h
 *	  BRIN management (brin.c): the BRIN indexes that cover the key columns,
 *	  the choice of pages_per_range, and the index zorder.optimize creates.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_BRIN_H
#define ZORDER_BRIN_H

#include "postgres.h"

#include "access/attnum.h"
#include "access/brin_tuple.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

/* Largest pages_per_range BRIN accepts (reloptions.c). */
#define ZORDER_MAX_PAGES_PER_RANGE 131072

typedef struct BrinIndexInfo
{
	Oid			indexoid;
	int			ppr;
	int			natts;
	AttrNumber	heapattno[INDEX_MAX_KEYS];	/* 0 for an expression */
	bool		minmax[INDEX_MAX_KEYS]; /* default minmax opclass, same
										 * collation as the column */
} BrinIndexInfo;

/* Define the zorder.create_brin and zorder.brin_pages_per_range GUCs. */
extern void zorder_brin_init(void);

/*
 * Called by zorder.optimize once the new heap is in place and its layout
 * row is saved: creates a BRIN index on the key columns that no BRIN index
 * covers yet (if zorder.create_brin is on) and records in zorder.layouts
 * the pages_per_range the layout is aligned to.
 */
extern void zorder_brin_after_optimize(Oid relid, int nkeys,
									   const AttrNumber *attnums);

extern List *zorder_brin_indexes(Relation rel);
extern void zorder_brin_ranges(Relation rel, BlockNumber from, BlockNumber to,
							   bool desummarize, bool summarize);
extern void zorder_brin_summarize_rest(Relation rel);
extern BrinIndexInfo *zorder_brin_covering(List *indexes, AttrNumber attnum,
										   bool want_minmax,
										   AttrNumber *indexattno);

/*
 * Walk the summaries of a BRIN index: fn sees every step-th range, with
 * NULL for a range that every scan reads (no summary, or a placeholder).
 */
typedef void (*ZBrinRangeFn) (void *arg, int64 range,
							  const BrinMemTuple *summary);
extern void zorder_brin_each_range(Relation idx, BlockNumber nblocks,
								   int64 step, ZBrinRangeFn fn, void *arg);
extern double zorder_ideal_ranges(int64 nranges, int nkeys);
extern int	zorder_table_ppr(Relation rel, List *indexes, int nkeys,
							 const AttrNumber *attnums);
extern int	zorder_brin_layout_ppr(List *indexes, int nkeys,
								   const AttrNumber *attnums);

#endif							/* ZORDER_BRIN_H */
