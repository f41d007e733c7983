/*-------------------------------------------------------------------------
 *
 * layout.c
 *	  A table's layout and its catalog: the curve, and every read and write
 *	  of zorder.layouts, zorder.runs (the sorted runs) and zorder.history.
 *
 * A layout is what a full optimize (or a recognised external rewrite)
 * decided for a table: its key columns, curve and bits, each key column's
 * quantile boundaries, and the BRIN ranges its runs are made of.  Its
 * sorted runs are extents of block numbers of one heap file, the one
 * zorder.layouts.layout_filenode names; every call that moves rows saves
 * them again in the transaction of its moves, so that the catalog always
 * matches the heap.  The other modules reach these tables only through
 * the functions here, so that what the catalog stores and how (curve keys
 * as bigint with the sign bit flipped, NULL for "none") is known in one
 * place.  Statements run through catalog.c's zorder_catalog_exec.
 *
 * Not here: the declared keys (zorder.tables, catalog.c) and the boundary
 * sets (zorder.boundary_sets, layoutkey.c).  A layout names its set by id
 * (zorder_layout_set_boundary_set); layoutkey.c's dropping of unused sets
 * reads that column of zorder.layouts in its one statement.
 *
 * Why one file of this size: it is the one owner of three catalog tables
 * that are always written together in a call's transaction (a layout, its
 * runs, the call's history), so that every statement on them is here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "layout.h"
#include "quantile.h"
#include "zorder.h"

/* Curve keys are stored as bigint with the sign bit flipped, to sort the same. */
#define KEY_BIAS	UINT64CONST(0x8000000000000000)

/*
 * Run a catalog statement whose one argument ($1) is the table relid,
 * with zorder_catalog_exec's result, if any.
 */
static int64
exec_for_relid(const char *sql, Oid relid, Datum *result, bool *isnull)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};

	return zorder_catalog_exec(sql, 1, argtypes, args, NULL, result, isnull);
}

/* ----------------------------------------------------------------
 * Curves
 * ----------------------------------------------------------------
 */

/* Bits per key column in the 64-bit curve key. */
int
zorder_curve_bits(int nkeys)
{
	return Min(32, 64 / nkeys);
}

/* The curve of a name, or an error for an unknown one. */
ZCurve
zorder_parse_curve(const char *name)
{
	if (strcmp(name, "hilbert") == 0)
		return ZCURVE_HILBERT;
	if (strcmp(name, "z") == 0)
		return ZCURVE_Z;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown curve \"%s\"", name),
			 errhint("The curve is \"hilbert\" or \"z\".")));
	return ZCURVE_HILBERT;		/* keep compiler quiet */
}

/*
 * The coordinates of a stored row under a layout's boundaries, bits each:
 * its key columns are attnums, or the columns' own attnum when attnums is
 * NULL.
 */
void
zorder_tuple_coordinates(ZKeyColumn *cols, const AttrNumber *attnums,
						 int nkeys, int bits, TupleDesc desc, HeapTuple tuple,
						 uint32 *coords)
{
	Datum		values[ZORDER_MAX_KEYS];
	bool		nulls[ZORDER_MAX_KEYS];

	for (int k = 0; k < nkeys; k++)
		values[k] = heap_getattr(tuple, attnums ? attnums[k] : cols[k].attnum,
								 desc, &nulls[k]);
	zorder_row_coordinates(cols, nkeys, values, nulls, bits, coords);
}

/*
 * The curve key of a stored row under a layout's boundaries (key columns
 * as zorder_tuple_coordinates takes them).  Depends on the row's values
 * alone (zorder.layout_key computes the same).
 */
uint64
zorder_tuple_key(ZKeyColumn *cols, const AttrNumber *attnums, int nkeys,
				 ZCurve curve, int bits, TupleDesc desc, HeapTuple tuple)
{
	uint32		coords[ZORDER_MAX_KEYS];

	zorder_tuple_coordinates(cols, attnums, nkeys, bits, desc, tuple, coords);
	return zorder_curve_key(curve, nkeys, bits, coords);
}

/*
 * The region of a row (1 .. nregions), or 0 for region 0.  A row beyond the
 * start of a region of later values is in the last such region it is
 * beyond; else in the first region of a band of values that holds it (a
 * band on another column may hold it too).  So a region opens for rows of
 * region 0 only: a band's holds no value beyond the highest value it was
 * opened under, which every region of later values starts at or above,
 * and a later band takes no row an earlier one holds.
 */
int
zorder_region_of_row(const ZLayout *lay, const Datum *values,
					 const bool *nulls)
{
	int			band = 0;

	for (int r = lay->nregions; r > 0; r--)
	{
		int			k = lay->region_key[r - 1];
		uint64		u;

		if (nulls[k])
			continue;
		u = zorder_ordered_u64(&lay->cols[k], values[k]);
		if (u <= lay->region_start[r - 1])
			continue;
		if (lay->region_end[r - 1] == UINT64_MAX)
			return r;
		if (u <= lay->region_end[r - 1])
			band = r;
	}
	return band;
}

/*
 * The key of a row's key column values under a layout, regions included
 * (regions.c): the curve key while the layout has no regions; else the
 * curve key in region 0, or, for a row beyond the start of a later region
 * (the last such), that region's key of it.  Depends on the row's values
 * and the layout alone.
 */
uint64
zorder_layout_key_of(ZLayout *lay, const Datum *values, const bool *nulls)
{
	uint32		coords[ZORDER_MAX_KEYS];
	uint32		others[ZORDER_MAX_KEYS];
	int			m = 0;
	int			r;
	int			k;

	zorder_row_coordinates(lay->cols, lay->nkeys, values, nulls, lay->bits,
						   coords);
	if (lay->nregions == 0)
		return zorder_curve_key(lay->curve, lay->nkeys, lay->bits, coords);
	r = zorder_region_of_row(lay, values, nulls);
	if (r == 0)
		return zk_region_key(0, zorder_curve_key(lay->curve, lay->nkeys,
												 lay->bits, coords));
	k = lay->region_key[r - 1];
	for (int j = 0; j < lay->nkeys; j++)
		if (j != k)
			others[m++] = coords[j];
	return zk_region_row_key(r, lay->curve == ZCURVE_HILBERT, m, lay->bits,
							 others, lay->region_bands[r - 1],
							 zorder_ordered_u64(&lay->cols[k], values[k]) -
							 lay->region_start[r - 1]);
}

/*
 * The regions and highest values of a layout as zorder.layouts keeps them
 * (key_tops, region_keys, region_starts, region_bands, region_ends), read
 * into lay.
 * Returns false if they do not fit its key columns.
 */
