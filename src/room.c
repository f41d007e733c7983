/*-------------------------------------------------------------------------
 *
 * room.c
 *	  The room zorder keeps free on a table's pages for placement, chosen
 *	  from the growth it observes, when the table's owner set no
 *	  fillfactor.
 *
 * Placement (place.c) moves each new row into the block range of the main
 * sorted run that holds its key, into free space on that range's pages; a
 * range without room splits, moving rows.  So appends spread over the keys
 * need room in every range, or nearly every call splits ranges; appends
 * that are time-ordered or crowd into a band go to new ranges and need
 * none.
 *
 * The room is the table's fillfactor reloption, set by zorder and recorded
 * as its choice in zorder.history.  A rewrite writes pages to the
 * fillfactor, and so do the splits; the movers may fill the rest.
 * heap_insert, for ordinary INSERTs and UPDATEs, only uses a page with the
 * fillfactor's room plus the row free (hio.c), so it never eats the room
 * a page was written with: new rows go to pages at the end, where the next
 * call finds them.  Pages merely written below full, with the default
 * fillfactor 100, would be filled by inserts through the free space map
 * before the next call could use them.
 *
 * A fillfactor the owner set (ALTER TABLE ... SET (fillfactor = n)) is
 * never changed: zorder only changes one that it set itself, which the
 * history names as its last choice, or none.  An owner who sets the same
 * value zorder chose hands it to zorder; RESET hands the choice back.
 *
 * The choice, made before each full rewrite and after each incremental
 * call:
 *	- with zorder.placement off, new rows make runs of their own: 100;
 *	- a first layout, before any call has seen appends: by how the
 *	  table's latest rows came (arrivals.c): spread over the keys,
 *	  ZORDER_ROOM_FIRST_SPREAD; crowded on one, 100; too few to tell,
 *	  ZORDER_ROOM_DEFAULT;
 *	- no appends observed since the last full rewrite: the room chosen
 *	  before, else ZORDER_ROOM_DEFAULT;
 *	- most calls since saw appends spread over the main run: room for the
 *	  growth of ZORDER_ROOM_HORIZON more calls at the rate observed,
 *	  100 / (1 + g), but at least ZORDER_ROOM_LEAST;
 *	- most saw time-ordered or banded appends: 100, no room.
 * An incremental call only lowers the fillfactor; a higher one waits for
 * the next full rewrite (see choose_and_set).
 *
 * Spread appends use up the room the table was laid out with; then ranges
 * split, and a call that splits writes far more than placing its rows
 * takes.  A full rewrite, writing the room chosen from the appends seen,
 * ends that, but writes every page of the table and its indexes, and
 * whether the appends go on is not known.  So the rewrite is bought as
 * skis are rented: zorder_room_spent says it is due once the splits since
 * the table was laid out have written as much beyond placement as the
 * rewrite would write, which, by that count, costs about twice at most
 * what the best choice in hindsight would have (docs/design.md says where
 * it does not hold).  zorder.optimize starts one by itself when
 * zorder.auto_rewrite_limit allows its lock (estimate.c, optimize.c); the
 * room of a fillfactor the owner set is the owner's to size.
 * Figures and reasons: docs/design.md, "Room".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "arrivals.h"
#include "fillfactor.h"
#include "layout.h"
#include "pg_compat.h"
#include "place.h"
#include "room.h"
#include "tables.h"

/* seconds of ACCESS EXCLUSIVE an automatic full rewrite may hold */
int			zorder_auto_rewrite_limit = 60;

void
zorder_room_init(void)
{
	DefineCustomIntVariable("zorder.auto_rewrite_limit",
							"Longest lock of a full rewrite that zorder.optimize starts by itself.",
							"When spread appends have used up the room zorder chose, an incremental "
							"call rewrites the table in full instead if the rewrite's ACCESS EXCLUSIVE "
							"lock is estimated to last at most this long; 0 disables automatic rewrites.",
							&zorder_auto_rewrite_limit,
							60, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_S, NULL, NULL, NULL);
}

