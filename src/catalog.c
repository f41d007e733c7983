/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  The door to the extension's catalog: every catalog statement of every
 *	  module runs through zorder_catalog_exec (or zorder_catalog_read).
 *
 * Ordinary users have no privileges on the catalog tables.  Callers check
 * the caller's rights on the target table first (access.c); the statements
 * here then run through SPI as the extension's owner, with search_path
 * pinned so that no object in a user's schema can take part, and only
 * after checking that the schema named zorder is the extension's own (see
 * catalog_owner).
 *
 * Each catalog table has one owner module that writes its statements:
 * zorder.tables and zorder.temp_relations are tables.c's; zorder.layouts,
 * zorder.runs and zorder.history layout.c's; zorder.boundary_sets
 * layoutkey.c's.  This file knows none of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "catalog.h"
#include "pg_compat.h"

/*
 * Where the catalog lives, and as whom it is read and written.
 *
 * Every catalog statement below names its tables "zorder.<table>", and runs
 * as the extension's owner (a superuser: the control file says so).  A name
 * is resolved when the statement runs, so it is trusted only once it is
 * shown to lead where the extension put its catalog:
 *
 * - The extension is found by its name in pg_extension, which is unique in
 *   a database; its owner comes from there (pg_extension.extowner), not
 *   from whatever relation "zorder.tables" names today.
 * - Its schema is the namespace that is a member of the extension
 *   (pg_depend, deptype 'e').  The install script creates schema zorder
 *   itself and refuses to run if it already exists, so only a schema made
 *   by CREATE EXTENSION zorder can be a member; membership is fixed at
 *   install time and no other role can add to it.
 * - The name "zorder" must resolve to that very schema, and the schema must
 *   belong to the extension's owner.  Only its owner can rename it, so
 *   with both checks passing nobody else can have put a schema, table or
 *   trigger in the way.  When they fail (a superuser renamed the schema or
 *   gave it away), every catalog statement refuses to run instead of
 *   running as a superuser over objects someone else may control.
 *
 * Checking the name rather than rewriting each statement with the member
 * schema's current name keeps the statements greppable and fails closed.
 * The checks cost two index scans and a syscache lookup per statement,
 * nothing next to the statement itself.
 */
static Oid
catalog_owner(void)
{
	Relation	extrel;
	Relation	deprel;
	SysScanDesc scan;
	ScanKeyData key[2];
	HeapTuple	tup;
	Oid			extoid = InvalidOid;
	Oid			extowner = InvalidOid;
	Oid			extnamespace = InvalidOid;
	Oid			nsp = InvalidOid;
	Oid			nspowner;

	extrel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_extension_extname,
				BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("zorder"));
	scan = systable_beginscan(extrel, ExtensionNameIndexId, true,
							  NULL, 1, key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		extoid = ((Form_pg_extension) GETSTRUCT(tup))->oid;
		extowner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
		extnamespace = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	}
	systable_endscan(scan);
	table_close(extrel, AccessShareLock);
	if (!OidIsValid(extoid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"zorder\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION zorder as a superuser.")));

	deprel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid,
				BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid,
				BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extoid));
	scan = systable_beginscan(deprel, DependReferenceIndexId, true,
							  NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->classid == NamespaceRelationId &&
			dep->deptype == DEPENDENCY_EXTENSION)
		{
			nsp = dep->objid;
			break;
		}
	}
	systable_endscan(scan);
	table_close(deprel, AccessShareLock);

	/* version 0.1 lived in schema zorder without owning it: update first */
	if (!OidIsValid(nsp) && extnamespace != PG_CATALOG_NAMESPACE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"zorder\" must be updated"),
				 errdetail("Its objects in the database are those of an older version than its library."),
				 errhint("Run ALTER EXTENSION zorder UPDATE as a superuser.")));
	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"zorder\" has no schema of its own"),
				 errdetail("Its catalog must live in a schema created by CREATE EXTENSION zorder."),
				 errhint("Drop the extension and create it again.")));
	if (get_namespace_oid("zorder", true) != nsp)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("schema \"zorder\" is not the schema of extension \"zorder\""),
				 errdetail("The extension's schema is now named \"%s\"; the name \"zorder\" could lead to objects of another role.",
						   get_namespace_name(nsp)),
				 errhint("Rename the extension's schema back to \"zorder\".")));
	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nsp);
	nspowner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	if (nspowner != extowner)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("schema \"zorder\" is not owned by the owner of extension \"zorder\""),
				 errdetail("Its owner could rename it or create objects in it."),
				 errhint("Give schema \"zorder\" back to role \"%s\".",
						 GetUserNameFromId(extowner, false))));
	return extowner;
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
 * Plans of the catalog statements, kept for the session: each is parsed and
 * planned once, not at every call (the sql_drop trigger runs at every DROP
 * in the database, incremental calls run several statements per batch).
 * The statements are few, so a list searched by text is enough.  A kept
 * plan is revalidated by the plan cache when the catalog tables change
 * (DROP and CREATE EXTENSION); that happens inside the execution, after
 * catalog_owner's checks, with search_path pinned as when it was made.
 */
