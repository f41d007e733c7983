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
	bool		curves_differ;	/* or a shard has none */
	char		curve[16];
} TableSums;

/* The fields of a shard's line, in the order the command writes them */
#define REPORT_FIELDS 16

static void unexpected_report(const char *shard, const char *why);
static void add_curve(TableSums *tab, const char *curve);
static void other_keys(const char *shard);

/*
 * What each shard's node runs: its zorder.clustering_information, as one
 * line per key column of its numbers, '-' for a null, with the key
 * column's name in hex (a name may hold spaces); or, for a shard that has
 * no keys on its node yet (made by a split or a move since the last
 * zorder.optimize), "nokeys" and its pages.  The shard name goes between
 * the two parts (zorder_shard_command_around).
 */
static void
report_command(const char **parts, int probes, int requested_ppr)
{
	parts[0] = "WITH s(r) AS (SELECT ";
	parts[1] = psprintf("::pg_catalog.regclass) "
						  "SELECT CASE WHEN EXISTS (SELECT FROM zorder.clustered_tables t, s "
						  "WHERE t.\"table\" OPERATOR(pg_catalog.=) s.r) THEN "
						  "(SELECT pg_catalog.string_agg(pg_catalog.concat_ws(' ', c.key_position, "
						  "pg_catalog.encode(pg_catalog.convert_to(c.column_name::text, "
						  "pg_catalog.getdatabaseencoding()), 'hex'), "
						  "COALESCE(c.pages_per_range::text, '-'), "
						  "COALESCE(c.total_ranges::text, '-'), "
						  "COALESCE(c.unsummarized_ranges::text, '-'), "
						  "COALESCE(c.probes_used::text, '-'), "
						  "COALESCE(c.mean_ranges_touched::text, '-'), "
						  "COALESCE(c.ideal_ranges_touched::text, '-'), "
						  "COALESCE(c.average_overlaps::text, '-'), "
						  "COALESCE(c.average_depth::text, '-'), "
						  "COALESCE(c.table_pages::text, '-'), "
						  "COALESCE(c.unclustered_share::text, '-'), "
						  "COALESCE(c.sorted_runs::text, '-'), "
						  "COALESCE(c.fillfactor::text, '-'), "
						  "COALESCE(pg_catalog.date_part('epoch', c.optimized_at)::text, '-'), "
						  "COALESCE(c.curve, '-')), ';' ORDER BY c.key_position) "
						  "FROM s, zorder.clustering_information(s.r, %d, %s) c) "
						  "ELSE 'nokeys ' OPERATOR(pg_catalog.||) "
						  "(SELECT pg_catalog.pg_relation_size(s.r) "
						  "OPERATOR(pg_catalog./) pg_catalog.current_setting('block_size')::int8 FROM s) END",
						  probes,
						  requested_ppr > 0 ? psprintf("%d", requested_ppr) : "NULL");
}

/*
 * A number in a shard's line: NaN for '-'.  Anything else that does not
 * read as a number means the node answered with something this module
 * does not know (another zorder version there).
 */
static double
field_double(char **f, int i, const char *shard)
{
	char	   *end;
	double		v;

	if (strcmp(f[i], "-") == 0)
		return NAN;
	errno = 0;
	v = strtod(f[i], &end);
	if (end == f[i] || *end != '\0' || errno != 0)
		unexpected_report(shard, "It does not read as numbers.");
	return v;
}

static void
unexpected_report(const char *shard, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
			 errmsg("unexpected report from shard %s", shard),
			 errdetail("%s", why),
			 errhint("Check that every node has the same version of zorder (ALTER EXTENSION zorder UPDATE on each).")));
}

/* The key column's name in hex, as the node writes it */
static char *
hex_name(const char *name)
{
	size_t		len = strlen(name);
	char	   *hex = palloc(len * 2 + 1);

	for (size_t i = 0; i < len; i++)
		snprintf(hex + i * 2, 3, "%02x", (unsigned char) name[i]);
	hex[len * 2] = '\0';
	return hex;
}

/*
 * Add one shard's line to the sums.  keyhex[] are the table's key columns'
 * names in hex: a shard whose keys are others (declared on its node since
 * the last zorder.optimize) is not reported as if it had the table's.
 */
