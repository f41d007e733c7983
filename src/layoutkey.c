/*-------------------------------------------------------------------------
 *
 * layoutkey.c
 *	  Boundary sets, zorder.layout_key and zorder.prepare_layout: the curve
 *	  key of a full zorder.optimize as an SQL function, so that the tools
 *	  that rewrite a table online (pg_repack's --order-by, CLUSTER and
 *	  REPACK over an expression index) can lay a table out as we would.
 *
 * A boundary set (zorder.boundary_sets) is the quantile boundaries one
 * sample gave a table's key columns, with the curve and the bits per
 * column.  A set is never changed once written, so layout_key(set, ...) is
 * a function of its arguments alone, honestly IMMUTABLE: an index built on
 * it stays valid as long as the set exists, and a set lives as long as its
 * table.  A new sample makes a new set; an index on an older set keeps
 * working until it is dropped.
 *
 * The key is computed as the rewrite computes it (quantile.c's
 * zorder_row_coordinates, then the curve), and returned as a bigint with
 * the sign bit flipped, so that its signed order is the unsigned order of
 * the curve key: bigint is compared by btree and by sorts without a
 * function call per comparison and is 8 bytes in an index, where bytea
 * would cost a memcmp and a varlena header.  The same biased form is how
 * the catalog of sorted runs stores keys (layout.c).
 *
 * After an external rewrite, recognize.c checks the heap against the set.
 *
 * This file owns zorder.boundary_sets: every statement on it is here,
 * including the one that drops unused sets, which reads the set a layout
 * names in zorder.layouts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "access.h"
#include "brin.h"
#include "catalog.h"
#include "funcapi.h"
#include "heappage.h"
#include "keyenc.h"
#include "layoutkey.h"
#include "miscadmin.h"
#include "quantile.h"
#include "tables.h"
#include "zorder.h"
#include "mb/pg_wchar.h"
#include "nodes/nodeFuncs.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"


PG_FUNCTION_INFO_V1(zorder_layout_key);
PG_FUNCTION_INFO_V1(zorder_prepare_layout);

/* keys are stored as bigint with the sign bit flipped, to sort the same */
#define KEY_BIAS	UINT64CONST(0x8000000000000000)

/*
 * Does the binary form of typid (its send function's output) read back the
 * same in another database, after a dump and restore?  Not for arrays and
 * composites: theirs embeds the OIDs of the element and column types,
 * which a restore changes.  Those keep the text form in a set.
 */
static bool
binary_form_portable(Oid typid)
{
	switch (get_typtype(typid))
	{
		case TYPTYPE_BASE:
			return !type_is_array(typid);
		case TYPTYPE_ENUM:
			return true;
		case TYPTYPE_RANGE:
			return binary_form_portable(get_range_subtype(typid));
#if PG_VERSION_NUM >= 140000
		case TYPTYPE_MULTIRANGE:
			return binary_form_portable(get_range_subtype(get_multirange_range(typid)));
#endif
		default:
			return false;
	}
}

/*
 * Fix the settings the text form of values depends on (dates, intervals,
 * floats, bytea, money) until AtEOXact_GUC(false, <returned level>), so
 * that the boundaries of a set kept in text form read back as they were
 * written, whatever the session's settings.  GUC_ACTION_SAVE, as a
 * function's SET clause: allowed in a parallel worker too.
 */
