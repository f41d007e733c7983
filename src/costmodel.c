/*-------------------------------------------------------------------------
 *
 * costmodel.c
 *	  The arithmetic of zorder.estimate: pages, bytes and seconds of a
 *	  zorder.optimize call from a few measured figures (see costmodel.h).
 *
 * Pure C: everything here is a function of numbers, so that it can be
 * tested without a server (test/unit/test_costmodel.c).  Where a figure is
 * a property of PostgreSQL's storage (how a page fills, what a full page
 * image holds) the function says which; the per-row and per-byte times are
 * the benchmark's, a stated model for a table with no history.
 *
 *-------------------------------------------------------------------------
 */
#include "costmodel.h"

#include <math.h>

/* Seconds per row and per byte written of a full rewrite, measured. */
#define FULL_SECONDS_PER_ROW 0.6e-6
#define FULL_SECONDS_PER_BYTE 20e-9

/* Seconds per row an incremental call moves and per page it writes. */
#define INCREMENTAL_SECONDS_PER_ROW 20e-6
#define INCREMENTAL_SECONDS_PER_PAGE 100e-6

/*
 * WAL record bytes: a heap delete (record header, block reference and the
 * delete's own fields), a heap insert besides its tuple, and an index
 * insert besides its entry.
 */
#define WAL_DELETE_BYTES 60.0
#define WAL_INSERT_BYTES 70.0
#define WAL_INDEX_INSERT_BYTES 64.0

/* btree pages keep this much special space; its inner pages fill to 70 % */
#define BTREE_SPECIAL_BYTES 16.0
#define BTREE_INNER_FILL 0.70

/* An incremental call moves at most about this many rows per newcomer. */
#define MAX_MOVES_PER_NEWCOMER 5.0

double
zcm_rows_per_page(const zcm_page *pg, double tuple_bytes, int fillfactor)
{
	double		usable = pg->size - pg->header;
	double		keep_free = pg->size * (100 - fillfactor) / 100.0;
	double		rows;

	if (tuple_bytes <= 0)
		return pg->max_tuples;
	/*
	 * The heap takes a tuple while the page's free space, less a line
	 * pointer for it, holds the tuple and keep_free; the first tuple goes
	 * in whatever fillfactor keeps free.
	 */
	rows = floor((usable - keep_free) / (tuple_bytes + pg->item));
	if (rows < 1)
		rows = 1;
	if (rows > pg->max_tuples)
		rows = pg->max_tuples;
	return rows;
}

double
zcm_pages_for_rows(double rows, double rows_per_page)
{
	if (rows <= 0)
		return 0;
	if (rows_per_page < 1)
		rows_per_page = 1;
	return ceil(rows / rows_per_page);
}

double
zcm_spread_pages(double n, double npages)
{
	if (n <= 0)
		return 0;
	if (npages <= 0)
		return 0;
	return npages * -expm1(-n / npages);
}

/* P(X > k) for X of Poisson(lambda) */
static double
poisson_above(double lambda, double k)
{
	double		term;
	double		below = 0;

	if (lambda <= 0)
		return 0;
	if (k < 0)
		return 1;
	if (lambda > 600)
	{
		/* the normal approximation, with a continuity correction */
		return 0.5 * erfc((floor(k) + 0.5 - lambda) / sqrt(2 * lambda));
	}
	term = exp(-lambda);
	for (double i = 0; i <= floor(k); i++)
	{
		if (i > 0)
			term *= lambda / i;
		below += term;
		if (below >= 1)
			return 0;
	}
	return below >= 1 ? 0 : 1 - below;
}

/*
 * A full range first shares the room of a neighbour, so that a range
 * splits only when it and its neighbour together lack room: the pair's
 * newcomers are Poisson(2 lambda) against twice the room.
 */
double
zcm_split_rows(double n, double nranges, double range_rows, double room_rows)
{
	double		lambda;
	double		rows;

	if (n <= 0 || nranges <= 0)
		return 0;
	lambda = n / nranges;
	rows = nranges * poisson_above(2 * lambda, 2 * floor(room_rows)) *
		range_rows / 2;
	if (rows > (MAX_MOVES_PER_NEWCOMER - 1) * n)
		rows = (MAX_MOVES_PER_NEWCOMER - 1) * n;
	return rows;
}

double
zcm_btree_bytes(const zcm_page *pg, double rows, double entry_bytes,
				int fillfactor)
{
	double		usable = pg->size - pg->header - BTREE_SPECIAL_BYTES;
	double		per_leaf = floor(usable * fillfactor / 100.0 /
								 (entry_bytes + pg->item));
	double		per_inner = floor(usable * BTREE_INNER_FILL /
								  (entry_bytes + pg->item));
	double		pages;
	double		level;

	if (rows <= 0)
		return 2 * pg->size;	/* the metapage and an empty root */
	if (per_leaf < 2)
		per_leaf = 2;
	if (per_inner < 2)
		per_inner = 2;
	level = ceil(rows / per_leaf);
	pages = 1 + level;			/* the metapage and the leaves */
	while (level > 1)
	{
		level = ceil(level / per_inner);
		pages += level;
	}
	return pages * pg->size;
}

double
zcm_temp_bytes(double sort_bytes, double mem_bytes)
{
	if (sort_bytes <= mem_bytes)
		return 0;
	return ZCM_TEMP_RATIO * sort_bytes;
}

double
zcm_incremental_wal(double rows, double tuple_bytes, int nindexes,
					double index_entry_bytes, double pages_touched,
					double page_image_bytes)
{
	double		per_row;

	if (rows <= 0)
		return 0;
	per_row = WAL_DELETE_BYTES + WAL_INSERT_BYTES + tuple_bytes +
		nindexes * (WAL_INDEX_INSERT_BYTES + index_entry_bytes);
	return rows * per_row + pages_touched * page_image_bytes;
}

double
zcm_full_seconds(double rows, double heap_bytes, double index_bytes)
{
	return FULL_SECONDS_PER_ROW * rows +
		FULL_SECONDS_PER_BYTE * (heap_bytes + index_bytes);
}

double
zcm_incremental_seconds(double rows, double pages)
{
	return ZCM_INCREMENTAL_FIXED_SECONDS + INCREMENTAL_SECONDS_PER_ROW * rows +
		INCREMENTAL_SECONDS_PER_PAGE * pages;
}

double
zcm_scaled_seconds(double rows, double prev_rows, double prev_seconds,
				   double fixed_seconds)
{
	double		variable = prev_seconds - fixed_seconds;

	if (prev_rows <= 0 || prev_seconds <= 0)
		return -1;
	if (variable < 0)
		variable = 0;
	return fixed_seconds + variable * rows / prev_rows;
}
