/*-------------------------------------------------------------------------
 *
 * layoutkey.c
 *	  The SQL surface of boundary sets: zorder.prepare_layout, which samples
 *	  a table into a new set and prints the commands that lay it out online;
 *	  zorder.layout_key, the curve key of a full zorder.optimize as an SQL
 *	  function, so that the tools that rewrite a table online (pg_repack's
 *	  --order-by, CLUSTER and REPACK over an expression index) can lay a
 *	  table out as we would; zorder.drop_unused_boundary_sets; and the two
 *	  functions that carry a layout's set to another node with a Citus
 *	  shard moved there (zorder._shard_layout_set, _adopt_layout_set).
 *
 * The sets themselves, and every statement on zorder.boundary_sets, are
 * boundsets.c's.  Here are the privilege checks: a set's values are the
 * table's, so computing keys under it needs the right to read the table's
 * key columns, and the boundaries are read back only after that check, as
 * the table's owner in a security-restricted operation.
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
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "access.h"
#include "boundsets.h"
#include "brin.h"
#include "catalog.h"
#include "citus.h"
#include "heappage.h"
#include "keyenc.h"
#include "layout.h"
#include "quantile.h"
#include "room.h"
#include "tables.h"
#include "zorder.h"


PG_FUNCTION_INFO_V1(zorder_layout_key);
PG_FUNCTION_INFO_V1(zorder_prepare_layout);

/* keys are stored as bigint with the sign bit flipped, to sort the same */
#define KEY_BIAS	UINT64CONST(0x8000000000000000)

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
	if (set->unfit)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("boundary set %d no longer fits the types of its key columns",
						set->id),
				 errdetail("%s", set->unfit),
				 errhint("Store a new set with zorder.prepare_layout, or lay the table out with CALL zorder.optimize.")));
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
 * Boundaries of rel's key columns attnums from a sample, as a full optimize
 * draws them, into cols; *bits their bits per key.  Returns the rows
 * sampled.  The caller runs as the table's owner.
 */
static int
sample_keys(Relation rel, int nkeys, const AttrNumber *attnums,
			ZKeyColumn *cols, int *bits)
{
	for (int k = 0; k < nkeys; k++)
		zorder_prepare_key_column(rel, attnums[k], &cols[k]);
	*bits = zorder_curve_bits(nkeys);
	return zorder_sample_bounds(rel, nkeys, cols, *bits, ZORDER_SAMPLE_ROWS);
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
	sampled = sample_keys(rel, nkeys, attnums, cols, &bits);
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
		dropped += zorder_boundary_sets_drop_unused(lfirst_oid(lc));
	}
	PG_RETURN_INT32((int32) dropped);
}

/*
 * zorder._shard_layout_set(rel regclass, known integer) RETURNS jsonb
 *
 * The boundary set rel's layout was written with, as a document another
 * node can take (zorder._adopt_layout_set), with its id here and the room
 * zorder chose for rel ("fillfactor"); the room alone if the set is known,
 * the one the caller has; NULL if there is nothing to say.  A Citus
 * coordinator calls it on each shard after laying the shard out, as the
 * calling role, and keeps the answer (shardsets.c).  The set's boundaries
 * are values of the table, so this is the owner's, as zorder.optimize is.
 */
PG_FUNCTION_INFO_V1(zorder_shard_layout_set);
Datum
zorder_shard_layout_set(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	int			id;
	int			ff;
	char	   *doc;

	zorder_arg_required(fcinfo, 0, "table");
	relid = PG_GETARG_OID(0);

	rel = zorder_open_checked(relid, AccessShareLock, "zorder.optimize");
	id = zorder_layout_boundary_set(relid);
	ff = zorder_room_fillfactor_chosen(relid);
	table_close(rel, AccessShareLock);
	if (id != 0 && !(!PG_ARGISNULL(1) && PG_GETARG_INT32(1) == id))
		doc = zorder_boundary_set_export(id);
	else
		doc = NULL;
	if (doc != NULL)
		doc = psprintf("%.*s, \"id\": %d%s}",
					   (int) strlen(doc) - 1, doc, id,
					   ff != 0 ? psprintf(", \"fillfactor\": %d", ff) : "");
	else if (ff != 0)
		doc = psprintf("{\"fillfactor\": %d}", ff);
	else
		PG_RETURN_NULL();
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(doc)));
}

/* The document's "fillfactor", if it is a number from 10 to 100; else 0 */
static int
doc_fillfactor(Jsonb *doc)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&doc->root, "fillfactor",
												 strlen("fillfactor"), NULL);
	int			ff;

	if (v == NULL || v->type != jbvNumeric)
		return 0;
	ff = DatumGetInt32(DirectFunctionCall1(numeric_int4,
										   NumericGetDatum(v->val.numeric)));
	return ff >= 10 && ff <= 100 ? ff : 0;
}

/* Whether the document holds a set (its "columns"), not the room alone */
static bool
doc_has_set(Jsonb *doc)
{
	return getKeyJsonValueFromContainer(&doc->root, "columns",
										strlen("columns"), NULL) != NULL;
}

/*
 * zorder._adopt_layout_set(rel regclass, layout_set jsonb) RETURNS boolean
 *
 * Give rel, a table with no layout here, the set of a layout it had on
 * another node (a Citus shard that a move brought here, in its old heap
 * order), as a prepared set: its next zorder.optimize checks the heap
 * against it in one scan and keeps the layout where the order held, as
 * after an online rewrite (recognize.c), instead of rewriting it in full.
 * Does nothing, and returns false, when rel has a layout or a prepared
 * set already, or when a column of the set is not rel's.  The owner's, as
 * zorder.optimize: the set decides how the owner's table is laid out.
 * Nothing in the document is trusted: the set is checked against the
 * table's keys and types, and its boundaries read back as the owner, when
 * it is used.
 */
