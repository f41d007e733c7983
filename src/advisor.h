/*-------------------------------------------------------------------------
 *
 * advisor.h
 *	  What the key advisor (advisor.c) gives other modules: the block
 *	  ranges point filters read, today and after a layout (for
 *	  zorder.estimate), and its first choice of keys (for automatic keys).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_ADVISOR_H
#define ZORDER_ADVISOR_H

#include "postgres.h"

#include "utils/rel.h"

#include "zorder.h"

/* The advisor's first choice, and what the workload reads with it. */
typedef struct ZKeyAdvice
{
	int			nkeys;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	double		best;			/* block ranges the workload reads with it */
	double		current;		/* ... with the current keys (-1: unknown) */
	double		now;			/* ... with today's layout */
	double		calls;			/* filter calls recorded */
	const char *why;			/* when there is no choice: why not */
} ZKeyAdvice;

extern void zorder_point_ranges(Relation rel, int nkeys,
								const AttrNumber *attnums,
								double nranges_after, double *now,
								double *after);

extern void zorder_check_max_keys(int max_keys);
extern bool zorder_advise_keys(Relation rel, int max_keys, int ncurrent,
							   const AttrNumber *current, ZKeyAdvice *out);

#endif							/* ZORDER_ADVISOR_H */