static bool
regions_from_catalog(ZLayout *lay, Datum tops, bool tops_null, Datum rkeys,
					 bool rkeys_null, Datum rstarts, bool rstarts_null,
					 Datum rbands, bool rbands_null, Datum rends, bool rends_null)
{
	Datum	   *elems;
	bool	   *elnulls;
	Datum	   *starts;
	Datum	   *bands;
	Datum	   *ends = NULL;
	bool	   *snulls;
	bool	   *bnulls;
	bool	   *enulls = NULL;
	int			n;
	int			nstarts;
	int			nbands;
	int			nends;

	lay->nregions = 0;
	for (int k = 0; k < ZORDER_MAX_KEYS; k++)
		lay->has_top[k] = false;
	if (!tops_null)
	{
		deconstruct_array(DatumGetArrayTypeP(tops), INT8OID, 8, true,
						  TYPALIGN_DOUBLE, &elems, &elnulls, &n);
		if (n != lay->nkeys)
			return false;
		for (int k = 0; k < n; k++)
		{
			lay->has_top[k] = !elnulls[k] &&
				lay->cols[k].cmpkind != ZCMP_GENERIC;
			if (lay->has_top[k])
				lay->top[k] = (uint64) DatumGetInt64(elems[k]) ^ KEY_BIAS;
		}
	}
	if (rkeys_null || rstarts_null || rbands_null)
		return rkeys_null && rstarts_null && rbands_null;
	deconstruct_array(DatumGetArrayTypeP(rkeys), INT2OID, 2, true,
					  TYPALIGN_SHORT, &elems, &elnulls, &n);
	deconstruct_array(DatumGetArrayTypeP(rstarts), INT8OID, 8, true,
					  TYPALIGN_DOUBLE, &starts, &snulls, &nstarts);
	deconstruct_array(DatumGetArrayTypeP(rbands), INT4OID, 4, true,
					  TYPALIGN_INT, &bands, &bnulls, &nbands);
	if (n != nstarts || n != nbands || n > ZK_REGION_MAX)
		return false;
	/* none before bands had regions of their own: each is beyond its start */
	if (!rends_null)
	{
		deconstruct_array(DatumGetArrayTypeP(rends), INT8OID, 8, true,
						  TYPALIGN_DOUBLE, &ends, &enulls, &nends);
		if (nends != n)
			return false;
	}
	for (int r = 0; r < n; r++)
	{
		int			k = DatumGetInt16(elems[r]) - 1;
		int32		nb = DatumGetInt32(bands[r]);

		if (elnulls[r] || snulls[r] || bnulls[r] || k < 0 || k >= lay->nkeys ||
			lay->cols[k].cmpkind == ZCMP_GENERIC ||
			nb < 1 || nb > ZK_REGION_MAX_BANDS)
			return false;
		lay->region_key[r] = (int16) k;
		lay->region_bands[r] = (uint32) nb;
		lay->region_start[r] = (uint64) DatumGetInt64(starts[r]) ^ KEY_BIAS;
		lay->region_end[r] = ends == NULL || enulls[r] ? UINT64_MAX :
			(uint64) DatumGetInt64(ends[r]) ^ KEY_BIAS;
		if (lay->region_end[r] <= lay->region_start[r])
			return false;
	}
	lay->nregions = n;
	return true;
}

/* The catalog's arrays of key attnums and of stored boundaries. */
static void
layout_arrays(int nkeys, const AttrNumber *attnums, ZKeyColumn *cols,
			  Datum *keysarr, Datum *boundsarr)
{
	Datum		keys[ZORDER_MAX_KEYS];
	Datum		bounds[ZORDER_MAX_KEYS];

	for (int k = 0; k < nkeys; k++)
	{
		keys[k] = Int16GetDatum(attnums[k]);
		bounds[k] = zorder_bounds_to_bytea(&cols[k]);
	}
	*keysarr = PointerGetDatum(construct_array(keys, nkeys, INT2OID, 2, true,
											   TYPALIGN_SHORT));
	*boundsarr = PointerGetDatum(construct_array(bounds, nkeys, BYTEAOID, -1,
												 false, TYPALIGN_INT));
}

/* ----------------------------------------------------------------
 * Layouts
 * ----------------------------------------------------------------
 */

/*
 * Read the table's layout.  Returns false if the table has no layout, or
 * one whose keys or curve (NULL: any) differ from the ones given, or whose
 * boundaries were chosen for another type, typmod or collation of a key
 * column than it has now (ALTER COLUMN ... TYPE since): boundaries of
 * another type or order would place the rows by a meaningless comparison.
 */
bool
zorder_layout_load(Relation rel, int nkeys, const AttrNumber *attnums,
				   const char *curve, ZLayout *lay)
{
	Oid			relid = RelationGetRelid(rel);
	Datum		row;
	bool		isnull;
	Datum		values[11];
	bool		nulls[11];
	Datum	   *keys;
	int			nlayoutkeys;
	Datum	   *bounds;
	int			nbounds;

	exec_for_relid("SELECT ROW(keys, curve, bits, bounds, "
				   "coalesce(pages_per_range, 0), merge_cursor, key_tops, "
				   "region_keys, region_starts, region_bands, region_ends) "
				   "FROM zorder.layouts WHERE relid = $1",
				   relid, &row, &isnull);
	if (isnull)
		return false;

	zorder_deform_row(row, values, nulls);
	lay->ppr = Max(DatumGetInt32(values[4]), 1);
	lay->merging = !nulls[5];
	lay->cursor = nulls[5] ? 0 : (uint64) DatumGetInt64(values[5]) ^ KEY_BIAS;
	lay->curve = zorder_parse_curve(TextDatumGetCString(values[1]));

	deconstruct_array(DatumGetArrayTypeP(values[0]), INT2OID, 2, true,
					  TYPALIGN_SHORT, &keys, NULL, &nlayoutkeys);
	if (nlayoutkeys != nkeys)
		return false;
	for (int k = 0; k < nkeys; k++)
		if (DatumGetInt16(keys[k]) != attnums[k])
			return false;
	if (curve != NULL && strcmp(TextDatumGetCString(values[1]), curve) != 0)
		return false;

	lay->nkeys = nkeys;
	lay->bits = DatumGetInt32(values[2]);
	deconstruct_array(DatumGetArrayTypeP(values[3]), BYTEAOID, -1, false,
					  TYPALIGN_INT, &bounds, NULL, &nbounds);
	if (nbounds != nkeys)
		return false;
	for (int k = 0; k < nkeys; k++)
	{
		zorder_prepare_key_column(rel, attnums[k], &lay->cols[k]);
		if (!zorder_bounds_from_bytea(&lay->cols[k],
									  DatumGetByteaPP(bounds[k])))
			return false;
		zorder_prepare_bounds(&lay->cols[k], lay->bits);
	}

	return regions_from_catalog(lay, values[6], nulls[6], values[7], nulls[7],
								values[8], nulls[8], values[9], nulls[9],
								values[10], nulls[10]);
}

/*
 * Save a layout's regions and highest values (regions.c), in the
 * transaction that saves the runs whose keys they give.
 */
