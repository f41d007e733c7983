/*-------------------------------------------------------------------------
 *
 * workload.c
 *	  The recorded workload of a table, for zorder.recommend_keys: the
 *	  predicates "column op constant" of its queries' filters, as QualRows.
 *
 * Read from pg_qualstats where it is installed (operators, measured
 * selectivities, and the constants where the caller may see them), else
 * from the statements pg_stat_statements keeps, parsed (columns and
 * operators only: their constants are replaced by $1, $2 ...).  Apart from
 * advisor.c because reading another extension's records, and deciding
 * whose of them the caller may see, is a concern of its own.
 *
 * The workload is the caller's own queries unless it has the privileges of
 * pg_read_all_stats, as both extensions show them.  Both are called as the
 * caller, schema-qualified with their extension's schema, so that their
 * own rules apply (pg_qualstats hides constants from whoever may not see
 * them); nothing in the queries resolves through search_path.  The texts
 * are only raw-parsed: nothing is looked up by name but the table's own
 * columns.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_extension.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "pg_compat.h"
#include "subxact.h"
#include "workload.h"

/* The function whose errors these are. */
#define FNAME "zorder.recommend_keys"

/* ----------------------------------------------------------------
 * The workload: pg_qualstats
 * ----------------------------------------------------------------
 */

/*
 * The schema of an installed extension, or NULL: read from pg_extension
 * (get_extension_schema is not exported before PostgreSQL 16).
 */
static char *
extension_schema(const char *extname)
{
	Oid			extoid = get_extension_oid(extname, true);
	Relation	extrel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	if (!OidIsValid(extoid))
		return NULL;
	extrel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(extoid));
	scan = systable_beginscan(extrel, ExtensionOidIndexId, true, NULL, 1,
							  &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(extrel, AccessShareLock);
	return OidIsValid(nsp) ? get_namespace_name(nsp) : NULL;
}

static void
no_workload_source(Relation rel)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("no record of the queries on table \"%s\"",
					RelationGetRelationName(rel)),
			 errdetail("%s reads the filters of past queries from the extension pg_qualstats, or else from pg_stat_statements, and neither is installed in this database.",
					   FNAME),
			 errhint("Add pg_qualstats (or pg_stat_statements) to shared_preload_libraries, restart the server, run CREATE EXTENSION pg_qualstats (or pg_stat_statements), and let the workload run for a while.")));
}

static int64
datum_int64_or(HeapTuple tup, TupleDesc desc, int att, int64 dflt,
			   bool *isnull)
{
	Datum		d = SPI_getbinval(tup, desc, att, isnull);

	return *isnull ? dflt : DatumGetInt64(d);
}

/*
 * Connect to SPI and run a query on another extension's records; the
 * caller reads SPI_tuptable, then SPI_finish()es.
 */
static void
select_records(const char *sql, const char *what)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read %s", what);
}

/*
 * Whether a record (userid and dbid its first two columns) is of this
 * database and the caller's to see: its own, or anyone's with all_users
 * (the privileges of pg_read_all_stats).
 */
static bool
visible_record(HeapTuple tup, TupleDesc desc, bool all_users)
{
	bool		isnull;
	Oid			userid;

	userid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	if (isnull || (!all_users && userid != GetUserId()))
		return false;
	if (DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull)) != MyDatabaseId ||
		isnull)
		return false;
	return true;
}

/*
 * The pg_qualstats rows of predicates "column op constant" on rel in this
 * database, from queries the caller may see, into *rows.
 */
