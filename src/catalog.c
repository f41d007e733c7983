/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  The extension's catalog (zorder.tables, zorder.layouts) and the SQL
 *	  functions that declare clustering keys.
 *
 * Ordinary users have no privileges on the catalog tables.  The functions
 * here check the caller's rights on the target table first, then read and
 * write the catalog through SPI as the catalog's owner, with search_path
 * pinned so that no object in a user's schema can take part.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "catalog/pg_am.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "zorder.h"

PG_FUNCTION_INFO_V1(zorder_cluster_by);
PG_FUNCTION_INFO_V1(zorder_clear_keys);

/* Owner of the catalog tables: the role that created the extension. */
static Oid
catalog_owner(void)
{
	Oid			nsp = get_namespace_oid("zorder", false);
	Oid			relid = get_relname_relid("tables", nsp);
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(relid))
		elog(ERROR, "zorder catalog table \"zorder.tables\" is missing");
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Pin search_path to pg_catalog until AtEOXact_GUC(false, <returned level>),
 * so that no object in a user's schema takes part in our SQL.
 */
int
zorder_pin_search_path(void)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

/*
 * Run one catalog statement as the catalog's owner.  Returns SPI_processed;
 * if result is not NULL and the statement returned a row, *result is the
 * first column of the first row, copied into the caller's context.
 */
int64
zorder_catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
					const char *nulls, Datum *result, bool *result_isnull)
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int			ret;
	int64		processed;
	MemoryContext callercxt = CurrentMemoryContext;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(catalog_owner(),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = zorder_pin_search_path();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	if (ret < 0)
		elog(ERROR, "zorder catalog statement failed: %s", sql);
	processed = SPI_processed;
	if (result)
	{
		*result_isnull = true;
		if (SPI_processed > 0 && SPI_tuptable != NULL)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
			{
				Form_pg_attribute att = TupleDescAttr(SPI_tuptable->tupdesc, 0);

				*result = SPI_datumTransfer(d, att->attbyval, att->attlen);
				*result_isnull = false;
			}
		}
	}
	SPI_finish();

	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	MemoryContextSwitchTo(callercxt);
	return processed;
}

/*
 * Check that the current user may change the clustering of rel and that
 * rel is a kind of relation that can be clustered.  Raises an error
 * otherwise.  name is the command, for messages.
 */
void
zorder_check_relation(Relation rel, const char *name)
{
	char		relkind = rel->rd_rel->relkind;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel)),
				 errdetail("%s works on ordinary and partitioned tables.",
						   name)));
	/* the rewrite and the moves read and write heap pages themselves */
	if (relkind == RELKIND_RELATION && rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("\"%s\" is not a heap table", RelationGetRelationName(rel)),
				 errdetail("%s works on tables of the access method \"heap\" only.",
						   name)));
	if (IsCatalogRelation(rel) || IsToastRelation(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cluster system catalog \"%s\"",
						RelationGetRelationName(rel))));
	if (RELATION_IS_OTHER_TEMP(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cluster temporary tables of other sessions")));
	if (!pg_class_ownercheck(RelationGetRelid(rel), GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(relkind),
					   RelationGetRelationName(rel));
}

/*
 * Open a table given by OID under lock, checking ownership before taking
 * the lock so that nobody can queue a strong lock on a table they do not
 * own.
 */
Relation
zorder_open_checked(Oid relid, LOCKMODE lockmode, const char *name)
{
	Relation	rel;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));

	rel = try_relation_open(relid, lockmode);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	zorder_check_relation(rel, name);
	return rel;
}

/* Name of a column that exists and is not dropped, else NULL. */
static char *
live_attname(Oid relid, AttrNumber attnum)
{
	HeapTuple	tup;
	char	   *name = NULL;

	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid),
						  Int16GetDatum(attnum));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_attribute att = (Form_pg_attribute) GETSTRUCT(tup);

		if (!att->attisdropped)
			name = pstrdup(NameStr(att->attname));
		ReleaseSysCache(tup);
	}
	return name;
}

