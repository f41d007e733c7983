/*-------------------------------------------------------------------------
 *
 * tables.c
 *	  The tables zorder knows: their declared keys (zorder.tables) with the
 *	  SQL functions that set and clear them, the record of temporary tables
 *	  (zorder.temp_relations) that keeps a table reusing an OID from
 *	  inheriting rows, and forgetting a table when it is dropped (the
 *	  sql_drop event trigger).
 *
 * Every path that writes catalog rows of a table opens it with
 * zorder_open_checked, which checks ownership before the lock and claims
 * the table's rows (drops those an earlier relation with the same OID
 * left).  This file owns zorder.tables, zorder.temp_relations and the log
 * of automatic key choices (zorder.key_changes, which autokeys.c decides),
 * and, when a table is forgotten, deletes its layout (layout.c) and its
 * boundary sets in the statement that deletes those.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "commands/defrem.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "access.h"
#include "boundsets.h"
#include "catalog.h"
#include "citus.h"
#include "fillfactor.h"
#include "layout.h"
#include "pg_compat.h"
#include "quantile.h"
#include "shards.h"
#include "shardsets.h"
#include "tables.h"
#include "zorder.h"

PG_FUNCTION_INFO_V1(zorder_cluster_by);
PG_FUNCTION_INFO_V1(zorder_clear_keys);
PG_FUNCTION_INFO_V1(zorder_on_sql_drop);

static void zorder_claim_catalog(Relation rel);

/* zorder_catalog_exec for a query, shaped as zorder_catalog_read. */
static int64
catalog_exec_fresh(const char *sql, int nargs, Oid *argtypes, Datum *values,
				   Datum *result, bool *result_isnull)
{
	return zorder_catalog_exec(sql, nargs, argtypes, values, NULL, result,
							   result_isnull);
}

/*
 * Whether zorder.tables has the columns of automatic keys, and with them
 * zorder.key_changes exists: a catalog older than 0.6 has neither.
 */
#define tables_have_auto() zorder_catalog_has("tables", "auto_max_keys")
/* Whether zorder.tables has room_fillfactor (0.8 and later) */
#define tables_have_room_fillfactor() zorder_catalog_has("tables", "room_fillfactor")

/*
 * The fillfactor zorder gave relid other than by a call on it (room.c):
 * 0 if none, or if relid has no keys.
 */
int
zorder_tables_room_fillfactor(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		ff;
	bool		isnull;

	if (!tables_have_room_fillfactor())
		return 0;
	zorder_catalog_exec("SELECT room_fillfactor FROM zorder.tables WHERE relid = $1",
						1, argtypes, args, NULL, &ff, &isnull);
	return isnull ? 0 : DatumGetInt32(ff);
}

/* Record ff (0: none) as that fillfactor of relid, a table with keys */
void
zorder_tables_set_room_fillfactor(Oid relid, int ff)
{
	Oid			argtypes[2] = {OIDOID, INT4OID};
	Datum		args[2] = {ObjectIdGetDatum(relid), Int32GetDatum(ff)};

	if (!tables_have_room_fillfactor())
		return;
	zorder_catalog_exec("UPDATE zorder.tables SET room_fillfactor = NULLIF($2, 0) "
						"WHERE relid = $1",
						2, argtypes, args, NULL, NULL, NULL);
}

/*
 * Keep zorder.tables.key_names the names of the key columns, as they are
 * after any RENAME COLUMN: a dump carries them, and a restore binds the
 * keys by them (see zorder--0.3.sql).  Written only when they changed and
 * every key column is there.  The names are computed from the row being
 * updated, so that an update that waited for a concurrent
 * zorder.cluster_by names the keys that one wrote.
 */
static void
refresh_key_names(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};

