/*-------------------------------------------------------------------------
 *
 * autokeys.c
 *	  Automatic keys, as Databricks' CLUSTER BY AUTO chooses them:
 *	  zorder.cluster_by_auto declares the key advisor's first choice as a
 *	  table's keys, and zorder.optimize weighs them again as the workload
 *	  changes.
 *
 * Keys do not flap.  An optimize call weighs a table's automatic keys at
 * most once per zorder.auto_keys_interval, and changes them only when the
 * advisor's first choice makes the recorded workload (at least
 * AUTO_MIN_CALLS filter calls) read at most 1 - zorder.auto_keys_min_gain
 * of the block ranges the current keys would.  Both sides are measured on
 * one sample, each laid out afresh along the curve: appends that wore
 * today's layout down since count against neither.  New keys need no
 * rewrite: the call goes on with them and new boundaries, as after
 * zorder.cluster_by, and only rows that move follow them.
 *
 * Every choice is logged in zorder.key_changes (written by tables.c) with
 * its figures and reason, and a call that changes keys says so in a
 * NOTICE.  Keys declared with zorder.cluster_by are never changed.
 *
 * Privileges are those of zorder.cluster_by (the owner), and those of
 * zorder.recommend_keys for what is read: the workload as the caller, the
 * rows as the owner (advisor.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "access.h"
#include "advisor.h"
#include "autokeys.h"
#include "subxact.h"
#include "tables.h"
#include "zorder.h"

PG_FUNCTION_INFO_V1(zorder_cluster_by_auto);

#define FNAME "zorder.cluster_by_auto"

/* Fewest recorded filter calls that may change a table's keys. */
#define AUTO_MIN_CALLS 20

static int	zorder_auto_keys_interval = 86400;
static double zorder_auto_keys_min_gain = 0.2;

void
zorder_autokeys_init(void)
{
	DefineCustomIntVariable("zorder.auto_keys_interval",
							"How often zorder.optimize weighs a table's automatic keys against the workload.",
							"At most once per interval; 0 weighs them at every call.",
							&zorder_auto_keys_interval,
							86400, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomRealVariable("zorder.auto_keys_min_gain",
							 "Share of the block ranges the workload reads that new automatic keys must save.",
							 "zorder.optimize changes automatic keys only when the key advisor's first choice "
							 "reads at most 1 minus this share of what the current keys would.",
							 &zorder_auto_keys_min_gain,
							 0.2, 0.0, 1.0,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/* "a, b": the names of keys[] in rel, quoted where needed. */
static char *
key_list(Relation rel, int nkeys, const AttrNumber *keys)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int k = 0; k < nkeys; k++)
		appendStringInfo(&s, "%s%s", k > 0 ? ", " : "",
						 quote_identifier(NameStr(*attnumAttName(rel, keys[k]))));
	return s.data;
}

/* Whether two key lists hold the same columns, in any order. */
static bool
same_columns(int n1, const AttrNumber *k1, int n2, const AttrNumber *k2)
{
	if (n1 != n2)
		return false;
	for (int i = 0; i < n1; i++)
	{
		bool		found = false;

		for (int j = 0; j < n2 && !found; j++)
			found = k1[i] == k2[j];
		if (!found)
			return false;
	}
	return true;
}

/*
 * zorder.cluster_by_auto(rel regclass, max_keys int DEFAULT 3) -> name[]
 *
 * Declare the key advisor's first choice of at most max_keys columns as
 * the keys of a table, and let later zorder.optimize calls weigh them
 * again.  Rewrites nothing, as zorder.cluster_by.  Returns the keys.
 */
Datum
zorder_cluster_by_auto(PG_FUNCTION_ARGS)
{
	Oid			relid;
	int			max_keys;
	Relation	rel;
	AttrNumber	old[ZORDER_MAX_KEYS];
	int			nold;
	ZKeyAdvice	adv;
	Datum		names[ZORDER_MAX_KEYS];
	char	   *reason;
	ArrayType  *result;

	PreventCommandDuringRecovery(FNAME);
	zorder_arg_required(fcinfo, 0, "table");
	zorder_arg_required(fcinfo, 1, "max_keys");
	relid = PG_GETARG_OID(0);
	max_keys = PG_GETARG_INT32(1);
	zorder_check_max_keys(max_keys);

	/* as zorder.cluster_by: blocks DDL and optimize, not reads or writes */
	rel = zorder_open_checked(relid, ShareUpdateExclusiveLock, FNAME);
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("automatic keys are not supported for partitioned tables"),
				 errdetail("The key advisor weighs the rows and workload of one table."),
				 errhint("Declare the keys of the partitioned table with zorder.cluster_by, or call zorder.cluster_by_auto and zorder.optimize on each partition.")));
	zorder_check_no_rls(rel, FNAME);

	nold = zorder_get_keys(rel, old);
	if (!zorder_advise_keys(rel, max_keys, nold, old, &adv))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the key advisor has no keys to choose for table \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("It found nothing to choose from: %s.", adv.why),
				 errhint("Let the workload run with pg_qualstats (or pg_stat_statements) loaded, or declare the keys with zorder.cluster_by.")));

	reason = psprintf("chosen by zorder.cluster_by_auto: the %.0f recorded filter calls would read about %.0f block ranges with (%s) laid out, against %.0f with today's layout",
					  adv.calls, adv.best,
					  key_list(rel, adv.nkeys, adv.attnums), adv.now);
	(void) zorder_declare_auto_keys(rel, adv.nkeys, adv.attnums, max_keys,
									false);
	zorder_log_key_change(rel, nold, old, adv.nkeys, adv.attnums,
						  nold > 0 ? adv.current : -1, adv.best, reason);

	for (int k = 0; k < adv.nkeys; k++)
		names[k] = NameGetDatum(attnumAttName(rel, adv.attnums[k]));
	result = construct_array(names, adv.nkeys, NAMEOID, NAMEDATALEN, false,
							 TYPALIGN_CHAR);
	table_close(rel, NoLock);
	PG_RETURN_ARRAYTYPE_P(result);
}

