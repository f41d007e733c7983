/*-------------------------------------------------------------------------
 *
 * citus.c
 *	  Tables that Citus distributes: zorder refuses them, plainly, until it
 *	  can lay them out.
 *
 * On a Citus coordinator a distributed table is an empty shell: its rows
 * are in shards, tables of their own (name_<shardid>) on the workers.
 * zorder would lay out, measure or declare keys for that shell, succeed,
 * and change nothing where the rows are (after create_distributed_table
 * the shell may even keep the old local rows on disk, invisible to
 * queries, which a report would then describe).  So every public function
 * that takes a table refuses a table Citus distributes (hash, range or
 * append distributed, single-shard, reference or Citus local table: each
 * keeps its rows in shards), on the coordinator and on any node Citus
 * synced its metadata to.  The shards themselves are not in Citus's
 * table of distributed tables: on the node that holds one, zorder takes it
 * for the ordinary table it is.
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
 * How Citus keeps a table's rows, from pg_dist_partition: partmethod 'h',
 * 'r' or 'a' (hash, range, append) is a distributed table; 'n' (no
 * distribution column) with repmodel 't' a reference table, with a
 * colocation group a single-shard distributed table, without one a Citus
 * local table.  Returns '\0' for a table Citus does not know.
 */
static char
citus_table_kind(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		kind;
	bool		isnull;

	if (!OidIsValid(get_relname_relid("pg_dist_partition",
									  PG_CATALOG_NAMESPACE)))
		return '\0';

	zorder_catalog_exec("SELECT CASE WHEN p.partmethod = 'n' AND p.repmodel = 't' THEN 'r' "
						"WHEN p.partmethod = 'n' AND p.colocationid = 0 THEN 'l' "
						"ELSE 'd' END "
						"FROM pg_catalog.pg_dist_partition p "
						"WHERE p.logicalrelid = $1::pg_catalog.regclass",
						1, argtypes, args, NULL, &kind, &isnull);
	if (isnull)
		return '\0';
	return *TextDatumGetCString(kind);
}

/*
 * Refuse a table that Citus distributes: fname (the public function) would
 * act on, or report, a table that holds none of its rows.  The hint says
 * what works today: the function on the shard tables, each an ordinary
 * table on its node, which Citus's run_command_on_shards (one placement of
 * each shard) and run_command_on_placements (every copy) reach from the
 * coordinator, one connection and transaction per shard.
 */
void
zorder_check_not_citus(Oid relid, const char *fname)
{
	char		kind = citus_table_kind(relid);
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
				 errhint("zorder does not lay out Citus tables yet. Call %s on the shard table on each node instead, or on every copy from the coordinator with run_command_on_placements('%s', '...'), %%s standing for the shard's name.",
						 fname, sqlname)));
	if (kind == 'l')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is distributed by Citus", name),
				 errdetail("It is a Citus local table: its rows are in a shard table on the coordinator, and this table holds none of them, so %s would work on an empty table.",
						   fname),
				 errhint("zorder does not lay out Citus tables yet. Call %s on the shard table instead, on the coordinator (citus_shards names it), or on the table after undistribute_table.",
						 fname)));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("table \"%s\" is distributed by Citus", name),
			 errdetail("Its rows are in shards, tables of their own on the worker nodes, and this table holds none of them, so %s would work on an empty table.",
					   fname),
			 errhint("zorder does not lay out distributed tables yet. Call %s on each shard table instead, on the node that holds it, or on every shard from the coordinator with run_command_on_shards('%s', '...'), %%s standing for the shard's name.",
					 fname, sqlname)));
}
