/*-------------------------------------------------------------------------
 *
 * layout.h
 *	  A table's layout and its catalog (layout.c): the curve, and every
 *	  read and write of zorder.layouts, zorder.runs (the sorted runs) and
 *	  zorder.history.  The declared keys (zorder.tables) are catalog.h's,
 *	  the boundary sets (zorder.boundary_sets) layoutkey.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_LAYOUT_H
#define ZORDER_LAYOUT_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "utils/array.h"

#include "keyenc.h"
#include "zorder.h"

typedef enum ZCurve
{
	ZCURVE_HILBERT,
	ZCURVE_Z
} ZCurve;

/* The 64-bit curve key of a row's coordinates, bits per coordinate. */
static inline uint64
zorder_curve_key(ZCurve curve, int nkeys, int bits, const uint32 *coords)
{
	if (curve == ZCURVE_HILBERT)
		return zk_hilbert64(nkeys, bits, coords);
	return zk_morton64(nkeys, bits, coords);
}

/* A curve's name, as the catalog and the SQL functions spell it. */
static inline const char *
zorder_curve_name(ZCurve curve)
{
	return curve == ZCURVE_HILBERT ? "hilbert" : "z";
}

extern int	zorder_curve_bits(int nkeys);
extern ZCurve zorder_parse_curve(const char *name);
extern void zorder_tuple_coordinates(ZKeyColumn *cols,
									 const AttrNumber *attnums, int nkeys,
									 int bits, TupleDesc desc,
									 HeapTuple tuple, uint32 *coords);
extern uint64 zorder_tuple_key(ZKeyColumn *cols, const AttrNumber *attnums,
							   int nkeys, ZCurve curve, int bits,
							   TupleDesc desc, HeapTuple tuple);

/*
 * A layout as incremental calls work from it: the key columns with their
 * boundaries, the curve, the BRIN ranges its runs are made of, and where a
 * merge into the main run goes on.
 */
typedef struct ZLayout
{
	int			nkeys;
	ZKeyColumn	cols[ZORDER_MAX_KEYS];
	ZCurve		curve;
	int			bits;
	int			ppr;			/* BRIN pages per range, at least 1 */
	bool		merging;		/* a merge into the main run is under way */
	uint64		cursor;			/* its next slice starts at this key */

	/*
	 * Time-ordered keys (regions.c): per key column of an integer kind, the
	 * highest value of the rows laid out so far (zorder_ordered_u64), if
	 * known; and the regions of the key space after the first, each for
	 * the rows beyond its start on one key column, in bands of the others.
	 * With regions, keys are zk_region_key's.
	 */
	bool		has_top[ZORDER_MAX_KEYS];
	uint64		top[ZORDER_MAX_KEYS];
	int			nregions;
	int16		region_key[ZK_REGION_MAX];	/* key position, from 0 */
	uint32		region_bands[ZK_REGION_MAX];	/* zk_region_row_key's */
	uint64		region_start[ZK_REGION_MAX];

	/*
	 * The highest value a region holds: UINT64_MAX for one of the rows
	 * beyond its start (time-ordered keys), else the end of a narrow band
	 * of values within the layout's that new rows crowd into (regions.c).
	 */
	uint64		region_end[ZK_REGION_MAX];
} ZLayout;

extern uint64 zorder_layout_key_of(ZLayout *lay, const Datum *values,
								   const bool *nulls);
extern int	zorder_region_of_row(const ZLayout *lay, const Datum *values,
								 const bool *nulls);

/*
 * The zone of a key, told by its lowest key: 0 without regions or in
 * region 0, else the first key of its region's band (zk_region_band).
 * Placement never lets a range hold keys of two zones, so that each range
 * of a region is a stretch of time in one band.
 */
static inline uint64
zorder_key_zone(const ZLayout *lay, uint64 key)
{
	unsigned	r;
	uint32		bands;

	if (lay->nregions == 0 || (r = zk_region_of(key)) == 0 ||
		r > (unsigned) lay->nregions)
		return 0;
	bands = lay->region_bands[r - 1];
	return zk_region_band(key, bands) <<
		(64 - ZK_REGION_BITS - zk_region_band_width(bands));
}

/* One extent of a sorted run as the catalog records it. */
typedef struct ZRunExtent
{
	BlockNumber first_block;
	BlockNumber nblocks;
	int64		rows;
	TransactionId xid;			/* rows with a newer xmin came later */
	int			run;			/* 0: the main run; cubes: newer ones higher */
	uint64		key_lo;			/* main run: where its keys start */
} ZRunExtent;

/* What a full rewrite did, recorded with the layout it wrote. */
typedef struct ZRewriteRecord
{
	int			sample_rows;	/* rows the boundaries were sampled from */
	int64		rows;			/* rows written */
	BlockNumber pages;
	TimestampTz started;
	int			sort_runs;		/* runs the sort spilled */
	int64		temp_bytes;		/* ... and their compressed bytes */
	const bool *has_top;		/* per key: the highest value is known */
	const uint64 *top;			/* ... and is this (zorder_ordered_u64) */
} ZRewriteRecord;

/* Layouts */
extern bool zorder_layout_load(Relation rel, int nkeys,
							   const AttrNumber *attnums, const char *curve,
							   ZLayout *lay);
extern bool zorder_layout_exists(Oid relid);
extern bool zorder_layout_exists_read(Oid relid);
extern int	zorder_layout_boundary_set(Oid relid);
extern int	zorder_layout_resample(Relation rel, int nkeys,
								   const AttrNumber *attnums,
								   const char *curve, ZLayout *lay);