static int
pin_text_io_settings(void)
{
	static const char *const settings[][2] = {
		{"datestyle", "ISO, YMD"},
		{"intervalstyle", "postgres"},
		{"extra_float_digits", "3"},
		{"bytea_output", "hex"},
		{"lc_monetary", "C"},
	};
	int			nestlevel = NewGUCNestLevel();

	for (int i = 0; i < (int) lengthof(settings); i++)
		(void) set_config_option(settings[i][0], settings[i][1],
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

/*
 * Load boundary set id into the current memory context, its boundaries
 * still as stored: reading them back runs the key types' input functions,
 * which only zorder_decode_boundary_set may call.  Returns NULL if there is no such set.
 * read_only: with the active snapshot only, as an IMMUTABLE function must
 * (see zorder_catalog_read).
 */
LayoutSet *
zorder_load_boundary_set(int id, bool read_only)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(id)};
	const char *sql = "SELECT ROW(relid::oid, columns, keys, types::oid[], "
		"typmods, collations::regcollation[]::oid[], curve, bits, bounds) "
		"FROM zorder.boundary_sets WHERE id = $1";
	Datum		row;
	bool		isnull;
	Datum		values[9];
	bool		nulls[9];
	Datum	   *names,
			   *keys,
			   *types,
			   *typmods,
			   *colls,
			   *bounds;
	int			n,
				n2;
	LayoutSet  *set;

	if (read_only)
		zorder_catalog_read(sql, 1, argtypes, args, &row, &isnull);
	else
		zorder_catalog_exec(sql, 1, argtypes, args, NULL, &row, &isnull);
	if (isnull)
		return NULL;

	zorder_deform_row(row, values, nulls);

	set = palloc0(sizeof(LayoutSet));
	set->id = id;
	set->relid = DatumGetObjectId(values[0]);
	set->curve = zorder_parse_curve(TextDatumGetCString(values[6]));
	set->bits = DatumGetInt32(values[7]);
	deconstruct_array(DatumGetArrayTypeP(values[1]), NAMEOID, NAMEDATALEN,
					  false, TYPALIGN_CHAR, &names, NULL, &n);
	set->nkeys = n;
	if (n < 1 || n > ZORDER_MAX_KEYS || set->bits < 1 ||
		set->bits > zorder_curve_bits(n))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("boundary set %d is not in the format zorder writes", id)));
	deconstruct_array(DatumGetArrayTypeP(values[2]), INT2OID, 2, true,
					  TYPALIGN_SHORT, &keys, NULL, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[3]), OIDOID, 4, true,
					  TYPALIGN_INT, &types, NULL, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[4]), INT4OID, 4, true,
					  TYPALIGN_INT, &typmods, NULL, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[5]), OIDOID, 4, true,
					  TYPALIGN_INT, &colls, NULL, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[8]), BYTEAOID, -1, false,
					  TYPALIGN_INT, &bounds, NULL, &n2);
	if (n2 != n)
		goto bad;

	/*
	 * The set's types and collations are the ones it names (regtype, and
	 * collation names: the same after a dump and restore or pg_upgrade),
	 * not the OIDs its boundaries recorded when they were written.
	 */
	for (int k = 0; k < n; k++)
	{
		ZKeyColumn *col = &set->cols[k];

		set->colnames[k] = pstrdup(NameStr(*DatumGetName(names[k])));
		set->attnums[k] = DatumGetInt16(keys[k]);
		zorder_prepare_key_type(DatumGetObjectId(types[k]),
								DatumGetInt32(typmods[k]),
								DatumGetObjectId(colls[k]),
								set->colnames[k], col);
		col->attnum = set->attnums[k];
		set->stored[k] = DatumGetByteaPP(bounds[k]);
	}
	return set;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("boundary set %d is not in the format zorder writes", id),
			 errdetail("Its key columns, types and boundaries do not agree.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * Read back the boundaries of a set that zorder_load_boundary_set loaded.  The caller runs
 * this as the set's table's owner in a security-restricted operation: the
 * key types' input functions, and the CHECK of a domain at any depth
 * (array elements, composite attributes, range subtypes), are code the
 * owner may have chosen.  Returns false if a boundary no longer reads back
 * as its type (changed in place by ALTER TYPE), without the error, which
 * would quote a sampled value.
 */
bool
zorder_decode_boundary_set(LayoutSet *set)
{
	int			save_nestlevel = pin_text_io_settings();
	bool		ok = true;

	for (int k = 0; ok && k < set->nkeys; k++)
	{
		ok = zorder_bounds_read_back(&set->cols[k], set->stored[k], false);
		if (ok)
			zorder_prepare_bounds(&set->cols[k], set->bits);
	}
	AtEOXact_GUC(false, save_nestlevel);
	return ok;
}

/* The error for a set that no longer reads back (zorder_decode_boundary_set). */
static void
set_outdated(LayoutSet *set)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("boundary set %d no longer fits the types of its key columns",
					set->id),
			 errdetail("A key column's type was changed in place (ALTER TYPE) since the set was sampled."),
			 errhint("Store a new set with zorder.prepare_layout, or lay the table out with CALL zorder.optimize.")));
}