static int
read_qualstats(Relation rel, const char *schema, QualRow **rows,
			   MemoryContext cxt)
{
	StringInfoData q;
	bool		all_users;
	int			nrows = 0;

	all_users = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	/*
	 * Schema-qualified with the extension's own schema and with no
	 * operator: nothing in it resolves through search_path.  Filtered in C.
	 */
	initStringInfo(&q);
	appendStringInfo(&q,
					 "SELECT userid, dbid, lrelid, lattnum, opno, rrelid, qualid, "
					 "uniquequalid, qualnodeid, uniquequalnodeid, occurences, "
					 "execution_count, nbfiltered, constvalue, eval_type "
					 "FROM %s.pg_qualstats()", quote_identifier(schema));
	select_records(q.data, "pg_qualstats");
	*rows = MemoryContextAllocZero(cxt, sizeof(QualRow) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		bool		noqual;
		QualRow    *r = &(*rows)[nrows];
		int64		qualid;
		double		execs;
		double		filtered;
		char	   *cv;
		char	   *eval;

		CHECK_FOR_INTERRUPTS();
		if (!visible_record(tup, desc, all_users))
			continue;
		if (DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull)) !=
			RelationGetRelid(rel) || isnull)
			continue;
		r->attnum = DatumGetInt16(SPI_getbinval(tup, desc, 4, &isnull));
		if (isnull || r->attnum <= 0)
			continue;
		r->opno = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
		if (isnull)
			continue;
		/* a join clause (column op column): not a filter a layout serves */
		(void) SPI_getbinval(tup, desc, 6, &isnull);
		if (!isnull)
			continue;
		qualid = datum_int64_or(tup, desc, 7, 0, &noqual);
		if (!noqual)
		{
			r->shape = qualid;
			r->instance = datum_int64_or(tup, desc, 8, 0, &isnull);
		}
		else
		{
			r->shape = datum_int64_or(tup, desc, 9, 0, &isnull);
			r->instance = datum_int64_or(tup, desc, 10, 0, &isnull);
		}
		r->calls = (double) datum_int64_or(tup, desc, 11, 0, &isnull);
		if (r->calls <= 0)
			continue;
		execs = (double) datum_int64_or(tup, desc, 12, 0, &isnull);
		filtered = (double) datum_int64_or(tup, desc, 13, 0, &isnull);
		eval = SPI_getvalue(tup, desc, 15);
		r->sel = (execs > 0 && eval != NULL && eval[0] == 'f') ?
			Max(0.0, 1.0 - filtered / execs) : -1;
		cv = SPI_getvalue(tup, desc, 14);
		r->constvalue = (cv != NULL && cv[0] != '\0' && cv[0] != '<') ?
			MemoryContextStrdup(cxt, cv) : NULL;
		nrows++;
	}
	SPI_finish();
	return nrows;
}

/* ----------------------------------------------------------------
 * The workload: pg_stat_statements, where pg_qualstats is missing
 * ----------------------------------------------------------------
 *
 * pg_stat_statements keeps each statement's text with its constants
 * replaced by $1, $2 ...: the filters' columns and operators are read from
 * the parse tree of the text, their values are unknown (the estimate takes
 * the planner's default selectivities).  Only the raw parser runs: nothing
 * is looked up by name but the table's own columns.
 */

typedef struct PgssWalk
{
	Relation	rel;
	const char *alias;			/* the table's name in the statement */
	QualRow		proto;			/* shape, instance, calls */
	QualRow    *rows;
	int			nrows;
	int			maxrows;
	MemoryContext cxt;
} PgssWalk;

/* Whether a FROM item is rel, and under which name. */
static bool
from_has_rel(Node *n, Relation rel, const char **alias)
{
	if (n == NULL)
		return false;
	if (IsA(n, RangeVar))
	{
		RangeVar   *rv = (RangeVar *) n;
		char	   *nsp;

		if (strcmp(rv->relname, RelationGetRelationName(rel)) != 0)
			return false;
		nsp = get_namespace_name(RelationGetNamespace(rel));
		if (rv->schemaname && (nsp == NULL || strcmp(rv->schemaname, nsp) != 0))
			return false;
		*alias = rv->alias ? rv->alias->aliasname : rv->relname;
		return true;
	}
	if (IsA(n, JoinExpr))
		return from_has_rel(((JoinExpr *) n)->larg, rel, alias) ||
			from_has_rel(((JoinExpr *) n)->rarg, rel, alias);
	return false;
}

/* The column of rel a ColumnRef names, or 0. */
static AttrNumber
column_ref(PgssWalk *w, Node *n)
{
	ColumnRef  *cr;
	Node	   *last;
	AttrNumber	attnum;

	if (n == NULL || !IsA(n, ColumnRef))
		return 0;
	cr = (ColumnRef *) n;
	last = llast(cr->fields);
	if (!IsA(last, String))
		return 0;
	if (list_length(cr->fields) == 2)
	{
		Node	   *q = linitial(cr->fields);

		if (!IsA(q, String) || strcmp(strVal(q), w->alias) != 0)
			return 0;
	}
	else if (list_length(cr->fields) != 1)
		return 0;
	attnum = get_attnum(RelationGetRelid(w->rel), strVal(last));
	return attnum > 0 ? attnum : 0;
}

/* A constant or a parameter, possibly cast. */
static bool
simple_operand(Node *n)
{
	while (n != NULL && IsA(n, TypeCast))
		n = ((TypeCast *) n)->arg;
	return n != NULL && (IsA(n, A_Const) || IsA(n, ParamRef));
}

