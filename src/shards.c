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

/*
 * The shards of relid with their one placement each, by shard id.  A table
 * whose shards have several placements (shard_replication_factor above 1)
 * is refused: laying out one copy would leave the others as they were.
 */
static ZShard *
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
	ZShard	   *shards;

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

	shards = palloc0(sizeof(ZShard) * n);
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
 * ("ERROR:  msg", perhaps with more lines, and the severity in the node's
 * language): the message alone, so that the detail of ours reads as a
 * sentence.
 */
static const char *
remote_message(const char *msg)
{
	const char *sep = strstr(msg, ":  ");
	char	   *m;
	char	   *nl;

	/* a severity is one word, ended by a colon and two spaces */
	if (sep != NULL && sep > msg && sep - msg < 32 &&
		memchr(msg, ' ', sep - msg) == NULL &&
		memchr(msg, '\n', sep - msg) == NULL)
		msg = sep + 3;
	m = pstrdup(msg);
	nl = strchr(m, '\n');
	if (nl != NULL)
		*nl = '\0';
	return m;
}

/*
 * Send the commands in texts[] at once, texts[i] to the node of
 * shards[wave[i]], as the calling role.  A shard keeps what its command
 * returned (as its probe's answer if probing); one whose command fails is
 * marked, the call keeping the first failure.
 */
static void
run_wave(ZShardCall *call, ZShard *shards, int *wave, char **texts, int nwave,
		 bool probing)
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
		ZShard	   *sh = &shards[wave[i]];

		nodes[i] = CStringGetTextDatum(sh->node);
		ports[i] = Int32GetDatum(sh->port);
		commands[i] = CStringGetTextDatum(texts[i]);
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
		ZShard	   *sh = &shards[wave[i]];
		char	   *res = SPI_getvalue(tup, desc, 2);

		/* out of SPI's memory, which SPI_finish frees */
		if (ok && !isnull)
		{
			res = res ? MemoryContextStrdup(keep, res) : NULL;
			if (probing)
				sh->probe = res;
			else
				sh->result = res;
			continue;
		}
		sh->failed = true;
		if (call->first_error == NULL)
		{
			/*
			 * A failed connection names the node's address: say it
			 * without, as the node is not what the caller asked about.
			 */
			if (res == NULL || strncmp(res, "failed to connect", 17) == 0 ||
				strncmp(res, "connection to the remote node", 29) == 0)
				res = "could not connect to the node that holds it";
			call->first_error = MemoryContextStrdup(keep, remote_message(res));
			call->first_shard = sh->name;
		}
	}
	SPI_finish();
}

/* Whether shards a and b are on one node */
static bool
same_node(const ZShard *a, const ZShard *b)
{
	return a->port == b->port && strcmp(a->node, b->node) == 0;
}

/*
 * The call's probe, once on each node: every shard gets its node's answer.
 * A node that fails it fails its shards.
 */
static void
probe_nodes(ZShardCall *call, ZShard *shards, int nshards)
{
	int		   *wave = palloc(sizeof(int) * nshards);
	char	  **texts = palloc(sizeof(char *) * nshards);
	int			nwave = 0;

	for (int i = 0; i < nshards; i++)
	{
		bool		seen = false;

		for (int j = 0; j < nwave && !seen; j++)
			seen = same_node(&shards[wave[j]], &shards[i]);
		if (!seen)
		{
			texts[nwave] = (char *) call->probe;
			wave[nwave++] = i;
		}
	}
	run_wave(call, shards, wave, texts, nwave, true);
	for (int i = 0; i < nshards; i++)
		for (int j = 0; j < nwave; j++)
			if (wave[j] != i && same_node(&shards[wave[j]], &shards[i]))
			{
				shards[i].probe = shards[wave[j]].probe;
				shards[i].failed = shards[wave[j]].failed;
			}
}

/*
 * Run call's steps, in turn, on every shard of the Citus table relid, each
 * on the node that holds the shard; a shard whose command fails gets none
 * of the later ones.  Every shard is tried; the caller then reads what
 * each returned (a single value, or the command's tag) and which failed,
 * and raises the failure with zorder_shards_check.  The caller has checked
 * the caller's rights on relid and holds a lock on it.
 */
void
zorder_shards_run(Oid relid, ZShardCall *call)
{
	ZShard	   *shards;
	int			nshards;
	bool	   *done;
	int		   *wave;
	int		   *run;
	char	  **texts;
	int			ndone = 0;

	shards = list_shards(relid, call->fname, &nshards);
	call->relname = get_rel_name(relid);
	call->nshards = nshards;
	call->shards = shards;
	call->nfailed = 0;
	if (nshards == 0)
		return;
	done = palloc0(sizeof(bool) * nshards);
	wave = palloc(sizeof(int) * nshards);
	run = palloc(sizeof(int) * nshards);
	texts = palloc(sizeof(char *) * nshards);
	if (call->probe != NULL)
		probe_nodes(call, shards, nshards);

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
				node_taken = same_node(&shards[wave[j]], &shards[i]);
			if (!node_taken)
				wave[nwave++] = i;
		}

		for (int step = 0; step < call->nsteps; step++)
		{
			int			nrun = 0;

			/* a shard that failed an earlier command gets no more */
			for (int i = 0; i < nwave; i++)
			{
				ZShard	   *sh = &shards[wave[i]];
				char	   *text;

				if (sh->failed)
					continue;
				text = call->command(sh, step, call->arg);
				if (text == NULL)
					continue;
				texts[nrun] = text;
				run[nrun++] = wave[i];
			}
			if (nrun > 0)
				run_wave(call, shards, run, texts, nrun, false);
		}

		for (int i = 0; i < nwave; i++)
		{
			ZShard	   *sh = &shards[wave[i]];

			done[wave[i]] = true;
			ndone++;
			if (sh->failed)
				call->nfailed++;
			else if (call->verb != NULL)
				ereport(NOTICE,
						(errmsg("%s shard %s of table \"%s\" (%d of %d)",
								call->verb, sh->name, call->relname, ndone,
								nshards)));
		}
	}
}

/*
 * Raise the failure of a call on the shards, if a shard failed: once all
 * were tried, and after the caller kept what the others did (perhaps
 * committing it, so the table's name is the one read with its lock).
 */
void
zorder_shards_check(const ZShardCall *call)
{
	if (call->nfailed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("%s failed on %d of the %d shards of table \"%s\"",
						call->fname, call->nfailed, call->nshards,
						call->relname),
				 errdetail("On shard %s: %s", call->first_shard,
						   call->first_error),
				 errhint("The other shards are done, each in a transaction of its own on its node. Call %s again for the rest.",
						 call->fname)));
}

/*
 * A command that is the same on every shard but for its name: before, the
 * name as a quoted literal, after (arg: the two, as a const char *[2])
 */
char *
zorder_shard_command_around(const ZShard *shard, int step, void *arg)
{
	const char **parts = (const char **) arg;

	return psprintf("%s%s%s", parts[0], quote_literal_cstr(shard->name),
					parts[1]);
}
