/*-------------------------------------------------------------------------
 *
 * skipping.h
 *	  Skipping statistics (skipping.c): who may read a table's layout.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_SKIPPING_H
#define ZORDER_SKIPPING_H

#include "postgres.h"

#include "access/attnum.h"
#include "fmgr.h"
#include "utils/relcache.h"

/*
 * Open the table named by argument 0 for reading its layout, after checking
 * that the caller may SELECT from it or from some of its columns.
 */
extern Relation zorder_open_for_reading(FunctionCallInfo fcinfo,
										const char *fname);

/* Whether pg_stats would show the caller the statistics of the column. */
extern bool zorder_stats_visible(Relation rel, AttrNumber attnum);

#endif							/* ZORDER_SKIPPING_H */
