/*-------------------------------------------------------------------------
 *
 * boundsets.h
 *	  Boundary sets (boundsets.c), which own zorder.boundary_sets.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_BOUNDSETS_H
#define ZORDER_BOUNDSETS_H

#include "layout.h"
#include "zorder.h"

/* A boundary set, loaded and ready to place rows. */
typedef struct LayoutSet
{
	int			id;
	Oid			relid;
	int			nkeys;
	ZCurve		curve;
	int			bits;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	char	   *colnames[ZORDER_MAX_KEYS];
	ZKeyColumn	cols[ZORDER_MAX_KEYS];
	bytea	   *stored[ZORDER_MAX_KEYS];	/* boundaries, until decoded */
	char	   *unfit;			/* if not NULL, why the set can no longer
								 * serve (its columns then half loaded) */
} LayoutSet;

/*
 * A set's row, with its boundaries still as stored (NULL if there is no
 * such set), and the boundaries read back as their types: the latter runs
 * the key types' input functions, so only as the set's table's owner in a
 * security-restricted operation, after the caller's privileges were
 * checked.  It returns false, quoting nothing, if a boundary no longer
 * reads back (a type changed in place).  A loaded set whose unfit is set
 * must not be decoded.
 */
extern LayoutSet *zorder_load_boundary_set(int id, bool read_only);
extern LayoutSet *zorder_load_boundary_set_document(const char *doc);
extern LayoutSet *zorder_load_owned_boundary_set(int id, Oid owner);
extern bool zorder_decode_boundary_set(LayoutSet *set);

/*
 * Store the boundaries of cols (a layout of relid) as a new boundary set and
 * return its id.  origin is "optimize" or "prepare".
 */
extern int	zorder_save_boundary_set(Oid relid, int nkeys, ZKeyColumn *cols,
									 ZCurve curve, int bits, int sample_rows,
									 const char *origin);

/*
 * A distributed table's set (Citus), on its coordinator: stored under an id
 * from ZORDER_TABLE_SET_FIRST_ID on, which no node gives a set of its own
 * (their ids stay below it), so that every node can keep the set under
 * that id.  A shard's sample as a document, not stored.
 */
#define ZORDER_TABLE_SET_FIRST_ID 1073741824
extern int	zorder_save_boundary_set_as_table(Oid relid, int nkeys,
											  ZKeyColumn *cols, ZCurve curve,
											  int bits, int sample_rows);
extern char *zorder_boundary_set_document(Oid relid, int nkeys,
										  ZKeyColumn *cols, ZCurve curve,
										  int bits, int sample_rows);

/*
 * A set as a jsonb document for another node, and such a document stored
 * as a prepared set of relid (0: its columns are not relid's).
 */
extern char *zorder_boundary_set_export(int id);
extern void zorder_boundary_set_check_document(const char *doc);
extern int	zorder_boundary_set_adopt(Oid relid, const char *doc);
extern void zorder_boundary_set_take(Oid table, int id, const char *doc);
extern void zorder_boundary_sets_drop_older(Oid relid, int id);
extern bool zorder_boundary_set_prepared(Oid relid);
extern int	zorder_boundary_set_newest(Oid relid, const char *origin);

/*
 * Forget the sets of relid, a table that is gone (its OID taken by a new
 * relation), or of the tables a DROP dropped (from the sql_drop trigger).
 */
extern void zorder_boundary_sets_forget(Oid relid);
extern void zorder_boundary_sets_forget_dropped(void);

/*
 * Drop relid's sets that no index names, that its layout is not on, and
 * that are not the newest prepared one: returns how many went.
 */
extern int64 zorder_boundary_sets_drop_unused(Oid relid);

#endif							/* ZORDER_BOUNDSETS_H */
