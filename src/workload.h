/*-------------------------------------------------------------------------
 *
 * workload.h
 *	  The recorded workload of a table, for the key advisor (advisor.c):
 *	  its filters' predicates read from pg_qualstats, else from
 *	  pg_stat_statements' texts (workload.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_WORKLOAD_H
#define ZORDER_WORKLOAD_H

#include "postgres.h"

#include "utils/rel.h"

/*
 * One predicate "column op constant" of a filter: a pg_qualstats row, or
 * one read from a statement's text.
 */
typedef struct QualRow
{
	int64		shape;			/* qualid, or qualnodeid alone */
	int64		instance;		/* uniquequalid, or uniquequalnodeid alone */
	AttrNumber	attnum;
	Oid			opno;
	double		calls;			/* occurences */
	double		sel;			/* rows kept / rows seen, -1 unknown */
	char	   *constvalue;		/* NULL: unknown or hidden */
	const char *opname;			/* pg_stat_statements: as written */
} QualRow;

extern int	zorder_read_workload(Relation rel, QualRow **rows,
								 MemoryContext cxt, const char **source,
								 bool missing_ok);

#endif							/* ZORDER_WORKLOAD_H */
