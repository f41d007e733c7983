/*-------------------------------------------------------------------------
 *
 * zorder.h
 *	  Declarations shared by the zorder modules that use PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_H
#define ZORDER_H

#include "access/htup_details.h"
#include "fmgr.h"
#include "storage/bufpage.h"
#include "storage/lockdefs.h"
#include "utils/rel.h"
#include "utils/sortsupport.h"

#include "keyenc.h"

/* Most key columns a table can have. */
#define ZORDER_MAX_KEYS 8

/* Rows sampled to choose quantile boundaries, from at most so many blocks. */
#define ZORDER_SAMPLE_ROWS 100000
#define ZORDER_SAMPLE_BLOCKS 10000

/*
 * Comparators that PostgreSQL's fast sort support reduces to an integer
 * comparison of the Datums; bucket search then works on integers.
 */
#define ZCMP_GENERIC	0
#define ZCMP_SIGNED		1
#define ZCMP_INT32		2
#define ZCMP_UNSIGNED	3

/*
 * One key column of a layout: its quantile boundaries, compared with the
 * column's default btree ordering.  A value equal to no boundary is in
 * bucket i, the number of boundaries below it (0 .. nbounds).  A value
 * equal to r boundaries owns the r buckets that start at them, and a seed
 * drawn from the row's buckets on every key column picks one, so that a
 * row's key depends on its values alone (zorder_row_coordinates).  A NULL
 * has no bucket: it takes the last coordinate of the axis, in the cells of
 * the last bucket.
 */
typedef struct ZKeyColumn
{
	AttrNumber	attnum;
	Oid			typid;
	int32		typmod;
	Oid			collid;
	int16		typlen;
	bool		typbyval;
	SortSupportData ssup;
	int			cmpkind;		/* ZCMP_*: how bucket search compares */
	int			nbounds;
	Datum	   *bounds;
	/* set up by zorder_prepare_bounds, in the context of bounds: */
	int			coord_bits;
	uint32	   *coord;			/* coordinate of each bucket 0 .. nbounds */
	uint64	   *ubounds;		/* integer kinds: bounds as ordered uint64 */
	ZkBoundTable btable;		/* ... and their slice table */
} ZKeyColumn;

/* The heap tuple at item off of a locked page of rel, if the item has one. */
static inline bool
zorder_page_tuple(Relation rel, Page page, BlockNumber blk, OffsetNumber off,
				  HeapTuple tuple)
{
	ItemId		itemid = PageGetItemId(page, off);

	if (!ItemIdIsNormal(itemid))
		return false;
	tuple->t_data = (HeapTupleHeader) PageGetItem(page, itemid);
	tuple->t_len = ItemIdGetLength(itemid);
	tuple->t_tableOid = RelationGetRelid(rel);
	ItemPointerSet(&tuple->t_self, blk, off);
	return true;
}

/* quantile.c */
extern void zorder_prepare_key_column(Relation rel, AttrNumber attnum,
									  ZKeyColumn *col);
extern void zorder_prepare_key_type(Oid typid, int32 typmod, Oid collid,
									const char *colname, ZKeyColumn *col);
extern int	zorder_max_buckets(int nkeys, int bits);
extern int	zorder_sample_bounds(Relation rel, int nkeys, ZKeyColumn *cols,
								 int bits, int targrows);
extern void zorder_prepare_bounds(ZKeyColumn *col, int bits);
extern void zorder_row_coordinates(ZKeyColumn *cols, int nkeys,
								   const Datum *values, const bool *isnull,
								   int bits, uint32 *coords);
extern Datum zorder_bounds_to_bytea(ZKeyColumn *col);
extern bool zorder_bounds_from_bytea(ZKeyColumn *col, bytea *stored);
extern Datum zorder_bounds_encode(ZKeyColumn *col, bool text_form);
extern bool zorder_bounds_decode(ZKeyColumn *col, bytea *stored,
								 bool check_type);
extern Datum zorder_copy_value(ZKeyColumn *col, Datum value);

/* catalog.c */
extern int	zorder_pin_search_path(void);
extern int64 zorder_catalog_exec(const char *sql, int nargs, Oid *argtypes,
								 Datum *values, const char *nulls,
								 Datum *result, bool *result_isnull);
extern int64 zorder_catalog_read(const char *sql, int nargs, Oid *argtypes,
								 Datum *values, Datum *result,
								 bool *result_isnull);
extern void zorder_check_relation(Relation rel, const char *name);
extern void zorder_check_partition_owners(Relation rel);
extern void zorder_deform_row(Datum row, Datum *values, bool *nulls);
extern Relation zorder_open_checked(Oid relid, LOCKMODE lockmode,
									const char *name);
extern int	zorder_get_keys(Relation rel, AttrNumber *attnums);
extern int	zorder_get_keys_required(Relation rel, AttrNumber *attnums);
extern AttrNumber zorder_user_attnum(Relation rel, const char *colname);
extern void zorder_catalog_init(void);

/* pending.c */
extern void zorder_pending_begin(void);
extern void zorder_pending_sync(void);
extern int	zorder_cleanup_orphans(void);
extern int	zorder_cleanup_orphans_wait(void);

#endif							/* ZORDER_H */
