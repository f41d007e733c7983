/*-------------------------------------------------------------------------
 *
 * report.c
 *	  What a zorder.optimize call did: the rows it moved, the heap pages it
 *	  wrote, the WAL it generated, its time, and the block ranges a point
 *	  filter on each key read before and after it, recorded in
 *	  zorder.history and, when zorder.report is on, reported to the user at
 *	  INFO, as VACUUM VERBOSE reports.
 *
 * The ranges are measured (skipping.c) only where a BRIN minmax index
 * covers the key, from its summaries and a few hundred sampled rows: cheap
 * beside the call.  After an incremental call they are measured once its
 * summaries are tight again, after its record, which they are added to.
 *
 * The WAL is this backend's (pgWalUsage) between the call's start and its
 * record: for a full rewrite, the new heap and every rebuilt index; for an
 * incremental call, its moves and their index entries, but not the BRIN
 * summaries made after its last commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/instrument.h"
#include "lib/stringinfo.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "report.h"

static bool zorder_report = false;

void
zorder_report_init(void)
{
	DefineCustomBoolVariable("zorder.report",
							 "Whether zorder.optimize reports what each call did, at INFO.",
							 "Rows moved, heap pages written, WAL and time, per table: "
							 "what zorder.optimize_history records.",
							 &zorder_report,
							 false,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

void
zorder_report_start(ZCallReport *rep)
{
	rep->started = GetCurrentTimestamp();
	rep->wal_start = (int64) pgWalUsage.wal_bytes;
	rep->pages_written = 0;
	rep->nkeys = 0;
}

/* The WAL the backend wrote since the call started. */
int64
zorder_report_wal(const ZCallReport *rep)
{
	return (int64) pgWalUsage.wal_bytes - rep->wal_start;
}

/*
 * Record the call in the history and, when asked, tell the user.  mode is
 * "full", "incremental" or "merge"; runs_merged < 0 for a full rewrite.
 */
void
zorder_report_end(Oid relid, const ZCallReport *rep, const char *mode,
				  int64 rows_moved, int runs_merged, const ZRoomRecord *room)
{
	ZCallWrites writes;
	StringInfoData detail;
	long		secs;
	int			usecs;
	char	   *nspname;
	char	   *relname;

	writes.wal_bytes = zorder_report_wal(rep);
	writes.pages_written = rep->pages_written;
	zorder_history_record(relid, rep->started, mode, rows_moved, runs_merged,
						  room, &writes);
	if (!zorder_report)
		return;

	/* in the manner of VACUUM VERBOSE: one line per kind of figure */
	TimestampDifference(rep->started, GetCurrentTimestamp(), &secs, &usecs);
	initStringInfo(&detail);
	appendStringInfo(&detail, "rows moved: %lld, heap pages written: %lld",
					 (long long) rows_moved, (long long) writes.pages_written);
	if (room != NULL && room->arrived >= 0)
		appendStringInfo(&detail, ", rows arrived since the last call: %lld",
						 (long long) room->arrived);
	if (runs_merged > 0)
		appendStringInfo(&detail, ", sorted runs merged: %d", runs_merged);
	appendStringInfo(&detail, "\nWAL: %lld bytes, time: %ld.%03d s",
					 (long long) writes.wal_bytes, secs, usecs / 1000);
	if (room != NULL && room->reason != NULL)
		appendStringInfo(&detail, "\nroom: %s", room->reason);

	nspname = get_namespace_name(get_rel_namespace(relid));
	relname = get_rel_name(relid);
	ereport(INFO,
			errmsg("zorder.optimize of \"%s.%s\": %s",
				   nspname ? nspname : "?", relname ? relname : "?",
				   strcmp(mode, "full") == 0 ? "full rewrite" :
				   strcmp(mode, "merge") == 0 ? "merge into the main run" :
				   "incremental placement"),
			errdetail_internal("%s", detail.data));
}

/* A count of ranges, or "?" where it was not measured. */
static void
append_ranges(StringInfo s, double ranges)
{
	if (ranges >= 0)
		appendStringInfo(s, "%.1f", ranges);
	else
		appendStringInfoChar(s, '?');
}

/*
 * Add the ranges a point filter on each key read before the call
 * (rep->before) and after it to the call's record and, when asked, tell
 * the user.  Negative figures were not measured.
 */
void
zorder_report_skipping(Oid relid, const ZCallReport *rep, const double *after)
{
	StringInfoData detail;
	bool		any = false;

	if (rep->nkeys == 0)
		return;
	zorder_history_set_ranges(relid, rep->started, rep->nkeys, rep->before,
							  after);
	if (!zorder_report)
		return;
	initStringInfo(&detail);
	for (int k = 0; k < rep->nkeys; k++)
	{
		if (rep->before[k] < 0 && after[k] < 0)
			continue;
		appendStringInfo(&detail, "%s%s: ", any ? ", " : "",
						 get_attname(relid, rep->attnums[k], false));
		append_ranges(&detail, rep->before[k]);
		appendStringInfoString(&detail, " -> ");
		append_ranges(&detail, after[k]);
		any = true;
	}
	if (!any)
		return;
	ereport(INFO,
			errmsg("zorder.optimize of \"%s.%s\": block ranges a point filter on each key reads, before -> after",
				   get_namespace_name(get_rel_namespace(relid)),
				   get_rel_name(relid)),
			errdetail_internal("%s", detail.data));
}