/*
 * The fillfactor a choice from history h should set, with its reason.
 * Arithmetic on h and zorder.placement.
 */
int
zorder_room_choose(const ZRoomHistory *h, char **reason)
{
	double		rate;
	double		g;
	int			ff;

	if (!zorder_placement)
	{
		/* new rows make runs of their own: room would stay empty */
		*reason = pstrdup("zorder.placement is off: no room kept");
		return 100;
	}
	if ((h->calls == 0 || h->rows <= 0) && h->last_fillfactor != 0)
	{
		/* nothing new to go by: what was chosen from the calls before */
		*reason = psprintf("no appends observed since the last full rewrite: "
						   "the room chosen before, fillfactor %d",
						   h->last_fillfactor);
		return h->last_fillfactor;
	}
	if ((h->calls == 0 || h->rows <= 0) &&
		h->arrivals == ZP_ARRIVALS_SPREAD)
	{
		*reason = psprintf("a first layout: the table's latest rows spread "
						   "over the values of the keys, as spread appends "
						   "do: room for them, fillfactor %d",
						   ZORDER_ROOM_FIRST_SPREAD);
		return ZORDER_ROOM_FIRST_SPREAD;
	}
	if ((h->calls == 0 || h->rows <= 0) &&
		h->arrivals == ZP_ARRIVALS_CROWDED)
	{
		*reason = pstrdup("a first layout: the table's latest rows crowd at "
						  "one end or in a band of a key's values, as "
						  "time-ordered or banded appends do: no room kept");
		return 100;
	}
	if (h->calls == 0 || h->rows <= 0)
	{
		*reason = psprintf("no appends observed since the last full rewrite: "
						   "the default room, fillfactor %d",
						   ZORDER_ROOM_DEFAULT);
		return ZORDER_ROOM_DEFAULT;
	}
	if (h->spread * 2 <= h->calls)
	{
		*reason = psprintf("appends time-ordered or banded in %d of %d calls: "
						   "they go to new ranges, no room kept",
						   h->calls - h->spread, h->calls);
		return 100;
	}
	rate = (double) h->arrived / h->rows / h->calls;
	g = rate * ZORDER_ROOM_HORIZON;
	ff = (int) rint(100.0 / (1.0 + g));
	ff = Max(ff, ZORDER_ROOM_LEAST);
	ff = Min(ff, 100);
	*reason = psprintf("appends spread over the keys in %d of %d calls, "
					   "%.2f %% of the rows per call: room for %d calls, "
					   "fillfactor %d",
					   h->spread, h->calls, rate * 100.0,
					   ZORDER_ROOM_HORIZON, ff);
	return ff;
}

/*
 * What a call wrote, to weigh splits against a rewrite: its WAL, or the
 * heap pages it wrote rows into, if more (a table that skips WAL).
 * zorder_history_room sums the history's calls the same way.
 */
double
zorder_room_call_cost(int64 wal_bytes, int64 pages_written)
{
	return Max((double) Max(wal_bytes, 0),
			   (double) Max(pages_written, 0) * BLCKSZ);
}

/*
 * Whether a full rewrite of the table is due, by history h, because the
 * room its pages were written with when it was last laid out
 * (h->written_fillfactor; 100 for a copy packed full, as pg_repack makes of
 * a table with no fillfactor) is used up: most calls since saw spread
 * appends, and the incremental calls since that spread their rows and
 * moved others besides them, the splits of ranges without room, have
 * written beyond what placing their rows takes (h->split_cost) as much as
 * a rewrite of the table as it is now would write (h->rewrite_cost).
 * Time-ordered and banded appends need no room, and a rewrite would not
 * spare their splits.  Arithmetic on h and zorder.placement; *s gets the
 * figures.
 */
