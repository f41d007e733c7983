/*-------------------------------------------------------------------------
 *
 * boundsets.c
 *	  Boundary sets: the quantile boundaries one sample gave a table's key
 *	  columns, with the curve and the bits per column, kept in
 *	  zorder.boundary_sets so that zorder.layout_key computes, in any
 *	  session and after a restore, the keys a rewrite computed.
 *
 * A set is never changed once written, so layout_key(set, ...) is a
 * function of its arguments alone, honestly IMMUTABLE: an index built on it
 * stays valid as long as the set exists, and a set lives as long as its
 * table or an index of the same owner names it.  A new sample makes a new
 * set.
 *
 * Boundaries are stored in binary send form where that form reads back the
 * same in another database, else as text; reading them back runs the key
 * types' input functions, code the table's owner may have chosen, so it is
 * a step of its own (zorder_decode_boundary_set) that callers run as the
 * owner, after checking privileges.
 *
 * This file owns zorder.boundary_sets: every statement on it is here,
 * including what happens to a dropped table's sets and the function that
 * finds the sets indexes name.  It sits below tables.c, whose drop trigger
 * and OID-reuse check forget a table's sets through it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "access.h"
#include "boundsets.h"
#include "catalog.h"
#include "quantile.h"
#include "subxact.h"
#include "zorder.h"

static LayoutSet *load_set(int id, const char *doc, bool read_only);

static int	save_set(Oid relid, int nkeys, ZKeyColumn *cols, ZCurve curve,
					 int bits, int sample_rows, const char *origin,
					 int given_id, char **doc);

/* The owner of relation relid, or InvalidOid if it is gone. */
static Oid
relation_owner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * Does the binary form of typid (its send function's output) read back the
 * same in another database, after a dump and restore?  Not for arrays and
 * composites: theirs embeds the OIDs of the element and column types,
 * which a restore changes.  Those keep the text form in a set.
 */
static bool
binary_form_portable(Oid typid)
{
	switch (get_typtype(typid))
	{
		case TYPTYPE_BASE:
			return !type_is_array(typid);
		case TYPTYPE_ENUM:
			return true;
		case TYPTYPE_RANGE:
			return binary_form_portable(get_range_subtype(typid));
#if PG_VERSION_NUM >= 140000
		case TYPTYPE_MULTIRANGE:
			return binary_form_portable(get_range_subtype(get_multirange_range(typid)));
#endif
		default:
			return false;
	}
}

/*
 * Fix the settings the text form of values depends on (dates, intervals,
 * floats, bytea, money) until AtEOXact_GUC(false, <returned level>), so
 * that the boundaries of a set kept in text form read back as they were
 * written, whatever the session's settings.  GUC_ACTION_SAVE, as a
 * function's SET clause: allowed in a parallel worker too.
 */
static int
pin_text_io_settings(void)
{
	static const char *const settings[][2] = {
		{"datestyle", "ISO, YMD"},
		{"intervalstyle", "postgres"},
		{"extra_float_digits", "3"},
		{"bytea_output", "hex"},
		{"lc_monetary", "C"},
	};
	int			nestlevel = NewGUCNestLevel();

	for (int i = 0; i < (int) lengthof(settings); i++)
		(void) set_config_option(settings[i][0], settings[i][1],
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

/*
 * Load boundary set id into the current memory context, its boundaries
 * still as stored: reading them back runs the key types' input functions,
 * which only zorder_decode_boundary_set may call.  Returns NULL if there is no such set.
 * read_only: with the active snapshot only, as an IMMUTABLE function must
 * (see zorder_catalog_read).
 */
LayoutSet *
zorder_load_boundary_set(int id, bool read_only)
{
	return load_set(id, NULL, read_only);
}

/*
 * Set id, for a table of owner: a set of another owner's table is not
 * there for it (ERROR, as for a set that does not exist), since its
 * boundaries are that table's values.
 */
LayoutSet *
zorder_load_owned_boundary_set(int id, Oid owner)
{
	LayoutSet  *set = load_set(id, NULL, false);

	if (set == NULL || relation_owner(set->relid) != owner)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("boundary set %d does not exist", id)));
	return set;
}

/*
 * A set from a document (zorder_boundary_set_export's form, from another
 * node), loaded as a stored set is, with id 0, no table and no attribute
 * numbers: its columns are known by name.  The document must have passed
 * zorder_boundary_set_check_document.
 */
LayoutSet *
zorder_load_boundary_set_document(const char *doc)
{
	return load_set(0, doc, false);
}

/* The loader of both: set id, or the set in doc if doc is not NULL */
static LayoutSet *
load_set(int id, const char *doc, bool read_only)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(id)};
	/* a collation dropped or renamed since reads as NULL */
	const char *row_sql = "SELECT ROW(relid::oid, columns, "
		"coalesce(keys, pg_catalog.array_fill(0::int2, "
		"ARRAY[pg_catalog.cardinality(columns)])), types::oid[], "
		"typmods, ARRAY(SELECT CASE WHEN c = '-' THEN 0 "
		"ELSE pg_catalog.to_regcollation(c)::oid END "
		"FROM pg_catalog.unnest(collations) WITH ORDINALITY AS u(c, i) "
		"ORDER BY i), curve, bits, bounds, collations) ";
	const char *sql;
	Datum		row;
	bool		isnull;
	Datum		values[10];
	bool		nulls[10];
	Datum	   *names,
			   *keys,
			   *types,
			   *typmods,
			   *colls,
			   *collnames,
			   *bounds;
	bool	   *collnulls;
	int			n,
				n2;
	LayoutSet  *set;

	if (doc != NULL)
	{
		argtypes[0] = TEXTOID;
		args[0] = CStringGetTextDatum(doc);
		sql = psprintf("%sFROM pg_catalog.jsonb_populate_record("
					   "NULL::zorder.boundary_sets, $1::pg_catalog.jsonb)",
					   row_sql);
	}
	else
		sql = psprintf("%sFROM zorder.boundary_sets WHERE id = $1", row_sql);
	if (read_only)
		zorder_catalog_read(sql, 1, argtypes, args, &row, &isnull);
	else
		zorder_catalog_exec(sql, 1, argtypes, args, NULL, &row, &isnull);
	if (isnull)
		return NULL;

	zorder_deform_row(row, values, nulls);

	set = palloc0(sizeof(LayoutSet));
	set->id = id;
	set->relid = nulls[0] ? InvalidOid : DatumGetObjectId(values[0]);
	set->curve = zorder_parse_curve(TextDatumGetCString(values[6]));
	set->bits = DatumGetInt32(values[7]);
	deconstruct_array(DatumGetArrayTypeP(values[1]), NAMEOID, NAMEDATALEN,
					  false, TYPALIGN_CHAR, &names, NULL, &n);
	set->nkeys = n;
	if (n < 1 || n > ZORDER_MAX_KEYS || set->bits < 1 ||
		set->bits > zorder_curve_bits(n))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("boundary set %d is not in the format zorder writes", id)));
	deconstruct_array(DatumGetArrayTypeP(values[2]), INT2OID, 2, true,
					  TYPALIGN_SHORT, &keys, NULL, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[3]), OIDOID, 4, true,
					  TYPALIGN_INT, &types, NULL, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[4]), INT4OID, 4, true,
					  TYPALIGN_INT, &typmods, NULL, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[5]), OIDOID, 4, true,
					  TYPALIGN_INT, &colls, &collnulls, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[9]), TEXTOID, -1, false,
					  TYPALIGN_INT, &collnames, NULL, &n2);
	if (n2 != n)
		goto bad;
	deconstruct_array(DatumGetArrayTypeP(values[8]), BYTEAOID, -1, false,
					  TYPALIGN_INT, &bounds, NULL, &n2);
	if (n2 != n)
		goto bad;

	/*
	 * The set's types and collations are the ones it names (regtype, and
	 * collation names: the same after a dump and restore or pg_upgrade),
	 * not the OIDs its boundaries recorded when they were written.
	 */
	for (int k = 0; k < n; k++)
	{
		ZKeyColumn *col = &set->cols[k];

		set->colnames[k] = pstrdup(NameStr(*DatumGetName(names[k])));
		set->attnums[k] = DatumGetInt16(keys[k]);

		/*
		 * Without its collation the set's order cannot be had again: the set
		 * no longer fits, and its users say so (no comparison may run).
		 */
		if (collnulls[k])
		{
			set->unfit = psprintf("Collation %s of key column \"%s\", which the set was sampled for, no longer exists.",
								  TextDatumGetCString(collnames[k]),
								  set->colnames[k]);
			return set;
		}
		/*
		 * A type compared by a collation needs one, and only such a type
		 * has one: zorder writes no other set, but a copy's
		 * (_adopt_layout_set) came from elsewhere.
		 */
		if (type_is_collatable(DatumGetObjectId(types[k])) !=
			OidIsValid(DatumGetObjectId(colls[k])))
		{
			set->unfit = psprintf("The collation of key column \"%s\" does not go with its type in the set.",
								  set->colnames[k]);
			return set;
		}
		zorder_prepare_key_type(DatumGetObjectId(types[k]),
								DatumGetInt32(typmods[k]),
								DatumGetObjectId(colls[k]),
								set->colnames[k], col);
		col->attnum = set->attnums[k];
		set->stored[k] = DatumGetByteaPP(bounds[k]);
	}
	return set;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("boundary set %d is not in the format zorder writes", id),
			 errdetail("Its key columns, types and boundaries do not agree.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * Read back the boundaries of a set that zorder_load_boundary_set loaded.  The caller runs
 * this as the set's table's owner in a security-restricted operation: the
 * key types' input functions, and the CHECK of a domain at any depth
 * (array elements, composite attributes, range subtypes), are code the
 * owner may have chosen.  Returns false if a boundary no longer reads back
 * as its type (changed in place by ALTER TYPE), without the error, which
 * would quote a sampled value.
 */
bool
zorder_decode_boundary_set(LayoutSet *set)
{
	int			save_nestlevel = pin_text_io_settings();
	bool		ok = true;

	for (int k = 0; ok && k < set->nkeys; k++)
	{
		ok = zorder_bounds_read_back(&set->cols[k], set->stored[k], false);
		if (ok)
			zorder_prepare_bounds(&set->cols[k], set->bits);
	}
	AtEOXact_GUC(false, save_nestlevel);
	return ok;
}

int
zorder_save_boundary_set(Oid relid, int nkeys, ZKeyColumn *cols,
						 ZCurve curve, int bits, int sample_rows,
						 const char *origin)
{
	return save_set(relid, nkeys, cols, curve, bits, sample_rows, origin, 0,
					NULL);
}

/*
 * The same for a Citus distributed table on its coordinator, returning the
 * set's id: one of the ids from ZORDER_TABLE_SET_FIRST_ID on, which no node
 * gives a set of its own, so that the set can have it on every node.  An
 * id already taken here (a set restored from a dump, which does not carry
 * the sequence) is passed over.
 */
int
zorder_save_boundary_set_as_table(Oid relid, int nkeys, ZKeyColumn *cols,
								  ZCurve curve, int bits, int sample_rows)
{
	int			id;

	do
	{
		CHECK_FOR_INTERRUPTS();
		id = save_set(relid, nkeys, cols, curve, bits, sample_rows,
					  "optimize", -1, NULL);
	} while (id == 0);
	return id;
}

/*
 * After shards were laid out with set id of a distributed table (whose
 * shell on this node is relid): the table's sets before id, on this node,
 * that nothing uses any more: no index names them, and no layout of a
 * shard here is on them (the shards laid out again since are on id).
 * Which sets indexes use takes a parse of every index: only if there are
 * such sets.
 */
void
zorder_boundary_sets_drop_older(Oid relid, int id)
{
	Oid			argtypes[2] = {OIDOID, INT4OID};
	Datum		args[2] = {ObjectIdGetDatum(relid), Int32GetDatum(id)};
	Datum		any;
	bool		isnull;

	zorder_catalog_exec("SELECT true FROM zorder.boundary_sets b WHERE b.relid::oid = $1 "
						"AND b.origin = 'optimize' AND b.id < $2 "
						"AND NOT EXISTS (SELECT FROM zorder.layouts l "
						"WHERE l.boundary_set = b.id) LIMIT 1",
						2, argtypes, args, NULL, &any, &isnull);
	if (isnull)
		return;
	zorder_catalog_exec("DELETE FROM zorder.boundary_sets b WHERE b.relid::oid = $1 "
						"AND b.origin = 'optimize' AND b.id < $2 "
						"AND NOT EXISTS (SELECT FROM zorder._boundary_sets_in_use() u "
						"WHERE u.set_id = b.id) "
						"AND NOT EXISTS (SELECT FROM zorder.layouts l "
						"WHERE l.boundary_set = b.id)",
						2, argtypes, args, NULL, NULL, NULL);
}

/*
 * The set cols would be, as zorder_boundary_set_export gives a stored one,
 * without storing it: a shard's sample for its coordinator.
 */
char *
zorder_boundary_set_document(Oid relid, int nkeys, ZKeyColumn *cols,
							 ZCurve curve, int bits, int sample_rows)
{
	char	   *doc;

	(void) save_set(relid, nkeys, cols, curve, bits, sample_rows, NULL, 0,
					&doc);
	return doc;
}

/*
 * Store cols as a set of relid, returning its id: with given_id if it is
 * not 0, with the next free id of a distributed table's if it is -1 (0 if
 * that id was taken); or, with doc, give the set as a document instead of
 * storing it.
 */
static int
save_set(Oid relid, int nkeys, ZKeyColumn *cols, ZCurve curve, int bits,
		 int sample_rows, const char *origin, int given_id, char **doc)
{
	Datum		names[ZORDER_MAX_KEYS];
	Datum		keys[ZORDER_MAX_KEYS];
	Datum		types[ZORDER_MAX_KEYS];
	Datum		typmods[ZORDER_MAX_KEYS];
	Datum		colls[ZORDER_MAX_KEYS];
	Datum		bounds[ZORDER_MAX_KEYS];
	Oid			argtypes[12] = {OIDOID, TEXTOID, NAMEARRAYOID, INT2ARRAYOID,
		OIDARRAYOID, INT4ARRAYOID, OIDARRAYOID, TEXTOID, INT4OID,
	BYTEAARRAYOID, INT4OID, INT4OID};
	Datum		args[12];
	/* collations by name: pg_upgrade keeps no collation OIDs */
	const char *collations = "ARRAY(SELECT CASE WHEN u.coll = 0 THEN '-' ELSE "
		"(SELECT format('%I.%I', n.nspname, k.collname) "
		"FROM pg_collation k JOIN pg_namespace n "
		"ON n.oid = k.collnamespace WHERE k.oid = u.coll) END "
		"FROM unnest($7) WITH ORDINALITY AS u(coll, ord) ORDER BY u.ord)";
	Datum		id;
	bool		isnull;

	int			save_nestlevel;

	/*
	 * A domain key column is kept as its base type: its values are the base
	 * type's, compared by its opclass, and loading the set must run no
	 * CHECK constraint (code of the table owner's choosing) for whoever
	 * calls layout_key.
	 */
	save_nestlevel = pin_text_io_settings();
	for (int k = 0; k < nkeys; k++)
	{
		NameData   *nm = palloc0(sizeof(NameData));
		ZKeyColumn	base = cols[k];

		base.typid = getBaseTypeAndTypmod(cols[k].typid, &base.typmod);
		namestrcpy(nm, get_attname(relid, cols[k].attnum, false));
		names[k] = NameGetDatum(nm);
		keys[k] = Int16GetDatum(cols[k].attnum);
		types[k] = ObjectIdGetDatum(base.typid);
		typmods[k] = Int32GetDatum(base.typmod);
		colls[k] = ObjectIdGetDatum(cols[k].collid);
		bounds[k] = zorder_bounds_encode(&base,
										 !binary_form_portable(base.typid));
	}
	AtEOXact_GUC(false, save_nestlevel);
	args[0] = ObjectIdGetDatum(relid);
	args[1] = CStringGetTextDatum(origin != NULL ? origin : "optimize");
	args[2] = PointerGetDatum(construct_array(names, nkeys, NAMEOID,
											  NAMEDATALEN, false,
											  TYPALIGN_CHAR));
	args[3] = PointerGetDatum(construct_array(keys, nkeys, INT2OID, 2, true,
											  TYPALIGN_SHORT));
	args[4] = PointerGetDatum(construct_array(types, nkeys, OIDOID, 4, true,
											  TYPALIGN_INT));
	args[5] = PointerGetDatum(construct_array(typmods, nkeys, INT4OID, 4,
											  true, TYPALIGN_INT));
	args[6] = PointerGetDatum(construct_array(colls, nkeys, OIDOID, 4, true,
											  TYPALIGN_INT));
	args[7] = CStringGetTextDatum(zorder_curve_name(curve));
	args[8] = Int32GetDatum(bits);
	args[9] = PointerGetDatum(construct_array(bounds, nkeys, BYTEAOID, -1,
											  false, TYPALIGN_INT));
	args[10] = Int32GetDatum(sample_rows);
	args[11] = Int32GetDatum(given_id);
	if (doc != NULL)
	{
		/* the names export's to_jsonb gives the same columns */
		zorder_catalog_exec(psprintf("SELECT pg_catalog.jsonb_build_object("
									 "'columns', $3, 'types', $5::regtype[], 'typmods', $6, "
									 "'collations', %s, 'curve', $8, 'bits', $9, "
									 "'bounds', $10, 'sample_rows', $11)::text",
									 collations),
							11, argtypes, args, NULL, &id, &isnull);
		*doc = TextDatumGetCString(id);
		return 0;
	}
	zorder_catalog_exec(psprintf("INSERT INTO zorder.boundary_sets (%srelid, origin, "
								 "columns, keys, types, typmods, collations, curve, "
								 "bits, bounds, sample_rows, owner) SELECT %s$1::regclass, "
								 "$2, $3, $4, $5::regtype[], $6, %s, $8, $9, $10, $11, "
								 "pg_get_userbyid(c.relowner) FROM pg_class c "
								 "WHERE c.oid = $1 %s RETURNING id",
								 given_id != 0 ? "id, " : "",
								 given_id > 0 ? "$12, " :
								 given_id < 0 ? "pg_catalog.nextval('zorder.table_set_ids'), " : "",
								 collations,
								 given_id < 0 ? "ON CONFLICT (id) DO NOTHING" : ""),
						given_id > 0 ? 12 : 11, argtypes, args, NULL, &id,
						&isnull);
	if (isnull)
	{
		Assert(given_id < 0);
		return 0;
	}
	return DatumGetInt32(id);
}

/* ---------------------------------------------------------------------
 * A set carried to another node (a Citus shard moved there)
 * ---------------------------------------------------------------------
 */

/*
 * Set id as a jsonb document, without what is of this node (its id, table,
 * attribute numbers, owner): types by name, qualified where pg_catalog
 * does not hold them (the catalog door's search_path), collations by name
 * as stored.  NULL if there is no such set.
 */
char *
zorder_boundary_set_export(int id)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(id)};
	Datum		doc;
	bool		isnull;

	zorder_catalog_exec("SELECT (pg_catalog.to_jsonb(b) - 'id' - 'relid' - 'keys' "
						"- 'owner' - 'created_at' - 'origin')::text "
						"FROM zorder.boundary_sets b WHERE b.id = $1",
						1, argtypes, args, NULL, &doc, &isnull);
	return isnull ? NULL : TextDatumGetCString(doc);
}