int
zorder_save_boundary_set(Oid relid, int nkeys, ZKeyColumn *cols,
						 ZCurve curve, int bits, int sample_rows,
						 const char *origin)
{
	Datum		names[ZORDER_MAX_KEYS];
	Datum		keys[ZORDER_MAX_KEYS];
	Datum		types[ZORDER_MAX_KEYS];
	Datum		typmods[ZORDER_MAX_KEYS];
	Datum		colls[ZORDER_MAX_KEYS];
	Datum		bounds[ZORDER_MAX_KEYS];
	Oid			argtypes[11] = {OIDOID, TEXTOID, NAMEARRAYOID, INT2ARRAYOID,
		OIDARRAYOID, INT4ARRAYOID, OIDARRAYOID, TEXTOID, INT4OID,
	BYTEAARRAYOID, INT4OID};
	Datum		args[11];
	Datum		id;
	bool		isnull;

	int			save_nestlevel;

	/*
	 * A domain key column is kept as its base type: its values are the base
	 * type's, compared by its opclass, and loading the set must run no
	 * CHECK constraint (code of the table owner's choosing) for whoever
	 * calls layout_key.
	 */
	save_nestlevel = pin_text_io_settings();
	for (int k = 0; k < nkeys; k++)
	{
		NameData   *nm = palloc0(sizeof(NameData));
		ZKeyColumn	base = cols[k];

		base.typid = getBaseTypeAndTypmod(cols[k].typid, &base.typmod);
		namestrcpy(nm, get_attname(relid, cols[k].attnum, false));
		names[k] = NameGetDatum(nm);
		keys[k] = Int16GetDatum(cols[k].attnum);
		types[k] = ObjectIdGetDatum(base.typid);
		typmods[k] = Int32GetDatum(base.typmod);
		colls[k] = ObjectIdGetDatum(cols[k].collid);
		bounds[k] = zorder_bounds_encode(&base,
										 !binary_form_portable(base.typid));
	}
	AtEOXact_GUC(false, save_nestlevel);
	args[0] = ObjectIdGetDatum(relid);
	args[1] = CStringGetTextDatum(origin);
	args[2] = PointerGetDatum(construct_array(names, nkeys, NAMEOID,
											  NAMEDATALEN, false,
											  TYPALIGN_CHAR));
	args[3] = PointerGetDatum(construct_array(keys, nkeys, INT2OID, 2, true,
											  TYPALIGN_SHORT));
	args[4] = PointerGetDatum(construct_array(types, nkeys, OIDOID, 4, true,
											  TYPALIGN_INT));
	args[5] = PointerGetDatum(construct_array(typmods, nkeys, INT4OID, 4,
											  true, TYPALIGN_INT));
	args[6] = PointerGetDatum(construct_array(colls, nkeys, OIDOID, 4, true,
											  TYPALIGN_INT));
	args[7] = CStringGetTextDatum(zorder_curve_name(curve));
	args[8] = Int32GetDatum(bits);
	args[9] = PointerGetDatum(construct_array(bounds, nkeys, BYTEAOID, -1,
											  false, TYPALIGN_INT));
	args[10] = Int32GetDatum(sample_rows);
	/* collations by name: pg_upgrade keeps no collation OIDs */
	zorder_catalog_exec("INSERT INTO zorder.boundary_sets (relid, origin, columns, "
						"keys, types, typmods, collations, curve, bits, bounds, "
						"sample_rows, owner) SELECT $1::regclass, $2, $3, $4, "
						"$5::regtype[], $6, "
						"ARRAY(SELECT CASE WHEN u.coll = 0 THEN '-' ELSE "
						"(SELECT format('%I.%I', n.nspname, k.collname) "
						"FROM pg_collation k JOIN pg_namespace n "
						"ON n.oid = k.collnamespace WHERE k.oid = u.coll) END "
						"FROM unnest($7) WITH ORDINALITY AS u(coll, ord) "
						"ORDER BY u.ord), $8, $9, $10, $11, "
						"pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = $1 "
						"RETURNING id",
						11, argtypes, args, NULL, &id, &isnull);
	Assert(!isnull);
	return DatumGetInt32(id);
}

