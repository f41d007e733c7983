/*-------------------------------------------------------------------------
 *
 * quantile.h
 *	  Quantile boundaries and coordinates of key columns (quantile.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_QUANTILE_H
#define ZORDER_QUANTILE_H

#include "zorder.h"

/* Rows sampled to choose quantile boundaries, from at most so many blocks. */
#define ZORDER_SAMPLE_ROWS 100000
#define ZORDER_SAMPLE_BLOCKS 10000

extern void zorder_prepare_key_column(Relation rel, AttrNumber attnum,
									  ZKeyColumn *col);
extern void zorder_prepare_key_type(Oid typid, int32 typmod, Oid collid,
									const char *colname, ZKeyColumn *col);
extern int	zorder_max_buckets(int nkeys, int bits);
/*
 * A reservoir sample of a table's rows, as optimize draws it: take() keeps
 * what it needs of each row that wins a slot.
 */
typedef void (*ZSampleTake) (void *arg, int slot, HeapTuple tuple,
							 BlockNumber block);
extern int	zorder_sample_rows(Relation rel, int targrows, ZSampleTake take,
							   void *arg, double *seen,
							   BlockNumber *nblocks_read);
extern int	zorder_sample_bounds(Relation rel, int nkeys, ZKeyColumn *cols,
								 int bits, int targrows);
extern void zorder_bounds_from_sorted(ZKeyColumn *col, Datum *sorted, int m,
									  int nkeys, int bits, MemoryContext cxt);
extern void zorder_prepare_bounds(ZKeyColumn *col, int bits);
extern void zorder_row_coordinates(ZKeyColumn *cols, int nkeys,
								   const Datum *values, const bool *isnull,
								   int bits, uint32 *coords);
extern Datum zorder_bounds_to_bytea(ZKeyColumn *col);
extern bool zorder_bounds_from_bytea(ZKeyColumn *col, bytea *stored);
extern bool zorder_bounds_read_back(ZKeyColumn *col, bytea *stored,
									bool check_type);
extern Datum zorder_bounds_encode(ZKeyColumn *col, bool text_form);
extern bool zorder_bounds_decode(ZKeyColumn *col, bytea *stored,
								 bool check_type);
extern uint64 zorder_ordered_u64(const ZKeyColumn *col, Datum value);
extern void zorder_bucket_span(const ZKeyColumn *col, uint64 lo, uint64 hi,
							   uint32 *first, uint32 *last);
extern Datum zorder_copy_value(ZKeyColumn *col, Datum value);

/*
 * Sorted arrays of values (BRIN summaries' minima and maxima, for the
 * reports and the planner): qsort_arg's comparator, with the SortSupport
 * as its argument, and how many of sorted[0..n) are below v (or at most v
 * with or_equal).
 */
extern int	zorder_cmp_datums(const void *a, const void *b, void *ssup);
extern int64 zorder_count_below(SortSupport ssup, const Datum *sorted,
								int64 n, Datum v, bool or_equal);

#endif							/* ZORDER_QUANTILE_H */