/* Load set *arg and read its boundaries back (in a subtransaction) */
static void
load_and_read_back(void *arg)
{
	LayoutSet  *set = zorder_load_boundary_set(*(int *) arg, false);

	if (set != NULL && set->unfit == NULL)
		(void) zorder_decode_boundary_set(set);
}

/*
 * A set just stored from another node's document must load, and its
 * boundaries read back, as zorder's own sets do, else every later call on
 * the table would fail on it: a type or collation that does not exist
 * here, a type zorder cannot order, boundaries that are not in the form
 * of their type.  Read back as the table's owner in a security-restricted
 * operation (the types' input functions may be the owner's), in a
 * subtransaction, so that what fails is refused with the reason, not
 * with the error of whatever piece failed (which may quote a value).  A
 * set that loads but no longer fits the table is kept: the call that uses
 * it says so and rewrites the table.
 */
static void
check_copied_set(Oid relid, int id)
{
	ZOwnerSwitch sw;
	ErrorData  *edata;

	zorder_become_owner(relation_owner(relid), &sw);
	edata = zorder_try_in_subxact(load_and_read_back, &id);
	zorder_restore_user(&sw);
	if (edata == NULL)
		return;
	zorder_rethrow_if_fatal(edata);
	FreeErrorData(edata);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("layout set document is not one zorder gives"),
			 errdetail("Its types, collations or boundaries do not read back on this node.")));
}

