/*-------------------------------------------------------------------------
 *
 * shards.c
 *	  A zorder call on every shard of a Citus distributed table, each on
 *	  the node that holds it, driven from the coordinator.
 *
 * A distributed table's rows are in its shards, ordinary tables on the
 * nodes; zorder lays out each on its node as it lays out any table.  What
 * this module adds is the way there.  It asks Citus's metadata which shards
 * the table has and where each is, and sends each shard its commands
 * through Citus's own master_run_on_worker, which makes a new connection
 * per command the way Citus makes all of its connections
 * (citus.node_conninfo, pg_dist_authinfo) and as the calling role.  So the
 * node checks that role's rights on the shard again, and each command is a
 * statement of its own there, in a transaction of its own.  zorder neither
 * links to Citus nor sees a connection string or a password.
 *
 * Shards go in waves, one shard of each node at a time with the nodes in
 * parallel: no node lays out two shards at once (each call has the memory
 * and I/O of one table's), and no lock on one shard is held while another
 * is laid out.  A shard whose command fails is reported and the others go
 * on; the call then fails, naming the first failure, and calling it again
 * does what is left (an incremental call on a shard already laid out moves
 * only its newcomers).  The call can be cancelled between waves and while
 * it waits; Citus then cancels the commands still running on the nodes.
 *
 * The statement that lists the shards runs through the catalog door
 * (catalog.c); master_run_on_worker runs as the caller.  Both name only
 * objects in pg_catalog, which an ordinary role cannot shadow.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "catalog.h"
#include "shards.h"

/* One shard placement: the shard's qualified name and where it is */
typedef struct ShardPlace
{
	char	   *name;			/* schema-qualified, quoted */
	int64		shardid;
	int32		groupid;
	char	   *node;
	int			port;
	bool		failed;
	char	   *result;			/* what its last command returned */
} ShardPlace;

/*
 * The shards of relid with their one placement each, by shard id.  A table
 * whose shards have several placements (shard_replication_factor above 1)
 * is refused: laying out one copy would leave the others as they were.
 */
static ShardPlace *
list_shards(Oid relid, const char *fname, int *nshards)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		row;
	bool		isnull;
	Datum		cols[6];
	bool		colnulls[6];
	Datum	   *names;
	Datum	   *ids;
	Datum	   *groups;
	Datum	   *nodes;
	Datum	   *ports;
	int			n;
	ShardPlace *shards;

	zorder_catalog_exec("SELECT ROW(pg_catalog.array_agg(pg_catalog.shard_name(s.logicalrelid, s.shardid, false) ORDER BY s.shardid), "
						"pg_catalog.array_agg(n.nodename ORDER BY s.shardid), "
						"pg_catalog.array_agg(n.nodeport ORDER BY s.shardid), "
						"pg_catalog.count(DISTINCT s.shardid), "
						"pg_catalog.array_agg(s.shardid ORDER BY s.shardid), "
						"pg_catalog.array_agg(p.groupid ORDER BY s.shardid)) "
						"FROM pg_catalog.pg_dist_shard s "
						"JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid "
						"JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid "
						"AND n.noderole = 'primary' "
						"WHERE s.logicalrelid = $1::pg_catalog.regclass",
						1, argtypes, args, NULL, &row, &isnull);
	zorder_deform_row(row, cols, colnulls);
	if (colnulls[0])
	{
		*nshards = 0;
		return NULL;
	}
	deconstruct_array(DatumGetArrayTypeP(cols[0]), TEXTOID, -1, false,
					  TYPALIGN_INT, &names, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(cols[1]), TEXTOID, -1, false,
					  TYPALIGN_INT, &nodes, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(cols[2]), INT4OID, 4, true,
					  TYPALIGN_INT, &ports, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(cols[4]), INT8OID, 8, FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &ids, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(cols[5]), INT4OID, 4, true,
					  TYPALIGN_INT, &groups, NULL, &n);
	if (DatumGetInt64(cols[3]) != n)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" keeps more than one copy of its shards",
						get_rel_name(relid)),
				 errdetail("Its %lld shards have %d placements. %s lays out a distributed table whose shards have one placement each.",
						   (long long) DatumGetInt64(cols[3]), n, fname),
				 errhint("Call %s on each placement with run_command_on_placements, or keep one copy of each shard (citus.shard_replication_factor = 1).",
						 fname)));

	shards = palloc0(sizeof(ShardPlace) * n);
	for (int i = 0; i < n; i++)
	{
		shards[i].name = TextDatumGetCString(names[i]);
		shards[i].node = TextDatumGetCString(nodes[i]);
		shards[i].port = DatumGetInt32(ports[i]);
		shards[i].shardid = DatumGetInt64(ids[i]);
		shards[i].groupid = DatumGetInt32(groups[i]);
	}
	*nshards = n;
	return shards;
}