void
zorder_layout_save_regions(Oid relid, const ZLayout *lay)
{
	Oid			argtypes[6] = {OIDOID, INT8ARRAYOID, INT2ARRAYOID, INT8ARRAYOID,
	INT4ARRAYOID, INT8ARRAYOID};
	Datum		args[6];
	char		argnulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	Datum		tops[ZORDER_MAX_KEYS];
	bool		topnulls[ZORDER_MAX_KEYS];
	int			dims[1] = {lay->nkeys};
	int			lbs[1] = {1};
	Datum	   *rkeys = palloc(sizeof(Datum) * Max(lay->nregions, 1));
	Datum	   *rstarts = palloc(sizeof(Datum) * Max(lay->nregions, 1));
	Datum	   *rbands = palloc(sizeof(Datum) * Max(lay->nregions, 1));
	Datum	   *rends = palloc(sizeof(Datum) * Max(lay->nregions, 1));

	for (int k = 0; k < lay->nkeys; k++)
	{
		topnulls[k] = !lay->has_top[k];
		tops[k] = Int64GetDatum((int64) (lay->top[k] ^ KEY_BIAS));
	}
	for (int r = 0; r < lay->nregions; r++)
	{
		rkeys[r] = Int16GetDatum(lay->region_key[r] + 1);
		rstarts[r] = Int64GetDatum((int64) (lay->region_start[r] ^ KEY_BIAS));
		rbands[r] = Int32GetDatum((int32) lay->region_bands[r]);
		rends[r] = Int64GetDatum((int64) (lay->region_end[r] ^ KEY_BIAS));
	}
	args[0] = ObjectIdGetDatum(relid);
	args[1] = PointerGetDatum(construct_md_array(tops, topnulls, 1, dims, lbs,
												 INT8OID, 8, true,
												 TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_array(rkeys, lay->nregions, INT2OID, 2,
											  true, TYPALIGN_SHORT));
	args[3] = PointerGetDatum(construct_array(rstarts, lay->nregions, INT8OID,
											  8, true, TYPALIGN_DOUBLE));
	args[4] = PointerGetDatum(construct_array(rbands, lay->nregions, INT4OID, 4,
											  true, TYPALIGN_INT));
	args[5] = PointerGetDatum(construct_array(rends, lay->nregions, INT8OID,
											  8, true, TYPALIGN_DOUBLE));
	if (lay->nregions == 0)
		argnulls[2] = argnulls[3] = argnulls[4] = argnulls[5] = 'n';
	zorder_catalog_exec("UPDATE zorder.layouts SET key_tops = $2, "
						"region_keys = $3, region_starts = $4, "
						"region_bands = $5, region_ends = $6 WHERE relid = $1",
						6, argtypes, args, argnulls, NULL, NULL);
}

/* True if relid has a layout at all. */
bool
zorder_layout_exists(Oid relid)
{
	Datum		exists;
	bool		isnull;

	exec_for_relid("SELECT true FROM zorder.layouts WHERE relid = $1",
				   relid, &exists, &isnull);
	return !isnull;
}

/* The boundary set relid's layout was written with; 0 if none. */
int
zorder_layout_boundary_set(Oid relid)
{
	Datum		id;
	bool		isnull;

	exec_for_relid("SELECT boundary_set FROM zorder.layouts WHERE relid = $1",
				   relid, &id, &isnull);
	return isnull ? 0 : DatumGetInt32(id);
}

/*
 * The same, read-only with the active snapshot (zorder_catalog_read), for
 * the planner, which must not take a snapshot or advance the command
 * counter of the statement it plans.
 */
bool
zorder_layout_exists_read(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		exists;
	bool		isnull;

	zorder_catalog_read("SELECT true FROM zorder.layouts WHERE relid = $1",
						1, argtypes, args, &exists, &isnull);
	return !isnull;
}

/*
 * Take the rows' new layout from a sample when keys or curve changed, or
 * the type or collation of a key column; the runs stay as they are.
 * Returns how many rows were sampled; the caller saves the boundaries as a
 * set (layoutkey.c) and names it in the layout.
 */
int
zorder_layout_resample(Relation rel, int nkeys, const AttrNumber *attnums,
					   const char *curve, ZLayout *lay)
{
	Oid			argtypes[6] = {OIDOID, INT2ARRAYOID, TEXTOID, INT4OID,
	BYTEAARRAYOID, INT4OID};
	Datum		args[6];
	int			sampled;

	lay->nkeys = nkeys;
	lay->curve = zorder_parse_curve(curve);
	lay->bits = zorder_curve_bits(nkeys);
	/* a merge under the old keys is not resumed under the new ones */
	lay->merging = false;
	lay->cursor = 0;
	for (int k = 0; k < nkeys; k++)
		zorder_prepare_key_column(rel, attnums[k], &lay->cols[k]);
	sampled = zorder_sample_bounds(rel, nkeys, lay->cols, lay->bits,
								   ZORDER_SAMPLE_ROWS);
	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	layout_arrays(nkeys, attnums, lay->cols, &args[1], &args[4]);
	args[2] = CStringGetTextDatum(curve);
	args[3] = Int32GetDatum(lay->bits);
	args[5] = Int32GetDatum(sampled);
	/* new boundaries: the regions of the old ones are gone */
	lay->nregions = 0;
	for (int k = 0; k < ZORDER_MAX_KEYS; k++)
		lay->has_top[k] = false;
	zorder_catalog_exec("UPDATE zorder.layouts SET keys = $2, curve = $3, "
						"bits = $4, bounds = $5, sample_rows = $6, "
						"key_tops = NULL, region_keys = NULL, "
						"region_starts = NULL, region_bands = NULL, "
						"region_ends = NULL WHERE relid = $1",
						6, argtypes, args, NULL, NULL, NULL);
	return sampled;
}

/* The layout a full rewrite wrote, with what the rewrite did. */
void
zorder_layout_save_full(Oid relid, int nkeys, ZKeyColumn *cols, ZCurve curve,
						int bits, const ZRewriteRecord *rec)
{
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	Oid			argtypes[12] = {OIDOID, INT2ARRAYOID, TEXTOID, INT4OID,
		BYTEAARRAYOID, INT4OID, INT8OID, INT8OID, TIMESTAMPTZOID, INT4OID,
	INT8OID, INT8ARRAYOID};
	Datum		args[12];
	Datum		tops[ZORDER_MAX_KEYS];
	bool		topnulls[ZORDER_MAX_KEYS];
	int			dims[1] = {nkeys};
	int			lbs[1] = {1};

	for (int k = 0; k < nkeys; k++)
		attnums[k] = cols[k].attnum;
	args[0] = ObjectIdGetDatum(relid);
	layout_arrays(nkeys, attnums, cols, &args[1], &args[4]);
	args[2] = CStringGetTextDatum(zorder_curve_name(curve));
	args[3] = Int32GetDatum(bits);
	args[5] = Int32GetDatum(rec->sample_rows);
	args[6] = Int64GetDatum(rec->rows);
	args[7] = Int64GetDatum((int64) rec->pages);
	args[8] = TimestampTzGetDatum(rec->started);
	args[9] = Int32GetDatum(rec->sort_runs);
	args[10] = Int64GetDatum(rec->temp_bytes);
	for (int k = 0; k < nkeys; k++)
	{
		topnulls[k] = !rec->has_top[k];
		tops[k] = Int64GetDatum((int64) (rec->top[k] ^ KEY_BIAS));
	}
	args[11] = PointerGetDatum(construct_md_array(tops, topnulls, 1, dims, lbs,
												  INT8OID, 8, true,
												  TYPALIGN_DOUBLE));

	zorder_catalog_exec("INSERT INTO zorder.layouts AS l (relid, keys, curve, bits, "
						"bounds, sample_rows, rows_written, pages, optimized_at, "
						"duration, sort_runs, temp_bytes, key_tops) "
						"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
						"clock_timestamp() - $9, "
						"$10, $11, $12) "
						"ON CONFLICT (relid) DO UPDATE SET keys = excluded.keys, "
						"curve = excluded.curve, bits = excluded.bits, "
						"bounds = excluded.bounds, sample_rows = excluded.sample_rows, "
						"rows_written = excluded.rows_written, pages = excluded.pages, "
						"optimized_at = excluded.optimized_at, duration = excluded.duration, "
						"sort_runs = excluded.sort_runs, temp_bytes = excluded.temp_bytes, "
						"merge_cursor = NULL, key_tops = excluded.key_tops, "
						"region_keys = NULL, region_starts = NULL, "
						"region_bands = NULL, region_ends = NULL, "
						"loose_ranges = NULL, scan_lsn = NULL",
						12, argtypes, args, NULL, NULL, NULL);
}

/*
 * A layout with boundary set set_id, as a full optimize writes it, for a
 * heap layoutkey.c recognised as one sorted run of rows rows in pages
 * pages.  cols are the set's columns; the layout stores their boundaries
 * for the table's own column types.
 */
void
zorder_layout_save_recognized(Relation rel, int nkeys,
							  const AttrNumber *attnums, ZKeyColumn *cols,
							  ZCurve curve, int bits, int set_id, int64 rows,
							  BlockNumber pages, TimestampTz started)
{
	TupleDesc	desc = RelationGetDescr(rel);
	ZKeyColumn	owncols[ZORDER_MAX_KEYS];
	Oid			argtypes[10] = {OIDOID, INT2ARRAYOID, TEXTOID, INT4OID,
		BYTEAARRAYOID, INT8OID, INT8OID, TIMESTAMPTZOID, INT4OID,
	OIDOID};
	Datum		args[10];

	for (int k = 0; k < nkeys; k++)
	{
		/* as zorder.layouts has them: for the column's own type */
		Form_pg_attribute att = TupleDescAttr(desc, attnums[k] - 1);

		owncols[k] = cols[k];
		owncols[k].typid = att->atttypid;
		owncols[k].typmod = att->atttypmod;
	}
	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	layout_arrays(nkeys, attnums, owncols, &args[1], &args[4]);
	args[2] = CStringGetTextDatum(zorder_curve_name(curve));
	args[3] = Int32GetDatum(bits);
	args[5] = Int64GetDatum(rows);
	args[6] = Int64GetDatum((int64) pages);
	args[7] = TimestampTzGetDatum(started);
	args[8] = Int32GetDatum(set_id);
	args[9] = ObjectIdGetDatum(rel->rd_rel->relfilenode);
	zorder_catalog_exec("INSERT INTO zorder.layouts AS l (relid, keys, curve, "
						"bits, bounds, sample_rows, rows_written, pages, "
						"optimized_at, duration, sort_runs, temp_bytes, "
						"boundary_set, checked_set, checked_filenode, layout_filenode) "
						"SELECT $1, $2, $3, $4, $5, b.sample_rows, $6, $7, $8, "
						"clock_timestamp() - $8, 0, 0, $9, $9, $10, $10 "
						"FROM zorder.boundary_sets b WHERE b.id = $9 "
						"ON CONFLICT (relid) DO UPDATE SET keys = excluded.keys, "
						"curve = excluded.curve, bits = excluded.bits, "
						"bounds = excluded.bounds, sample_rows = excluded.sample_rows, "
						"rows_written = excluded.rows_written, pages = excluded.pages, "
						"optimized_at = excluded.optimized_at, duration = excluded.duration, "
						"sort_runs = 0, temp_bytes = 0, merge_cursor = NULL, "
						"key_tops = NULL, region_keys = NULL, region_starts = NULL, "
						"region_bands = NULL, region_ends = NULL, loose_ranges = NULL, "
						"boundary_set = excluded.boundary_set, "
						"checked_set = excluded.checked_set, "
						"checked_filenode = excluded.checked_filenode, "
						"layout_filenode = excluded.layout_filenode, scan_lsn = NULL",
						10, argtypes, args, NULL, NULL, NULL);

	/*
	 * A layout row that comes in by INSERT names no heap file (a trigger
	 * clears the file columns, for the sake of pg_restore), so the file the
	 * run is true of is recorded by an UPDATE.
	 */
	args[1] = args[9];
	argtypes[1] = OIDOID;
	zorder_catalog_exec("UPDATE zorder.layouts SET checked_filenode = $2, "
						"layout_filenode = $2, scan_lsn = NULL WHERE relid = $1",
						2, argtypes, args, NULL, NULL, NULL);
}

/* The rows and pages of a layout's run, once it ends earlier. */
void
zorder_layout_set_written(Oid relid, int64 rows, BlockNumber pages)
{
	Oid			argtypes[3] = {OIDOID, INT8OID, INT8OID};
	Datum		args[3];

	args[0] = ObjectIdGetDatum(relid);
	args[1] = Int64GetDatum(rows);
	args[2] = Int64GetDatum((int64) pages);
	zorder_catalog_exec("UPDATE zorder.layouts SET rows_written = $2, "
						"pages = $3 WHERE relid = $1",
						3, argtypes, args, NULL, NULL, NULL);
}

/*
 * The curve of rel's layout, for a full optimize that was given none:
 * "hilbert" if the table has no layout.  Call after zorder_open_checked,
 * so that rows of an earlier relation with the same OID are gone.
 */
const char *
zorder_layout_curve(Oid relid)
{
	Datum		curve;
	bool		isnull;

	exec_for_relid("SELECT curve FROM zorder.layouts WHERE relid = $1",
				   relid, &curve, &isnull);
	return isnull ? "hilbert" : TextDatumGetCString(curve);
}

/* pages_per_range the layout of relid is aligned to (1 if none). */
BlockNumber
zorder_layout_pages_per_range(Oid relid)
{
	Datum		ppr;
	bool		isnull;

	exec_for_relid("SELECT pages_per_range FROM zorder.layouts WHERE relid = $1",
				   relid, &ppr, &isnull);
	return isnull ? 1 : (BlockNumber) Max(DatumGetInt32(ppr), 1);
}

/* Whether a merge into the main run of relid's layout is under way. */
bool
zorder_layout_merging(Oid relid)
{
	Datum		merging;
	bool		isnull;

	exec_for_relid("SELECT merge_cursor IS NOT NULL FROM zorder.layouts "
				   "WHERE relid = $1",
				   relid, &merging, &isnull);
	return !isnull && DatumGetBool(merging);
}

/* Record the pages_per_range the layout is aligned to (0: none). */
void
zorder_layout_set_pages_per_range(Oid relid, int ppr)
{
	Oid			argtypes[2] = {OIDOID, INT4OID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};

	args[0] = ObjectIdGetDatum(relid);
	args[1] = Int32GetDatum(ppr);
	if (ppr == 0)
		nulls[1] = 'n';
	zorder_catalog_exec("UPDATE zorder.layouts SET pages_per_range = $2 "
						"WHERE relid = $1",
						2, argtypes, args, nulls, NULL, NULL);
}

/* Record that relid's layout uses boundary set id. */
void
zorder_layout_set_boundary_set(Oid relid, int id)
{
	Oid			argtypes[2] = {OIDOID, INT4OID};
	Datum		args[2] = {ObjectIdGetDatum(relid), Int32GetDatum(id)};

	/* the rows a recognised run listed as misplaced were of another heap */
	zorder_catalog_exec("UPDATE zorder.layouts SET boundary_set = $2, "
						"layout_filenode = (SELECT c.relfilenode FROM pg_class c "
						"WHERE c.oid = $1), misplaced = NULL, scan_lsn = NULL "
						"WHERE relid = $1",
						2, argtypes, args, NULL, NULL, NULL);
}

/*
 * The boundary set rel's heap should be checked against, if any: the
 * newest prepared set newer than the layout's, unless that set was
 * checked against this very heap file already (*prepared true; *copied
 * if it is a set a copy of the table brought from another node, so that
 * the heap is checked as a copy of a table laid out with it); else, if
 * the heap is not the file the runs were recorded for, the layout's own
 * set (*prepared false).  That includes a layout that names no file at
 * all: one pg_restore brought (*restored true; the trigger on
 * zorder.layouts clears the file columns of a row that comes in by
 * INSERT), whose table COPY filled in the order of the dump, which is
 * the old heap's: it is checked as a heap VACUUM FULL rewrote would be,
 * rather than rewritten in full.  Returns false if there is none.
 */
bool
zorder_layout_set_to_check(Relation rel, int *id, bool *prepared,
						   bool *restored, bool *copied)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2];
	Datum		result;
	bool		isnull;

	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	args[1] = ObjectIdGetDatum(rel->rd_rel->relfilenode);
	*restored = false;
	*copied = false;
	zorder_catalog_exec("SELECT ROW(b.id, b.origin = 'copy') FROM zorder.boundary_sets b "
						"LEFT JOIN zorder.layouts l ON l.relid = $1 "
						"WHERE b.relid::oid = $1 AND b.origin IN ('prepare', 'copy') "
						"AND b.id > coalesce(l.boundary_set, 0) "
						"AND (l.checked_set IS DISTINCT FROM b.id "
						"OR l.checked_filenode IS DISTINCT FROM $2) "
						"ORDER BY b.id DESC LIMIT 1",
						2, argtypes, args, NULL, &result, &isnull);
	*prepared = !isnull;
	if (!isnull)
	{
		Datum		values[2];
		bool		nulls[2];

		zorder_deform_row(result, values, nulls);
		result = values[0];
		*copied = DatumGetBool(values[1]);
	}
	if (isnull)
	{
		Datum		row;
		Datum		values[2];
		bool		nulls[2];

		/*
		 * A file column is NULL both in a restored row and after a call
		 * forgot the runs (zorder_forget_stale_runs, which a full rewrite
		 * follows in the same transaction): only the former was never
		 * checked either.
		 */
		zorder_catalog_exec("SELECT ROW(boundary_set, layout_filenode IS NULL "
							"AND checked_filenode IS NULL) "
							"FROM zorder.layouts WHERE relid = $1 "
							"AND layout_filenode IS DISTINCT FROM $2 "
							"AND boundary_set IS NOT NULL",
							2, argtypes, args, NULL, &row, &isnull);
		if (isnull)
			return false;
		zorder_deform_row(row, values, nulls);
		result = values[0];
		*restored = DatumGetBool(values[1]);
	}
	*id = DatumGetInt32(result);
	return true;
}