/*
 * The INSERT of a document's set as a set of table $1 (pg_attribute gives
 * the attribute numbers of its columns there), with id $3 if with_id: no
 * row if a column of the set is not the table's.
 */
static const char *
insert_document_sql(bool with_id, const char *origin)
{
	return psprintf("WITH r AS (SELECT * FROM pg_catalog.jsonb_populate_record("
					"NULL::zorder.boundary_sets, $2::pg_catalog.jsonb)), "
					"k AS (SELECT ARRAY(SELECT a.attnum FROM r, "
					"unnest(r.columns) WITH ORDINALITY AS c(name, ord) "
					"JOIN pg_attribute a ON a.attrelid = $1 AND a.attname = c.name "
					"AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.ord) AS keys) "
					"INSERT INTO zorder.boundary_sets (%srelid, origin, columns, "
					"keys, types, typmods, collations, curve, bits, bounds, "
					"sample_rows, owner) SELECT %s$1::regclass, '%s', r.columns, "
					"k.keys, r.types, r.typmods, r.collations, r.curve, r.bits, "
					"r.bounds, r.sample_rows, pg_get_userbyid(c.relowner) "
					"FROM r, k, pg_class c WHERE c.oid = $1 "
					"AND cardinality(k.keys) = cardinality(r.columns) "
					"RETURNING id",
					with_id ? "id, " : "", with_id ? "$3, " : "", origin);
}