/* Record "column op ?": the btree operator of strategy, or another. */
static void
pgss_add(PgssWalk *w, AttrNumber attnum, int strategy, const char *opname)
{
	QualRow    *r;
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(w->rel), attnum - 1);
	Oid			opclass = GetDefaultOpClass(att->atttypid, BTREE_AM_OID);

	if (w->nrows == w->maxrows)
	{
		w->maxrows = Max(16, w->maxrows * 2);
		w->rows = w->rows == NULL ?
			MemoryContextAlloc(w->cxt, sizeof(QualRow) * w->maxrows) :
			repalloc(w->rows, sizeof(QualRow) * w->maxrows);
	}
	r = &w->rows[w->nrows++];
	*r = w->proto;
	r->attnum = attnum;
	r->opno = (strategy > 0 && OidIsValid(opclass)) ?
		get_opfamily_member(get_opclass_family(opclass), att->atttypid,
							att->atttypid, strategy) : InvalidOid;
	r->opname = MemoryContextStrdup(w->cxt, opname);
}

static int
strategy_of(const char *op, bool commuted)
{
	if (strcmp(op, "=") == 0)
		return BTEqualStrategyNumber;
	if (strcmp(op, "<") == 0)
		return commuted ? BTGreaterStrategyNumber : BTLessStrategyNumber;
	if (strcmp(op, "<=") == 0)
		return commuted ? BTGreaterEqualStrategyNumber : BTLessEqualStrategyNumber;
	if (strcmp(op, ">") == 0)
		return commuted ? BTLessStrategyNumber : BTGreaterStrategyNumber;
	if (strcmp(op, ">=") == 0)
		return commuted ? BTLessEqualStrategyNumber : BTGreaterEqualStrategyNumber;
	return 0;
}

/* The predicates of a WHERE clause on rel's columns. */
static void
walk_where(PgssWalk *w, Node *n)
{
	check_stack_depth();
	if (n == NULL)
		return;
	if (IsA(n, BoolExpr))
	{
		BoolExpr   *b = (BoolExpr *) n;
		ListCell   *lc;

		/* AND and OR members alike, as pg_qualstats counts them */
		if (b->boolop != NOT_EXPR)
			foreach(lc, b->args)
				walk_where(w, lfirst(lc));
		return;
	}
	if (IsA(n, A_Expr))
	{
		A_Expr	   *e = (A_Expr *) n;
		const char *op = e->name ? strVal(llast(e->name)) : "?";
		AttrNumber	col = column_ref(w, e->lexpr);
		bool		commuted = false;

		if (col == 0 && e->kind == AEXPR_OP)
		{
			col = column_ref(w, e->rexpr);
			commuted = true;
		}
		if (col == 0)
			return;
		switch (e->kind)
		{
			case AEXPR_OP:
				if (simple_operand(commuted ? e->lexpr : e->rexpr))
					pgss_add(w, col, strategy_of(op, commuted), op);
				break;
			case AEXPR_IN:
				if (strcmp(op, "=") == 0 && IsA(e->rexpr, List))
				{
					/*
					 * An equality per item: a list.  PostgreSQL 18 records a
					 * list of constants as its first item and a comment that
					 * stands for the rest: a list of one is of unknown
					 * length, taken as two, as an ANY is.
					 */
					int			n = Max(list_length((List *) e->rexpr), 2);

					for (int i = 0; i < n; i++)
						pgss_add(w, col, BTEqualStrategyNumber, op);
				}
				else
					pgss_add(w, col, 0, "NOT IN");
				break;
			case AEXPR_OP_ANY:
				/* = ANY ($1): a list of unknown length, taken as two */
				pgss_add(w, col, strategy_of(op, false), op);
				if (strcmp(op, "=") == 0)
					pgss_add(w, col, BTEqualStrategyNumber, op);
				break;
			case AEXPR_BETWEEN:
				pgss_add(w, col, BTGreaterEqualStrategyNumber, ">=");
				pgss_add(w, col, BTLessEqualStrategyNumber, "<=");
				break;
			default:
				pgss_add(w, col, 0, op);
				break;
		}
	}
}

