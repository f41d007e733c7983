/*-------------------------------------------------------------------------
 *
 * report.h
 *	  What a zorder.optimize call did, for the history and for the user
 *	  (report.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_REPORT_H
#define ZORDER_REPORT_H

#include "postgres.h"

#include "utils/timestamp.h"

#include "layout.h"
#include "zorder.h"

/* One call on one table, from its start. */
typedef struct ZCallReport
{
	TimestampTz started;
	int64		wal_start;		/* the backend's WAL bytes at the start */
	int64		pages_written;	/* heap pages the call wrote rows into */
	int			nkeys;			/* key columns measured before the call */
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	double		before[ZORDER_MAX_KEYS];	/* ranges a point filter read */
} ZCallReport;

extern void zorder_report_init(void);
extern void zorder_report_start(ZCallReport *rep);
extern int64 zorder_report_wal(const ZCallReport *rep);
extern void zorder_report_end(Oid relid, const ZCallReport *rep,
							  const char *mode, int64 rows_moved,
							  int runs_merged, const ZRoomRecord *room);
extern void zorder_report_skipping(Oid relid, const ZCallReport *rep,
								   const double *after);

#endif							/* ZORDER_REPORT_H */