/*
 * Store doc (zorder_boundary_set_export's form, from another node) as a
 * set relid's heap is to be checked against as a copy of a table laid out
 * with it (origin 'copy', recognize.c), with the attribute numbers its columns have here
 * and relid's owner as the set's.  Returns the new set's id, or 0 if a
 * column of the set is not one of relid's.  Whether the set fits the
 * table's keys and types is checked where it is used, as for any prepared
 * set (recognize.c).
 */
int
zorder_boundary_set_adopt(Oid relid, const char *doc)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2];
	Datum		id;
	bool		isnull;

	zorder_boundary_set_check_document(doc);
	args[0] = ObjectIdGetDatum(relid);
	args[1] = CStringGetTextDatum(doc);
	zorder_catalog_exec(insert_document_sql(false, "copy"),
						2, argtypes, args, NULL, &id, &isnull);
	if (isnull)
		return 0;
	check_copied_set(relid, DatumGetInt32(id));
	return DatumGetInt32(id);
}

/*
 * Store doc as set id of table, a Citus distributed table's shell on this
 * node (its shards here share the set, and it outlives a shard moved
 * away): the set its coordinator sampled from every shard, whose id is
 * the same on every node, so that an index calling zorder.layout_key with
 * it means the same on every shard.  A set id that is there already must
 * be that set, of that table; else the id went to another set of this
 * node since the coordinator asked, and this fails.
 */