/*
 * Keys that apply to relid: its own, or those of its nearest partitioned
 * ancestor, translated to relid's attribute numbers by name.  Returns the
 * number of keys (0 if none); attnums gets them.
 */
int
zorder_get_keys(Relation rel, AttrNumber *attnums)
{
	Oid			relid = RelationGetRelid(rel);
	List	   *ancestors = NIL;
	ListCell   *lc;
	int			nkeys = 0;

	if (rel->rd_rel->relispartition)
		ancestors = get_partition_ancestors(relid);
	ancestors = lcons_oid(relid, ancestors);

	foreach(lc, ancestors)
	{
		Oid			source = lfirst_oid(lc);
		Oid			argtypes[1] = {OIDOID};
		Datum		args[1] = {ObjectIdGetDatum(source)};
		Datum		keys;
		bool		isnull;
		Datum	   *elems;
		int			nelems;

		zorder_catalog_exec("SELECT keys FROM zorder.tables WHERE relid = $1",
							1, argtypes, args, NULL, &keys, &isnull);
		if (isnull)
			continue;

		deconstruct_array(DatumGetArrayTypeP(keys), INT2OID, 2, true,
						  TYPALIGN_SHORT, &elems, NULL, &nelems);
		for (int i = 0; i < nelems && i < ZORDER_MAX_KEYS; i++)
		{
			AttrNumber	attnum = DatumGetInt16(elems[i]);
			char	   *attname = live_attname(source, attnum);

			if (attname == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("key column %d of table \"%s\" was dropped",
								i + 1, get_rel_name(source)),
						 errhint("Call zorder.cluster_by to declare the keys again.")));
			if (source != relid)
			{
				attnum = get_attnum(relid, attname);
				if (attnum == InvalidAttrNumber)
					ereport(ERROR,
							(errcode(ERRCODE_UNDEFINED_COLUMN),
							 errmsg("key column \"%s\" does not exist in partition \"%s\"",
									attname, RelationGetRelationName(rel))));
			}
			attnums[nkeys++] = attnum;
		}
		break;
	}
	return nkeys;
}

/* Attribute number of a user column of rel; an error for any other name. */
AttrNumber
zorder_user_attnum(Relation rel, const char *colname)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), colname);

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						colname, RelationGetRelationName(rel))));
	if (attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot use system column \"%s\"", colname)));
	return attnum;
}

/* The keys that apply to rel (see zorder_get_keys); an error if none. */
int
zorder_get_keys_required(Relation rel, AttrNumber *attnums)
{
	int			nkeys = zorder_get_keys(rel, attnums);

	if (nkeys == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no clustering keys",
						RelationGetRelationName(rel)),
				 errhint("Call zorder.cluster_by to declare them.")));
	return nkeys;
}

/*
 * zorder.cluster_by(rel regclass, VARIADIC columns name[])
 *
 * Declare the clustering keys of a table.  Rewrites nothing: the next
 * zorder.optimize lays the table out.  On a partitioned table the keys apply
 * to every partition, present and future.
 */