/* The advisor's weighing, run in a subtransaction of its own. */
typedef struct Weighing
{
	Relation	rel;
	int			max_keys;
	int			nold;
	AttrNumber *old;
	ZKeyAdvice	adv;
	bool		has_choice;
} Weighing;

static void
weigh(void *arg)
{
	Weighing   *w = arg;

	w->has_choice = zorder_advise_keys(w->rel, w->max_keys, w->nold, w->old,
									   &w->adv);
}

/*
 * Change rel's automatic keys to the advisor's choice, log it and say so;
 * unless keys declared by hand took their place meanwhile.
 */
static void
change_keys(Relation rel, const Weighing *w)
{
	const ZKeyAdvice *adv = &w->adv;
	char	   *from = key_list(rel, w->nold, w->old);
	char	   *to = key_list(rel, adv->nkeys, adv->attnums);
	char	   *reason;

	reason = psprintf("the %.0f recorded filter calls would read about %.0f block ranges with (%s) laid out, against %.0f with (%s): %.0f %% fewer, more than zorder.auto_keys_min_gain (%.0f %%)",
					  adv->calls, adv->best, to, adv->current, from,
					  100.0 * (1.0 - adv->best / adv->current),
					  100.0 * zorder_auto_keys_min_gain);
	if (!zorder_declare_auto_keys(rel, adv->nkeys, adv->attnums, w->max_keys,
								  true))
		return;
	zorder_log_key_change(rel, w->nold, w->old, adv->nkeys, adv->attnums,
						  adv->current, adv->best, reason);
	ereport(NOTICE,
			(errmsg("zorder.optimize changed the automatic keys of table \"%s\" from (%s) to (%s)",
					RelationGetRelationName(rel), from, to),
			 errdetail("The %.0f recorded filter calls would read %.0f %% fewer block ranges.",
					   adv->calls, 100.0 * (1.0 - adv->best / adv->current))));
}

/*
 * Before a zorder.optimize call on relid (a table, not partitioned): if
 * its keys are automatic and due to be weighed, weigh them against the
 * workload and change them when the gain is clear.  A weighing that fails
 * (a type's function, the workload's source) leaves the keys as they are
 * with a WARNING: it must not stop the table's upkeep.  Not where
 * row-level security binds the owner: the figures come from the rows.
 *
 * The weighing holds SHARE UPDATE EXCLUSIVE, as zorder.cluster_by, and
 * lets it go before the call takes its own lock: holding it while asking
 * for a stronger one would deadlock with a session that holds ACCESS
 * SHARE and asks for SHARE UPDATE EXCLUSIVE (ANALYZE, CREATE INDEX).  The
 * keys it writes are the call's once it holds its lock.
 */
void
zorder_autokeys_before_call(Oid relid)
{
	Relation	rel;
	AttrNumber	old[ZORDER_MAX_KEYS];
	Weighing	w = {0};
	MemoryContext cxt;
	MemoryContext oldcxt;
	ErrorData  *edata;

	/* cheap first: most tables' keys are declared by hand */
	if (zorder_auto_keys_due(relid, zorder_auto_keys_interval, false) == 0)
		return;
	rel = zorder_open_checked(relid, ShareUpdateExclusiveLock,
							  "zorder.optimize");

	/*
	 * Again, with what committed while we waited for the lock (keys
	 * declared by hand, another weighing) and the table's catalog rows now
	 * claimed.
	 */
	w.max_keys = zorder_auto_keys_due(relid, zorder_auto_keys_interval, true);
	w.nold = zorder_get_keys(rel, old);
	if (w.max_keys == 0 || w.nold == 0 ||
		(rel->rd_rel->relrowsecurity && rel->rd_rel->relforcerowsecurity))
	{
		table_close(rel, ShareUpdateExclusiveLock);
		return;
	}
	w.rel = rel;
	w.old = old;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder automatic keys",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	edata = zorder_try_in_subxact(weigh, &w);
	if (edata != NULL)
	{
		zorder_rethrow_if_fatal(edata);
		ereport(WARNING,
				(errmsg("could not weigh the automatic keys of table \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("%s", edata->message),
				 errhint("The keys stay as they are until the next weighing, after zorder.auto_keys_interval.")));
	}
	else if (w.has_choice && w.adv.calls >= AUTO_MIN_CALLS &&
			 w.adv.current > 0 &&
			 !same_columns(w.nold, old, w.adv.nkeys, w.adv.attnums) &&
			 w.adv.best < (1.0 - zorder_auto_keys_min_gain) * w.adv.current)
		change_keys(rel, &w);
	zorder_auto_keys_weighed(relid);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	table_close(rel, ShareUpdateExclusiveLock);
}
