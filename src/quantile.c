/*-------------------------------------------------------------------------
 *
 * quantile.c
 *	  Rank normalisation of key columns: a block sample of the table gives
 *	  each column quantile boundaries, and a value's coordinate on the curve
 *	  is the number of its bucket.
 *
 * Raw bit patterns make a poor curve under skew: most rows share a few
 * high-order bits and the curve degenerates into a sort on the other
 * columns.  Buckets of equal population make every column count alike,
 * whatever its type or distribution.  Values are compared with the column's
 * default btree ordering and its collation, so any type with a btree
 * opclass can be a key.  The key only orders rows: BRIN compares the real
 * values, so a coarse bucket costs skipping, never correctness.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "catalog/pg_am.h"
#include "commands/defrem.h"
#include "common/pg_prng.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/sampling.h"

#include "zorder.h"

/* Never more buckets than this per column: a sample cannot resolve more. */
#define MAX_BUCKETS 65536

/*
 * Set up col for key column attnum of rel: type, collation and the
 * comparator of the type's default btree opclass.
 */
void
zorder_prepare_key_column(Relation rel, AttrNumber attnum, ZKeyColumn *col)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	Oid			opclass;
	Oid			opfamily;
	Oid			opcintype;
	Oid			ltop;

	memset(col, 0, sizeof(ZKeyColumn));
	col->attnum = attnum;
	col->typid = att->atttypid;
	col->collid = att->attcollation;
	col->typlen = att->attlen;
	col->typbyval = att->attbyval;

	opclass = GetDefaultOpClass(col->typid, BTREE_AM_OID);
	if (!OidIsValid(opclass))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("data type %s has no default btree operator class",
						format_type_be(col->typid)),
				 errdetail("Key column \"%s\" must have a type that can be sorted.",
						   NameStr(att->attname))));
	opfamily = get_opclass_family(opclass);
	opcintype = get_opclass_input_type(opclass);
	ltop = get_opfamily_member(opfamily, opcintype, opcintype,
							   BTLessStrategyNumber);
	if (!OidIsValid(ltop))
		elog(ERROR, "missing operator %d(%u,%u) in opfamily %u",
			 BTLessStrategyNumber, opcintype, opcintype, opfamily);

	col->ssup.ssup_cxt = CurrentMemoryContext;
	col->ssup.ssup_collation = col->collid;
	col->ssup.ssup_nulls_first = false;
	PrepareSortSupportFromOrderingOp(ltop, &col->ssup);
}

static int
compare_datums(const void *a, const void *b, void *arg)
{
	ZKeyColumn *col = (ZKeyColumn *) arg;

	return ApplySortComparator(*(const Datum *) a, false,
							   *(const Datum *) b, false, &col->ssup);
}

/* Copy a value out of a buffer page, detoasted. */
static Datum
copy_value(ZKeyColumn *col, Datum value)
{
	if (col->typlen == -1)
		return PointerGetDatum(PG_DETOAST_DATUM_COPY(value));
	return datumCopy(value, col->typbyval, col->typlen);
}

/*
 * Draw a sample of up to targrows rows, as ANALYZE does: one block per
 * wanted row at most, chosen at random, and a reservoir over the rows of
 * those blocks that are not dead.  The seed is fixed so that a table gives
 * the same layout every time.  Then give each key column its boundaries:
 * up to min(2^bits, MAX_BUCKETS) buckets of equal population.
 *
 * Returns the number of rows sampled.
 */