/* Record that rel's current heap was checked against set id. */
void
zorder_layout_set_checked(Relation rel, int id)
{
	Oid			argtypes[3] = {OIDOID, INT4OID, OIDOID};
	Datum		args[3] = {ObjectIdGetDatum(RelationGetRelid(rel)),
		Int32GetDatum(id),
	ObjectIdGetDatum(rel->rd_rel->relfilenode)};

	zorder_catalog_exec("UPDATE zorder.layouts SET checked_set = $2, "
						"checked_filenode = $3 WHERE relid = $1",
						3, argtypes, args, NULL, NULL, NULL);
}

/*
 * The TIDs of rows a recognised run holds out of key order
 * (zorder.layouts.misplaced), if they are TIDs of rel's current heap, or
 * NULL.
 */
ArrayType *
zorder_layout_misplaced(Relation rel)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(RelationGetRelid(rel)),
	ObjectIdGetDatum(rel->rd_rel->relfilenode)};
	Datum		arr;
	bool		isnull;

	zorder_catalog_exec("SELECT misplaced FROM zorder.layouts WHERE relid = $1 "
						"AND layout_filenode = $2",
						2, argtypes, args, NULL, &arr, &isnull);
	return isnull ? NULL : DatumGetArrayTypeP(arr);
}

/*
 * The first blocks of the BRIN ranges whose summaries a call left loose
 * (batch.c's zorder_add_loose), palloc'd, their number in *n.
 */