#define KEY_NAMES_OF_T \
	"ARRAY(SELECT a.attname FROM unnest(t.keys) WITH ORDINALITY AS k(attnum, ord) " \
	"JOIN pg_attribute a ON a.attrelid = t.relid AND a.attnum = k.attnum " \
	"AND NOT a.attisdropped ORDER BY k.ord)"

	zorder_catalog_exec("UPDATE zorder.tables t SET key_names = " KEY_NAMES_OF_T " "
						"WHERE t.relid = $1 "
						"AND cardinality(" KEY_NAMES_OF_T ") = cardinality(t.keys) "
						"AND t.key_names IS DISTINCT FROM " KEY_NAMES_OF_T,
						1, argtypes, args, NULL, NULL, NULL);
#undef KEY_NAMES_OF_T
}

/* Which Citus tables open_owned lets pass */
typedef enum CitusShell
{
	SHELL_NONE,
	SHELL_COORDINATOR,			/* one zorder lays out shard by shard */
	SHELL_ANY_NODE				/* the same, or its shell on a worker */
} CitusShell;

/*
 * Open a table given by OID under lock, checking ownership before taking
 * the lock so that nobody can queue a strong lock on a table they do not
 * own, and that the table is one zorder works on.  With citus_shell, a
 * Citus table that zorder lays out shard by shard (the shell on the
 * coordinator, citus.c, or on any node) passes too; every other Citus
 * table is refused.
 */
static Relation
open_owned(Oid relid, LOCKMODE lockmode, const char *name,
		   CitusShell citus_shell)
{
	Relation	rel;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!zorder_is_relation_owner(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));

	rel = try_relation_open(relid, lockmode);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	zorder_check_relation(rel, name);
	if (!(citus_shell == SHELL_COORDINATOR && zorder_citus_sharded(relid)) &&
		!(citus_shell == SHELL_ANY_NODE && zorder_citus_distributed(relid)))
		zorder_check_not_citus(relid, name);
	return rel;
}

/* open_owned for what only reads (zorder.estimate): writes nothing */
Relation
zorder_open_owned(Oid relid, LOCKMODE lockmode, const char *name)
{
	return open_owned(relid, lockmode, name, SHELL_NONE);
}

/*
 * open_owned for a distributed table's shell on any node, for which a
 * node keeps the table's boundary set (zorder._take_table_set); nothing
 * of the table's own is written.
 */
Relation
zorder_open_node_shell(Oid relid, LOCKMODE lockmode, const char *name)
{
	return open_owned(relid, lockmode, name, SHELL_ANY_NODE);
}

/*
 * open_owned for what writes the table's catalog rows: those an earlier
 * relation with the same OID left are dropped first (the checks above come
 * before any is written).
 */
static Relation
open_checked(Oid relid, LOCKMODE lockmode, const char *name,
			 CitusShell citus_shell)
{
	Relation	rel = open_owned(relid, lockmode, name, citus_shell);

	zorder_claim_catalog(rel);
	refresh_key_names(RelationGetRelid(rel));
	return rel;
}

Relation
zorder_open_checked(Oid relid, LOCKMODE lockmode, const char *name)
{
	return open_checked(relid, lockmode, name, SHELL_NONE);
}

/*
 * zorder_open_checked for the calls a Citus coordinator sends a shard
 * (zorder._shard_sample_set, zorder._optimize_with_set): a shard is an
 * ordinary table, and anything else is refused before the call reads it.
 */
Relation
zorder_open_shard(Oid relid, LOCKMODE lockmode, const char *name)
{
	Relation	rel = open_checked(relid, lockmode, name, SHELL_NONE);

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an ordinary table",
						RelationGetRelationName(rel))));
	return rel;
}

/*
 * zorder_open_checked for the calls that take a Citus distributed table as
 * a whole on the coordinator (zorder.cluster_by, zorder.clear_keys,
 * zorder.optimize): its keys are declared on the shell.  Whether the table
 * is such a shell: zorder_citus_sharded.
 */
Relation
zorder_open_shell(Oid relid, LOCKMODE lockmode, const char *name)
{
	return open_checked(relid, lockmode, name, SHELL_COORDINATOR);
}