/* The filters on rel of one parsed statement. */
static void
walk_statement(PgssWalk *w, Node *stmt)
{
	List	   *from = NIL;
	Node	   *where = NULL;
	ListCell   *lc;

	check_stack_depth();
	if (IsA(stmt, SelectStmt))
	{
		SelectStmt *sel = (SelectStmt *) stmt;

		if (sel->op != SETOP_NONE)
		{
			walk_statement(w, (Node *) sel->larg);
			walk_statement(w, (Node *) sel->rarg);
			return;
		}
		from = sel->fromClause;
		where = sel->whereClause;
	}
	else if (IsA(stmt, UpdateStmt))
	{
		from = list_make1(((UpdateStmt *) stmt)->relation);
		where = ((UpdateStmt *) stmt)->whereClause;
	}
	else if (IsA(stmt, DeleteStmt))
	{
		from = list_make1(((DeleteStmt *) stmt)->relation);
		where = ((DeleteStmt *) stmt)->whereClause;
	}
	else if (IsA(stmt, ExplainStmt))
	{
		walk_statement(w, ((ExplainStmt *) stmt)->query);
		return;
	}
	foreach(lc, from)
	{
		if (from_has_rel(lfirst(lc), w->rel, &w->alias))
		{
			walk_where(w, where);
			return;
		}
	}
}

/* A statement's text to walk, in a subtransaction (pgss_parse). */
typedef struct PgssText
{
	PgssWalk   *w;
	const char *text;
} PgssText;

static void
pgss_walk_text(void *arg)
{
	PgssText   *t = (PgssText *) arg;
	List	   *stmts = raw_parser(t->text, RAW_PARSE_DEFAULT);
	ListCell   *lc;

	foreach(lc, stmts)
		walk_statement(t->w, ((RawStmt *) lfirst(lc))->stmt);
}

/*
 * Parse a statement's text in a subtransaction: a text pg_stat_statements
 * cut, or a syntax this server does not know, is left out.
 */
static void
pgss_parse(PgssWalk *w, const char *text)
{
	PgssText	t = {w, text};
	int			nrows_before = w->nrows;
	ErrorData  *edata = zorder_try_in_subxact(pgss_walk_text, &t);

	if (edata == NULL)
		return;
	zorder_rethrow_if_fatal(edata);
	FreeErrorData(edata);
	w->nrows = nrows_before;
}

/*
 * The filters on rel of the statements pg_stat_statements recorded in this
 * database, of the caller's own unless it has the privileges of
 * pg_read_all_stats (pg_stat_statements shows others' texts to no one
 * else either).
 */
static int
read_pgss(Relation rel, const char *schema, QualRow **rows, MemoryContext cxt)
{
	StringInfoData q;
	bool		all_users = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	PgssWalk	w = {0};

	w.rel = rel;
	w.cxt = cxt;
	initStringInfo(&q);
	appendStringInfo(&q,
					 "SELECT userid, dbid, queryid, query, calls "
					 "FROM %s.pg_stat_statements(true)",
					 quote_identifier(schema));
	select_records(q.data, "pg_stat_statements");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *text;

		CHECK_FOR_INTERRUPTS();
		if (!visible_record(tup, desc, all_users))
			continue;
		text = SPI_getvalue(tup, desc, 4);
		if (text == NULL)
			continue;
		memset(&w.proto, 0, sizeof(w.proto));
		w.proto.shape = datum_int64_or(tup, desc, 3, (int64) i, &isnull);
		w.proto.instance = w.proto.shape;
		w.proto.calls = (double) datum_int64_or(tup, desc, 5, 0, &isnull);
		w.proto.sel = -1;
		if (w.proto.calls <= 0)
			continue;
		pgss_parse(&w, text);
	}
	SPI_finish();
	*rows = w.rows ? w.rows : MemoryContextAllocZero(cxt, sizeof(QualRow));
	return w.nrows;
}


/*
 * The predicates on rel's columns of the recorded workload, into *rows
 * (allocated in cxt), and in *source the extension they come from:
 * pg_qualstats, else pg_stat_statements, else an error (with missing_ok,
 * -1).  Run as the caller: what it may see is what the extensions show it.
 */
int
zorder_read_workload(Relation rel, QualRow **rows, MemoryContext cxt,
					 const char **source, bool missing_ok)
{
	char	   *schema;

	/* the schema looked up once: a concurrent DROP EXTENSION may follow */
	if ((schema = extension_schema("pg_qualstats")) != NULL)
	{
		*source = "pg_qualstats";
		return read_qualstats(rel, schema, rows, cxt);
	}
	if ((schema = extension_schema("pg_stat_statements")) != NULL)
	{
		*source = "pg_stat_statements";
		return read_pgss(rel, schema, rows, cxt);
	}
	if (missing_ok)
		return -1;
	no_workload_source(rel);
	return 0;					/* not reached */
}