void
zorder_boundary_set_take(Oid table, int id, const char *doc)
{
	Oid			argtypes[3] = {OIDOID, TEXTOID, INT4OID};
	Datum		args[3];
	Datum		same;
	bool		isnull;

	if (id < ZORDER_TABLE_SET_FIRST_ID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("boundary set %d is not a distributed table's", id),
				 errdetail("A coordinator numbers distributed tables' sets from %d on.",
						   ZORDER_TABLE_SET_FIRST_ID)));
	zorder_boundary_set_check_document(doc);
	args[0] = ObjectIdGetDatum(table);
	args[1] = CStringGetTextDatum(doc);
	args[2] = Int32GetDatum(id);
	zorder_catalog_exec("SELECT b.relid::oid = $1 AND b.origin = 'optimize' "
						"AND (b.columns, b.types, b.typmods, b.collations, b.curve, b.bits, b.bounds) "
						"IS NOT DISTINCT FROM (r.columns, r.types, r.typmods, r.collations, r.curve, r.bits, r.bounds) "
						"FROM zorder.boundary_sets b, pg_catalog.jsonb_populate_record("
						"NULL::zorder.boundary_sets, $2::pg_catalog.jsonb) r WHERE b.id = $3",
						3, argtypes, args, NULL, &same, &isnull);
	if (!isnull)
	{
		if (DatumGetBool(same))
			return;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("boundary set %d is another set on this node", id),
				 errdetail("A distributed table's set has the same id on every node, and another set took this id here since the coordinator chose it."),
				 errhint("Call zorder.optimize with \"full\" => true on the coordinator: it samples a set with a new id.")));
	}
	zorder_catalog_exec(insert_document_sql(true, "optimize"),
						3, argtypes, args, NULL, &same, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("layout set document is not one zorder gives"),
				 errdetail("Its key columns are not all columns of the table.")));
	check_copied_set(table, id);
	zorder_boundary_sets_drop_older(table, id);
}

