/*-------------------------------------------------------------------------
 *
 * tableset.c
 *	  One boundary set for a whole Citus distributed table, made on its
 *	  coordinator from a sample of every shard.
 *
 * Citus sends an index to every shard unchanged, so an index on
 * zorder.layout_key(7, a, b) means the same on every shard only if set 7
 * is the same set on every node, and each shard is laid out with it.  A
 * full call on the coordinator therefore first asks each shard for a
 * sample of its keys (zorder._shard_sample_set: the boundaries its own
 * sample would have, a quantile summary of the shard), then merges them
 * here into the table's boundaries, each shard weighed by its size, and
 * stores the set under an id that no node gives a set of its own (from
 * ZORDER_TABLE_SET_FIRST_ID on).  Each node then
 * stores the set under that id and lays its shards out with it
 * (optimize.c).
 *
 * The samples are values of the owner's table, in the binary or text form
 * of their types: they are read back, and compared, as the owner in a
 * security-restricted operation, as the key types' functions may be the
 * owner's.  Nothing in a node's answer is trusted: each must be a set of
 * the table's key columns and their types.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "access.h"
#include "boundsets.h"
#include "layout.h"
#include "quantile.h"
#include "recognize.h"
#include "tableset.h"

/* At most so many values a key's merged sample holds */
#define TABLE_SET_MAX_VALUES 2000000

/* A node's answer that is not a sample of the table */
static void
sample_refused(Relation shell, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("unexpected sample from a shard of table \"%s\"",
					RelationGetRelationName(shell)),
			 why ? errdetail_internal("%s", why) :
			 errdetail("Its boundaries do not read back as the types of the table's key columns.")));
}

/*
 * Each boundary of a shard's summary stands for the rows between it and
 * the next, about pages / (nbounds + 1) of them: it is repeated in the
 * merged sample as often as that weighs against the lightest, so that a
 * shard twice as large counts twice as much.
 */
int
zorder_table_set_make(Relation shell, int nkeys, const AttrNumber *attnums,
					  int nsamples, char **docs, const double *pages,
					  ZCurve curve)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "zorder table set",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	ZOwnerSwitch sw;
	LayoutSet **sets = palloc0(sizeof(LayoutSet *) * Max(nsamples, 1));
	double	   *weight = palloc0(sizeof(double) * Max(nsamples, 1));
	ZKeyColumn	cols[ZORDER_MAX_KEYS];
	int			bits = zorder_curve_bits(nkeys);
	int			sample_rows = 0;
	int			id;

	zorder_become_owner(shell->rd_rel->relowner, &sw);
	for (int k = 0; k < nkeys; k++)
		zorder_prepare_key_column(shell, attnums[k], &cols[k]);

	for (int i = 0; i < nsamples; i++)
	{
		char	   *why = NULL;

		if (docs[i] == NULL)
			continue;
		zorder_boundary_set_check_document(docs[i]);
		sets[i] = zorder_load_boundary_set_document(docs[i]);
		if (sets[i] == NULL || !zorder_set_fits(shell, sets[i], nkeys, attnums, &why))
			sample_refused(shell, why);
		if (sets[i]->curve != curve || sets[i]->bits != bits)
			sample_refused(shell, "It is a sample for another curve.");
		if (!zorder_decode_boundary_set(sets[i]))
			sample_refused(shell, NULL);
		for (int k = 0; k < nkeys; k++)
			weight[i] = Max(weight[i],
							Min(Max(pages[i], 1), MaxBlockNumber) /
							(sets[i]->cols[k].nbounds + 1));
	}

	for (int k = 0; k < nkeys; k++)
	{
		double		lightest = 0;
		double		total = 0;
		double		scale = 1;
		int64		m = 0;
		Datum	   *sorted;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nsamples; i++)
			if (sets[i] != NULL && sets[i]->cols[k].nbounds > 0 &&
				(lightest == 0 || weight[i] < lightest))
				lightest = weight[i];
		for (int i = 0; i < nsamples; i++)
			if (sets[i] != NULL && sets[i]->cols[k].nbounds > 0)
				total += sets[i]->cols[k].nbounds * Max(1, rint(weight[i] / lightest));

		/*
		 * Too many values: each shard's repeats shrink alike, so that every
		 * shard keeps its share.
		 */
		if (total > TABLE_SET_MAX_VALUES)
			scale = TABLE_SET_MAX_VALUES / total;
		sorted = palloc(sizeof(Datum) * (Min(total, TABLE_SET_MAX_VALUES) + nsamples + 1));
		for (int i = 0; i < nsamples; i++)
		{
			int64		repeat;

			if (sets[i] == NULL || sets[i]->cols[k].nbounds == 0)
				continue;
			repeat = (int64) Max(1, rint(Max(1, rint(weight[i] / lightest)) * scale));
			for (int b = 0; b < sets[i]->cols[k].nbounds; b++)
				for (int64 r = 0; r < repeat && m < TABLE_SET_MAX_VALUES + nsamples; r++)
					sorted[m++] = sets[i]->cols[k].bounds[b];
		}
		qsort_arg(sorted, m, sizeof(Datum), zorder_cmp_datums,
				  &cols[k].ssup);
		zorder_bounds_from_sorted(&cols[k], sorted, (int) m, nkeys, bits,
								  cxt);
		sample_rows = Max(sample_rows, (int) m);
	}
	id = zorder_save_boundary_set_as_table(RelationGetRelid(shell), nkeys,
										   cols, curve, bits, sample_rows);
	zorder_restore_user(&sw);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return id;
}

int
zorder_table_set_current(Relation shell, int nkeys, const AttrNumber *attnums,
						 ZCurve *curve)
{
	int			id = zorder_boundary_set_newest(RelationGetRelid(shell),
												"optimize");
	LayoutSet  *set;
	char	   *why;

	if (id == 0)
		return 0;
	set = zorder_load_boundary_set(id, false);
	if (set != NULL)
		*curve = set->curve;
	return zorder_set_fits(shell, set, nkeys, attnums, &why) ? id : 0;
}