/*
 * May the current user compute keys under set?  A key tells which of the
 * set's buckets a value falls in, so by probing a caller learns the
 * boundaries: values sampled from the key columns of the set's table.  So
 * the rule is that of pg_stats for a column's histogram: the table's owner
 * (or a member of its role), or a role that may read every key column and
 * that no row-level security applies to.  Roles that only write the table
 * are not enough: an INSERT privilege does not let one read the column.
 *
 * Index maintenance calls the function as the role that writes: so such a
 * role needs these rights too while an index on the key exists (see the
 * README, Safety).  pg_repack (superuser), CLUSTER and REPACK (as the
 * owner) pass.  The key columns are found by name: a set whose table was
 * dropped passes to the table whose index uses it, and its columns are
 * those of the same names there (else SELECT on the whole table is needed).
 */
static Oid
check_set_privileges(LayoutSet *set)
{
	Oid			userid = GetUserId();
	char	   *relname = get_rel_name(set->relid);
	bool		readable = true;
	HeapTuple	tuple;
	Oid			owner;
	bool		is_temp;

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("boundary set %d belongs to a table that no longer exists",
						set->id)));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(set->relid));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("boundary set %d belongs to a table that no longer exists",
						set->id)));
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	is_temp = ((Form_pg_class) GETSTRUCT(tuple))->relpersistence ==
		RELPERSISTENCE_TEMP;
	ReleaseSysCache(tuple);

	/*
	 * A temporary table goes away at the end of its session without the
	 * sql_drop trigger, leaving its sets, and a new table, of any owner, may
	 * get its OID: the set is then of no table until the catalog forgets it.
	 * So a temporary table's set serves only its own session (as its rows
	 * do), and a permanent table's only if no temporary table left it.
	 */
	if (!zorder_catalog_rows_current(set->relid, is_temp, true))
	{
		if (is_temp)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("boundary set %d can be used only in the session of its temporary table",
							set->id)));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("boundary set %d belongs to a table that no longer exists",
						set->id)));
	}
	if (has_privs_of_role(userid, owner))
		return owner;
	if (pg_class_aclcheck(set->relid, userid, ACL_SELECT) != ACLCHECK_OK)
		for (int k = 0; k < set->nkeys && readable; k++)
		{
			AttrNumber	attnum = get_attnum(set->relid, set->colnames[k]);

			readable = attnum != InvalidAttrNumber &&
				pg_attribute_aclcheck(set->relid, attnum, userid,
									  ACL_SELECT) == ACLCHECK_OK;
		}
	if (!readable)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", relname),
				 errdetail("Keys under boundary set %d reveal values sampled from the key columns of table \"%s\".",
						   set->id, relname),
				 errhint("Grant SELECT on the key columns; roles that write into a table with an index on zorder.layout_key need it too.")));
	if (check_enable_rls(set->relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security hides rows of table \"%s\" from the current user",
						relname),
				 errdetail("The boundaries of boundary set %d are drawn from all its rows.",
						   set->id),
				 errhint("Drop the index on zorder.layout_key once the table is laid out, or lay it out with pg_repack, which needs no index.")));
	return owner;
}

/*
 * What a call site of layout_key keeps in fn_extra: the set last used, in
 * a context of its own that is emptied when the call site switches sets
 * (the first argument need not be a constant).
 */
typedef struct LayoutKeyCache
{
	MemoryContext cxt;
	LayoutSet  *set;			/* NULL until loaded */
	Oid			owner;			/* of the set's table: keys are computed as */
} LayoutKeyCache;

