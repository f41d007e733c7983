/*-------------------------------------------------------------------------
 *
 * access.c
 *	  Who may do what to a table: the checks every public function makes
 *	  before it locks or reads anything.
 *
 * Changing a table's clustering needs what CLUSTER needs: ownership, of
 * every partition too, and a heap table that is not a catalog nor another
 * session's temporary table.  Reading its layout (the reports, the
 * statistics a boundary set reveals) needs what reading its rows or pg_stats
 * needs: SELECT on the columns read, and no row-level security that hides
 * rows from the caller.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/catalog.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "access.h"
#include "citus.h"
#include "pg_compat.h"

/*
 * Check that the current user may change the clustering of rel and that
 * rel is a kind of relation that can be clustered.  Raises an error
 * otherwise.  name is the command, for messages.
 */
void
zorder_check_relation(Relation rel, const char *name)
{
	char		relkind = rel->rd_rel->relkind;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel)),
				 errdetail("%s works on ordinary and partitioned tables.",
						   name)));
	/* the rewrite and the moves read and write heap pages themselves */
	if (relkind == RELKIND_RELATION && rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("\"%s\" is not a heap table", RelationGetRelationName(rel)),
				 errdetail("%s works on tables of the access method \"heap\" only.",
						   name)));
	if (IsCatalogRelation(rel) || IsToastRelation(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cluster system catalog \"%s\"",
						RelationGetRelationName(rel))));
	if (RELATION_IS_OTHER_TEMP(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cluster temporary tables of other sessions")));
	if (!zorder_is_relation_owner(RelationGetRelid(rel), GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(relkind),
					   RelationGetRelationName(rel));
}

/*
 * On a partitioned table, cluster_by, clear_keys and
 * drop_unused_boundary_sets change the keys, sets,
 * layouts and runs of its partitions too.  Like ALTER TABLE recursing into
 * partitions, require the caller to own every one of them, and fail with
 * nothing changed otherwise (CLUSTER's silent skipping suits a maintenance
 * command that may leave some partitions as they were; a declaration that
 * applied to part of a tree would leave it inconsistent).  The parent's
 * lock keeps partitions from being attached or detached meanwhile.
 */
void
zorder_check_partition_owners(Relation rel)
{
	List	   *tree;
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return;
	tree = find_all_inheritors(RelationGetRelid(rel), NoLock, NULL);
	foreach(lc, tree)
	{
		Oid			child = lfirst_oid(lc);
		char		relkind = get_rel_relkind(child);

		if (relkind == '\0')
			continue;			/* dropped meanwhile: nothing to change */
		if (!zorder_is_relation_owner(child, GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(relkind),
						   get_rel_name(child));
	}
	list_free(tree);
}

/* ----------------------------------------------------------------
 * SQL functions
 * ----------------------------------------------------------------
 */

/*
 * Who may read a table's layout.
 *
 * clustering_information and ranges_touched read every row of the heap and
 * every BRIN summary, whoever may see those rows.  They answer only a
 * caller who could read the same with SELECT:
 *
 * - SELECT on each column they read, granted on the table or on the column,
 *   as the planner checks the columns of a query.  The other columns are
 *   never read, not even from a BRIN index that also summarizes them.
 *
 * - Row-level security must not apply to the caller.  Summaries and the
 *   heap include the rows that policies hide, and even a count of ranges
 *   leaks them: with pages_per_range 1, bisection on value and upper finds
 *   a hidden row's exact value.  Like pg_stats, which hides the statistics
 *   of such a table, we refuse.  check_enable_rls() says RLS_ENABLED for a
 *   role subject to the policies: any role but superusers, BYPASSRLS roles
 *   and the owner, and the owner too under FORCE ROW LEVEL SECURITY.  With
 *   row_security off, a query by such a role fails; so do we.
 *
 * suggest_pages_per_range reads no rows, only the average width of the key
 * columns from pg_statistic; it uses a width only where pg_stats would show
 * it to the caller, and assumes the default width elsewhere.
 */

/* Whether the current user may SELECT column attnum of rel. */
bool
zorder_column_readable(Relation rel, AttrNumber attnum)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			userid = GetUserId();

	/* pg_attribute_aclcheck considers column grants only */
	return pg_class_aclcheck(relid, userid, ACL_SELECT) == ACLCHECK_OK ||
		pg_attribute_aclcheck(relid, attnum, userid, ACL_SELECT) == ACLCHECK_OK;
}

/* Fail unless the current user may SELECT each of the columns. */
void
zorder_check_columns_readable(Relation rel, int ncols, const AttrNumber *attnums)
{
	for (int c = 0; c < ncols; c++)
		if (!zorder_column_readable(rel, attnums[c]))
			aclcheck_error_col(ACLCHECK_NO_PRIV, OBJECT_TABLE,
							   RelationGetRelationName(rel),
							   get_attname(RelationGetRelid(rel), attnums[c],
										   false));
}

/* Whether row-level security policies apply to the current user on rel. */
bool
zorder_rls_applies(Relation rel)
{
	return check_enable_rls(RelationGetRelid(rel), InvalidOid, true) ==
		RLS_ENABLED;
}

/* Fail if row-level security applies to the current user on rel. */
void
zorder_check_no_rls(Relation rel, const char *fname)
{
	if (!zorder_rls_applies(rel))
		return;
	if (zorder_is_relation_owner(RelationGetRelid(rel), GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the block ranges of table \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("Row-level security applies to the table's owner (FORCE ROW LEVEL SECURITY), "
						   "and %s reads rows and BRIN summaries that the policies hide.",
						   fname),
				 errhint("A superuser or a role with BYPASSRLS can run it, or the owner after ALTER TABLE NO FORCE ROW LEVEL SECURITY.")));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to read the block ranges of table \"%s\"",
					RelationGetRelationName(rel)),
			 errdetail("Row-level security applies to the current user, "
					   "and %s reads rows and BRIN summaries that the policies hide.",
					   fname),
			 errhint("The table's owner, a superuser or a role with BYPASSRLS can run it.")));
}