static void
add_line(char *line, const char *shard, int nkeys, char **keyhex,
		 bool *seen, KeySums *keys, TableSums *tab)
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
	if (n != REPORT_FIELDS)
		unexpected_report(shard, "A line of it has too few fields.");
	k = atoi(f[0]) - 1;
	if (k < 0 || k >= nkeys || strcmp(f[1], keyhex[k]) != 0)
	{
		other_keys(shard);
		return;					/* not reached */
	}
	if (seen[k])
		unexpected_report(shard, "It names a key column twice.");
	seen[k] = true;

	pages = field_double(f, 10, shard);
	if (strcmp(f[2], "-") != 0)
		keys[k].ppr = Max(keys[k].ppr, (int) field_double(f, 2, shard));
	v = field_double(f, 3, shard);
	keys[k].total += isnan(v) ? 0 : (int64) v;
	v = field_double(f, 4, shard);
	keys[k].unsummarized += isnan(v) ? 0 : (int64) v;
	v = field_double(f, 5, shard);
	keys[k].probes += isnan(v) ? 0 : (int64) v;
	v = field_double(f, 6, shard);
	if (!isnan(v))
		keys[k].mean += v;
	v = field_double(f, 7, shard);
	if (!isnan(v))
		keys[k].ideal += v;
	if (!isnan(field_double(f, 8, shard)) && !isnan(field_double(f, 9, shard)) &&
		!isnan(pages))
	{
		keys[k].overlaps_w += field_double(f, 8, shard) * pages;
		keys[k].depth_w += field_double(f, 9, shard) * pages;
		keys[k].weight += pages;
	}
	if (k != 0)
		return;

	/* the table's figures, once per shard */
	if (!isnan(pages))
		tab->pages += (int64) pages;
	v = field_double(f, 11, shard);
	if (!isnan(v) && !isnan(pages))
	{
		tab->unclustered_w += v * pages;
		tab->unclustered_weight += pages;
	}
	v = field_double(f, 12, shard);
	if (!isnan(v))
	{
		tab->runs = Max(tab->runs, (int) v);
		tab->runs_known = true;
	}
	v = field_double(f, 13, shard);
	if (isnan(v) || (tab->fillfactor_set && tab->fillfactor != (int) v))
		tab->fillfactor = -1;
	else if (!tab->fillfactor_set)
		tab->fillfactor = (int) v;
	tab->fillfactor_set = true;
	v = field_double(f, 14, shard);
	if (isnan(v))
		tab->not_laid_out = true;
	else if (!tab->oldest_set || v < tab->oldest)
	{
		tab->oldest = v;
		tab->oldest_set = true;
	}
	add_curve(tab, f[15]);
}

/*
 * The curve of the shards' layouts: none when they differ, or when one
 * has none.
 */
static void
add_curve(TableSums *tab, const char *curve)
{
	if (strcmp(curve, "-") == 0 || tab->curves_differ ||
		(tab->curve[0] != '\0' && strcmp(tab->curve, curve) != 0))
	{
		tab->curves_differ = true;
		tab->curve[0] = '\0';
	}
	else
		strlcpy(tab->curve, curve, sizeof(tab->curve));
}

/*
 * A shard that has no keys on its node yet: its pages count, and the
 * table is not laid out, until zorder.optimize gives it the keys.
 */
static void
add_keyless(const char *pagestext, const char *shard, TableSums *tab)
{
	char	   *end;
	long long	pages;

	errno = 0;
	pages = strtoll(pagestext, &end, 10);
	if (end == pagestext || *end != '\0' || errno != 0 || pages < 0)
		unexpected_report(shard, "It does not read as numbers.");
	tab->pages += pages;
	tab->not_laid_out = true;
	tab->curves_differ = true;
	tab->curve[0] = '\0';
	tab->fillfactor = -1;
	tab->fillfactor_set = true;
}

/*
 * Check the caller's rights on the distributed table rel (the function's
 * first argument), as for reading any table's report, and have each shard
 * measured on its node: what each answered is in *call, for
 * add_shard.  Returns the table, open; fills its keys.
 */
static Relation
measure_shards(FunctionCallInfo fcinfo, const char *fname, int probes,
			   int requested_ppr, int *nkeys, AttrNumber *attnums,
			   char **keyhex, ZShardCall *call)
{
	Relation	rel;
	const char **parts = palloc(sizeof(char *) * 2);

	rel = zorder_open_shell_for_reading(fcinfo, fname);
	*nkeys = zorder_get_keys_required(rel, attnums);
	zorder_check_columns_readable(rel, *nkeys, attnums);
	zorder_check_no_rls(rel, fname);
	for (int k = 0; k < *nkeys; k++)
		keyhex[k] = hex_name(NameStr(*attnumAttName(rel, attnums[k])));

	report_command(parts, probes, requested_ppr);
	memset(call, 0, sizeof(ZShardCall));
	call->fname = fname;
	call->nsteps = 1;
	call->command = zorder_shard_command_around;
	call->arg = parts;
	zorder_shards_run(RelationGetRelid(rel), call);
	zorder_shards_check(call);
	return rel;
}

/* A shard whose keys on its node are not its table's */
static void
other_keys(const char *shard)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("shard %s has other keys than its table", shard),
			 errdetail("Keys were declared on the shard since the last zorder.optimize of the table."),
			 errhint("CALL zorder.optimize on the table gives every shard the table's keys.")));
}

/*
 * Add what one shard answered to keys[] and *tab: a line per key column,
 * each of the table's keys exactly once, or "nokeys" and its pages.
 */
