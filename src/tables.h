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
extern Relation zorder_open_shard(Oid relid, LOCKMODE lockmode,
								  const char *name);
extern Relation zorder_open_shell(Oid relid, LOCKMODE lockmode,
								  const char *name);
extern Relation zorder_open_node_shell(Oid relid, LOCKMODE lockmode,
									   const char *name);
extern bool zorder_catalog_rows_current(Oid relid, bool is_temp,
										bool read_only);
extern int	zorder_get_keys(Relation rel, AttrNumber *attnums);
extern int	zorder_get_keys_required(Relation rel, AttrNumber *attnums);
extern AttrNumber zorder_user_attnum(Relation rel, const char *colname);
extern void zorder_tables_init(void);
extern int	zorder_tables_room_fillfactor(Oid relid);
extern void zorder_tables_set_room_fillfactor(Oid relid, int ff);

/* Automatic keys, as autokeys.c chooses them */
extern bool zorder_declare_auto_keys(Relation rel, int nkeys,
									 const AttrNumber *attnums, int max_keys,
									 bool only_if_auto);
extern int	zorder_auto_keys_due(Oid relid, int interval_secs, bool fresh);
extern void zorder_auto_keys_weighed(Oid relid);
extern void zorder_log_key_change(Relation rel, int nold,
								  const AttrNumber *old_keys, int nnew,
								  const AttrNumber *new_keys,
								  double ranges_old, double ranges_new,
								  const char *reason);

#endif							/* ZORDER_TABLES_H */