typedef struct CatalogPlan
{
	char	   *sql;
	int			nargs;
	Oid		   *argtypes;
	SPIPlanPtr	plan;
} CatalogPlan;

static List *catalog_plans = NIL;

static SPIPlanPtr
catalog_plan(const char *sql, int nargs, Oid *argtypes)
{
	ListCell   *lc;
	CatalogPlan *entry;
	SPIPlanPtr	plan;
	MemoryContext oldcxt;

	foreach(lc, catalog_plans)
	{
		entry = (CatalogPlan *) lfirst(lc);
		if (entry->nargs == nargs && strcmp(entry->sql, sql) == 0 &&
			(nargs == 0 ||
			 memcmp(entry->argtypes, argtypes, sizeof(Oid) * nargs) == 0))
			return entry->plan;
	}

	plan = SPI_prepare(sql, nargs, argtypes);
	if (plan == NULL)
		elog(ERROR, "could not prepare zorder catalog statement \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "could not keep the plan of zorder catalog statement \"%s\"",
			 sql);

	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	entry = palloc(sizeof(CatalogPlan));
	entry->sql = pstrdup(sql);
	entry->nargs = nargs;
	entry->argtypes = palloc(sizeof(Oid) * Max(nargs, 1));
	if (nargs > 0)
		memcpy(entry->argtypes, argtypes, sizeof(Oid) * nargs);
	entry->plan = plan;
	catalog_plans = lappend(catalog_plans, entry);
	MemoryContextSwitchTo(oldcxt);
	return plan;
}

/*
 * Run one catalog statement as the catalog's owner.  Returns SPI_processed;
 * if result is not NULL and the statement returned a row, *result is the
 * first column of the first row, copied into the caller's context.  A
 * read_only statement runs with the active snapshot and takes no new one,
 * and reads one row at most.
 */
static int64
catalog_run(const char *sql, int nargs, Oid *argtypes, Datum *values,
			const char *nulls, bool read_only, Datum *result,
			bool *result_isnull)
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
	ret = SPI_execute_plan(catalog_plan(sql, nargs, argtypes), values, nulls,
						   read_only, read_only ? 1 : 0);
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
 * The columns of a composite value that a catalog statement returned
 * (SELECT ROW(...)), into values and nulls.
 */
void
zorder_deform_row(Datum row, Datum *values, bool *nulls)
{
	HeapTupleHeader hdr = DatumGetHeapTupleHeader(row);
	HeapTupleData tup;
	TupleDesc	desc;

	tup.t_len = HeapTupleHeaderGetDatumLength(hdr);
	ItemPointerSetInvalid(&tup.t_self);
	tup.t_tableOid = InvalidOid;
	tup.t_data = hdr;
	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(hdr),
								  HeapTupleHeaderGetTypMod(hdr));
	heap_deform_tuple(&tup, desc, values, nulls);
	ReleaseTupleDesc(desc);
}

int64
zorder_catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
					const char *nulls, Datum *result, bool *result_isnull)
{
	return catalog_run(sql, nargs, argtypes, values, nulls, false, result,
					   result_isnull);
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
	return catalog_run(sql, nargs, argtypes, values, NULL, true, result,
					   result_isnull);
}

/*
 * Whether the catalog has zorder.<table>, and with column, that column:
 * what an updated library asks of a catalog that ALTER EXTENSION has not
 * yet brought to its version.
 */
bool
zorder_catalog_has(const char *table, const char *column)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	Datum		found;
	bool		isnull;

	args[0] = CStringGetTextDatum(table);
	args[1] = CStringGetTextDatum(column ? column : "");
	zorder_catalog_read("SELECT true FROM pg_catalog.pg_class c "
						"JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
						"JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid "
						"WHERE n.nspname OPERATOR(pg_catalog.=) 'zorder' "
						"AND c.relname OPERATOR(pg_catalog.=) $1 "
						"AND a.attnum > 0 AND NOT a.attisdropped "
						"AND ($2 OPERATOR(pg_catalog.=) '' "
						"OR a.attname OPERATOR(pg_catalog.=) $2) LIMIT 1",
						2, argtypes, args, &found, &isnull);
	return !isnull;
}
