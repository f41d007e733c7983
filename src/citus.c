/*-------------------------------------------------------------------------
 *
 * citus.c
 *	  Tables that Citus distributes: which of them zorder lays out shard by
 *	  shard from the coordinator, and a plain refusal for the others.
 *
 * On a Citus coordinator a distributed table is an empty shell: its rows
 * are in shards, tables of their own (name_<shardid>) on the workers.
 * zorder would lay out, measure or declare keys for that shell, succeed,
 * and change nothing where the rows are (after create_distributed_table
 * the shell may even keep the old local rows on disk, invisible to
 * queries, which a report would then describe).
 *
 * On the coordinator, a hash-distributed or single-shard table that is not
 * partitioned is "sharded" for zorder: zorder.cluster_by declares its keys
 * on the shell, and zorder.optimize and zorder.clear_keys carry them out
 * on every shard, on the node that holds it (shards.c).  Every other
 * public function, and every function on any other kind of Citus table
 * (range or append distributed, reference, Citus local, partitioned
 * distributed tables and their partitions) or on a node that is not the
 * coordinator, refuses it with the reason.  The shards themselves are not
 * in Citus's table of distributed tables: on the node that holds one,
 * zorder takes it for the ordinary table it is.
 *
 * zorder does not link to Citus, nor assume it is there.  Citus keeps its
 * distributed tables in pg_catalog.pg_dist_partition, which exists only in
 * a database where the citus extension is installed.  Whether it exists is
 * asked of the syscache (get_relname_relid): absent, that is a negative
 * entry that PostgreSQL invalidates itself when the table appears (CREATE
 * EXTENSION citus), so a database without Citus pays one hash lookup per
 * call and no catalog scan.  Only where the table exists is it read, with
 * one statement through the catalog door (catalog.c).  Both names are in
 * pg_catalog, where only a superuser with allow_system_table_mods can
 * create tables: nobody can put a table of that name in the way.
 *
 * The module sits low: it uses only catalog.c; access.c and tables.c call
 * it where every public function opens its table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "catalog.h"
#include "citus.h"

/*
 * How Citus keeps a table's rows, from pg_dist_partition: partmethod 'h'
 * is a hash-distributed table ('h'), 'r' or 'a' (range, append) a
 * distributed one ('d'); 'n' (no distribution column) with repmodel 't' a
 * reference table ('r'), with a colocation group a single-shard
 * distributed table ('s'), without one a Citus local table ('l').  A
 * distributed partitioned table, or a partition of one, is 'd' whatever
 * its method: its rows are in the shards of its partitions.  Also says
 * whether this node is the coordinator (the group 0 of
 * pg_dist_local_group).  Returns '\0' for a table Citus does not know.
 */
static char
citus_table_kind(Oid relid, bool *on_coordinator)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		kind;
	bool		isnull;
	char	   *k;

	*on_coordinator = false;
	if (!OidIsValid(get_relname_relid("pg_dist_partition",
									  PG_CATALOG_NAMESPACE)))
		return '\0';

	zorder_catalog_exec("SELECT CASE WHEN c.relkind = 'p' OR c.relispartition THEN 'd' "
						"WHEN p.partmethod = 'h' THEN 'h' "
						"WHEN p.partmethod = 'n' AND p.repmodel = 't' THEN 'r' "
						"WHEN p.partmethod = 'n' AND p.colocationid = 0 THEN 'l' "
						"WHEN p.partmethod = 'n' THEN 's' "
						"ELSE 'd' END "
						"|| CASE WHEN (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g) = 0 "
						"THEN 'c' ELSE 'w' END "
						"FROM pg_catalog.pg_dist_partition p "
						"JOIN pg_catalog.pg_class c ON c.oid = p.logicalrelid "
						"WHERE p.logicalrelid = $1::pg_catalog.regclass",
						1, argtypes, args, NULL, &kind, &isnull);
	if (isnull)
		return '\0';
	k = TextDatumGetCString(kind);
	*on_coordinator = (k[1] == 'c');
	return k[0];
}