static void
add_shard(const ZShard *sh, int nkeys, char **keyhex, KeySums *keys,
		  TableSums *tab)
{
	bool		seen[ZORDER_MAX_KEYS] = {0};
	char	   *save = NULL;

	if (sh->result == NULL)
	{
		unexpected_report(sh->name, "It answered nothing.");
		return;					/* not reached */
	}
	if (strncmp(sh->result, "nokeys ", 7) == 0)
	{
		add_keyless(sh->result + 7, sh->name, tab);
		return;
	}
	for (char *line = strtok_r(sh->result, ";", &save); line != NULL;
		 line = strtok_r(NULL, ";", &save))
		add_line(line, sh->name, nkeys, keyhex, seen, keys, tab);
	for (int k = 0; k < nkeys; k++)
		if (!seen[k])
			other_keys(sh->name);
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
	ZShardCall	call;
	List	   *indexes;
	Datum		keysarr;
	char	   *keyhex[ZORDER_MAX_KEYS];

	rel = measure_shards(fcinfo, "zorder.clustering_information", probes,
						 requested_ppr, &nkeys, attnums, keyhex, &call);

	memset(keys, 0, sizeof(keys));
	memset(&tab, 0, sizeof(tab));
	for (int i = 0; i < call.nshards; i++)
		add_shard(&call.shards[i], nkeys, keyhex, keys, &tab);

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

/* One shard's figures on one key column, for zorder_shard_report_each */
typedef struct ShardRow
{
	char	   *shard;
	int			key;
	KeySums		sums;
	TableSums	tab;
} ShardRow;

/* Worst first: the highest ratio to the ideal; a shard not laid out first */
static int
shard_row_cmp(const void *a, const void *b)
{
	const ShardRow *x = (const ShardRow *) a;
	const ShardRow *y = (const ShardRow *) b;
	bool		xn = x->tab.not_laid_out || x->sums.ideal <= 0 || x->sums.probes == 0;
	bool		yn = y->tab.not_laid_out || y->sums.ideal <= 0 || y->sums.probes == 0;
	double		xr = xn ? 0 : x->sums.mean / x->sums.ideal;
	double		yr = yn ? 0 : y->sums.mean / y->sums.ideal;

	if (xn != yn)
		return xn ? -1 : 1;
	if (xr != yr)
		return xr > yr ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return strcmp(x->shard, y->shard);
}

/*
 * zorder.shard_clustering_information(rel, probes, with_pages_per_range):
 * each shard's figures, one row per shard and key column, the shards that
 * skip worst first; a shard that has no layout on its node (no keys yet,
 * or not laid out) comes first, with nulls.
 */
void
zorder_shard_report_each(FunctionCallInfo fcinfo, int probes,
						 int requested_ppr)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	char	   *keyhex[ZORDER_MAX_KEYS];
	ZShardCall	call;
	ShardRow   *rows;
	int			nrows = 0;

	rel = measure_shards(fcinfo, "zorder.shard_clustering_information",
						 probes, requested_ppr, &nkeys, attnums, keyhex,
						 &call);
	rows = palloc0(sizeof(ShardRow) * Max(call.nshards * nkeys, 1));
	for (int i = 0; i < call.nshards; i++)
	{
		KeySums		keys[ZORDER_MAX_KEYS];
		TableSums	tab;

		memset(keys, 0, sizeof(keys));
		memset(&tab, 0, sizeof(tab));
		add_shard(&call.shards[i], nkeys, keyhex, keys, &tab);
		for (int k = 0; k < nkeys; k++)
		{
			rows[nrows].shard = call.shards[i].name;
			rows[nrows].key = k;
			rows[nrows].sums = keys[k];
			rows[nrows].tab = tab;
			nrows++;
		}
	}
	qsort(rows, nrows, sizeof(ShardRow), shard_row_cmp);

	InitMaterializedSRF(fcinfo, 0);
	for (int r = 0; r < nrows; r++)
	{
		ShardRow   *row = &rows[r];
		bool		measured = !row->tab.not_laid_out && row->sums.probes > 0;
		Datum		values[10];
		bool		nulls[10];

		memset(nulls, 0, sizeof(nulls));
		values[0] = CStringGetTextDatum(row->shard);
		values[1] = Int32GetDatum(row->key + 1);
		values[2] = NameGetDatum(attnumAttName(rel, attnums[row->key]));
		values[3] = Int64GetDatum(row->sums.total);
		nulls[3] = row->tab.not_laid_out;
		values[4] = Float8GetDatum(row->sums.mean);
		nulls[4] = !measured;
		values[5] = Float8GetDatum(row->sums.ideal);
		nulls[5] = !measured;
		values[6] = Float8GetDatum(row->sums.ideal > 0 ?
								   row->sums.mean / row->sums.ideal : 0);
		nulls[6] = !measured || row->sums.ideal <= 0;
		values[7] = Int64GetDatum(row->tab.pages);
		values[8] = Int32GetDatum(row->tab.runs);
		nulls[8] = !row->tab.runs_known;
		nulls[9] = !row->tab.oldest_set || row->tab.not_laid_out;
		if (!nulls[9])
			values[9] = TimestampTzGetDatum(DatumGetTimestampTz(
				DirectFunctionCall1(float8_timestamptz,
									Float8GetDatum(row->tab.oldest))));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	relation_close(rel, AccessShareLock);
}