static LayoutKeyCache *
layout_key_setup(FunctionCallInfo fcinfo, int id)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	MemoryContext oldcxt;
	LayoutKeyCache *cache = (LayoutKeyCache *) flinfo->fn_extra;
	LayoutSet  *set;
	int			nargs = PG_NARGS() - 1;
	ZOwnerSwitch sw;
	bool		decoded;

	if (get_fn_expr_variadic(flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("zorder.layout_key does not take a VARIADIC array"),
				 errhint("Pass the key columns as separate arguments.")));

	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(LayoutKeyCache));
		cache->cxt = AllocSetContextCreate(flinfo->fn_mcxt,
										   "zorder layout_key set",
										   ALLOCSET_DEFAULT_SIZES);
		flinfo->fn_extra = cache;
	}
	cache->set = NULL;
	MemoryContextReset(cache->cxt);
	oldcxt = MemoryContextSwitchTo(cache->cxt);
	set = zorder_load_boundary_set(id, true);
	if (set == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("boundary set %d does not exist", id),
				 errhint("zorder.prepare_layout stores a new one.")));
	if (nargs != set->nkeys)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("boundary set %d has %d key columns, but %d values were given",
						id, set->nkeys, nargs)));
	for (int k = 0; k < nargs; k++)
	{
		Oid			argtype = get_fn_expr_argtype(flinfo, k + 1);

		if (!OidIsValid(argtype) || getBaseType(argtype) != set->cols[k].typid)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("value %d of zorder.layout_key is of type %s, but key column \"%s\" of boundary set %d is of type %s",
							k + 1,
							OidIsValid(argtype) ? format_type_be(argtype) : "unknown",
							set->colnames[k], id,
							format_type_be(set->cols[k].typid)),
					 errhint("Pass the key columns in the order of the boundary set, cast to their types.")));
	}
	/*
	 * Only now, the caller being allowed to see what the boundaries are,
	 * read them back: as the table's owner, in a security-restricted
	 * operation, since the key types' input functions and domain CHECKs are
	 * code the owner chose.  (A superuser computing keys for pg_repack, an
	 * index build, a replication apply worker: none runs it as itself.)
	 */
	cache->owner = check_set_privileges(set);
	zorder_become_owner(cache->owner, &sw);
	decoded = zorder_decode_boundary_set(set);
	zorder_restore_user(&sw);
	if (!decoded)
		set_outdated(set);
	cache->set = set;
	MemoryContextSwitchTo(oldcxt);
	return cache;
}

/*
 * zorder.layout_key(set_id integer, VARIADIC "any") RETURNS bigint
 *
 * The curve key a full zorder.optimize with boundary set set_id gives a
 * row whose key columns hold the values given, as a bigint in the same
 * order.  The values come in the set's column order, of its types (or
 * domains over them); they are compared under the collation the set was
 * sampled with.
 */
Datum
zorder_layout_key(PG_FUNCTION_ARGS)
{
	LayoutKeyCache *cache = (LayoutKeyCache *) fcinfo->flinfo->fn_extra;
	LayoutSet  *set;
	Datum		values[ZORDER_MAX_KEYS];
	bool		nulls[ZORDER_MAX_KEYS];
	uint32		coords[ZORDER_MAX_KEYS];
	int			id;
	Oid			save_userid;
	int			save_sec_context;

	zorder_arg_required(fcinfo, 0, "boundary set");
	id = PG_GETARG_INT32(0);
	if (cache == NULL || cache->set == NULL || cache->set->id != id)
		cache = layout_key_setup(fcinfo, id);
	set = cache->set;

	for (int k = 0; k < set->nkeys; k++)
	{
		nulls[k] = PG_ARGISNULL(k + 1);
		values[k] = nulls[k] ? (Datum) 0 : PG_GETARG_DATUM(k + 1);
		/* the bucket search compares detoasted values */
		if (!nulls[k] && set->cols[k].typlen == -1)
			values[k] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[k]));
	}
	/*
	 * The comparisons too run as the owner (see layout_key_setup), but with
	 * no GUC nest level of their own: they are the key types' default btree
	 * functions, which only a superuser can create, and a nest level per row
	 * costs a walk of every setting on PostgreSQL 15.
	 */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(cache->owner,
						   save_sec_context | SECURITY_RESTRICTED_OPERATION);
	zorder_row_coordinates(set->cols, set->nkeys, values, nulls, set->bits,
						   coords);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	PG_RETURN_INT64((int64) (zorder_curve_key(set->curve, set->nkeys,
											  set->bits, coords) ^ KEY_BIAS));
}

/* s in single quotes for a POSIX shell. */
static void
append_shell_quoted(StringInfo buf, const char *s)
{
	appendStringInfoChar(buf, '\'');
	for (; *s; s++)
	{
		if (*s == '\'')
			appendStringInfoString(buf, "'\\''");
		else
			appendStringInfoChar(buf, *s);
	}
	appendStringInfoChar(buf, '\'');
}