int
zorder_sample_bounds(Relation rel, int nkeys, ZKeyColumn *cols, int bits,
					 int targrows)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	BlockSamplerData bs;
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	pg_prng_state prng;
	Datum	   *values;			/* targrows x nkeys */
	bool	   *nulls;
	int			nsampled = 0;
	double		seen = 0;
	TransactionId oldest_xmin = GetOldestNonRemovableTransactionId(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	int64		maxbuckets = Min((int64) 1 << Min(bits, 30), MAX_BUCKETS);
	MemoryContext sample_cxt;
	MemoryContext oldcxt;
	struct
	{
		int			slot;
		HeapTuple	tuple;
	}		   *picked;
	int			npicked;

	sample_cxt = AllocSetContextCreate(CurrentMemoryContext,
									   "zorder sample",
									   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(sample_cxt);

	values = palloc(sizeof(Datum) * targrows * nkeys);
	nulls = palloc(sizeof(bool) * targrows * nkeys);
	picked = palloc(sizeof(*picked) * MaxHeapTuplesPerPage);
	pg_prng_seed(&prng, 0x5a4f52444552ULL ^ RelationGetRelid(rel));
	BlockSampler_Init(&bs, nblocks, targrows, (uint32) pg_prng_uint32(&prng));

	while (BlockSampler_HasMore(&bs))
	{
		BlockNumber blkno = BlockSampler_Next(&bs);
		Buffer		buf;
		Page		page;
		OffsetNumber maxoff;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL,
								 strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		maxoff = PageGetMaxOffsetNumber(page);

		/*
		 * Copy the chosen tuples first: their values may need detoasting,
		 * which must not happen under the buffer lock.
		 */
		npicked = 0;
		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			ItemId		itemid = PageGetItemId(page, off);
			HeapTupleData tuple;
			int			slot;

			if (!ItemIdIsNormal(itemid))
				continue;
			tuple.t_data = (HeapTupleHeader) PageGetItem(page, itemid);
			tuple.t_len = ItemIdGetLength(itemid);
			tuple.t_tableOid = RelationGetRelid(rel);
			ItemPointerSet(&tuple.t_self, blkno, off);
			if (HeapTupleSatisfiesVacuum(&tuple, oldest_xmin, buf) == HEAPTUPLE_DEAD)
				continue;

			/* reservoir sampling (Vitter's algorithm R) */
			if (nsampled < targrows)
				slot = nsampled++;
			else
			{
				uint64		r = pg_prng_uint64_range(&prng, 0, (uint64) seen);

				slot = (r < (uint64) targrows) ? (int) r : -1;
			}
			seen += 1;
			if (slot < 0)
				continue;
			picked[npicked].slot = slot;
			picked[npicked].tuple = heap_copytuple(&tuple);
			npicked++;
		}
		UnlockReleaseBuffer(buf);

		for (int i = 0; i < npicked; i++)
		{
			int			slot = picked[i].slot;

			/* a replaced sample's values are left to the context */
			for (int k = 0; k < nkeys; k++)
			{
				bool		isnull;
				Datum		d = heap_getattr(picked[i].tuple, cols[k].attnum,
											 desc, &isnull);

				nulls[slot * nkeys + k] = isnull;
				values[slot * nkeys + k] = isnull ? (Datum) 0 :
					copy_value(&cols[k], d);
			}
			heap_freetuple(picked[i].tuple);
		}
	}
	FreeAccessStrategy(strategy);

	/* boundaries live in the caller's context */
	for (int k = 0; k < nkeys; k++)
	{
		ZKeyColumn *col = &cols[k];
		Datum	   *sorted = palloc(sizeof(Datum) * Max(nsampled, 1));
		int			m = 0;
		int64		nbuckets;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nsampled; i++)
			if (!nulls[i * nkeys + k])
				sorted[m++] = values[i * nkeys + k];
		qsort_arg(sorted, m, sizeof(Datum), compare_datums, col);

		nbuckets = Min(maxbuckets, m);
		col->bounds = MemoryContextAlloc(oldcxt,
										 sizeof(Datum) * Max(nbuckets, 1));
		col->nbounds = 0;
		for (int64 j = 1; j < nbuckets; j++)
		{
			Datum		b = sorted[j * m / nbuckets];

			if (col->nbounds > 0 &&
				compare_datums(&b, &col->bounds[col->nbounds - 1], col) <= 0)
				continue;
			MemoryContextSwitchTo(oldcxt);
			col->bounds[col->nbounds++] = datumCopy(b, col->typbyval,
													col->typlen);
			MemoryContextSwitchTo(sample_cxt);
		}
	}

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(sample_cxt);
	return nsampled;
}

/* Bucket of a value: the number of boundaries <= value; NULLs come last. */
uint32
zorder_bucket(ZKeyColumn *col, Datum value, bool isnull)
{
	int			lo = 0;
	int			hi = col->nbounds;

	if (isnull)
		return col->nbounds + 1;
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (ApplySortComparator(col->bounds[mid], false, value, false,
								&col->ssup) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Coordinate of a value on a curve of bits bits per column: its bucket,
 * spread evenly over [0, 2^bits) so that columns with few buckets still
 * split the space at the top levels of the curve.
 */
uint32
zorder_coordinate(ZKeyColumn *col, Datum value, bool isnull, int bits)
{
	uint64		bucket = zorder_bucket(col, value, isnull);

	return (uint32) ((bucket << bits) / (uint64) (col->nbounds + 2));
}

/* The boundaries as the text of a text[] of their output forms. */
char *
zorder_bounds_to_text(ZKeyColumn *col)
{
	Oid			outfunc;
	bool		isvarlena;
	Datum	   *texts;
	ArrayType  *arr;

	getTypeOutputInfo(col->typid, &outfunc, &isvarlena);
	texts = palloc(sizeof(Datum) * Max(col->nbounds, 1));
	for (int i = 0; i < col->nbounds; i++)
		texts[i] = CStringGetTextDatum(OidOutputFunctionCall(outfunc,
															 col->bounds[i]));
	arr = construct_array(texts, col->nbounds, TEXTOID, -1, false,
						  TYPALIGN_INT);
	return DatumGetCString(OidFunctionCall1(F_ARRAY_OUT,
											PointerGetDatum(arr)));
}
