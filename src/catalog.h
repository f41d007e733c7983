/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The door to the catalog, the declared keys and the table checks
 *	  (catalog.c).  catalog.c owns zorder.tables and zorder.temp_relations;
 *	  every module's catalog statement runs through zorder_catalog_exec.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_CATALOG_H
#define ZORDER_CATALOG_H

#include "storage/lockdefs.h"
#include "utils/rel.h"

extern int	zorder_pin_search_path(void);
extern int64 zorder_catalog_exec(const char *sql, int nargs, Oid *argtypes,
								 Datum *values, const char *nulls,
								 Datum *result, bool *result_isnull);
extern int64 zorder_catalog_read(const char *sql, int nargs, Oid *argtypes,
								 Datum *values, Datum *result,
								 bool *result_isnull);
extern void zorder_check_relation(Relation rel, const char *name);
extern void zorder_check_partition_owners(Relation rel);
extern void zorder_deform_row(Datum row, Datum *values, bool *nulls);
extern Relation zorder_open_checked(Oid relid, LOCKMODE lockmode,
									const char *name);
extern int	zorder_get_keys(Relation rel, AttrNumber *attnums);
extern int	zorder_get_keys_required(Relation rel, AttrNumber *attnums);
extern AttrNumber zorder_user_attnum(Relation rel, const char *colname);
extern void zorder_catalog_init(void);
extern bool zorder_catalog_rows_current(Oid relid, bool is_temp,
										bool read_only);

#endif							/* ZORDER_CATALOG_H */
