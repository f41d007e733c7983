/*-------------------------------------------------------------------------
 *
 * cubes.h
 *	  The incremental paths besides placement (cubes.c): newcomers written
 *	  as runs of their own, cubes, and merges of every run back into the
 *	  main run.  Also the state of one incremental call, which the
 *	  orchestrator (incremental.c) and these paths share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_CUBES_H
#define ZORDER_CUBES_H

#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "batch.h"
#include "collect.h"
#include "mover.h"
#include "report.h"
#include "runs.h"

/* What one incremental call found and decided, across its phases. */
typedef struct IncrCall
{
	CallState	cs;
	IncrState	st;
	Writer		w;
	int			nkeys;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	Candidates	cand;			/* rows to move, with their keys */
	Snapshot	snapshot;		/* the one they were found with */
	size_t		nnew;			/* of them newcomers (outside every run) */
	int			maxrun;			/* the newest cube */
	int64		main_rows;
	bool		merge;			/* into the main run */
	bool		placing;		/* into the main run's ranges */
	int			nmerged;		/* cubes whose rows move */
	size_t		ulow;			/* merge: rows below its cursor, first */
	ZCallReport report;			/* what the call did, from its start */
	PageSkip	skip;			/* the runs' pages its scan leaves unread */
	XLogRecPtr	scan_lsn;		/* the next call's skip.since, if this one
								 * goes to the end (InvalidXLogRecPtr: none) */
} IncrCall;

/* The rows of every cube but skip_run (0: none) join the rows to move. */
extern int	zorder_take_cubes(IncrCall *ic, int skip_run);

/* Without placement: which cubes' rows move, and whether a merge starts. */
extern void zorder_choose_cube_runs(IncrCall *ic);

/* A merge: the main run with the rows to move, one key slice per batch. */
extern void zorder_merge_slices(IncrCall *ic);

/* The rows to move that a merge or no placement leaves, as a new cube. */
extern void zorder_write_cube(IncrCall *ic);

#endif							/* ZORDER_CUBES_H */
