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

/*
 * The sets recorded for the shards of relid, each with the node group that
 * held the shard and the set's id there: *nsets of them, by shard id.
 */
ZShardSet *
zorder_shard_sets_load(Oid relid, int *nsets)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		row;
	bool		isnull;
	Datum		cols[4];
	bool		nulls[4];
	Datum	   *ids;
	Datum	   *grps;
	Datum	   *setids;
	Datum	   *docs;
	int			n;
	ZShardSet  *sets;

	*nsets = 0;
	if (!zorder_catalog_has("shard_sets", NULL))
		return NULL;
	zorder_catalog_exec("SELECT ROW(pg_catalog.array_agg(shardid ORDER BY shardid), "
						"pg_catalog.array_agg(node_group ORDER BY shardid), "
						"pg_catalog.array_agg(set_id ORDER BY shardid), "
						"pg_catalog.array_agg(layout_set::text ORDER BY shardid)) "
						"FROM zorder.shard_sets WHERE relid = $1",
						1, argtypes, args, NULL, &row, &isnull);
	zorder_deform_row(row, cols, nulls);
	if (nulls[0])
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(cols[0]), INT8OID, 8, FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &ids, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(cols[1]), INT4OID, 4, true,
					  TYPALIGN_INT, &grps, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(cols[2]), INT4OID, 4, true,
					  TYPALIGN_INT, &setids, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(cols[3]), TEXTOID, -1, false,
					  TYPALIGN_INT, &docs, NULL, &n);
	sets = palloc(sizeof(ZShardSet) * n);
	for (int i = 0; i < n; i++)
	{
		sets[i].shardid = DatumGetInt64(ids[i]);
		sets[i].group = DatumGetInt32(grps[i]);
		sets[i].set_id = DatumGetInt32(setids[i]);
		sets[i].doc = TextDatumGetCString(docs[i]);
	}
	*nsets = n;
	return sets;
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

	if (!zorder_catalog_has("shard_sets", NULL))
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

	if (!zorder_catalog_has("shard_sets", NULL))
		return;
	zorder_catalog_exec("DELETE FROM zorder.shard_sets WHERE relid = $1",
						1, argtypes, args, NULL, NULL, NULL);
}

/* The same, from the sql_drop event trigger, for the tables it dropped */
void
zorder_shard_sets_forget_dropped(void)
{
	if (!zorder_catalog_has("shard_sets", NULL))
		return;
	zorder_catalog_exec("DELETE FROM zorder.shard_sets WHERE relid IN ("
						"SELECT objid FROM pg_event_trigger_dropped_objects() "
						"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
						"AND objsubid = 0)",
						0, NULL, NULL, NULL, NULL, NULL);
}