/*
 * Whether pg_stats would show the current user the statistics of column
 * attnum of rel: SELECT on the column, and no row-level security.
 */
bool
zorder_stats_visible(Relation rel, AttrNumber attnum)
{
	return zorder_column_readable(rel, attnum) && !zorder_rls_applies(rel);
}

/*
 * An argument of a SQL function that must be given: the functions are not
 * STRICT, so that a NULL is an error that says which argument it was rather
 * than a silent NULL result.
 */
void
zorder_arg_required(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
}

/*
 * Open a table for reading its layout: the caller must be allowed to
 * SELECT from it, or from some of its columns (each function then checks
 * the columns it reads, and row-level security).  Checked before locking,
 * so that nobody can queue a lock on a table they cannot read.
 */
static Relation
open_for_reading(FunctionCallInfo fcinfo, const char *fname, bool citus_shell)
{
	Oid			relid;
	char		relkind;
	Relation	rel;

	zorder_arg_required(fcinfo, 0, "table");
	relid = PG_GETARG_OID(0);
	relkind = get_rel_relkind(relid);
	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(relid, GetUserId(), ACL_SELECT,
								  ACLMASK_ANY) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(relkind),
					   get_rel_name(relid));

	/*
	 * Before the checks of the kind of table: the partitions of a
	 * distributed partitioned table are distributed too, and calling the
	 * function on each of them is no answer.  With citus_shell, a table
	 * zorder lays out shard by shard passes (citus.c).
	 */
	if (!(citus_shell && zorder_citus_sharded(relid)))
		zorder_check_not_citus(relid, fname);
	if (relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a partitioned table", get_rel_name(relid)),
				 errdetail("%s reads the block ranges of one table.", fname),
				 errhint("Call it on each partition.")));
	if (relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(relid)),
				 errdetail("%s works on ordinary tables.", fname)));

	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (RELATION_IS_OTHER_TEMP(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read temporary tables of other sessions")));
	return rel;
}

Relation
zorder_open_for_reading(FunctionCallInfo fcinfo, const char *fname)
{
	return open_for_reading(fcinfo, fname, false);
}

/*
 * zorder_open_for_reading for a report that measures a Citus distributed
 * table on its shards (zorder.clustering_information): the shell on the
 * coordinator passes, and is what the caller's rights are checked on.
 */
Relation
zorder_open_shell_for_reading(FunctionCallInfo fcinfo, const char *fname)
{
	return open_for_reading(fcinfo, fname, true);
}

/*
 * Act as owner, in a security-restricted operation with a GUC nest level
 * of its own (so that a SET inside the owner's code ends with it), until
 * zorder_restore_user.  An error on the way needs no undoing: the
 * transaction's abort restores the user and the settings.
 */
void
zorder_become_owner(Oid owner, ZOwnerSwitch *sw)
{
	GetUserIdAndSecContext(&sw->save_userid, &sw->save_sec_context);
	SetUserIdAndSecContext(owner,
						   sw->save_sec_context | SECURITY_RESTRICTED_OPERATION);
	sw->save_nestlevel = NewGUCNestLevel();
}

void
zorder_restore_user(ZOwnerSwitch *sw)
{
	AtEOXact_GUC(false, sw->save_nestlevel);
	SetUserIdAndSecContext(sw->save_userid, sw->save_sec_context);
}