int64 *
zorder_layout_loose_ranges(Oid relid, int *n)
{
	Datum		arr;
	bool		isnull;
	Datum	   *elems;
	bool	   *nulls;
	int64	   *blocks;
	int			m = 0;

	*n = 0;
	exec_for_relid("SELECT loose_ranges FROM zorder.layouts WHERE relid = $1",
				   relid, &arr, &isnull);
	if (isnull)
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(arr), INT8OID, 8, true,
					  TYPALIGN_DOUBLE, &elems, &nulls, n);
	blocks = palloc(sizeof(int64) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
		if (!nulls[i])
			blocks[m++] = DatumGetInt64(elems[i]);
	*n = m;
	return blocks;
}

/* Record the ranges a call left loose (n 0: none). */
void
zorder_layout_set_loose_ranges(Oid relid, const BlockNumber *blocks, int n)
{
	Oid			argtypes[2] = {OIDOID, INT8ARRAYOID};
	Datum		args[2];
	char		nulls[2] = {' ', n > 0 ? ' ' : 'n'};
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum((int64) blocks[i]);
	args[0] = ObjectIdGetDatum(relid);
	args[1] = PointerGetDatum(construct_array(elems, n, INT8OID, 8, true,
											  TYPALIGN_DOUBLE));
	zorder_catalog_exec("UPDATE zorder.layouts SET loose_ranges = $2 "
						"WHERE relid = $1",
						2, argtypes, args, nulls, NULL, NULL);
}

/* Record the misplaced rows' TIDs (ntids 0: none). */
void
zorder_layout_set_misplaced(Oid relid, Datum *tids, int ntids)
{
	Oid			argtypes[2] = {OIDOID, TIDARRAYOID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};

	args[0] = ObjectIdGetDatum(relid);
	args[1] = (Datum) 0;
	if (ntids == 0)
		nulls[1] = 'n';
	else
		args[1] = PointerGetDatum(construct_array(tids, ntids, TIDOID,
												  sizeof(ItemPointerData),
												  false, TYPALIGN_SHORT));
	zorder_catalog_exec("UPDATE zorder.layouts SET misplaced = $2 "
						"WHERE relid = $1",
						2, argtypes, args, nulls, NULL, NULL);
}

/*
 * Where the next incremental call's scan for newcomers may start reading
 * the pages of rel's runs (collect.c): the scan_lsn an earlier call
 * recorded for rel's current heap, or InvalidXLogRecPtr (read them all).
 */
XLogRecPtr
zorder_layout_scan_lsn(Relation rel)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(RelationGetRelid(rel)),
	ObjectIdGetDatum(rel->rd_rel->relfilenode)};
	Datum		lsn;
	bool		isnull;

	zorder_catalog_exec("SELECT scan_lsn FROM zorder.layouts WHERE relid = $1 "
						"AND layout_filenode = $2",
						2, argtypes, args, NULL, &lsn, &isnull);
	return isnull ? InvalidXLogRecPtr : DatumGetLSN(lsn);
}

/* Record scan_lsn for relid's runs (InvalidXLogRecPtr: none). */
void
zorder_layout_set_scan_lsn(Oid relid, XLogRecPtr lsn)
{
	Oid			argtypes[2] = {OIDOID, PG_LSNOID};
	Datum		args[2] = {ObjectIdGetDatum(relid), LSNGetDatum(lsn)};
	char		nulls[2] = {' ', XLogRecPtrIsInvalid(lsn) ? 'n' : ' '};

	zorder_catalog_exec("UPDATE zorder.layouts SET scan_lsn = $2 "
						"WHERE relid = $1",
						2, argtypes, args, nulls, NULL, NULL);
}

/* What zorder.clustering_information shows of the layout. */
void
zorder_layout_info(Oid relid, Datum *curve, bool *curve_null,
				   Datum *optimized_at, bool *optimized_null,
				   Datum *nruns, bool *runs_null)
{
	exec_for_relid("SELECT curve FROM zorder.layouts WHERE relid = $1",
				   relid, curve, curve_null);
	exec_for_relid("SELECT optimized_at FROM zorder.layouts WHERE relid = $1",
				   relid, optimized_at, optimized_null);
	exec_for_relid("SELECT count(DISTINCT run) FROM zorder.runs WHERE relid = $1",
				   relid, nruns, runs_null);
}

/* ----------------------------------------------------------------
 * Sorted runs
 * ----------------------------------------------------------------
 */

/* The table's runs, extent by extent, in heap order; returns how many. */
int
zorder_runs_load(Oid relid, ZRunExtent **extents)
{
	Datum		arr;
	bool		isnull;
	Datum	   *elems;
	int			n;
	int			nextents = 0;

	*extents = NULL;
	exec_for_relid("SELECT array_agg(ARRAY[first_block, nblocks, rows, "
				   "created_xid::text::bigint, run, "
				   "coalesce(key_lo, -9223372036854775808)] "
				   "ORDER BY first_block) "
				   "FROM zorder.runs WHERE relid = $1",
				   relid, &arr, &isnull);
	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(arr), INT8OID, 8, true,
					  TYPALIGN_DOUBLE, &elems, NULL, &n);
	*extents = palloc(sizeof(ZRunExtent) * Max(n / 6, 1));
	for (int i = 0; i + 5 < n; i += 6)
	{
		ZRunExtent *e = &(*extents)[nextents++];

		e->first_block = (BlockNumber) DatumGetInt64(elems[i]);
		e->nblocks = (BlockNumber) DatumGetInt64(elems[i + 1]);
		e->rows = DatumGetInt64(elems[i + 2]);
		e->xid = (TransactionId) DatumGetInt64(elems[i + 3]);
		e->run = (int) DatumGetInt64(elems[i + 4]);
		e->key_lo = (uint64) DatumGetInt64(elems[i + 5]) ^ KEY_BIAS;
	}
	return nextents;
}

static Datum
int8_array(Datum *elems, int n)
{
	return PointerGetDatum(construct_array(elems, n, INT8OID, 8, true,
										   TYPALIGN_DOUBLE));
}

/*
 * Save the runs and the merge cursor (merging false: none) in the catalog,
 * replacing what it had: called in every batch's transaction, so that a
 * call cut short leaves a catalog that matches the heap.  Empty extents
 * are left out.  Returns how many extents it saved.
 */