bool
zorder_room_spent(const ZRoomHistory *h, ZRoomSpent *s)
{
	if (!zorder_placement || h->calls < 1 || h->all_calls < 1 ||
		h->rows <= 0 || h->spread * 2 <= h->calls ||
		h->written_fillfactor <= 0 || h->written_fillfactor > 100 ||
		h->rewrite_cost <= 0)
		return false;
	s->written_fillfactor = h->written_fillfactor;
	s->growth = (double) h->all_arrived / h->rows;
	s->room = 100.0 / h->written_fillfactor - 1.0;
	s->split_cost = h->split_cost;
	s->rewrite_cost = h->rewrite_cost;
	return s->split_cost >= s->rewrite_cost;
}

/* What zorder_room_spent found, for the history: a phrase. */
char *
zorder_room_spent_reason(const ZRoomSpent *s)
{
	return psprintf("the room is used up: since the table was laid out with "
					"room for %.1f %% (fillfactor %d), appends spread over "
					"the keys grew it %.1f %%, and splits of ranges without "
					"room wrote %.1f MB beyond what placing the new rows "
					"takes, as much as a full rewrite of the table and its "
					"indexes would write (%.1f MB)",
					s->room * 100.0, s->written_fillfactor, s->growth * 100.0,
					s->split_cost / (1024.0 * 1024.0),
					s->rewrite_cost / (1024.0 * 1024.0));
}

/*
 * Whether a call's newcomers spread over the main run: they reached at
 * least half the ranges that as many keys drawn uniformly would reach.
 * Time-ordered keys reach the last range or a region of their own, a band
 * a few ranges.  Too few newcomers tell nothing.
 */
bool
zorder_room_spread(int64 ranges_main, int64 ranges_reached, int64 newcomers)
{
	double		expected;

	if (ranges_main <= 0 || newcomers < 100)
		return false;
	expected = ranges_main * (1.0 - exp(-(double) newcomers / ranges_main));
	return ranges_reached * 2.0 >= expected;
}

/*
 * Whether relid's fillfactor current (0: none) is its owner's: one that
 * zorder neither chose at its last call that said anything of the room
 * (h) nor gave it otherwise (zorder.tables.room_fillfactor: a Citus shard
 * made with the distributed table's, which zorder set).
 */
static bool
owners_fillfactor(Oid relid, int current, const ZRoomHistory *h)
{
	return current != 0 && current != h->last_fillfactor &&
		current != zorder_tables_room_fillfactor(relid);
}

/* The pages of the indexes in list indexes, as large as they are now. */
static double
index_pages(List *indexes)
{
	double		pages = 0;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		pages += RelationGetNumberOfBlocks(index);
		index_close(index, NoLock);
	}
	list_free(indexes);
	return pages;
}

/*
 * What a full rewrite of rel would write: every page of the table, its
 * TOAST table and their indexes, as large as they are now.
 */
static double
rewrite_cost(Relation rel)
{
	double		pages = RelationGetNumberOfBlocks(rel) +
		index_pages(RelationGetIndexList(rel));

	if (OidIsValid(rel->rd_rel->reltoastrelid))
	{
		Relation	toast = table_open(rel->rd_rel->reltoastrelid,
									   AccessShareLock);

		pages += RelationGetNumberOfBlocks(toast) +
			index_pages(RelationGetIndexList(toast));
		table_close(toast, NoLock);
	}
	return pages * BLCKSZ;
}

/*
 * A table never laid out, with no choice of zorder's before: how its
 * latest rows came, for the room of its first layout (arrivals.c).  Reads
 * a few of its pages, as the table's owner.
 */
static void
read_arrivals(Relation rel, ZRoomHistory *h)
{
	if (zorder_placement && h->calls == 0 && h->last_fillfactor == 0 &&
		h->rows < 0)
		h->arrivals = zorder_heap_arrivals(rel);
}

/*
 * Choose from h and set the fillfactor of rel unless its owner set one;
 * fill rec for the history.  rec names no fillfactor when the owner set
 * one.
 */