/*
 * The primary message of a node's error as master_run_on_worker gives it
 * ("ERROR:  msg", perhaps with more lines): the message alone, so that
 * the detail of ours reads as a sentence.
 */
static const char *
remote_message(const char *msg)
{
	char	   *m;
	char	   *nl;

	if (strncmp(msg, "ERROR:  ", 8) == 0)
		msg += 8;
	m = pstrdup(msg);
	nl = strchr(m, '\n');
	if (nl != NULL)
		*nl = '\0';
	return m;
}

/*
 * Run one command on each shard in wave[] (indexes into shards[]), at
 * once, as the calling role.  A shard keeps what its command returned; one
 * whose command fails is marked, with the first failure kept in
 * *first_error.
 */
static void
run_wave(ShardPlace *shards, int *wave, int nwave, const ZShardCommand *cmd,
		 char **first_error, char **first_shard)
{
	MemoryContext keep = CurrentMemoryContext;
	Datum	   *nodes = palloc(sizeof(Datum) * nwave);
	Datum	   *ports = palloc(sizeof(Datum) * nwave);
	Datum	   *commands = palloc(sizeof(Datum) * nwave);
	Oid			argtypes[3] = {TEXTARRAYOID, INT4ARRAYOID, TEXTARRAYOID};
	Datum		args[3];
	int			ret;

	for (int i = 0; i < nwave; i++)
	{
		ShardPlace *sh = &shards[wave[i]];

		nodes[i] = CStringGetTextDatum(sh->node);
		ports[i] = Int32GetDatum(sh->port);
		commands[i] = CStringGetTextDatum(psprintf("%s%s%s%s", cmd->before,
												   quote_literal_cstr(sh->name),
												   cmd->middle ?
												   cmd->middle(sh->shardid, sh->groupid,
															   cmd->arg) : "",
												   cmd->after));
	}
	args[0] = PointerGetDatum(construct_array(nodes, nwave, TEXTOID, -1,
											  false, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(ports, nwave, INT4OID, 4,
											  true, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(commands, nwave, TEXTOID, -1,
											  false, TYPALIGN_INT));

	SPI_connect();
	ret = SPI_execute_with_args("SELECT r.success, r.result "
								"FROM pg_catalog.master_run_on_worker($1, $2, $3, true) r",
								3, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT || SPI_processed != (uint64) nwave)
		elog(ERROR, "master_run_on_worker returned %llu rows for %d commands",
			 (unsigned long long) SPI_processed, nwave);
	for (int i = 0; i < nwave; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		bool		ok = DatumGetBool(SPI_getbinval(tup, desc, 1, &isnull));
		ShardPlace *sh = &shards[wave[i]];

		if (ok && !isnull)
		{
			char	   *res = SPI_getvalue(tup, desc, 2);

			/* out of SPI's memory, which SPI_finish frees */
			sh->result = res ? MemoryContextStrdup(keep, res) : NULL;
			continue;
		}
		sh->failed = true;
		if (*first_error == NULL)
		{
			char	   *msg = SPI_getvalue(tup, desc, 2);

			/*
			 * A failed connection names the node's address: say it
			 * without, as the node is not what the caller asked about.
			 */
			if (msg == NULL || strncmp(msg, "failed to connect", 17) == 0 ||
				strncmp(msg, "connection to the remote node", 29) == 0)
				msg = "could not connect to the node that holds it";
			*first_error = MemoryContextStrdup(keep, remote_message(msg));
			*first_shard = sh->name;
		}
	}
	SPI_finish();
}

/*
 * Run cmds[0..ncmds-1], in turn, on every shard of the Citus table relid,
 * each on the node that holds the shard; a shard whose command fails gets
 * none of the later ones.  fname is the public call, for messages; with
 * verb, a NOTICE says of each shard that it is done ("laid out").  Raises
 * an error once every shard has been tried if any failed.  The caller has
 * checked the caller's rights on relid and holds a lock on it.  With
 * results, *results is what the last command returned on each shard (a
 * single value, or the command's tag), in the caller's memory context.
 * Returns the number of shards.
 */
int
zorder_shards_run(Oid relid, const char *fname, const ZShardCommand *cmds,
				  int ncmds, const char *verb, ZShardResult **results)
{
	MemoryContext cxt;
	MemoryContext oldcxt;
	ShardPlace *shards;
	int			nshards;
	bool	   *done;
	int		   *wave;
	int		   *run;
	int			ndone = 0;
	int			nfailed = 0;
	char	   *first_error = NULL;
	char	   *first_shard = NULL;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder shards",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	shards = list_shards(relid, fname, &nshards);
	done = palloc0(sizeof(bool) * Max(nshards, 1));
	wave = palloc(sizeof(int) * Max(nshards, 1));
	run = palloc(sizeof(int) * Max(nshards, 1));

	while (ndone < nshards)
	{
		int			nwave = 0;

		CHECK_FOR_INTERRUPTS();

		/* the first shard not yet done of each node */
		for (int i = 0; i < nshards; i++)
		{
			bool		node_taken = false;

			if (done[i])
				continue;
			for (int j = 0; j < nwave && !node_taken; j++)
				node_taken = shards[wave[j]].port == shards[i].port &&
					strcmp(shards[wave[j]].node, shards[i].node) == 0;
			if (!node_taken)
				wave[nwave++] = i;
		}

		for (int c = 0; c < ncmds; c++)
		{
			int			nrun = 0;

			/* a shard that failed an earlier command gets no more */
			for (int i = 0; i < nwave; i++)
				if (!shards[wave[i]].failed)
					run[nrun++] = wave[i];
			if (nrun > 0)
				run_wave(shards, run, nrun, &cmds[c], &first_error,
						 &first_shard);
		}

		for (int i = 0; i < nwave; i++)
		{
			ShardPlace *sh = &shards[wave[i]];

			done[wave[i]] = true;
			ndone++;
			if (sh->failed)
				nfailed++;
			else if (verb != NULL)
				ereport(NOTICE,
						(errmsg("%s shard %s of table \"%s\" (%d of %d)",
								verb, sh->name, get_rel_name(relid), ndone,
								nshards)));
		}
	}

	if (nfailed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("%s failed on %d of the %d shards of table \"%s\"",
						fname, nfailed, nshards, get_rel_name(relid)),
				 errdetail("On shard %s: %s", first_shard, first_error),
				 errhint("The other shards are done, each in a transaction of its own on its node. Call %s again for the rest.",
						 fname)));
	MemoryContextSwitchTo(oldcxt);
	if (results != NULL)
	{
		*results = palloc(sizeof(ZShardResult) * Max(nshards, 1));
		for (int i = 0; i < nshards; i++)
		{
			(*results)[i].shard = pstrdup(shards[i].name);
			(*results)[i].shardid = shards[i].shardid;
			(*results)[i].groupid = shards[i].groupid;
			(*results)[i].result = shards[i].result ? pstrdup(shards[i].result) : NULL;
		}
	}
	MemoryContextDelete(cxt);
	return nshards;
}