int64
zorder_runs_save(Oid relid, const ZRunExtent *extents, int n, bool merging,
				 uint64 cursor)
{
	Datum	   *first = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *nblocks = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *rows = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *xids = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *runs = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *keys = palloc(sizeof(Datum) * Max(n, 1));
	Oid			argtypes[8] = {OIDOID, INT8ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
	INT8ARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT8OID};
	Datum		args[8];
	char		nulls[8];
	int64		saved;

	/* no NULL argument (a string literal would not fit its terminator) */
	memset(nulls, ' ', sizeof(nulls));
	for (int i = 0; i < n; i++)
	{
		const ZRunExtent *e = &extents[i];

		first[i] = Int64GetDatum((int64) e->first_block);
		nblocks[i] = Int64GetDatum((int64) e->nblocks);
		rows[i] = Int64GetDatum(e->rows);
		xids[i] = Int64GetDatum((int64) e->xid);
		runs[i] = Int32GetDatum(e->run);
		keys[i] = Int64GetDatum((int64) (e->key_lo ^ KEY_BIAS));
	}
	args[0] = ObjectIdGetDatum(relid);
	args[1] = int8_array(first, n);
	args[2] = int8_array(nblocks, n);
	args[3] = int8_array(rows, n);
	args[4] = int8_array(xids, n);
	args[5] = PointerGetDatum(construct_array(runs, n, INT4OID, 4, true,
											  TYPALIGN_INT));
	args[6] = int8_array(keys, n);
	args[7] = Int64GetDatum((int64) (cursor ^ KEY_BIAS));
	if (!merging)
		nulls[7] = 'n';

	zorder_catalog_exec("DELETE FROM zorder.runs WHERE relid = $1",
						8, argtypes, args, nulls, NULL, NULL);
	saved = zorder_catalog_exec("INSERT INTO zorder.runs (relid, first_block, nblocks, "
								"rows, created_xid, run, key_lo) "
								"SELECT $1, f, n, r, x::text::xid, u, "
								"CASE WHEN u = 0 THEN k END "
								"FROM unnest($2, $3, $4, $5, $6, $7) AS e(f, n, r, x, u, k) "
								"WHERE n > 0",
								8, argtypes, args, nulls, NULL, NULL);
	zorder_catalog_exec("UPDATE zorder.layouts SET merge_cursor = $8 "
						"WHERE relid = $1",
						8, argtypes, args, nulls, NULL, NULL);
	return saved;
}

/*
 * Make the table one main run of blocks [0, nblocks) holding rows rows,
 * replacing the runs it had.  With xid invalid, the run of a full rewrite:
 * the current transaction's, recorded even when empty.  Else the run of a
 * recognised heap, whose rows up to xid are in it; none when empty.
 */
void
zorder_runs_set_main(Oid relid, BlockNumber nblocks, int64 rows,
					 TransactionId xid)
{
	Oid			argtypes[4] = {OIDOID, INT8OID, INT8OID, XIDOID};
	Datum		args[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	args[0] = ObjectIdGetDatum(relid);
	args[1] = Int64GetDatum((int64) nblocks);
	args[2] = Int64GetDatum(rows);
	args[3] = TransactionIdGetDatum(xid);
	zorder_catalog_exec("DELETE FROM zorder.runs WHERE relid = $1",
						4, argtypes, args, NULL, NULL, NULL);
	if (TransactionIdIsValid(xid) && nblocks == 0)
		return;
	/* a full rewrite's run is the current transaction's ($4 is NULL) */
	nulls[3] = TransactionIdIsValid(xid) ? ' ' : 'n';
	zorder_catalog_exec("INSERT INTO zorder.runs (relid, first_block, nblocks, "
						"rows, created_xid, run, key_lo) "
						"VALUES ($1, 0, $2, $3, "
						"coalesce($4, pg_current_xact_id()::xid), 0, "
						"-9223372036854775808)",
						4, argtypes, args, nulls, NULL, NULL);
}

/*
 * True if the runs and the layout in the catalog are still those a call
 * saved last, in transaction xid with nextents extents: nobody else wrote
 * them since (another session's optimize, full or incremental,
 * zorder.cluster_by or zorder.clear_keys).
 */
bool
zorder_runs_unchanged(Oid relid, TransactionId xid, int64 nextents)
{
	Oid			argtypes[3] = {OIDOID, XIDOID, INT8OID};
	Datum		args[3];
	Datum		same;
	bool		isnull;

	if (!TransactionIdIsValid(xid))
		return false;
	args[0] = ObjectIdGetDatum(relid);
	args[1] = TransactionIdGetDatum(xid);
	args[2] = Int64GetDatum(nextents);
	zorder_catalog_exec("SELECT coalesce((SELECT l.xmin OPERATOR(pg_catalog.=) $2 "
						"FROM zorder.layouts l WHERE l.relid = $1), false) "
						"AND (SELECT count(*) OPERATOR(pg_catalog.=) $3 "
						"AND coalesce(bool_and(c.xmin OPERATOR(pg_catalog.=) $2), true) "
						"FROM zorder.runs c WHERE c.relid = $1)",
						3, argtypes, args, NULL, &same, &isnull);
	return !isnull && DatumGetBool(same);
}

/* Forget the runs of relid and any merge under way. */
void
zorder_runs_forget(Oid relid)
{
	exec_for_relid("DELETE FROM zorder.runs WHERE relid = $1",
				   relid, NULL, NULL);
	exec_for_relid("UPDATE zorder.layouts SET merge_cursor = NULL "
				   "WHERE relid = $1",
				   relid, NULL, NULL);
}

/*
 * Sorted runs of a rewritten heap.
 *
 * zorder.runs records the runs of a table as block numbers of its heap
 * file, and zorder.layouts.layout_filenode which file that is.  Whatever
 * gives the table a new file (VACUUM FULL, CLUSTER, TRUNCATE, ALTER TABLE)
 * leaves its rows elsewhere, and the runs no longer say anything about the
 * heap.  A restored table has a layout but no runs (zorder.runs is not
 * dumped), and no file recorded either: a layout row that comes in by
 * INSERT, as pg_restore brings it, never names one (a trigger clears it,
 * see zorder--0.3.sql), since the old cluster's file number could equal
 * the new one's by chance.  Either way zorder does not know what order
 * the heap is in, and never trusts blocks of a file that is gone: the
 * next zorder.optimize first checks the heap against the layout's
 * boundary set in one scan (recognize.c, through
 * zorder_layout_set_to_check), since VACUUM FULL, CLUSTER and a restore's
 * COPY keep the rows in the order they had; if enough of it is in key
 * order, that part becomes the table's run.  Else, rather than move every
 * row into a new run one batch at a time (doubling the file), the call
 * lays the table out again with a full rewrite, as on its first call,
 * keeping its keys and curve.
 */

/* Record that the runs just written are those of relid's current heap. */
void
zorder_record_runs_filenode(Oid relid)
{
	exec_for_relid("UPDATE zorder.layouts SET layout_filenode = "
				   "(SELECT c.relfilenode FROM pg_class c WHERE c.oid = $1), "
				   "scan_lsn = NULL WHERE relid = $1",
				   relid, NULL, NULL);
}

/*
 * True if rel (open and locked by the caller) has a layout but no runs
 * recorded for its current heap file: then the runs it has are forgotten,
 * and the caller must lay the table out with a full rewrite.
 */
bool
zorder_forget_stale_runs(Relation rel)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2];
	Datum		stale;
	bool		isnull;

	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	args[1] = ObjectIdGetDatum(rel->rd_rel->relfilenode);
	zorder_catalog_exec("SELECT l.layout_filenode IS DISTINCT FROM $2 "
						"FROM zorder.layouts l WHERE l.relid = $1",
						2, argtypes, args, NULL, &stale, &isnull);
	if (isnull || !DatumGetBool(stale))
		return false;			/* no layout, or runs of this very file */

	zorder_catalog_exec("DELETE FROM zorder.runs WHERE relid = $1",
						1, argtypes, args, NULL, NULL, NULL);
	zorder_catalog_exec("UPDATE zorder.layouts SET layout_filenode = NULL, "
						"merge_cursor = NULL, scan_lsn = NULL WHERE relid = $1",
						1, argtypes, args, NULL, NULL, NULL);
	ereport(NOTICE,
			(errmsg("table \"%s\" was rewritten or restored since it was laid out",
					RelationGetRelationName(rel)),
			 errdetail("zorder has no sorted runs recorded for the table's current file, so this call rewrites the table in full.")));
	return true;
}

