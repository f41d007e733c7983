/*-------------------------------------------------------------------------
 *
 * access.h
 *	  Who may do what to a table (access.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_ACCESS_H
#define ZORDER_ACCESS_H

#include "postgres.h"

#include "access/attnum.h"
#include "fmgr.h"
#include "utils/relcache.h"

/* changing a table's clustering: owner, heap, not a catalog */
extern void zorder_check_relation(Relation rel, const char *name);
extern void zorder_check_partition_owners(Relation rel);

/*
 * Open the table named by argument 0 for reading its layout, after checking
 * that the caller may SELECT from it or from some of its columns.
 */
extern void zorder_arg_required(FunctionCallInfo fcinfo, int argno,
								const char *what);
extern Relation zorder_open_for_reading(FunctionCallInfo fcinfo,
										const char *fname);
extern Relation zorder_open_shell_for_reading(FunctionCallInfo fcinfo,
											   const char *fname);
extern bool zorder_column_readable(Relation rel, AttrNumber attnum);
extern void zorder_check_columns_readable(Relation rel, int ncols,
										  const AttrNumber *attnums);
extern bool zorder_rls_applies(Relation rel);
extern void zorder_check_no_rls(Relation rel, const char *fname);

/*
 * Running as a table's owner: whatever code the owner may have chosen (the
 * key types' input and comparison functions, domain CHECKs, index
 * expressions) runs as the owner in a security-restricted operation, as
 * in CLUSTER, never as the caller.  zorder_restore_user undoes it.
 */
typedef struct ZOwnerSwitch
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} ZOwnerSwitch;

extern void zorder_become_owner(Oid owner, ZOwnerSwitch *sw);
extern void zorder_restore_user(ZOwnerSwitch *sw);

/* Whether pg_stats would show the caller the statistics of the column. */
extern bool zorder_stats_visible(Relation rel, AttrNumber attnum);

#endif							/* ZORDER_ACCESS_H */
