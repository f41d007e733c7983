/*-------------------------------------------------------------------------
 *
 * shardsets.c
 *	  On a Citus coordinator, the boundary set each shard of a distributed
 *	  table was last laid out with, so that a shard moved to another node
 *	  keeps its layout there.
 *
 * A shard move (citus_move_shard_placement, the rebalancer) copies a
 * shard's rows to the new node in the order of its heap, which is the
 * layout's, but zorder's rows about the shard stay on the old node and go
 * with the old placement.  The new node would see a table in no known
 * order and rewrite it in full.  So after each call the coordinator keeps
 * the set each shard's node reports (zorder._shard_layout_set), and before
 * the next it hands a shard that has no layout on its node its set back
 * (zorder._adopt_layout_set, layoutkey.c): the node takes it as a prepared
 * set, checks the heap against it in one scan, and goes on incrementally
 * where the order held (recognize.c).
 *
 * This file owns zorder.shard_sets.  It sits low, beside the other
 * catalog owners, as the drop trigger (tables.c) forgets a dropped
 * table's rows through it.  Catalogs of 0.7 and before have no such
 * table: everything here is then a no-op, so that an updated library
 * works until ALTER EXTENSION zorder UPDATE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "catalog.h"
#include "shardsets.h"

/* Whether the catalog has zorder.shard_sets (0.8 and later) */
static bool
shard_sets_exist(void)
{
	Datum		found;
	bool		isnull;

	zorder_catalog_read("SELECT true FROM pg_catalog.pg_class c "
						"JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
						"WHERE n.nspname OPERATOR(pg_catalog.=) 'zorder' "
						"AND c.relname OPERATOR(pg_catalog.=) 'shard_sets'",
						0, NULL, NULL, &found, &isnull);
	return !isnull;
}

/*
 * Where the shard shardid of relid was when its set was recorded: its node
 * group and the set's id there.  False if none is recorded.
 */
bool
zorder_shard_set_where(Oid relid, int64 shardid, int32 *group, int *set_id)
{
	Oid			argtypes[2] = {OIDOID, INT8OID};
	Datum		args[2] = {ObjectIdGetDatum(relid), Int64GetDatum(shardid)};
	Datum		row;
	Datum		cols[2];
	bool		nulls[2];
	bool		isnull;

	if (!shard_sets_exist())
		return false;
	zorder_catalog_exec("SELECT ROW(node_group, set_id) FROM zorder.shard_sets "
						"WHERE relid = $1 AND shardid = $2",
						2, argtypes, args, NULL, &row, &isnull);
	if (isnull)
		return false;
	zorder_deform_row(row, cols, nulls);
	*group = DatumGetInt32(cols[0]);
	*set_id = DatumGetInt32(cols[1]);
	return true;
}

/* The set recorded for a shard of relid, as a jsonb document; or NULL */
char *
zorder_shard_set_get(Oid relid, int64 shardid)
{
	Oid			argtypes[2] = {OIDOID, INT8OID};
	Datum		args[2] = {ObjectIdGetDatum(relid), Int64GetDatum(shardid)};
	Datum		doc;
	bool		isnull;

	if (!shard_sets_exist())
		return NULL;
	zorder_catalog_exec("SELECT layout_set::text FROM zorder.shard_sets "
						"WHERE relid = $1 AND shardid = $2",
						2, argtypes, args, NULL, &doc, &isnull);
	return isnull ? NULL : TextDatumGetCString(doc);
}

/*
 * Record what the shards of relid reported after a call: docs[i] is what
 * shard shardids[i], held by node group groups[i], said: its set (with its
 * "id" and "columns") where the coordinator did not know it, else its room
 * alone, or NULL (nothing to say, or no answer); only a set replaces what
 * is recorded.  The shards are all of relid's: rows of shards that are
 * gone (split) go.  Returns the least fillfactor zorder chose on a shard
 * (the documents' "fillfactor"), 0 if none said.
 */
int
zorder_shard_sets_record(Oid relid, int nshards, const int64 *shardids,
						 const int32 *groups, char **docs)
{
	Oid			argtypes[4] = {OIDOID, INT8ARRAYOID, INT4ARRAYOID, TEXTARRAYOID};
	Datum		args[4];
	Datum	   *ids = palloc(sizeof(Datum) * Max(nshards, 1));
	Datum	   *grps = palloc(sizeof(Datum) * Max(nshards, 1));
	Datum	   *texts = palloc(sizeof(Datum) * Max(nshards, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(nshards, 1));
	int			dims[1] = {nshards};
	int			lbs[1] = {1};
	Datum		least;
	bool		isnull;

	if (!shard_sets_exist())
		return 0;
	for (int i = 0; i < nshards; i++)
	{
		ids[i] = Int64GetDatum(shardids[i]);
		grps[i] = Int32GetDatum(groups[i]);
		nulls[i] = docs[i] == NULL || docs[i][0] == '\0';
		texts[i] = nulls[i] ? (Datum) 0 : CStringGetTextDatum(docs[i]);
	}
	args[0] = ObjectIdGetDatum(relid);
	args[1] = PointerGetDatum(construct_array(ids, nshards, INT8OID, 8,
											  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_array(grps, nshards, INT4OID, 4,
											  true, TYPALIGN_INT));
	args[3] = PointerGetDatum(construct_md_array(texts, nulls, 1, dims, lbs,
												 TEXTOID, -1, false,
												 TYPALIGN_INT));
	zorder_catalog_exec("WITH d AS (DELETE FROM zorder.shard_sets "
						"WHERE relid = $1 AND shardid <> ALL ($2)), "
						"s AS (SELECT u.id, u.grp, u.doc::jsonb AS doc "
						"FROM unnest($2, $3, $4) AS u(id, grp, doc) "
						"WHERE u.doc IS NOT NULL) "
						"INSERT INTO zorder.shard_sets (relid, shardid, node_group, "
						"set_id, layout_set) "
						"SELECT $1, s.id, s.grp, (s.doc ->> 'id')::int, s.doc - 'id' "
						"FROM s WHERE s.doc ? 'columns' AND s.doc ? 'id' "
						"ON CONFLICT (relid, shardid) DO UPDATE "
						"SET node_group = excluded.node_group, set_id = excluded.set_id, "
						"layout_set = excluded.layout_set, recorded_at = now()",
						4, argtypes, args, NULL, NULL, NULL);
	zorder_catalog_exec("SELECT min(((s.doc::jsonb ->> 'fillfactor')::numeric)::int) "
						"FROM unnest($4) AS s(doc) "
						"WHERE pg_catalog.jsonb_typeof(s.doc::jsonb -> 'fillfactor') = 'number' "
						"AND (s.doc::jsonb ->> 'fillfactor')::numeric BETWEEN 10 AND 100",
						4, argtypes, args, NULL, &least, &isnull);
	return isnull ? 0 : DatumGetInt32(least);
}

/* Forget relid's rows (zorder.clear_keys, a relation gone) */
void
zorder_shard_sets_forget(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};

	if (!shard_sets_exist())
		return;
	zorder_catalog_exec("DELETE FROM zorder.shard_sets WHERE relid = $1",
						1, argtypes, args, NULL, NULL, NULL);
}

/* The same, from the sql_drop event trigger, for the tables it dropped */
void
zorder_shard_sets_forget_dropped(void)
{
	if (!shard_sets_exist())
		return;
	zorder_catalog_exec("DELETE FROM zorder.shard_sets WHERE relid IN ("
						"SELECT objid FROM pg_event_trigger_dropped_objects() "
						"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
						"AND objsubid = 0)",
						0, NULL, NULL, NULL, NULL, NULL);
}