/*
 * Whether relid is a Citus table that zorder lays out shard by shard
 * (shards.c): a hash-distributed or single-shard table, not partitioned,
 * asked on the coordinator, where its keys are declared.
 */
bool
zorder_citus_sharded(Oid relid)
{
	bool		on_coordinator;
	char		kind = citus_table_kind(relid, &on_coordinator);

	return (kind == 'h' || kind == 's') && on_coordinator;
}

/*
 * Whether relid is a hash-distributed or single-shard table on any node:
 * on a worker, the shell Citus keeps there (its shards' rows are in the
 * shard tables beside it).
 */
bool
zorder_citus_distributed(Oid relid)
{
	bool		on_coordinator;
	char		kind = citus_table_kind(relid, &on_coordinator);

	return kind == 'h' || kind == 's';
}

/*
 * Refuse a table that Citus distributes: fname (the public function) would
 * act on, or report, a table that holds none of its rows.  The caller has
 * already taken a table zorder lays out shard by shard where fname does
 * (zorder_citus_sharded).  The hint says what works: on the coordinator,
 * zorder.cluster_by, zorder.clear_keys, zorder.optimize and the report on
 * a hash-distributed or single-shard table; for
 * the rest, the function on the shard tables, each an ordinary table on
 * its node, which Citus's run_command_on_shards (one placement of each
 * shard) and run_command_on_placements (every copy) reach from the
 * coordinator, one connection and transaction per shard.
 */
void
zorder_check_not_citus(Oid relid, const char *fname)
{
	bool		on_coordinator;
	char		kind = citus_table_kind(relid, &on_coordinator);
	const char *name;
	const char *sqlname;

	if (kind == '\0')
		return;
	name = get_rel_name(relid);
	sqlname = RelationIsVisible(relid) ? quote_identifier(name) :
		quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
								   name);
	if (kind == 'r')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is distributed by Citus", name),
				 errdetail("It is a Citus reference table: its rows are in a shard table copied to every node, and this table holds none of them, so %s would work on an empty table.",
						   fname),
				 errhint("zorder does not lay out Citus reference tables. Call %s on the shard table on each node instead, or on every copy from the coordinator with run_command_on_placements('%s', '...'), %%s standing for the shard's name.",
						 fname, sqlname)));
	if (kind == 'l')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is distributed by Citus", name),
				 errdetail("It is a Citus local table: its rows are in a shard table on the coordinator, and this table holds none of them, so %s would work on an empty table.",
						   fname),
				 errhint("zorder does not lay out Citus local tables. Call %s on the shard table instead, on the coordinator (citus_shards names it), or on the table after undistribute_table.",
						 fname)));
	if ((kind == 'h' || kind == 's') && !on_coordinator)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is distributed by Citus", name),
				 errdetail("Its rows are in shards, tables of their own on the worker nodes, and this table holds none of them, so %s would work on an empty table.",
						   fname),
				 errhint("Declare its keys and lay it out on the coordinator, with zorder.cluster_by and zorder.optimize, or call %s on a shard table of this node.",
						 fname)));
	if (kind == 'h' || kind == 's')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is distributed by Citus", name),
				 errdetail("Its rows are in shards, tables of their own on the worker nodes, and this table holds none of them, so %s would work on an empty table.",
						   fname),
				 errhint("On a distributed table zorder.cluster_by, zorder.clear_keys, zorder.optimize and zorder.clustering_information work; call %s on each shard table instead, on the node that holds it, or on every shard from the coordinator with run_command_on_shards('%s', '...'), %%s standing for the shard's name.",
						 fname, sqlname)));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("table \"%s\" is distributed by Citus", name),
			 errdetail("Its rows are in shards, tables of their own on the worker nodes, and this table holds none of them, so %s would work on an empty table.",
					   fname),
			 errhint("zorder lays out hash-distributed and single-shard tables that are not partitioned. Call %s on each shard table instead, on the node that holds it, or on every shard from the coordinator with run_command_on_shards('%s', '...'), %%s standing for the shard's name.",
					 fname, sqlname)));
}