Datum
zorder_cluster_by(PG_FUNCTION_ARGS)
{
	Oid			relid;
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *elemnulls;
	int			nelems;
	Relation	rel;
	Datum	   *attnums;
	Oid			argtypes[2] = {OIDOID, INT2ARRAYOID};
	Datum		args[2];

	PreventCommandDuringRecovery("zorder.cluster_by");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("key columns must not be null")));
	relid = PG_GETARG_OID(0);
	arr = PG_GETARG_ARRAYTYPE_P(1);

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("key columns must be a one-dimensional array")));
	deconstruct_array(arr, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &elems, &elemnulls, &nelems);
	if (nelems == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("at least one key column is required"),
				 errhint("Use zorder.clear_keys to remove the keys of a table.")));
	if (nelems > ZORDER_MAX_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_COLUMNS),
				 errmsg("too many key columns"),
				 errdetail("A table can have at most %d key columns; %d were given.",
						   ZORDER_MAX_KEYS, nelems)));

	/* blocks concurrent DDL and optimize, but not reads or writes */
	rel = zorder_open_checked(relid, ShareUpdateExclusiveLock,
							  "zorder.cluster_by");
	attnums = palloc(sizeof(Datum) * nelems);

	for (int i = 0; i < nelems; i++)
	{
		const char *colname;
		AttrNumber	attnum;
		ZKeyColumn	col;

		if (elemnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key column names must not be null")));
		colname = NameStr(*DatumGetName(elems[i]));
		attnum = zorder_user_attnum(rel, colname);
		for (int j = 0; j < i; j++)
			if (DatumGetInt16(attnums[j]) == attnum)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears twice in the keys",
								colname)));
		/* the type must be sortable */
		zorder_prepare_key_column(rel, attnum, &col);
		attnums[i] = Int16GetDatum(attnum);
	}

	args[0] = ObjectIdGetDatum(relid);
	args[1] = PointerGetDatum(construct_array(attnums, nelems, INT2OID, 2,
											  true, TYPALIGN_SHORT));

	/* the parent's keys replace those of its partitions */
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		zorder_catalog_exec("DELETE FROM zorder.tables WHERE relid = ANY ("
							"SELECT relid FROM pg_partition_tree($1) "
							"WHERE relid OPERATOR(pg_catalog.<>) $1)",
							1, argtypes, args, NULL, NULL, NULL);
	zorder_catalog_exec("INSERT INTO zorder.tables (relid, keys) VALUES ($1, $2) "
						"ON CONFLICT (relid) DO UPDATE SET keys = excluded.keys",
						2, argtypes, args, NULL, NULL, NULL);

	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

/*
 * zorder.clear_keys(rel regclass): forget the keys and layout of a table.
 */
Datum
zorder_clear_keys(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];

	PreventCommandDuringRecovery("zorder.clear_keys");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table must not be null")));
	relid = PG_GETARG_OID(0);
	rel = zorder_open_checked(relid, ShareUpdateExclusiveLock,
							  "zorder.clear_keys");
	args[0] = ObjectIdGetDatum(relid);
	zorder_catalog_exec("DELETE FROM zorder.tables WHERE relid = $1",
						1, argtypes, args, NULL, NULL, NULL);
	zorder_catalog_exec("DELETE FROM zorder.layouts WHERE relid = $1 OR "
						"relid = ANY (SELECT relid FROM pg_partition_tree($1))",
						1, argtypes, args, NULL, NULL, NULL);
	zorder_catalog_exec("DELETE FROM zorder.cubes WHERE relid = $1 OR "
						"relid = ANY (SELECT relid FROM pg_partition_tree($1))",
						1, argtypes, args, NULL, NULL, NULL);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

/*
 * zorder_catalog_exec for a read-only query, run with the active snapshot
 * and no new one: what an IMMUTABLE function (zorder.layout_key) may do,
 * in a parallel worker too, where a new snapshot cannot be taken.
 */
int64
zorder_catalog_read(const char *sql, int nargs, Oid *argtypes, Datum *values,
					Datum *result, bool *result_isnull)
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int			ret;
	int64		processed;
	MemoryContext callercxt = CurrentMemoryContext;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(catalog_owner(),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = zorder_pin_search_path();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args(sql, nargs, argtypes, values, NULL, true, 1);
	if (ret < 0)
		elog(ERROR, "zorder catalog statement failed: %s", sql);
	processed = SPI_processed;
	*result_isnull = true;
	if (SPI_processed > 0 && SPI_tuptable != NULL)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
		{
			Form_pg_attribute att = TupleDescAttr(SPI_tuptable->tupdesc, 0);

			*result = SPI_datumTransfer(d, att->attbyval, att->attlen);
			*result_isnull = false;
		}
	}
	SPI_finish();

	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	MemoryContextSwitchTo(callercxt);
	return processed;
}