/*
 * Sample one leaf into a new prepared set and emit its row of
 * prepare_layout.
 */
static void
prepare_leaf(Oid relid, ZCurve curve, ReturnSetInfo *rsinfo)
{
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	ZKeyColumn	cols[ZORDER_MAX_KEYS];
	int			nkeys;
	int			bits;
	int			sampled;
	int			id;
	char	   *qualname;
	char		idxname[NAMEDATALEN];
	StringInfoData order_by;
	StringInfoData buf;
	Datum		values[7];
	bool		nulls[7] = {0};
	const char *quoted_idx;
	ZOwnerSwitch sw;

	rel = zorder_open_checked(relid, AccessShareLock, "zorder.prepare_layout");
	nkeys = zorder_get_keys_required(rel, attnums);

	/*
	 * Comparison, send and output functions of the key types run as the
	 * table's owner in a security-restricted operation, as in a full
	 * optimize (and in VACUUM, ANALYZE and CLUSTER).
	 */
	zorder_become_owner(rel->rd_rel->relowner, &sw);
	for (int k = 0; k < nkeys; k++)
		zorder_prepare_key_column(rel, attnums[k], &cols[k]);
	bits = zorder_curve_bits(nkeys);
	sampled = zorder_sample_bounds(rel, nkeys, cols, bits, ZORDER_SAMPLE_ROWS);
	id = zorder_save_boundary_set(relid, nkeys, cols, curve, bits, sampled,
								  "prepare");
	zorder_restore_user(&sw);

	qualname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
										  RelationGetRelationName(rel));
	initStringInfo(&order_by);
	appendStringInfo(&order_by, "zorder.layout_key(%d", id);
	for (int k = 0; k < nkeys; k++)
		appendStringInfo(&order_by, ", %s",
						 quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(rel),
																attnums[k] - 1)->attname)));
	appendStringInfoChar(&order_by, ')');

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int32GetDatum(id);
	values[2] = CStringGetTextDatum(order_by.data);

	/* pg_repack --dbname=... --table=... --order-by=... */
	initStringInfo(&buf);
	appendStringInfoString(&buf, "pg_repack --dbname=");
	append_shell_quoted(&buf, get_database_name(MyDatabaseId));
	appendStringInfoString(&buf, " --table=");
	append_shell_quoted(&buf, qualname);
	appendStringInfoString(&buf, " --order-by=");
	append_shell_quoted(&buf, order_by.data);
	values[3] = CStringGetTextDatum(buf.data);

	/* the index CLUSTER and REPACK order by */
	{
		const char *relname = RelationGetRelationName(rel);

		/* cut on a character boundary, as ChooseRelationName does */
		snprintf(idxname, sizeof(idxname), "%.*s_zorder_layout_%d",
				 pg_mbcliplen(relname, strlen(relname), 40), relname, id);
	}
	quoted_idx = quote_identifier(idxname);
	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE INDEX CONCURRENTLY %s ON %s USING btree (%s)",
					 quoted_idx, qualname, order_by.data);
	values[4] = CStringGetTextDatum(buf.data);
	initStringInfo(&buf);
	appendStringInfo(&buf, "CLUSTER %s USING %s", qualname, quoted_idx);
	values[5] = CStringGetTextDatum(buf.data);
#if PG_VERSION_NUM >= 190000
	initStringInfo(&buf);
	appendStringInfo(&buf, "REPACK (CONCURRENTLY) %s USING INDEX %s",
					 qualname, quoted_idx);
	values[6] = CStringGetTextDatum(buf.data);
#else
	nulls[6] = true;
#endif
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	table_close(rel, AccessShareLock);
}

/*
 * zorder.prepare_layout(rel regclass, curve text) RETURNS SETOF record
 *
 * Sample the table (each leaf of a partitioned one) into a new boundary
 * set and say how to lay it out with a tool that rewrites it online.
 * Owner only, as zorder.optimize.  Rewrites nothing.
 */
