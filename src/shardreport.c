/*-------------------------------------------------------------------------
 *
 * shardreport.c
 *	  zorder.clustering_information of a Citus distributed table, on the
 *	  coordinator: each shard measured on its node, and the figures put
 *	  together for the whole table.
 *
 * A filter on a key column that is not the distribution column reads every
 * shard, so the block ranges it reads in the table are the sum of those it
 * reads in each shard, and so are the ideal and the ranges themselves.
 * The ratio to the ideal is then the sum over the sum: a shard with many
 * ranges weighs more.  Figures of a shard's layout that are shares or
 * averages (overlaps, depth, the unclustered share) are weighted by the
 * shard's pages; sorted runs are the most any shard has, as the ideal is 1
 * whatever the number of shards; the layout's time is the oldest shard's.
 *
 * Each shard runs zorder.clustering_information on its node, as the
 * caller (shards.c), so the node checks the caller's rights there again;
 * the coordinator checks them on the distributed table first, row-level
 * security included, as the shards may not carry the table's policies.
 * Only the figures come back: one line of numbers per key column.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "funcapi.h"
#include "parser/parse_relation.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "access.h"
#include "brin.h"
#include "shardreport.h"
#include "shards.h"
#include "tables.h"
#include "zorder.h"

/* The figures of one key column, summed or weighted over the shards */
typedef struct KeySums
{
	int			ppr;
	int64		total;
	int64		unsummarized;
	int64		probes;
	double		mean;
	double		ideal;
	double		overlaps_w;		/* sum of overlaps x pages */
	double		depth_w;		/* sum of depth x pages */
	double		weight;			/* pages of the shards with those two */
} KeySums;

/* The table's figures, over the shards */
typedef struct TableSums
{
	int64		pages;
	double		unclustered_w;
	double		unclustered_weight;
	int			runs;
	bool		runs_known;
	int			fillfactor;		/* -1: shards differ or unknown */
	bool		fillfactor_set;
	double		oldest;			/* epoch seconds */
	bool		oldest_set;
	bool		not_laid_out;	/* a shard has no layout */
	char		curve[16];
} TableSums;

/* The fields of a shard's line, in the order the command writes them */
#define REPORT_FIELDS 15

/*
 * What each shard's node runs: its zorder.clustering_information, as one
 * line per key column of its numbers, '-' for a null.  The shard name goes
 * between the two parts (ZShardCommand).
 */
static void
report_command(ZShardCommand *cmd, int probes, int requested_ppr)
{
	cmd->before =
		"SELECT pg_catalog.string_agg(pg_catalog.concat_ws(' ', c.key_position, "
		"COALESCE(c.pages_per_range::text, '-'), c.total_ranges, "
		"c.unsummarized_ranges, c.probes_used, "
		"COALESCE(c.mean_ranges_touched::text, '-'), c.ideal_ranges_touched, "
		"COALESCE(c.average_overlaps::text, '-'), "
		"COALESCE(c.average_depth::text, '-'), c.table_pages, "
		"COALESCE(c.unclustered_share::text, '-'), "
		"COALESCE(c.sorted_runs::text, '-'), COALESCE(c.fillfactor::text, '-'), "
		"COALESCE(pg_catalog.date_part('epoch', c.optimized_at)::text, '-'), "
		"COALESCE(c.curve, '-')), ';' ORDER BY c.key_position) "
		"FROM zorder.clustering_information(";
	cmd->after = psprintf(", %d, %s) c", probes,
						  requested_ppr > 0 ? psprintf("%d", requested_ppr) : "NULL");
}

static double
field_double(char **f, int i)
{
	return strcmp(f[i], "-") == 0 ? NAN : strtod(f[i], NULL);
}

/* Add one shard's line for key column k to the sums */
static void
add_line(char *line, const char *shard, int nkeys, KeySums *keys,
		 TableSums *tab)
{
	char	   *f[REPORT_FIELDS];
	char	   *save = NULL;
	int			n = 0;
	int			k;
	double		pages;
	double		v;

	for (char *tok = strtok_r(line, " ", &save); tok != NULL && n < REPORT_FIELDS;
		 tok = strtok_r(NULL, " ", &save))
		f[n++] = tok;
	k = n == REPORT_FIELDS ? atoi(f[0]) - 1 : -1;
	if (k < 0 || k >= nkeys)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("unexpected report from shard %s", shard),
				 errdetail("The shard's keys may differ from those of its table; zorder.optimize on the table gives them its keys.")));

	pages = field_double(f, 9);
	if (strcmp(f[1], "-") != 0)
		keys[k].ppr = Max(keys[k].ppr, atoi(f[1]));
	keys[k].total += strtoll(f[2], NULL, 10);
	keys[k].unsummarized += strtoll(f[3], NULL, 10);
	keys[k].probes += strtoll(f[4], NULL, 10);
	v = field_double(f, 5);
	if (!isnan(v))
		keys[k].mean += v;
	keys[k].ideal += field_double(f, 6);
	if (!isnan(field_double(f, 7)) && !isnan(field_double(f, 8)))
	{
		keys[k].overlaps_w += field_double(f, 7) * pages;
		keys[k].depth_w += field_double(f, 8) * pages;
		keys[k].weight += pages;
	}
	if (k != 0)
		return;

	/* the table's figures, once per shard */
	tab->pages += (int64) pages;
	v = field_double(f, 10);
	if (!isnan(v))
	{
		tab->unclustered_w += v * pages;
		tab->unclustered_weight += pages;
	}
	if (strcmp(f[11], "-") != 0)
	{
		tab->runs = Max(tab->runs, atoi(f[11]));
		tab->runs_known = true;
	}
	if (strcmp(f[12], "-") == 0 ||
		(tab->fillfactor_set && tab->fillfactor != atoi(f[12])))
		tab->fillfactor = -1;
	else if (!tab->fillfactor_set)
		tab->fillfactor = atoi(f[12]);
	tab->fillfactor_set = true;
	v = field_double(f, 13);
	if (isnan(v))
		tab->not_laid_out = true;
	else if (!tab->oldest_set || v < tab->oldest)
	{
		tab->oldest = v;
		tab->oldest_set = true;
	}
	if (tab->curve[0] == '\0' && strcmp(f[14], "-") != 0)
		strlcpy(tab->curve, f[14], sizeof(tab->curve));
}