/*
 * Catalog rows of temporary tables.
 *
 * The sql_drop event trigger forgets a dropped table's keys, layout, runs
 * and history, but PostgreSQL fires no event trigger when temporary tables
 * go away with ON COMMIT DROP, DISCARD TEMP or ALL, the end of the session,
 * or the clean-up after a crash.  Their rows would stay, and a later table
 * that happens to get the same OID would inherit them.
 *
 * So zorder.temp_relations records, for each temporary table with catalog
 * rows, its session (backend process ID and start time, unique over the
 * cluster's life) and an incarnation number that this session hands out
 * and remembers (temp_incarnations, backend memory).  Rows of a relation
 * are current when that record matches what the relation is now: a
 * temporary table of this session whose record has the session and the
 * incarnation this session remembers for the OID, or a permanent table and
 * no record.  Readers ignore rows that are not current; writers (every
 * write path opens the table with zorder_open_checked) delete them first,
 * then record a temporary table under a new incarnation.
 *
 * Within the session, a new relation that gets the OID of one of its
 * dropped temporary tables makes the session forget that OID's incarnation
 * (the object-access hook below sees every relation created), so the old
 * record no longer matches.  A relation is created with an OID only when no
 * relation has it any more, so this is never wrong about a table that still
 * exists, even when the creating transaction rolls back.
 */
typedef struct TempIncarnation
{
	Oid			relid;			/* hash key */
	int64		incarnation;
} TempIncarnation;

static HTAB *temp_incarnations = NULL;
static int64 last_incarnation = 0;
static object_access_hook_type prev_object_access_hook = NULL;

static text *
session_marker(void)
{
	return cstring_to_text(psprintf("%d/" INT64_FORMAT, MyProcPid,
									(int64) MyStartTimestamp));
}

/* The incarnation this session gave relid's record; 0 if none. */
static int64
remembered_incarnation(Oid relid)
{
	TempIncarnation *entry;

	if (temp_incarnations == NULL)
		return 0;
	entry = hash_search(temp_incarnations, &relid, HASH_FIND, NULL);
	return entry ? entry->incarnation : 0;
}

PG_FUNCTION_INFO_V1(zorder_temp_record);

/*
 * zorder._temp_record(relid oid) returns text: for the catalog views, the
 * record of temporary table relid that would make its rows current, as
 * "session/incarnation"; NULL when this session has none for it.
 */
Datum
zorder_temp_record(PG_FUNCTION_ARGS)
{
	int64		incarnation = remembered_incarnation(PG_GETARG_OID(0));

	if (incarnation == 0)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("%s/" INT64_FORMAT,
											  text_to_cstring(session_marker()),
											  incarnation)));
}

static void
zorder_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					 int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	/* a new relation with the OID of one of ours: the record is stale */
	if (access == OAT_POST_CREATE && classId == RelationRelationId &&
		subId == 0 && temp_incarnations != NULL)
		(void) hash_search(temp_incarnations, &objectId, HASH_REMOVE, NULL);
}

/* Called from _PG_init. */
void
zorder_tables_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = zorder_object_access;
}

/*
 * Forget everything the catalog holds about relid, rows that an earlier
 * relation with the same OID left.  Its boundary sets go too, but an index
 * may still name one, and a set in use cannot be deleted: as when its
 * table is dropped (zorder._on_sql_drop), it passes to the table of that
 * index if that table has the owner the set's table had; otherwise it is
 * left to no table (relid 0), so that no one, and not the new relation's
 * owner, computes keys under another table's sampled values.
 */
static void
forget_relation(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};

	zorder_layout_forget(relid);
	zorder_boundary_sets_forget(relid);
	zorder_shard_sets_forget(relid);
	if (tables_have_auto())
		zorder_catalog_exec("DELETE FROM zorder.key_changes WHERE relid = $1",
							1, argtypes, args, NULL, NULL, NULL);
	zorder_catalog_exec("WITH t AS (DELETE FROM zorder.tables WHERE relid = $1) "
						"DELETE FROM zorder.temp_relations WHERE relid = $1",
						1, argtypes, args, NULL, NULL, NULL);
}

