/*-------------------------------------------------------------------------
 *
 * advisor.h
 *	  What the key advisor's model (advisor.c) gives other modules: the
 *	  block ranges point filters read, today and after a layout.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_ADVISOR_H
#define ZORDER_ADVISOR_H

#include "postgres.h"

#include "utils/rel.h"

extern void zorder_point_ranges(Relation rel, int nkeys,
								const AttrNumber *attnums,
								double nranges_after, double *now,
								double *after);

#endif							/* ZORDER_ADVISOR_H */