/*
 * What zorder_load_boundary_set would refuse of a document from another
 * node, at every call on the table, is refused before it is stored: one
 * array per key column, without nulls, as many as the curve takes, and
 * its bits per key.
 */
void
zorder_boundary_set_check_document(const char *doc)
{
	Oid			argtypes[2] = {TEXTOID, INT4ARRAYOID};
	Datum		args[2];
	Datum		maxbits[ZORDER_MAX_KEYS];
	Datum		ok;
	bool		isnull;

	for (int n = 1; n <= ZORDER_MAX_KEYS; n++)
		maxbits[n - 1] = Int32GetDatum(zorder_curve_bits(n));
	args[0] = CStringGetTextDatum(doc);
	args[1] = PointerGetDatum(construct_array(maxbits, ZORDER_MAX_KEYS, INT4OID,
											  4, true, TYPALIGN_INT));
	zorder_catalog_exec("SELECT true FROM pg_catalog.jsonb_populate_record("
						"NULL::zorder.boundary_sets, $1::pg_catalog.jsonb) r "
						"WHERE pg_catalog.array_ndims(r.columns) = 1 "
						"AND pg_catalog.cardinality(r.columns) BETWEEN 1 AND pg_catalog.cardinality($2) "
						"AND r.bits BETWEEN 1 AND $2[pg_catalog.cardinality(r.columns)] "
						"AND r.curve IN ('hilbert', 'z') AND r.sample_rows >= 0 "
						"AND (SELECT pg_catalog.bool_and(pg_catalog.array_ndims(a) = 1 "
						"AND pg_catalog.cardinality(a) = pg_catalog.cardinality(r.columns) "
						"AND pg_catalog.array_position(a, NULL) IS NULL) "
						"FROM (VALUES (r.columns::text[]), (r.types::text[]), "
						"(r.typmods::text[]), (r.collations), (r.bounds::text[])) v(a))",
						2, argtypes, args, NULL, &ok, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("layout set document is not one zorder gives"),
				 errdetail("A layout set names one to %d key columns, with a type, typmod, collation and boundaries for each, a curve, its bits per key and its sample's size.",
						   ZORDER_MAX_KEYS)));
}

/* The newest set of relid of origin, or 0 */
int
zorder_boundary_set_newest(Oid relid, const char *origin)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2] = {ObjectIdGetDatum(relid), CStringGetTextDatum(origin)};
	Datum		id;
	bool		isnull;

	zorder_catalog_exec("SELECT max(id) FROM zorder.boundary_sets "
						"WHERE relid::oid = $1 AND origin = $2",
						2, argtypes, args, NULL, &id, &isnull);
	return isnull ? 0 : DatumGetInt32(id);
}

/* Whether relid has a set prepared by zorder.prepare_layout or a copy's */
bool
zorder_boundary_set_prepared(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		any;
	bool		isnull;

	zorder_catalog_exec("SELECT true FROM zorder.boundary_sets "
						"WHERE relid::oid = $1 AND origin IN ('prepare', 'copy') LIMIT 1",
						1, argtypes, args, NULL, &any, &isnull);
	return !isnull;
}

/* ---------------------------------------------------------------------
 * Which sets are in use, and forgetting those that are not
 * ---------------------------------------------------------------------
 */