/*
 * Whether the runs recorded for rel are of its current file, read only
 * (zorder.estimate): false when it has no layout, or when its file was
 * rewritten since, so that the next call rewrites it in full.
 */
bool
zorder_runs_current(Relation rel)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(RelationGetRelid(rel)),
	ObjectIdGetDatum(rel->rd_rel->relfilenode)};
	Datum		current;
	bool		isnull;

	zorder_catalog_read("SELECT l.layout_filenode = $2 "
						"FROM zorder.layouts l WHERE l.relid = $1",
						2, argtypes, args, &current, &isnull);
	return !isnull && DatumGetBool(current);
}

/*
 * Drop the runs of rel if its heap was rewritten since they were recorded
 * (CLUSTER, VACUUM FULL, pg_repack): its rows are in another order, and
 * blocks that no longer hold what the catalog says are not to be trusted.
 * The next incremental call then finds no runs of this file and lays the
 * table out in full (zorder_forget_stale_runs).  Returns true if it
 * dropped them.
 */
bool
zorder_forget_runs_if_rewritten(Relation rel)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(RelationGetRelid(rel)),
	ObjectIdGetDatum(rel->rd_rel->relfilenode)};

	if (zorder_catalog_exec("UPDATE zorder.layouts SET layout_filenode = NULL, "
							"merge_cursor = NULL, misplaced = NULL, scan_lsn = NULL "
							"WHERE relid = $1 "
							"AND layout_filenode IS DISTINCT FROM $2",
							2, argtypes, args, NULL, NULL, NULL) == 0)
		return false;
	zorder_catalog_exec("DELETE FROM zorder.runs WHERE relid = $1",
						2, argtypes, args, NULL, NULL, NULL);
	return true;
}

/* ----------------------------------------------------------------
 * History
 * ----------------------------------------------------------------
 */

/*
 * Record a call in zorder.history, with how many runs the table has after
 * it; runs_merged < 0 (a full rewrite) is recorded as NULL, and so is what
 * room and writes leave unknown (NULL, or negative counts).  A catalog not
 * yet updated gets the columns its version has.
 */
void
zorder_history_record(Oid relid, TimestampTz started, const char *mode,
					  int64 rows_moved, int runs_merged,
					  const ZRoomRecord *room, const ZCallWrites *writes)
{
	Oid			argtypes[11] = {OIDOID, INT8OID, INT4OID, TIMESTAMPTZOID, TEXTOID,
	INT8OID, TEXTOID, INT4OID, TEXTOID, INT8OID, INT8OID};
	Datum		args[11];
	char		nulls[11];
	int			nargs = 5;
	StringInfoData sql;

	memset(nulls, 'n', sizeof(nulls));
	args[0] = ObjectIdGetDatum(relid);
	args[1] = Int64GetDatum(rows_moved);
	args[2] = Int32GetDatum(runs_merged);
	args[3] = TimestampTzGetDatum(started);
	args[4] = CStringGetTextDatum(mode);
	nulls[0] = nulls[1] = nulls[3] = nulls[4] = ' ';
	if (runs_merged >= 0)
		nulls[2] = ' ';

	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "INSERT INTO zorder.history (relid, started_at, mode, "
						   "rows_moved, runs_merged, runs_after, duration");
	if (zorder_catalog_has("history", "room"))
	{
		appendStringInfoString(&sql, ", rows_arrived, appends, fillfactor, room");
		nargs = 9;
		if (room != NULL && room->arrived >= 0)
		{
			args[5] = Int64GetDatum(room->arrived);
			nulls[5] = ' ';
		}
		if (room != NULL && room->appends != NULL)
		{
			args[6] = CStringGetTextDatum(room->appends);
			nulls[6] = ' ';
		}
		if (room != NULL && room->fillfactor > 0)
		{
			args[7] = Int32GetDatum(room->fillfactor);
			nulls[7] = ' ';
		}
		if (room != NULL && room->reason != NULL)
		{
			args[8] = CStringGetTextDatum(room->reason);
			nulls[8] = ' ';
		}
	}
	if (nargs == 9 && zorder_catalog_has("history", "wal_bytes"))
	{
		appendStringInfoString(&sql, ", wal_bytes, pages_written");
		nargs = 11;
		if (writes != NULL && writes->wal_bytes >= 0)
		{
			args[9] = Int64GetDatum(writes->wal_bytes);
			nulls[9] = ' ';
		}
		if (writes != NULL && writes->pages_written >= 0)
		{
			args[10] = Int64GetDatum(writes->pages_written);
			nulls[10] = ' ';
		}
	}
	appendStringInfoString(&sql,
						   ") SELECT $1, $4, $5, $2, $3, "
						   "(SELECT count(DISTINCT run) FROM zorder.runs WHERE relid = $1), "
						   "clock_timestamp() - $4");
	for (int i = 5; i < nargs; i++)
		appendStringInfo(&sql, ", $%d", i + 1);
	zorder_catalog_exec(sql.data, nargs, argtypes, args, nulls, NULL, NULL);
}

/*
 * Whether the catalog records the room (0.4 and later): with an older
 * catalog, not yet updated, zorder chooses no room, since it could not
 * tell its own choice from the owner's later.
 */
bool
zorder_history_has_room(void)
{
	return zorder_catalog_has("history", "room");
}

/* Whether the history records what calls wrote (0.5 and later). */
bool
zorder_history_has_writes(void)
{
	return zorder_catalog_has("history", "wal_bytes");
}

/*
 * The reason the history records last for the room of relid, or NULL
 * (none recorded, or a catalog older than 0.4).
 */
char *
zorder_history_room_reason(Oid relid)
{
	Datum		room;
	bool		isnull;

	if (!zorder_history_has_room())
		return NULL;
	exec_for_relid("SELECT room FROM zorder.history WHERE relid = $1 "
				   "AND room IS NOT NULL ORDER BY started_at DESC LIMIT 1",
				   relid, &room, &isnull);
	return isnull ? NULL : TextDatumGetCString(room);
}

/*
 * What the history says of the room of relid: the fillfactor zorder set
 * at the last call that said anything of the room (0: none, or the owner's
 * own was left alone then, which makes it the owner's for good, even if it
 * is a value zorder once set); and since the table was last laid out (a
 * full rewrite, or a copy recognized in the layout's order: the layout's
 * optimized_at; with no layout, as after clear_keys, since the last full
 * rewrite the history records, or since it began), the incremental calls
 * that found rows arriving, how many of those spread them over the main
 * run, the rows they found, the rows the layout was written with (-1:
 * none), the fillfactor its pages were written with (zorder's choice then;
 * 0: the owner's; 100: none recorded, a copy packed full), every
 * incremental call since with the rows it found, however few; and for the
 * splits, placement's cost per row: the least a call of the table ever
 * wrote per row that arrived, among calls that spread 100 rows or more
 * over the main run and moved exactly those (0: no such call), and what the
 * incremental calls since that spread their rows and moved more than
 * arrived wrote beyond that (not merges, nor time-ordered or banded
 * calls, whose splits a rewrite would not spare).  What a call wrote is
 * its WAL, or its heap pages, if more (a table that skips WAL):
 * zorder_room_call_cost; a catalog older than 0.5 records neither.
 */