PG_FUNCTION_INFO_V1(zorder_adopt_layout_set);
Datum
zorder_adopt_layout_set(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Jsonb	   *layout_set = PG_GETARG_JSONB_P(1);
	char	   *doc = DatumGetCString(DirectFunctionCall1(jsonb_out,
														  PG_GETARG_DATUM(1)));
	Relation	rel;
	bool		adopted = false;

	PreventCommandDuringRecovery("zorder._adopt_layout_set");
	if (!JB_ROOT_IS_OBJECT(layout_set))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("layout_set must be a jsonb object"),
				 errdetail("zorder._adopt_layout_set takes the document zorder._shard_layout_set gives.")));
	/* the lock zorder.optimize and zorder.prepare_layout's sets take */
	rel = zorder_open_checked(relid, ShareUpdateExclusiveLock, "zorder.optimize");
	if (rel->rd_rel->relkind == RELKIND_RELATION && !zorder_layout_exists(relid))
	{
		/* the room the shard was made with, if zorder gave it */
		zorder_room_take_fillfactor(relid, doc_fillfactor(layout_set));
		if (doc_has_set(layout_set) && !zorder_boundary_set_prepared(relid))
			adopted = zorder_boundary_set_adopt(relid, doc) != 0;
	}
	table_close(rel, NoLock);
	PG_RETURN_BOOL(adopted);
}

/*
 * zorder._shard_sample_set(rel regclass, curve text) RETURNS jsonb
 *
 * A sample of rel's keys as the boundaries its own full layout would
 * have, not stored, for a Citus coordinator that makes one set for the
 * whole distributed table from every shard's (tableset.c): the set as
 * zorder._shard_layout_set gives one, with rel's pages, by which the
 * coordinator weighs it.  The owner's, as zorder.optimize: the
 * boundaries are values of the table.  NULL where row-level security
 * applies to the caller.
 */
PG_FUNCTION_INFO_V1(zorder_shard_sample_set);
Datum
zorder_shard_sample_set(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	ZKeyColumn	cols[ZORDER_MAX_KEYS];
	int			nkeys;
	int			bits;
	int			sampled;
	ZCurve		curve;
	char	   *doc;
	ZOwnerSwitch sw;

	zorder_arg_required(fcinfo, 0, "table");
	relid = PG_GETARG_OID(0);
	rel = zorder_open_shard(relid, AccessShareLock, "zorder.optimize");
	nkeys = zorder_get_keys_required(rel, attnums);
	curve = zorder_parse_curve(PG_ARGISNULL(1) ? zorder_layout_curve(relid) :
							   text_to_cstring(PG_GETARG_TEXT_PP(1)));

	/*
	 * The sample is values of the table: none where row-level security
	 * hides rows from the caller (FORCE ROW LEVEL SECURITY on the owner).
	 * The coordinator makes the set from the other shards' samples.
	 */
	if (zorder_rls_applies(rel))
	{
		table_close(rel, AccessShareLock);
		PG_RETURN_NULL();
	}

	/* the key types' functions run as the owner, as in a full optimize */
	zorder_become_owner(rel->rd_rel->relowner, &sw);
	sampled = sample_keys(rel, nkeys, attnums, cols, &bits);
	doc = zorder_boundary_set_document(relid, nkeys, cols, curve, bits,
									   sampled);
	zorder_restore_user(&sw);
	doc = psprintf("%.*s, \"pages\": %u}", (int) strlen(doc) - 1, doc,
				   RelationGetNumberOfBlocks(rel));
	table_close(rel, AccessShareLock);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(doc)));
}

/*
 * zorder._take_table_set(rel regclass, "table" regclass, set_id integer,
 *						  layout_set jsonb) RETURNS void
 *
 * Store a Citus distributed table's set on this node under the id its
 * coordinator chose, as a set of the table (its shell here, which all its
 * shards here share), for rel, a shard of it, to be laid out with
 * (zorder._optimize_with_set).  The owner's, of both: the set decides how
 * the owner's table is laid out, and its boundaries are read back as the
 * owner before it is kept.
 */
PG_FUNCTION_INFO_V1(zorder_take_table_set);
Datum
zorder_take_table_set(PG_FUNCTION_ARGS)
{
	Relation	rel;
	Relation	table;
	char	   *doc;

	PreventCommandDuringRecovery("zorder._take_table_set");
	zorder_arg_required(fcinfo, 0, "table");
	zorder_arg_required(fcinfo, 1, "table");
	zorder_arg_required(fcinfo, 2, "set_id");
	zorder_arg_required(fcinfo, 3, "layout_set");
	if (!JB_ROOT_IS_OBJECT(PG_GETARG_JSONB_P(3)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("layout_set must be a jsonb object")));
	doc = DatumGetCString(DirectFunctionCall1(jsonb_out, PG_GETARG_DATUM(3)));
	/* the lock zorder.optimize and zorder.prepare_layout's sets take */
	rel = zorder_open_checked(PG_GETARG_OID(0), ShareUpdateExclusiveLock,
							  "zorder.optimize");
	table = zorder_open_node_shell(PG_GETARG_OID(1), AccessShareLock,
								   "zorder.optimize");
	if (!zorder_citus_distributed(RelationGetRelid(table)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a Citus distributed table",
						RelationGetRelationName(table))));
	if (table->rd_rel->relowner != rel->rd_rel->relowner)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("tables \"%s\" and \"%s\" have different owners",
						RelationGetRelationName(table),
						RelationGetRelationName(rel))));
	zorder_boundary_set_take(RelationGetRelid(table), PG_GETARG_INT32(2), doc);
	table_close(table, NoLock);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}