/* Is funcid zorder.layout_key?  (A C function only a superuser can make.) */
static bool
is_layout_key_function(Oid funcid)
{
	HeapTuple	tuple;
	bool		result = false;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tuple))
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tuple);

		if (proc->prolang == ClanguageId)
		{
			bool		isnull;
			Datum		src = SysCacheGetAttr(PROCOID, tuple,
											  Anum_pg_proc_prosrc, &isnull);

			result = !isnull &&
				strcmp(TextDatumGetCString(src), "zorder_layout_key") == 0;
		}
		ReleaseSysCache(tuple);
	}
	return result;
}

typedef struct SetUseContext
{
	List	   *ids;			/* set ids that layout_key calls name */
} SetUseContext;

static bool
find_set_uses(Node *node, SetUseContext *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) node;

		if (list_length(f->args) >= 1 && is_layout_key_function(f->funcid))
		{
			Node	   *arg = linitial(f->args);

			if (IsA(arg, Const) && !((Const *) arg)->constisnull &&
				((Const *) arg)->consttype == INT4OID)
				context->ids = lappend_int(context->ids,
										   DatumGetInt32(((Const *) arg)->constvalue));
		}
	}
	return expression_tree_walker(node, find_set_uses, (void *) context);
}

/*
 * zorder._boundary_sets_in_use() RETURNS TABLE (set_id int, relid oid)
 *
 * The boundary sets that the expressions and predicates of indexes name
 * in calls of zorder.layout_key, with the table of each index.  Only a set
 * named by a constant, as zorder.prepare_layout writes the call, is seen
 * (README: Laying out a large live table).  Read from pg_index as the catalog snapshot
 * sees it, for the event trigger that forgets a dropped table's sets and
 * for zorder.drop_unused_boundary_sets.
 */
/*
 * The sets whose table exists, with the owner of that table: ids into
 * *ids, owners returned, *n of each.  The owner of an index's table must
 * be that owner for the index to keep the set in use.
 */
static Oid *
set_owners(int **ids, int *n)
{
	Datum		row;
	bool		isnull;
	Datum		values[2];
	bool		nulls[2];
	Datum	   *idd,
			   *ownd;
	int			n2;
	Oid		   *owners;

	*n = 0;
	*ids = NULL;
	zorder_catalog_read("SELECT ROW(coalesce(array_agg(s.id), '{}'), "
						"coalesce(array_agg(c.relowner), '{}')) "
						"FROM zorder.boundary_sets s "
						"JOIN pg_catalog.pg_class c ON c.oid = s.relid::oid",
						0, NULL, NULL, &row, &isnull);
	if (isnull)
		return NULL;
	zorder_deform_row(row, values, nulls);
	deconstruct_array(DatumGetArrayTypeP(values[0]), INT4OID, 4, true,
					  TYPALIGN_INT, &idd, NULL, n);
	deconstruct_array(DatumGetArrayTypeP(values[1]), OIDOID, 4, true,
					  TYPALIGN_INT, &ownd, NULL, &n2);
	Assert(n2 == *n);
	*ids = palloc(sizeof(int) * Max(*n, 1));
	owners = palloc(sizeof(Oid) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		(*ids)[i] = DatumGetInt32(idd[i]);
		owners[i] = DatumGetObjectId(ownd[i]);
	}
	return owners;
}

PG_FUNCTION_INFO_V1(zorder_boundary_sets_in_use);
Datum
zorder_boundary_sets_in_use(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	pg_index;
	SysScanDesc scan;
	HeapTuple	tuple;
	int		   *set_ids;
	Oid		   *owners;
	int			nsets;

	InitMaterializedSRF(fcinfo, 0);
	owners = set_owners(&set_ids, &nsets);
	pg_index = table_open(IndexRelationId, AccessShareLock);
	scan = systable_beginscan(pg_index, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_index idx = (Form_pg_index) GETSTRUCT(tuple);
		SetUseContext context = {NIL};
		int			attnos[2] = {Anum_pg_index_indexprs, Anum_pg_index_indpred};
		ListCell   *lc;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < 2; i++)
		{
			bool		isnull;
			Datum		d = heap_getattr(tuple, attnos[i],
										 RelationGetDescr(pg_index), &isnull);

			if (!isnull)
				(void) find_set_uses(stringToNode(TextDatumGetCString(d)),
									 &context);
		}
		foreach(lc, context.ids)
		{
			Datum		values[2];
			bool		nulls[2] = {false, false};
			int			id = lfirst_int(lc);
			int			s = 0;

			/* another role's index keeps no set of a table alive */
			while (s < nsets && set_ids[s] != id)
				s++;
			if (s < nsets && owners[s] != relation_owner(idx->indrelid))
				continue;
			values[0] = Int32GetDatum(id);
			values[1] = ObjectIdGetDatum(idx->indrelid);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
								 nulls);
		}
	}
	systable_endscan(scan);
	table_close(pg_index, AccessShareLock);
	return (Datum) 0;
}