Datum
zorder_prepare_layout(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid;
	ZCurve		curve;
	Relation	rel;
	List	   *leaves = NIL;
	ListCell   *lc;

	PreventCommandDuringRecovery("zorder.prepare_layout");
	zorder_arg_required(fcinfo, 0, "table");
	relid = PG_GETARG_OID(0);
	curve = zorder_parse_curve(PG_ARGISNULL(1) ? "hilbert" :
							text_to_cstring(PG_GETARG_TEXT_PP(1)));
	InitMaterializedSRF(fcinfo, 0);

	rel = zorder_open_checked(relid, AccessShareLock, "zorder.prepare_layout");
	(void) zorder_get_keys_required(rel, (AttrNumber[ZORDER_MAX_KEYS]) {0});
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
			if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
				leaves = lappend_oid(leaves, lfirst_oid(lc));
	}
	else
		leaves = list_make1_oid(relid);
	table_close(rel, NoLock);

	foreach(lc, leaves)
		prepare_leaf(lfirst_oid(lc), curve, rsinfo);
	return (Datum) 0;
}

/* ---------------------------------------------------------------------
 * Which sets are in use, and dropping those that are not
 * ---------------------------------------------------------------------
 */

/* Is funcid zorder.layout_key?  (A C function only a superuser can make.) */
static bool
is_layout_key_function(Oid funcid)
{
	HeapTuple	tuple;
	bool		result = false;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tuple))
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tuple);

		if (proc->prolang == ClanguageId)
		{
			bool		isnull;
			Datum		src = SysCacheGetAttr(PROCOID, tuple,
											  Anum_pg_proc_prosrc, &isnull);

			result = !isnull &&
				strcmp(TextDatumGetCString(src), "zorder_layout_key") == 0;
		}
		ReleaseSysCache(tuple);
	}
	return result;
}

typedef struct SetUseContext
{
	List	   *ids;			/* set ids that layout_key calls name */
} SetUseContext;

static bool
find_set_uses(Node *node, SetUseContext *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) node;

		if (list_length(f->args) >= 1 && is_layout_key_function(f->funcid))
		{
			Node	   *arg = linitial(f->args);

			if (IsA(arg, Const) && !((Const *) arg)->constisnull &&
				((Const *) arg)->consttype == INT4OID)
				context->ids = lappend_int(context->ids,
										   DatumGetInt32(((Const *) arg)->constvalue));
		}
	}
	return expression_tree_walker(node, find_set_uses, (void *) context);
}

/*
 * zorder._boundary_sets_in_use() RETURNS TABLE (set_id int, relid oid)
 *
 * The boundary sets that the expressions and predicates of indexes name
 * in calls of zorder.layout_key, with the table of each index.  Only a set
 * named by a constant, as zorder.prepare_layout writes the call, is seen
 * (README: Laying out a large live table).  Read from pg_index as the catalog snapshot
 * sees it, for the event trigger that forgets a dropped table's sets and
 * for zorder.drop_unused_boundary_sets.
 */
/* The owner of relation relid, or InvalidOid if it is gone. */
static Oid
relation_owner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * The sets whose table exists, with the owner of that table: ids into
 * *ids, owners returned, *n of each.  The owner of an index's table must
 * be that owner for the index to keep the set in use.
 */
static Oid *
set_owners(int **ids, int *n)
{
	Datum		row;
	bool		isnull;
	Datum		values[2];
	bool		nulls[2];
	Datum	   *idd,
			   *ownd;
	int			n2;
	Oid		   *owners;

	*n = 0;
	*ids = NULL;
	zorder_catalog_read("SELECT ROW(coalesce(array_agg(s.id), '{}'), "
						"coalesce(array_agg(c.relowner), '{}')) "
						"FROM zorder.boundary_sets s "
						"JOIN pg_catalog.pg_class c ON c.oid = s.relid::oid",
						0, NULL, NULL, &row, &isnull);
	if (isnull)
		return NULL;
	zorder_deform_row(row, values, nulls);
	deconstruct_array(DatumGetArrayTypeP(values[0]), INT4OID, 4, true,
					  TYPALIGN_INT, &idd, NULL, n);
	deconstruct_array(DatumGetArrayTypeP(values[1]), OIDOID, 4, true,
					  TYPALIGN_INT, &ownd, NULL, &n2);
	Assert(n2 == *n);
	*ids = palloc(sizeof(int) * Max(*n, 1));
	owners = palloc(sizeof(Oid) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		(*ids)[i] = DatumGetInt32(idd[i]);
		owners[i] = DatumGetObjectId(ownd[i]);
	}
	return owners;
}