extern void zorder_layout_save_full(Oid relid, int nkeys, ZKeyColumn *cols,
									ZCurve curve, int bits,
									const ZRewriteRecord *rec);
extern void zorder_layout_save_regions(Oid relid, const ZLayout *lay);
extern void zorder_layout_save_recognized(Relation rel, int nkeys,
										  const AttrNumber *attnums,
										  ZKeyColumn *cols, ZCurve curve,
										  int bits, int set_id, int64 rows,
										  BlockNumber pages,
										  TimestampTz started);
extern void zorder_layout_set_written(Oid relid, int64 rows,
									  BlockNumber pages);
extern const char *zorder_layout_curve(Oid relid);
extern BlockNumber zorder_layout_pages_per_range(Oid relid);
extern bool zorder_layout_merging(Oid relid);
extern void zorder_layout_set_pages_per_range(Oid relid, int ppr);
extern void zorder_layout_set_boundary_set(Oid relid, int id);
extern bool zorder_layout_set_to_check(Relation rel, int *id, bool *prepared,
									   bool *restored, bool *copied);
extern void zorder_layout_set_checked(Relation rel, int id);
extern ArrayType *zorder_layout_misplaced(Relation rel);
extern void zorder_layout_set_misplaced(Oid relid, Datum *tids, int ntids);
extern XLogRecPtr zorder_layout_scan_lsn(Relation rel);
extern void zorder_layout_set_scan_lsn(Oid relid, XLogRecPtr lsn);
extern int64 *zorder_layout_loose_ranges(Oid relid, int *n);
extern void zorder_layout_set_loose_ranges(Oid relid, const BlockNumber *blocks,
										   int n);
extern void zorder_layout_info(Oid relid, Datum *curve, bool *curve_null,
							   Datum *optimized_at, bool *optimized_null,
							   Datum *nruns, bool *runs_null);

/* Sorted runs */
extern int	zorder_runs_load(Oid relid, ZRunExtent **extents);
extern int64 zorder_runs_save(Oid relid, const ZRunExtent *extents, int n,
							  bool merging, uint64 cursor);
extern void zorder_runs_set_main(Oid relid, BlockNumber nblocks, int64 rows,
								 TransactionId xid);
extern bool zorder_runs_unchanged(Oid relid, TransactionId xid,
								  int64 nextents);
extern void zorder_runs_forget(Oid relid);
extern void zorder_record_runs_filenode(Oid relid);
extern bool zorder_forget_stale_runs(Relation rel);
extern bool zorder_forget_runs_if_rewritten(Relation rel);
extern bool zorder_runs_current(Relation rel);

/* History */

/* The room a call chose (room.c), for the history. */
typedef struct ZRoomRecord
{
	int64		arrived;		/* rows found arriving (-1: not counted) */
	const char *appends;		/* "spread", "ordered" or NULL */
	int			fillfactor;		/* zorder's choice (0: none) */
	const char *reason;			/* why, or NULL */
} ZRoomRecord;

/* What the history says of a table's room (zorder_history_room). */
typedef struct ZRoomHistory
{
	int			last_fillfactor;	/* zorder's last choice (0: none) */
	int			calls;			/* incremental calls that saw arrivals */
	int			spread;			/* ... of them spread over the main run */
	int64		arrived;		/* rows they found */
	int64		rows;			/* rows of the last layout (-1: none) */
	int			written_fillfactor; /* its pages' (0: the owner's) */
	int			all_calls;		/* incremental calls since, any arrivals */
	int64		all_arrived;	/* ... the rows they found */
	double		cost_per_row;	/* least bytes a call ever wrote per row,
								 * of calls that spread 100 rows or more
								 * and moved just those (0: none) */
	double		split_cost;		/* bytes the calls since that spread their
								 * rows and moved more wrote beyond that */
	double		rewrite_cost;	/* bytes a full rewrite would write (set
								 * by room.c, not read from the history) */
	int			arrivals;		/* how the rows of a table never laid out
								 * came (ZP_ARRIVALS_*, arrivals.c; read by
								 * room.c, 0: not read) */
} ZRoomHistory;

/* What a call wrote (report.c), for the history; -1: not known. */
typedef struct ZCallWrites
{
	int64		wal_bytes;
	int64		pages_written;
} ZCallWrites;

extern void zorder_history_record(Oid relid, TimestampTz started,
								  const char *mode, int64 rows_moved,
								  int runs_merged, const ZRoomRecord *room,
								  const ZCallWrites *writes);
/* A table's latest call of one kind (zorder_history_last). */
typedef struct ZHistoryCall
{
	TimestampTz started;
	int64		rows_moved;
	double		seconds;
	const char *appends;		/* of the latest call that said: "spread",
								 * "ordered" or NULL */
} ZHistoryCall;

extern bool zorder_history_has_room(void);
extern bool zorder_history_has_writes(void);
extern void zorder_history_set_ranges(Oid relid, TimestampTz started,
									  int nkeys, const double *before,
									  const double *after);
extern bool zorder_history_last(Oid relid, const char *mode,
								ZHistoryCall *call);
extern void zorder_history_room(Oid relid, ZRoomHistory *h);
extern char *zorder_history_room_reason(Oid relid);

/* Forgetting a table (catalog.c's clear_keys and event trigger) */
extern void zorder_layout_forget(Oid relid);
extern void zorder_layout_forget_tree(Oid relid);
extern void zorder_layout_forget_dropped(void);

#endif							/* ZORDER_LAYOUT_H */