/*
 * The sets of a table that is gone.  A set no index names goes with it.  A
 * set that an index names cannot go (the index's key computations would
 * fail): it passes to the table of such an index if that table has the
 * owner the set's table had; otherwise it is left to no table (relid 0),
 * so that nobody, not even a new relation that took the OID, computes keys
 * under another table's sampled values.  Sets left to no table go once no
 * index names them.
 *
 * Which sets are in use takes a parse of every index expression in the
 * database, so it is done only when a dropped table has sets, or when an
 * index went while a set is left to no table: the drop trigger runs on
 * every DROP in the database, and most concern no set.
 */
void
zorder_boundary_sets_forget(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		any;
	bool		isnull;

	zorder_catalog_exec("SELECT EXISTS (SELECT FROM zorder.boundary_sets "
						"WHERE relid::oid = $1)",
						1, argtypes, args, NULL, &any, &isnull);
	if (isnull || !DatumGetBool(any))
		return;
	zorder_catalog_exec("WITH iu AS (SELECT * FROM zorder._boundary_sets_in_use()), "
						"u AS (SELECT iu.set_id, min(iu.relid) AS relid FROM iu "
						"JOIN zorder.boundary_sets s ON s.id = iu.set_id "
						"JOIN pg_class c ON c.oid = iu.relid "
						"WHERE s.relid::oid = $1 AND iu.relid <> $1 "
						"AND pg_get_userbyid(c.relowner) = s.owner GROUP BY iu.set_id), "
						"b AS (DELETE FROM zorder.boundary_sets WHERE relid::oid = $1 "
						"AND id NOT IN (SELECT set_id FROM iu)) "
						"UPDATE zorder.boundary_sets s "
						"SET relid = coalesce((SELECT u.relid FROM u WHERE u.set_id = s.id), 0)::regclass "
						"WHERE s.relid::oid = $1 AND s.id IN (SELECT set_id FROM iu)",
						1, argtypes, args, NULL, NULL, NULL);
}

/* The same, from the sql_drop event trigger, for the tables it dropped. */
void
zorder_boundary_sets_forget_dropped(void)
{
	Datum		any;
	bool		isnull;

	zorder_catalog_exec("WITH d AS (SELECT objid, object_type "
						"FROM pg_event_trigger_dropped_objects() "
						"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
						"AND objsubid = 0) "
						"SELECT EXISTS (SELECT FROM zorder.boundary_sets "
						"WHERE relid::oid IN (SELECT objid FROM d) "
						"OR relid::oid = 0 AND EXISTS (SELECT FROM d "
						"WHERE object_type = 'index'))",
						0, NULL, NULL, NULL, &any, &isnull);
	if (isnull || !DatumGetBool(any))
		return;
	zorder_catalog_exec("WITH d AS (SELECT objid AS relid "
						"FROM pg_event_trigger_dropped_objects() "
						"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
						"AND objsubid = 0), "
						"u AS (SELECT iu.set_id, min(iu.relid) AS relid "
						"FROM zorder._boundary_sets_in_use() iu "
						"JOIN zorder.boundary_sets s ON s.id = iu.set_id "
						"JOIN pg_class c ON c.oid = iu.relid "
						"WHERE pg_get_userbyid(c.relowner) = s.owner GROUP BY iu.set_id), "
						"b AS (DELETE FROM zorder.boundary_sets WHERE relid::oid IN (SELECT relid FROM d) "
						"AND id NOT IN (SELECT set_id FROM u) "
						"OR relid::oid = 0 AND id NOT IN (SELECT set_id FROM zorder._boundary_sets_in_use())) "
						"UPDATE zorder.boundary_sets s SET relid = u.relid::regclass FROM u "
						"WHERE s.id = u.set_id AND s.relid::oid IN (SELECT relid FROM d)",
						0, NULL, NULL, NULL, NULL, NULL);
}

/*
 * Drop the sets of relid that nothing needs: no index names them, the
 * layout is not on them, and none is the newest prepared set after the
 * layout's (which the next zorder.optimize will check the heap against).
 * Returns how many went.
 */
int64
zorder_boundary_sets_drop_unused(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};

	return zorder_catalog_exec("DELETE FROM zorder.boundary_sets b WHERE b.relid::oid = $1 "
							   "AND NOT EXISTS (SELECT FROM zorder._boundary_sets_in_use() u "
							   "WHERE u.set_id = b.id) "
							   "AND NOT EXISTS (SELECT FROM zorder.layouts l "
							   "WHERE l.relid::oid = $1 AND l.boundary_set = b.id) "
							   "AND b.id IS DISTINCT FROM (SELECT max(p.id) FROM zorder.boundary_sets p "
							   "WHERE p.relid::oid = $1 AND p.origin IN ('prepare', 'copy') "
							   "AND p.id > coalesce((SELECT l.boundary_set FROM zorder.layouts l "
							   "WHERE l.relid::oid = $1), 0))",
							   1, argtypes, args, NULL, NULL, NULL);
}
