/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The door to the catalog (catalog.c): every module's catalog statement
 *	  runs through zorder_catalog_exec or zorder_catalog_read.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_CATALOG_H
#define ZORDER_CATALOG_H

#include "postgres.h"

extern int	zorder_pin_search_path(void);
extern int64 zorder_catalog_exec(const char *sql, int nargs, Oid *argtypes,
								 Datum *values, const char *nulls,
								 Datum *result, bool *result_isnull);
extern int64 zorder_catalog_read(const char *sql, int nargs, Oid *argtypes,
								 Datum *values, Datum *result,
								 bool *result_isnull);
extern void zorder_deform_row(Datum row, Datum *values, bool *nulls);

extern bool zorder_catalog_has(const char *table, const char *column);

#endif							/* ZORDER_CATALOG_H */