PG_FUNCTION_INFO_V1(zorder_boundary_sets_in_use);
Datum
zorder_boundary_sets_in_use(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	pg_index;
	SysScanDesc scan;
	HeapTuple	tuple;
	int		   *set_ids;
	Oid		   *owners;
	int			nsets;

	InitMaterializedSRF(fcinfo, 0);
	owners = set_owners(&set_ids, &nsets);
	pg_index = table_open(IndexRelationId, AccessShareLock);
	scan = systable_beginscan(pg_index, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_index idx = (Form_pg_index) GETSTRUCT(tuple);
		SetUseContext context = {NIL};
		int			attnos[2] = {Anum_pg_index_indexprs, Anum_pg_index_indpred};
		ListCell   *lc;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < 2; i++)
		{
			bool		isnull;
			Datum		d = heap_getattr(tuple, attnos[i],
										 RelationGetDescr(pg_index), &isnull);

			if (!isnull)
				(void) find_set_uses(stringToNode(TextDatumGetCString(d)),
									 &context);
		}
		foreach(lc, context.ids)
		{
			Datum		values[2];
			bool		nulls[2] = {false, false};
			int			id = lfirst_int(lc);
			int			s = 0;

			/* another role's index keeps no set of a table alive */
			while (s < nsets && set_ids[s] != id)
				s++;
			if (s < nsets && owners[s] != relation_owner(idx->indrelid))
				continue;
			values[0] = Int32GetDatum(id);
			values[1] = ObjectIdGetDatum(idx->indrelid);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
								 nulls);
		}
	}
	systable_endscan(scan);
	table_close(pg_index, AccessShareLock);
	return (Datum) 0;
}

/*
 * zorder.drop_unused_boundary_sets(rel regclass) RETURNS integer
 *
 * Delete the boundary sets of rel (of each leaf of a partitioned table)
 * that nothing uses: no index names them, they are not its layout's set,
 * and not the newest prepared set a rewrite under way may be ordering by.
 * Owner only, as prepare_layout.  Takes SHARE UPDATE EXCLUSIVE on each
 * table, which waits for a CREATE INDEX (CONCURRENTLY) on it to finish.
 * Returns how many sets it deleted.
 */
PG_FUNCTION_INFO_V1(zorder_drop_unused_boundary_sets);
Datum
zorder_drop_unused_boundary_sets(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	List	   *leaves;
	ListCell   *lc;
	int64		dropped = 0;

	PreventCommandDuringRecovery("zorder.drop_unused_boundary_sets");
	zorder_arg_required(fcinfo, 0, "table");
	relid = PG_GETARG_OID(0);
	rel = zorder_open_checked(relid, ShareUpdateExclusiveLock,
							  "zorder.drop_unused_boundary_sets");
	/* the sets of every partition go too: the caller must own them all */
	zorder_check_partition_owners(rel);
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		leaves = find_all_inheritors(relid, ShareUpdateExclusiveLock, NULL);
	else
		leaves = list_make1_oid(relid);
	table_close(rel, NoLock);

	foreach(lc, leaves)
	{
		Oid			argtypes[1] = {OIDOID};
		Datum		args[1] = {ObjectIdGetDatum(lfirst_oid(lc))};

		dropped += zorder_catalog_exec(
									   "DELETE FROM zorder.boundary_sets b WHERE b.relid::oid = $1 "
									   "AND NOT EXISTS (SELECT FROM zorder._boundary_sets_in_use() u "
									   "WHERE u.set_id = b.id) "
									   "AND NOT EXISTS (SELECT FROM zorder.layouts l "
									   "WHERE l.relid::oid = $1 AND l.boundary_set = b.id) "
									   "AND b.id IS DISTINCT FROM (SELECT max(p.id) FROM zorder.boundary_sets p "
									   "WHERE p.relid::oid = $1 AND p.origin = 'prepare' "
									   "AND p.id > coalesce((SELECT l.boundary_set FROM zorder.layouts l "
									   "WHERE l.relid::oid = $1), 0))",
									   1, argtypes, args, NULL, NULL, NULL);
	}
	PG_RETURN_INT32((int32) dropped);
}
