/*-------------------------------------------------------------------------
 *
 * fillfactor.c
 *	  A table's fillfactor reloption, read and set as ALTER TABLE reads and
 *	  sets it: the one setting zorder changes on a table (room.c chooses
 *	  the value; tables.c takes back on clear_keys what zorder gave).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "fillfactor.h"

/* The fillfactor in relid's reloptions, or 0 if none is set. */
int
zorder_fillfactor_get(Oid relid)
{
	HeapTuple	tup;
	Datum		opts;
	bool		isnull;
	int			ff = 0;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	opts = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
	if (!isnull)
	{
		ListCell   *lc;

		foreach(lc, untransformRelOptions(opts))
		{
			DefElem    *def = lfirst_node(DefElem, lc);

			if (strcmp(def->defname, "fillfactor") == 0)
				ff = pg_strtoint32(defGetString(def));
		}
	}
	ReleaseSysCache(tup);
	return ff;
}

/*
 * Set relid's fillfactor reloption to ff, or remove it (ff 0), as ALTER
 * TABLE SET (fillfactor) and RESET do (ATExecSetRelOptions): validated, in
 * pg_class, the relcache invalidated by the update.  Not through
 * AlterTableInternal, which refuses a table the call has open.  The caller
 * holds at least ShareUpdateExclusiveLock, ALTER TABLE's for this option,
 * and runs as the table's owner.
 */
void
zorder_fillfactor_set(Oid relid, int ff)
{
	Relation	classrel;
	HeapTuple	tup;
	HeapTuple	newtup;
	Datum		old;
	Datum		opts;
	bool		isnull;
	Datum		values[Natts_pg_class];
	bool		nulls[Natts_pg_class];
	bool		repl[Natts_pg_class];
	List	   *defs;

	defs = list_make1(makeDefElem("fillfactor",
								  ff == 0 ? NULL :
								  (Node *) makeString(psprintf("%d", ff)), -1));
	classrel = table_open(RelationRelationId, RowExclusiveLock);
	tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	old = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
	opts = transformRelOptions(isnull ? (Datum) 0 : old, defs, NULL, NULL,
							   false, ff == 0);
	(void) heap_reloptions(RELKIND_RELATION, opts, true);

	memset(values, 0, sizeof(values));
	memset(nulls, false, sizeof(nulls));
	memset(repl, false, sizeof(repl));
	values[Anum_pg_class_reloptions - 1] = opts;
	nulls[Anum_pg_class_reloptions - 1] = (opts == (Datum) 0);
	repl[Anum_pg_class_reloptions - 1] = true;
	newtup = heap_modify_tuple(tup, RelationGetDescr(classrel), values, nulls,
							   repl);
	CatalogTupleUpdate(classrel, &newtup->t_self, newtup);
	InvokeObjectPostAlterHook(RelationRelationId, relid, 0);
	heap_freetuple(newtup);
	table_close(classrel, RowExclusiveLock);
	CommandCounterIncrement();
}