/*
 * zorder.clustering_information(rel, probes, with_pages_per_range) where
 * rel is a distributed table zorder lays out shard by shard: one row per
 * key column, as for any table.
 */
void
zorder_shard_report(FunctionCallInfo fcinfo, int probes, int requested_ppr)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	Datum		keynames[ZORDER_MAX_KEYS];
	int			nkeys;
	KeySums		keys[ZORDER_MAX_KEYS];
	TableSums	tab;
	ZShardCommand cmd;
	ZShardResult *results;
	int			nshards;
	List	   *indexes;
	Datum		keysarr;

	rel = zorder_open_shell_for_reading(fcinfo, "zorder.clustering_information");
	nkeys = zorder_get_keys_required(rel, attnums);
	zorder_check_columns_readable(rel, nkeys, attnums);
	zorder_check_no_rls(rel, "zorder.clustering_information");

	report_command(&cmd, probes, requested_ppr);
	nshards = zorder_shards_run(RelationGetRelid(rel),
								"zorder.clustering_information", &cmd, 1,
								NULL, &results);

	memset(keys, 0, sizeof(keys));
	memset(&tab, 0, sizeof(tab));
	for (int i = 0; i < nshards; i++)
	{
		char	   *save = NULL;

		if (results[i].result == NULL)
			continue;
		for (char *line = strtok_r(results[i].result, ";", &save); line != NULL;
			 line = strtok_r(NULL, ";", &save))
			add_line(line, results[i].shard, nkeys, keys, &tab);
	}

	InitMaterializedSRF(fcinfo, 0);
	indexes = zorder_brin_indexes(rel);
	for (int k = 0; k < nkeys; k++)
		keynames[k] = NameGetDatum(attnumAttName(rel, attnums[k]));
	keysarr = PointerGetDatum(construct_array(keynames, nkeys, NAMEOID,
											  NAMEDATALEN, false,
											  TYPALIGN_CHAR));
	for (int k = 0; k < nkeys; k++)
	{
		Datum		values[21];
		bool		nulls[21];
		BrinIndexInfo *idx = zorder_brin_covering(indexes, attnums[k], true,
												  NULL);

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(k + 1);
		values[1] = keynames[k];
		values[2] = ObjectIdGetDatum(idx ? idx->indexoid : InvalidOid);
		nulls[2] = idx == NULL;
		values[3] = Int32GetDatum(keys[k].ppr);
		values[4] = Int64GetDatum(keys[k].total);
		values[5] = Int64GetDatum(keys[k].unsummarized);
		values[6] = Int64GetDatum(keys[k].probes);
		values[7] = Float8GetDatum(keys[k].mean);
		nulls[7] = keys[k].probes == 0;
		values[8] = Float8GetDatum(keys[k].ideal);
		values[9] = Float8GetDatum(keys[k].ideal > 0 ? keys[k].mean / keys[k].ideal : 0);
		nulls[9] = keys[k].probes == 0 || keys[k].ideal <= 0;
		values[10] = Float8GetDatum(keys[k].weight > 0 ? keys[k].overlaps_w / keys[k].weight : 0);
		nulls[10] = keys[k].weight <= 0;
		values[11] = Float8GetDatum(keys[k].weight > 0 ? keys[k].depth_w / keys[k].weight : 0);
		nulls[11] = keys[k].weight <= 0;
		/* the depths of different shards' ranges are not one histogram */
		nulls[12] = true;
		values[13] = keysarr;
		values[14] = CStringGetTextDatum(tab.curve);
		nulls[14] = tab.curve[0] == '\0';
		nulls[15] = !tab.oldest_set || tab.not_laid_out;
		if (!nulls[15])
			values[15] = TimestampTzGetDatum(DatumGetTimestampTz(
				DirectFunctionCall1(float8_timestamptz, Float8GetDatum(tab.oldest))));
		values[16] = Int64GetDatum(tab.pages);
		values[17] = Float8GetDatum(tab.unclustered_weight > 0 ?
									tab.unclustered_w / tab.unclustered_weight : 0);
		nulls[17] = tab.unclustered_weight <= 0;
		values[18] = Int32GetDatum(tab.runs);
		nulls[18] = !tab.runs_known;
		values[19] = Int32GetDatum(tab.fillfactor);
		nulls[19] = tab.fillfactor < 0 || !tab.fillfactor_set;
		/* why each shard has its room is said on its node */
		nulls[20] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	relation_close(rel, AccessShareLock);
}