static void
choose_and_set(Relation rel, ZRoomHistory *h, bool may_raise,
			   ZRoomRecord *rec)
{
	Oid			relid = RelationGetRelid(rel);
	int			current = zorder_fillfactor_get(relid);
	char	   *reason;
	int			ff;

	if (owners_fillfactor(relid, current, h))
	{
		rec->reason = psprintf("the table's own fillfactor %d: left alone",
							   current);
		return;
	}

	/*
	 * Only the owner may change a table's options; the call runs as the
	 * owner (zorder_become_owner), and anything else leaves them alone.
	 */
	if (!zorder_is_relation_owner(relid, GetUserId()))
		return;
	read_arrivals(rel, h);
	ff = zorder_room_choose(h, &reason);

	/*
	 * Between full rewrites the fillfactor only goes down.  Raised, it would
	 * let heap_insert put new rows into the room the pages were written
	 * with, out of key order, on pages all over the table (each a full-page
	 * image in the WAL after a checkpoint), for the next call to move out
	 * again: the room is kept until a rewrite writes the pages anew.
	 */
	if (!may_raise && current != 0 && ff > current)
	{
		reason = psprintf("%s, from the next full rewrite; until then %d, "
						  "so that inserts leave the pages' room alone",
						  reason, current);
		ff = current;
	}
	if (ff != current)
		zorder_fillfactor_set(relid, ff);
	rec->fillfactor = ff;
	rec->reason = reason;
}

/*
 * The fillfactor a full rewrite of rel would write its pages with, chosen
 * as zorder_room_before_full chooses it but set nowhere (zorder.estimate):
 * the owner's own, else zorder's choice from the history, else the
 * table's current one.  Without own_history the history's rows are another
 * table's (a dropped temporary table's OID reused), which the rewrite
 * would delete before it chooses.
 */
int
zorder_room_full_fillfactor(Relation rel, bool own_history)
{
	Oid			relid = RelationGetRelid(rel);
	int			current = zorder_fillfactor_get(relid);
	ZRoomHistory h;
	char	   *reason;

	if (!own_history || !zorder_history_has_room())
		return current != 0 ? current : HEAP_DEFAULT_FILLFACTOR;
	zorder_history_room(relid, &h);
	if (owners_fillfactor(relid, current, &h))
		return current;
	read_arrivals(rel, &h);
	return zorder_room_choose(&h, &reason);
}

/*
 * Whether zorder's room on rel is used up, by the history
 * (zorder_room_spent): never for a fillfactor the owner set, whose room
 * the owner sized.
 */
bool
zorder_room_used_up(Relation rel, ZRoomSpent *s)
{
	Oid			relid = RelationGetRelid(rel);
	int			current = zorder_fillfactor_get(relid);
	ZRoomHistory h;

	if (!zorder_history_has_room())
		return false;
	zorder_history_room(relid, &h);
	if (owners_fillfactor(relid, current, &h))
		return false;
	h.rewrite_cost = rewrite_cost(rel);
	return zorder_room_spent(&h, s);
}

/*
 * Before a full rewrite of rel (locked ACCESS EXCLUSIVE, as its owner):
 * the room the rewrite writes its pages with.
 */
void
zorder_room_before_full(Relation rel, ZRoomRecord *rec)
{
	ZRoomHistory h;

	rec->arrived = -1;
	rec->appends = NULL;
	rec->fillfactor = 0;
	rec->reason = NULL;
	if (!zorder_history_has_room())
		return;
	zorder_history_room(RelationGetRelid(rel), &h);
	choose_and_set(rel, &h, true, rec);
}

/*
 * After an incremental call on rel (as its owner) that found arrived rows
 * and, when it placed them, where they went (appends "spread", "ordered"
 * or NULL), the rows it moved (-1: a merge, whose moves are no splits) and
 * what it wrote so far (zorder_room_call_cost): the room the next calls'
 * splits write, and the next rewrite.  main_rows: the rows of the main
 * run, should no layout have recorded its own.
 */