/*
 * Does relid's record in zorder.temp_relations say that its catalog rows
 * are current?  A temporary table's are only when the record is this
 * session's, under the incarnation it remembers; a permanent table's only
 * when there is no record (one left by a temporary table whose OID it
 * took).  read_only: with the active snapshot only, as zorder.layout_key
 * must (zorder_catalog_read).  A parallel worker remembers no
 * incarnations, so there a temporary table's rows are never current.
 */
static bool
rows_current(Oid relid, bool is_temp, bool read_only)
{
	const char *sql = "SELECT session = $2 AND incarnation = $3 "
		"FROM zorder.temp_relations WHERE relid = $1";
	Oid			argtypes[3] = {OIDOID, TEXTOID, INT8OID};
	Datum		args[3];
	Datum		matches;
	bool		isnull;

	args[0] = ObjectIdGetDatum(relid);
	args[1] = PointerGetDatum(session_marker());
	args[2] = Int64GetDatum(remembered_incarnation(relid));
	if (read_only)
		zorder_catalog_read(sql, 3, argtypes, args, &matches, &isnull);
	else
		zorder_catalog_exec(sql, 3, argtypes, args, NULL, &matches, &isnull);
	if (is_temp)
		return !isnull && DatumGetBool(matches);
	return isnull;
}

/*
 * Are the catalog rows that name relid, an existing relation (temporary if
 * is_temp), its own rather than rows a dropped temporary table with the
 * same OID left?  For readers that take catalog rows by OID before
 * anything claimed them (zorder.layout_key and its boundary sets).
 */
bool
zorder_catalog_rows_current(Oid relid, bool is_temp, bool read_only)
{
	return rows_current(relid, is_temp, read_only);
}

/*
 * Before anything writes catalog rows of rel (open and locked by the
 * caller): drop rows left by an earlier relation with the same OID, and
 * record a temporary table as this session's.
 */
