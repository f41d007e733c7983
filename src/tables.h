/*-------------------------------------------------------------------------
 *
 * tables.h
 *	  The tables zorder knows and their declared keys (tables.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_TABLES_H
#define ZORDER_TABLES_H

#include "postgres.h"

#include "storage/lockdefs.h"
#include "utils/rel.h"

extern Relation zorder_open_owned(Oid relid, LOCKMODE lockmode,
								  const char *name);
extern Relation zorder_open_checked(Oid relid, LOCKMODE lockmode,
									const char *name);
extern bool zorder_catalog_rows_current(Oid relid, bool is_temp,
										bool read_only);
extern int	zorder_get_keys(Relation rel, AttrNumber *attnums);
extern int	zorder_get_keys_required(Relation rel, AttrNumber *attnums);
extern AttrNumber zorder_user_attnum(Relation rel, const char *colname);
extern void zorder_tables_init(void);

#endif							/* ZORDER_TABLES_H */