void
zorder_history_room(Oid relid, ZRoomHistory *h)
{
	Datum		row;
	bool		isnull;
	Datum		values[10];
	bool		nulls[10];
	bool		has_writes = zorder_history_has_writes();

	/* zorder_room_call_cost of history row x */
#define COST(x) (has_writes ? "greatest(coalesce(" x ".wal_bytes, 0), " \
	"coalesce(" x ".pages_written, 0) * " CppAsString2(BLCKSZ) ")::float8" : \
	"0::float8")

	memset(h, 0, sizeof(*h));
	h->rows = -1;
	exec_for_relid(psprintf("WITH f AS (SELECT coalesce((SELECT optimized_at FROM zorder.layouts "
							"WHERE relid = $1), (SELECT max(started_at) FROM zorder.history "
							"WHERE relid = $1 AND mode = 'full')) AS at, "
							"coalesce((SELECT rows_written FROM zorder.layouts WHERE relid = $1), "
							"(SELECT rows_moved FROM zorder.history WHERE relid = $1 "
							"AND mode = 'full' ORDER BY started_at DESC LIMIT 1)) AS rows, "
							"coalesce((SELECT min(%s / c.rows_arrived) "
							"FROM zorder.history c WHERE c.relid = $1 AND c.mode = 'incremental' "
							"AND c.appends = 'spread' AND c.rows_arrived >= 100 "
							"AND c.rows_moved = c.rows_arrived AND c.wal_bytes IS NOT NULL), 0) AS base) "
							"SELECT ROW((SELECT fillfactor FROM zorder.history "
							"WHERE relid = $1 AND room IS NOT NULL "
							"ORDER BY started_at DESC LIMIT 1), "
							"count(*) FILTER (WHERE h.appends IS NOT NULL), "
							"count(*) FILTER (WHERE h.appends = 'spread'), "
							"coalesce(sum(h.rows_arrived) FILTER (WHERE h.appends IS NOT NULL), 0)::bigint, "
							"f.rows, "
							"(SELECT coalesce(w.fillfactor, 0) FROM zorder.history w "
							"WHERE w.relid = $1 AND w.room IS NOT NULL AND w.started_at <= f.at "
							"ORDER BY w.started_at DESC LIMIT 1), "
							"count(h.relid), coalesce(sum(h.rows_arrived), 0)::bigint, f.base, "
							"coalesce(sum(greatest(%s - coalesce(h.rows_arrived, 0) * f.base, 0)) "
							"FILTER (WHERE h.mode = 'incremental' AND h.appends = 'spread' "
							"AND h.rows_moved > h.rows_arrived), 0)) "
							"FROM f LEFT JOIN zorder.history h ON h.relid = $1 "
							"AND h.mode <> 'full' AND (f.at IS NULL OR h.started_at > f.at) "
							"GROUP BY f.at, f.rows, f.base", COST("c"), COST("h")),
				   relid, &row, &isnull);
#undef COST
	if (isnull)
		return;
	zorder_deform_row(row, values, nulls);
	h->last_fillfactor = nulls[0] ? 0 : DatumGetInt32(values[0]);
	h->calls = nulls[1] ? 0 : (int) DatumGetInt64(values[1]);
	h->spread = nulls[2] ? 0 : (int) DatumGetInt64(values[2]);
	h->arrived = nulls[3] ? 0 : DatumGetInt64(values[3]);
	h->rows = nulls[4] ? -1 : DatumGetInt64(values[4]);
	h->written_fillfactor = nulls[5] ? HEAP_DEFAULT_FILLFACTOR :
		DatumGetInt32(values[5]);
	h->all_calls = nulls[6] ? 0 : (int) DatumGetInt64(values[6]);
	h->all_arrived = nulls[7] ? 0 : DatumGetInt64(values[7]);
	h->cost_per_row = nulls[8] ? 0 : DatumGetFloat8(values[8]);
	h->split_cost = nulls[9] ? 0 : DatumGetFloat8(values[9]);
}

/* A float8[] of v[0 .. n), NULL elements where v is negative (unknown). */
static Datum
float8_array_unknown(const double *v, int n)
{
	Datum		d[ZORDER_MAX_KEYS];
	bool		nulls[ZORDER_MAX_KEYS];
	int			dims[1] = {n};
	int			lbs[1] = {1};

	for (int i = 0; i < n; i++)
	{
		d[i] = Float8GetDatum(v[i]);
		nulls[i] = v[i] < 0;
	}
	return PointerGetDatum(construct_md_array(d, nulls, 1, dims, lbs,
											  FLOAT8OID, sizeof(float8),
											  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * Add to the history row of the call on relid that started at started the
 * block ranges a point filter on each of its nkeys key columns read before
 * and after it (negative: not measured).  A catalog older than 0.6 has no
 * place for them.
 */
void
zorder_history_set_ranges(Oid relid, TimestampTz started, int nkeys,
						  const double *before, const double *after)
{
	Oid			argtypes[4] = {OIDOID, TIMESTAMPTZOID, FLOAT8ARRAYOID,
	FLOAT8ARRAYOID};
	Datum		args[4];

	if (!zorder_catalog_has("history", "ranges_after"))
		return;
	args[0] = ObjectIdGetDatum(relid);
	args[1] = TimestampTzGetDatum(started);
	args[2] = float8_array_unknown(before, nkeys);
	args[3] = float8_array_unknown(after, nkeys);
	zorder_catalog_exec("UPDATE zorder.history SET ranges_before = $3, "
						"ranges_after = $4 WHERE relid = $1 AND started_at = $2",
						4, argtypes, args, NULL, NULL, NULL);
}

/*
 * The latest call on relid of the given mode ("full", "incremental" or
 * "merge", as zorder.history records them), for zorder.estimate to scale
 * its time from; with where the latest call that said put its arrivals.
 * False, *call untouched, when the history has no such call.
 */
bool
zorder_history_last(Oid relid, const char *mode, ZHistoryCall *call)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2] = {ObjectIdGetDatum(relid), CStringGetTextDatum(mode)};
	Datum		row;
	bool		isnull;
	Datum		values[4];
	bool		nulls[4];

	zorder_catalog_read("SELECT ROW(h.started_at, h.rows_moved, "
						"extract(epoch FROM h.duration)::float8, "
						"(SELECT a.appends FROM zorder.history a "
						"WHERE a.relid = $1 AND a.appends IS NOT NULL "
						"ORDER BY a.started_at DESC LIMIT 1)) "
						"FROM zorder.history h "
						"WHERE h.relid = $1 AND h.mode = $2 "
						"ORDER BY h.started_at DESC LIMIT 1",
						2, argtypes, args, &row, &isnull);
	if (isnull)
		return false;
	zorder_deform_row(row, values, nulls);
	call->started = DatumGetTimestampTz(values[0]);
	call->rows_moved = DatumGetInt64(values[1]);
	call->seconds = DatumGetFloat8(values[2]);
	call->appends = nulls[3] ? NULL : TextDatumGetCString(values[3]);
	return true;
}

/* ----------------------------------------------------------------
 * Forgetting a table
 * ----------------------------------------------------------------
 */

/* Forget the layout, runs and history of relid. */
void
zorder_layout_forget(Oid relid)
{
	exec_for_relid("WITH l AS (DELETE FROM zorder.layouts WHERE relid = $1), "
				   "c AS (DELETE FROM zorder.runs WHERE relid = $1) "
				   "DELETE FROM zorder.history WHERE relid = $1",
				   relid, NULL, NULL);
}

/*
 * Forget the layouts and runs of relid and of its partitions
 * (zorder.clear_keys); their history stays.
 */
void
zorder_layout_forget_tree(Oid relid)
{
	exec_for_relid("DELETE FROM zorder.layouts WHERE relid = $1 OR "
				   "relid = ANY (SELECT relid FROM pg_partition_tree($1))",
				   relid, NULL, NULL);
	exec_for_relid("DELETE FROM zorder.runs WHERE relid = $1 OR "
				   "relid = ANY (SELECT relid FROM pg_partition_tree($1))",
				   relid, NULL, NULL);
}

/*
 * In the sql_drop event trigger: forget the layouts, runs and history of
 * the tables the command dropped.
 */
void
zorder_layout_forget_dropped(void)
{
	zorder_catalog_exec("WITH d AS (SELECT objid AS relid "
						"FROM pg_event_trigger_dropped_objects() "
						"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
						"AND objsubid = 0), "
						"l AS (DELETE FROM zorder.layouts WHERE relid IN (SELECT relid FROM d)), "
						"c AS (DELETE FROM zorder.runs WHERE relid IN (SELECT relid FROM d)) "
						"DELETE FROM zorder.history WHERE relid IN (SELECT relid FROM d)",
						0, NULL, NULL, NULL, NULL, NULL);
}
