/*-------------------------------------------------------------------------
 *
 * costmodel.h
 *	  The arithmetic of zorder.estimate (estimate.c): from a table's size,
 *	  its rows' width and its layout, what a zorder.optimize call would
 *	  write and how long it would take.
 *
 * Pure C, no PostgreSQL headers, tested alone by test/unit/test_costmodel.c.
 * The constants are the model's, measured on the machines the benchmark
 * (test/bench/estimate.sh) runs on; estimate.c prefers a table's own
 * previous calls for the time where zorder.history has them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_COSTMODEL_H
#define ZORDER_COSTMODEL_H

#include <stdint.h>

/* The page a heap or index is made of, as the server was built. */
typedef struct zcm_page
{
	double		size;			/* BLCKSZ */
	double		header;			/* page header bytes */
	double		item;			/* line pointer bytes per tuple */
	double		max_tuples;		/* MaxHeapTuplesPerPage */
} zcm_page;

/*
 * Rows of tuple_bytes (aligned, header included) that a page filled up to
 * fillfactor percent takes, as the heap's inserts and a rewrite fill it:
 * a tuple goes in while the page keeps 100 - fillfactor percent free.
 * At least one.
 */
extern double zcm_rows_per_page(const zcm_page *pg, double tuple_bytes,
								int fillfactor);

/* Pages that rows at rows_per_page take, whole pages. */
extern double zcm_pages_for_rows(double rows, double rows_per_page);

/*
 * Distinct pages among npages that n rows placed at random over them
 * touch: npages (1 - e^(-n / npages)).  Rows placed by key into the ranges
 * of a layout land on pages as rows drawn from the layout's own rows do.
 */
extern double zcm_spread_pages(double n, double npages);

/*
 * Rows an incremental call moves besides the newcomers: a range whose
 * newcomers do not fit in its room splits, and half its rows move to a
 * new range.  nranges ranges of range_rows rows, each with room for
 * room_rows more; n newcomers spread over them at random (Poisson).
 */
extern double zcm_split_rows(double n, double nranges, double range_rows,
							 double room_rows);

/*
 * Bytes of a btree built from rows entries of entry_bytes (index tuple,
 * aligned), leaves filled to fillfactor percent, plus the inner pages.
 */
extern double zcm_btree_bytes(const zcm_page *pg, double rows,
							  double entry_bytes, int fillfactor);

/*
 * Temporary file bytes of a full rewrite's sort: none while the rows fit
 * in memory (sort_bytes at most mem_bytes); else the rows spill once as
 * zstd-compressed runs, ZCM_TEMP_RATIO of their bytes.
 */
#define ZCM_TEMP_RATIO 0.55
extern double zcm_temp_bytes(double sort_bytes, double mem_bytes);

/*
 * WAL of an incremental call: per moved row a delete and an insert record
 * of its tuple, one index insert record per index, and a full page image
 * of every page it touches for the first time since the last checkpoint
 * (touched: heap and index pages; page_image_bytes: their mean used
 * bytes, as a full page image leaves out the hole in the middle).
 */
extern double zcm_incremental_wal(double rows, double tuple_bytes,
								  int nindexes, double index_entry_bytes,
								  double pages_touched,
								  double page_image_bytes);

/*
 * Seconds of a call by the stated model, when the table has no previous
 * call of the kind to scale from: a full rewrite reads, sorts and writes
 * every row and builds every index; an incremental call pays a fixed cost,
 * then per row it moves and per page it writes rows into (each a page
 * read, changed and logged).
 */
extern double zcm_full_seconds(double rows, double heap_bytes,
							   double index_bytes);
extern double zcm_incremental_seconds(double rows, double pages);

/*
 * Seconds scaled from a previous call of the same kind on the same table
 * that moved prev_rows in prev_seconds: by the rows, with the fixed part
 * of an incremental call (fixed_seconds) kept out of the scaling.
 */
extern double zcm_scaled_seconds(double rows, double prev_rows,
								 double prev_seconds, double fixed_seconds);

#define ZCM_INCREMENTAL_FIXED_SECONDS 0.05

#endif							/* ZORDER_COSTMODEL_H */