void
zorder_room_after_call(Relation rel, int64 arrived, int64 moved,
					   double cost, int64 main_rows, const char *appends,
					   ZRoomRecord *rec)
{
	ZRoomHistory h;
	ZRoomSpent	spent;

	rec->arrived = arrived;
	rec->appends = appends;
	rec->fillfactor = 0;
	rec->reason = NULL;
	if (!zorder_history_has_room())
		return;
	zorder_history_room(RelationGetRelid(rel), &h);
	if (h.rows <= 0)
		h.rows = main_rows;
	if (appends != NULL)
	{
		h.calls++;
		h.spread += strcmp(appends, "spread") == 0;
		h.arrived += arrived;
	}
	h.all_calls++;
	h.all_arrived += Max(arrived, 0);

	/*
	 * The splits' cost, as zorder_history_room reads it from the history
	 * at the next call: a call that spread its rows and moved more.  Not
	 * with a catalog that records no call's writes, where they count for
	 * nothing.
	 */
	if (appends != NULL && strcmp(appends, "spread") == 0 &&
		moved > arrived && zorder_history_has_writes())
		h.split_cost += Max(cost - arrived * h.cost_per_row, 0);
	choose_and_set(rel, &h, false, rec);

	/* zorder's room only (rec names a fillfactor): say what comes next */
	if (rec->fillfactor != 0)
		h.rewrite_cost = rewrite_cost(rel);
	if (rec->fillfactor != 0 && zorder_room_spent(&h, &spent))
		rec->reason = psprintf("%s; %s: %s", rec->reason,
							   zorder_room_spent_reason(&spent),
							   zorder_auto_rewrite_limit > 0 ?
							   "the next call rewrites the table in full if "
							   "the rewrite's lock fits zorder.auto_rewrite_limit" :
							   "a full rewrite would make room again "
							   "(zorder.auto_rewrite_limit is 0)");
}

/* ---------------------------------------------------------------------
 * The room of a Citus distributed table's shards
 *
 * Citus makes a shard's table from the distributed table's definition:
 * for a move's copy, a split, a new node.  Pages such a table is filled
 * with have the distributed table's fillfactor, not the room zorder chose
 * on the shard it copies, so a moved shard would arrive packed, and its
 * next calls would split ranges.  So the coordinator gives the distributed
 * table the room zorder chose on its shards, as zorder's, and a node takes
 * the fillfactor a shard arrived with as zorder's to change.
 * ---------------------------------------------------------------------
 */

/*
 * The fillfactor zorder chose for relid that is its current one; 0 if it
 * has none or it is the owner's.
 */
int
zorder_room_fillfactor_chosen(Oid relid)
{
	int			current = zorder_fillfactor_get(relid);
	ZRoomHistory h;

	if (current == 0 || !zorder_history_has_room())
		return 0;
	zorder_history_room(relid, &h);
	return owners_fillfactor(relid, current, &h) ? 0 : current;
}

/*
 * The fillfactor zorder gave relid, a distributed table, that is still
 * its current one; 0 if none, or if its owner set another since.
 */
int
zorder_room_given_fillfactor(Oid relid)
{
	int			given = zorder_tables_room_fillfactor(relid);

	return given != 0 && zorder_fillfactor_get(relid) == given ? given : 0;
}

/*
 * Give relid, a distributed table on the coordinator, fillfactor ff, the
 * room zorder chose on its shards, unless its owner set one: recorded as
 * zorder's.  Changes pg_class on this node only, as Citus sends no
 * command to the shards for it: they have theirs.  The caller holds
 * ShareUpdateExclusiveLock and runs as the owner.
 */
void
zorder_room_give_fillfactor(Oid relid, int ff)
{
	int			current = zorder_fillfactor_get(relid);

	if (current != 0 && current != zorder_tables_room_fillfactor(relid))
		return;
	if (ff != current)
		zorder_fillfactor_set(relid, ff);
	zorder_tables_set_room_fillfactor(relid, ff);
}

/*
 * relid, a table new on this node (a Citus shard made from the
 * distributed table's definition), came with fillfactor ff, the room
 * zorder gave the distributed table: if that is its fillfactor still, it
 * is zorder's to change.
 */
void
zorder_room_take_fillfactor(Oid relid, int ff)
{
	if (ff != 0 && zorder_fillfactor_get(relid) == ff)
		zorder_tables_set_room_fillfactor(relid, ff);
}