static void
zorder_claim_catalog(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	bool		is_temp = rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP;
	Oid			argtypes[3] = {OIDOID, TEXTOID, INT8OID};
	Datum		args[3];

	if (rows_current(relid, is_temp, false))
		return;

	forget_relation(relid);
	if (is_temp)
	{
		TempIncarnation *entry;

		if (temp_incarnations == NULL)
		{
			HASHCTL		ctl;

			ctl.keysize = sizeof(Oid);
			ctl.entrysize = sizeof(TempIncarnation);
			ctl.hcxt = TopMemoryContext;
			temp_incarnations = hash_create("zorder temporary tables", 16,
											&ctl,
											HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		}
		/* should this transaction roll back, the old record stays stale */
		args[0] = ObjectIdGetDatum(relid);
		args[1] = PointerGetDatum(session_marker());
		args[2] = Int64GetDatum(++last_incarnation);
		zorder_catalog_exec("INSERT INTO zorder.temp_relations "
							"(relid, session, incarnation) VALUES ($1, $2, $3)",
							3, argtypes, args, NULL, NULL, NULL);
		entry = hash_search(temp_incarnations, &relid, HASH_ENTER, NULL);
		entry->incarnation = last_incarnation;
	}
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
		Oid			argtypes[3] = {OIDOID, TEXTOID, INT8OID};
		Datum		args[3];
		Datum		keys;
		bool		isnull;
		Datum	   *elems;
		int			nelems;

		/* rows not current (see zorder_claim_catalog) count as none */
		args[0] = ObjectIdGetDatum(source);
		args[1] = PointerGetDatum(session_marker());
		args[2] = Int64GetDatum(remembered_incarnation(source));
		if (get_rel_persistence(source) == RELPERSISTENCE_TEMP)
			zorder_catalog_exec("SELECT t.keys FROM zorder.tables t "
								"JOIN zorder.temp_relations r USING (relid) "
								"WHERE t.relid = $1 AND r.session = $2 "
								"AND r.incarnation = $3",
								3, argtypes, args, NULL, &keys, &isnull);
		else
			zorder_catalog_exec("SELECT t.keys FROM zorder.tables t "
								"WHERE t.relid = $1 AND NOT EXISTS ("
								"SELECT FROM zorder.temp_relations r "
								"WHERE r.relid = $1)",
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
 * Write the keys of rel (open, checked and locked by the caller): attnums[]
 * and names[] as Datums of int2 and name.  auto_max_keys 0: declared by
 * hand, which ends any automatic choice; else chosen by the advisor with
 * at most that many columns, and weighed now, and with only_if_auto only
 * if the keys written before are automatic too (a declaration by hand
 * committed meanwhile wins).  On a partitioned table the keys replace
 * those of its partitions.  Returns whether the keys were written.
 */
static bool
declare_keys(Relation rel, int nkeys, Datum *attnums, Datum *names,
			 int auto_max_keys, bool only_if_auto)
{
	Oid			argtypes[4] = {OIDOID, INT2ARRAYOID, NAMEARRAYOID, INT4OID};
	Datum		args[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	args[1] = PointerGetDatum(construct_array(attnums, nkeys, INT2OID, 2,
											  true, TYPALIGN_SHORT));
	args[2] = PointerGetDatum(construct_array(names, nkeys, NAMEOID,
											  NAMEDATALEN, false, TYPALIGN_CHAR));
	args[3] = Int32GetDatum(auto_max_keys);
	if (auto_max_keys == 0)
		nulls[3] = 'n';

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		zorder_catalog_exec("DELETE FROM zorder.tables WHERE relid = ANY ("
							"SELECT relid FROM pg_partition_tree($1) "
							"WHERE relid OPERATOR(pg_catalog.<>) $1)",
							1, argtypes, args, NULL, NULL, NULL);
	if (!tables_have_auto())
		return zorder_catalog_exec("INSERT INTO zorder.tables (relid, keys, key_names) "
								   "VALUES ($1, $2, $3) "
								   "ON CONFLICT (relid) DO UPDATE SET keys = excluded.keys, "
								   "key_names = excluded.key_names",
								   3, argtypes, args, NULL, NULL, NULL) > 0;
	return zorder_catalog_exec(only_if_auto ?
							   "UPDATE zorder.tables SET keys = $2, key_names = $3, "
							   "auto_max_keys = $4, auto_checked_at = pg_catalog.now() "
							   "WHERE relid = $1 AND auto_max_keys IS NOT NULL" :
							   "INSERT INTO zorder.tables (relid, keys, key_names, "
							   "auto_max_keys, auto_checked_at) "
							   "VALUES ($1, $2, $3, $4, CASE WHEN $4 IS NOT NULL "
							   "THEN pg_catalog.now() END) "
							   "ON CONFLICT (relid) DO UPDATE SET keys = excluded.keys, "
							   "key_names = excluded.key_names, "
							   "auto_max_keys = excluded.auto_max_keys, "
							   "auto_checked_at = excluded.auto_checked_at",
							   4, argtypes, args, nulls, NULL, NULL) > 0;
}

/*
 * Declare keys the key advisor chose (autokeys.c) on rel, open with
 * zorder_open_checked: automatic, with at most max_keys columns, weighed
 * now.  With only_if_auto, only if the keys there are automatic (the
 * weighing before an optimize call: a declaration by hand committed since
 * it looked wins).  Returns whether the keys were written.
 */
bool
zorder_declare_auto_keys(Relation rel, int nkeys, const AttrNumber *attnums,
						 int max_keys, bool only_if_auto)
{
	Datum		a[ZORDER_MAX_KEYS];
	Datum		n[ZORDER_MAX_KEYS];

	for (int k = 0; k < nkeys; k++)
	{
		a[k] = Int16GetDatum(attnums[k]);
		n[k] = NameGetDatum(attnumAttName(rel, attnums[k]));
	}
	return declare_keys(rel, nkeys, a, n, max_keys, only_if_auto);
}

/*
 * The most key columns relid's automatic keys may have, if its keys are
 * automatic and were last weighed at least interval_secs ago (or never);
 * else 0.  Keys inherited from a partitioned table are the parent's: not
 * weighed for the partition.  fresh: with a new snapshot, to see what
 * committed while the caller waited for its lock; else with the active one.
 */
int
zorder_auto_keys_due(Oid relid, int interval_secs, bool fresh)
{
	Oid			argtypes[2] = {OIDOID, INT4OID};
	Datum		args[2] = {ObjectIdGetDatum(relid), Int32GetDatum(interval_secs)};
	Datum		max_keys;
	bool		isnull;
	int64		(*run) (const char *, int, Oid *, Datum *, Datum *, bool *);

	if (!tables_have_auto())
		return 0;
	run = fresh ? catalog_exec_fresh : zorder_catalog_read;
	run("SELECT auto_max_keys FROM zorder.tables "
						"WHERE relid = $1 AND auto_max_keys IS NOT NULL "
						"AND (auto_checked_at IS NULL OR auto_checked_at "
						"OPERATOR(pg_catalog.<=) (pg_catalog.now() "
						"OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $2)))",
						2, argtypes, args, &max_keys, &isnull);
	return isnull ? 0 : DatumGetInt32(max_keys);
}

/* Record that relid's automatic keys were weighed now, and kept. */
void
zorder_auto_keys_weighed(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};

	zorder_catalog_exec("UPDATE zorder.tables SET auto_checked_at = pg_catalog.now() "
						"WHERE relid = $1",
						1, argtypes, args, NULL, NULL, NULL);
}

/*
 * Log an automatic choice of keys in zorder.key_changes: the names before
 * (nold 0: the first choice) and after, the block ranges the workload
 * would read with each laid out (ranges_old < 0: unknown), and why.
 */
void
zorder_log_key_change(Relation rel, int nold, const AttrNumber *old_keys,
					  int nnew, const AttrNumber *new_keys,
					  double ranges_old, double ranges_new,
					  const char *reason)
{
	Oid			argtypes[6] = {OIDOID, NAMEARRAYOID, NAMEARRAYOID, FLOAT8OID,
	FLOAT8OID, TEXTOID};
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	Datum		names[ZORDER_MAX_KEYS];

	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	for (int k = 0; k < nold; k++)
		names[k] = NameGetDatum(attnumAttName(rel, old_keys[k]));
	args[1] = PointerGetDatum(construct_array(names, nold, NAMEOID, NAMEDATALEN,
											  false, TYPALIGN_CHAR));
	if (nold == 0)
		nulls[1] = 'n';
	for (int k = 0; k < nnew; k++)
		names[k] = NameGetDatum(attnumAttName(rel, new_keys[k]));
	args[2] = PointerGetDatum(construct_array(names, nnew, NAMEOID, NAMEDATALEN,
											  false, TYPALIGN_CHAR));
	args[3] = Float8GetDatum(ranges_old);
	if (ranges_old < 0)
		nulls[3] = 'n';
	args[4] = Float8GetDatum(ranges_new);
	args[5] = CStringGetTextDatum(reason);
	zorder_catalog_exec("INSERT INTO zorder.key_changes (relid, changed_at, "
						"old_keys, new_keys, ranges_old, ranges_new, reason) "
						"VALUES ($1, pg_catalog.now(), $2, $3, $4, $5, $6)",
						6, argtypes, args, nulls, NULL, NULL);
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
	Datum	   *names;

	PreventCommandDuringRecovery("zorder.cluster_by");
	zorder_arg_required(fcinfo, 0, "table");
	zorder_arg_required(fcinfo, 1, "key columns");
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
	rel = zorder_open_shell(relid, ShareUpdateExclusiveLock,
							"zorder.cluster_by");
	zorder_check_partition_owners(rel);
	attnums = palloc(sizeof(Datum) * nelems);
	names = palloc(sizeof(Datum) * nelems);

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
		names[i] = NameGetDatum(attnumAttName(rel, attnum));
	}

	(void) declare_keys(rel, nelems, attnums, names, 0, false);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

/*
 * A fillfactor zorder gave rel other than by a call on it (a Citus
 * distributed table, or a shard made with its fillfactor), and that rel
 * still has, goes with the keys: once zorder.tables forgets it, nothing
 * would tell it from one the owner set.  The caller holds
 * ShareUpdateExclusiveLock, ALTER TABLE's for this option.
 */
static void
forget_room_fillfactor(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	int			given = zorder_tables_room_fillfactor(relid);
	ZOwnerSwitch sw;

	if (given == 0 || zorder_fillfactor_get(relid) != given)
		return;
	zorder_become_owner(rel->rd_rel->relowner, &sw);
	zorder_fillfactor_set(relid, 0);
	zorder_restore_user(&sw);
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
	zorder_arg_required(fcinfo, 0, "table");
	relid = PG_GETARG_OID(0);
	rel = zorder_open_shell(relid, ShareUpdateExclusiveLock,
							"zorder.clear_keys");
	zorder_check_partition_owners(rel);

	/*
	 * A Citus distributed table: its shards have the keys the last
	 * zorder.optimize gave them; each forgets them, and its layout, on its
	 * node, in a transaction of its own there.
	 */
	if (zorder_citus_sharded(relid))
	{
		static const char *parts[2] = {"SELECT zorder.clear_keys(", ")"};
		ZShardCall	call = {0};

		/*
		 * As for VACUUM: what commits on the nodes cannot be rolled back.
		 * Called from a function outside a transaction block, the shards
		 * forget their keys even if the caller's statement then fails; the
		 * next zorder.optimize gives them the table's keys again.
		 */
		PreventInTransactionBlock(true, "zorder.clear_keys of a distributed table");

		call.fname = "zorder.clear_keys";
		call.nsteps = 1;
		call.command = zorder_shard_command_around;
		call.arg = parts;
		zorder_shards_run(relid, &call);
		zorder_shards_check(&call);
		zorder_shard_sets_forget(relid);
	}
	forget_room_fillfactor(rel);
	args[0] = ObjectIdGetDatum(relid);
	zorder_catalog_exec("DELETE FROM zorder.tables WHERE relid = $1",
						1, argtypes, args, NULL, NULL, NULL);
	zorder_layout_forget_tree(relid);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

/*
 * zorder._on_sql_drop(): the sql_drop event trigger.  Forgets the catalog
 * rows of dropped tables, so a later table that reuses an OID does not
 * inherit them.  A boundary set that an index of another table names
 * passes to that table only if its owner is the one the set's table had
 * when the set was sampled: anyone may name any set in an index of their
 * own, and inheriting it would let them compute keys under it, that is,
 * read values sampled from a stranger's rows.  Otherwise it goes with
 * its table, and the index's key computations fail.  Sets left to no
 * table (forget_relation) go once no index names them.
 *
 * Written in C and not SECURITY DEFINER: it runs as whoever dropped the
 * table, and only the statement below runs as the extension's owner,
 * through zorder_catalog_exec and its checks.  A PL/pgSQL function running
 * as a superuser would resolve its table names whenever it runs, for every
 * DROP by anyone.
 */
Datum
zorder_on_sql_drop(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zorder._on_sql_drop must be called as an event trigger")));

	/* DROP EXTENSION zorder: the catalog went with it */
	if (!OidIsValid(get_extension_oid("zorder", true)))
		PG_RETURN_VOID();

	zorder_layout_forget_dropped();
	zorder_boundary_sets_forget_dropped();
	zorder_shard_sets_forget_dropped();
	if (tables_have_auto())
		zorder_catalog_exec("DELETE FROM zorder.key_changes WHERE relid IN ("
							"SELECT objid FROM pg_event_trigger_dropped_objects() "
							"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							"AND objsubid = 0)",
							0, NULL, NULL, NULL, NULL, NULL);
	zorder_catalog_exec("WITH d AS (SELECT objid AS relid "
						"FROM pg_event_trigger_dropped_objects() "
						"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
						"AND objsubid = 0), "
						"t AS (DELETE FROM zorder.tables WHERE relid IN (SELECT relid FROM d)) "
						"DELETE FROM zorder.temp_relations WHERE relid IN (SELECT relid FROM d)",
						0, NULL, NULL, NULL, NULL, NULL);
	PG_RETURN_VOID();
}
