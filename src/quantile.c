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
 * Why one file of this size: the block sampler, shared by optimize and the
 * key advisor, and the boundaries drawn from its rows use one row format
 * and one memory budget; apart, the sample's internals would be exported.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "commands/defrem.h"
#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/sampling.h"

#include "heappage.h"
#include "keyenc.h"
#include "pg_compat.h"
#include "quantile.h"
#include "subxact.h"
#include "zorder.h"

/*
 * Buckets per column.  A cell (one bucket on every key) only needs to hold
 * less than a block range of rows: rows inside a cell stay in scan order,
 * but a block range is then still a box of cells.  2^24 cells are enough
 * for that up to tens of billions of rows, so d keys get 2^(24/d) buckets
 * each, within [MIN_BUCKETS, MAX_BUCKETS] (a 100k-row sample cannot resolve
 * more).  Few buckets keep the boundary search in the CPU cache.
 */
#define CELL_BITS	24
#define MIN_BUCKETS 256
#define MAX_BUCKETS 65536

/*
 * A sampled value wider than this takes no part in the boundaries, as in
 * ANALYZE (its WIDTH_THRESHOLD): otherwise a key column of wide values
 * would hold its whole sample in memory, and 65,535 boundaries of 16 kB
 * would pass the 1 GB a set's bytea can hold.  Such values still get
 * their coordinates, by comparison with the boundaries.
 */
#define SAMPLE_WIDTH_LIMIT 1024

int
zorder_max_buckets(int nkeys, int bits)
{
	int64		n = (int64) 1 << Min(30, (CELL_BITS + nkeys - 1) / nkeys);

	n = Max(n, MIN_BUCKETS);
	n = Min(n, MAX_BUCKETS);
	return (int) Min(n, (int64) 1 << Min(bits, 30));
}

/*
 * Set up col for key column attnum of rel: type, collation and the
 * comparator of the type's default btree opclass.
 */
void
zorder_prepare_key_column(Relation rel, AttrNumber attnum, ZKeyColumn *col)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);

	zorder_prepare_key_type(att->atttypid, att->atttypmod, att->attcollation,
							NameStr(att->attname), col);
	col->attnum = attnum;
}

/*
 * Set up col for values of type typid (typmod, compared under collation
 * collid) with the comparator of the type's default btree opclass; colname
 * names the column in messages.  attnum is left 0.
 */
void
zorder_prepare_key_type(Oid typid, int32 typmod, Oid collid,
						const char *colname, ZKeyColumn *col)
{
	Oid			opclass;
	Oid			opfamily;
	Oid			opcintype;
	Oid			ltop;

	memset(col, 0, sizeof(ZKeyColumn));
	col->typid = typid;
	col->typmod = typmod;
	col->collid = collid;
	get_typlenbyval(typid, &col->typlen, &col->typbyval);

	opclass = GetDefaultOpClass(col->typid, BTREE_AM_OID);
	if (!OidIsValid(opclass))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("data type %s has no default btree operator class",
						format_type_be(col->typid)),
				 errdetail("Key column \"%s\" must have a type that can be sorted.",
						   colname)));
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

	if (col->ssup.comparator == ssup_datum_signed_cmp)
		col->cmpkind = ZCMP_SIGNED;
	else if (col->ssup.comparator == ssup_datum_int32_cmp)
		col->cmpkind = ZCMP_INT32;
	else if (col->ssup.comparator == ssup_datum_unsigned_cmp)
		col->cmpkind = ZCMP_UNSIGNED;
	else
		col->cmpkind = ZCMP_GENERIC;
}

static int
compare_datums(const void *a, const void *b, void *arg)
{
	ZKeyColumn *col = (ZKeyColumn *) arg;

	return ApplySortComparator(*(const Datum *) a, false,
							   *(const Datum *) b, false, &col->ssup);
}

/* A copy of a value, detoasted so that comparisons need not fetch it. */
Datum
zorder_copy_value(ZKeyColumn *col, Datum value)
{
	if (col->typlen == -1)
		return PointerGetDatum(PG_DETOAST_DATUM_COPY(value));
	return datumCopy(value, col->typbyval, col->typlen);
}

/* Append a copy of b, made in cxt, to the boundaries of col. */
static void
add_bound(ZKeyColumn *col, Datum b, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

	col->bounds[col->nbounds++] = datumCopy(b, col->typbyval, col->typlen);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Give col nbuckets - 1 boundaries from the m sorted sample values, in cxt.
 *
 * Buckets hold equal shares of the sample, except that a frequent value
 * repeats as a boundary: a value equal to r boundaries owns r buckets of
 * its own, and its rows are spread over them (see zorder_row_coordinates),
 * so that
 * it gets a share of the space as large as its share of the rows.
 *
 * With align, and a power-of-two number of buckets, the values that fill
 * two buckets or more get bands that start and end on the lines along
 * which the curve splits the space, as far as zk_align_bands can place
 * them there, and the runs of lighter values between them take the
 * buckets that are left.  A filter on such a value then reads the ranges
 * inside its band and few more, where an unaligned band reads the rows of
 * ranges that its edges cut as well.  With one key the curve is the sort
 * order itself: there are no cells to line up with.
 */
static void
choose_bounds(ZKeyColumn *col, Datum *sorted, int m, int nbuckets,
			  bool align, MemoryContext cxt)
{
	int		   *start;			/* first sample value of each band */
	double	   *width;
	uint8	   *heavy;
	uint32	   *edges;
	int			nbands = 0;

	if (!align || (nbuckets & (nbuckets - 1)) != 0)
	{
		for (int64 j = 1; j < nbuckets; j++)
			add_bound(col, sorted[j * m / nbuckets], cxt);
		return;
	}

	/*
	 * Bands: each value of width 2 buckets or more alone, the values between
	 * them together.
	 */
	start = palloc(sizeof(int) * (m + 1));
	width = palloc(sizeof(double) * m);
	heavy = palloc(sizeof(uint8) * m);
	for (int i = 0; i < m;)
	{
		int			j = i + 1;
		bool		is_heavy;

		while (j < m && compare_datums(&sorted[i], &sorted[j], col) == 0)
			j++;
		is_heavy = (int64) (j - i) * nbuckets >= (int64) 2 * m;
		if (is_heavy || nbands == 0 || heavy[nbands - 1])
		{
			start[nbands] = i;
			heavy[nbands] = is_heavy;
			nbands++;
		}
		i = j;
	}
	start[nbands] = m;
	for (int e = 0; e < nbands; e++)
		width[e] = (double) (start[e + 1] - start[e]) * nbuckets / m;

	edges = palloc(sizeof(uint32) * (nbands + 1));
	zk_align_bands(nbands, width, heavy, (uint32) nbuckets,
				   palloc(zk_align_bands_space(nbands, (uint32) nbuckets)),
				   edges);

	/*
	 * A heavy band [a, b) is the value repeated as boundaries a - 1 .. b - 2
	 * (buckets a .. b - 1); a light band takes the boundaries up to b - 2 at
	 * even steps through its values.
	 */
	for (int e = 0; e < nbands; e++)
	{
		int64		first = edges[e] > 0 ? edges[e] - 1 : 0;
		int64		nb = (int64) edges[e + 1] - 1 - first;
		int64		len = start[e + 1] - start[e];

		for (int64 j = 0; j < nb; j++)
		{
			int64		at = heavy[e] ? 0 : (j + 1) * len / (nb + 1);

			add_bound(col, sorted[start[e] + at], cxt);
		}
	}
	Assert(col->nbounds == nbuckets - 1);
}

/* The sample being drawn: reservoir sampling (Vitter's algorithm R). */
typedef struct SampleReservoir
{
	pg_prng_state prng;
	int			targrows;
	int			nsampled;		/* rows in the reservoir */
	double		seen;			/* live rows seen */
	TransactionId oldest_xmin;
	int			npicked;		/* rows of this page taken */
	int			slots[MaxHeapTuplesPerPage];	/* ... and their slots */
} SampleReservoir;

/*
 * A ZRowKeep (heappage.c): each row that is not dead gets a chance at a
 * slot of the reservoir; those that win one are taken.
 */
static bool
sample_row(HeapTuple tuple, Buffer buf, void *arg)
{
	SampleReservoir *res = (SampleReservoir *) arg;
	int			slot;

	if (HeapTupleSatisfiesVacuum(tuple, res->oldest_xmin, buf) == HEAPTUPLE_DEAD)
		return false;
	if (res->nsampled < res->targrows)
		slot = res->nsampled++;
	else
	{
		uint64		r = pg_prng_uint64_range(&res->prng, 0, (uint64) res->seen);

		slot = (r < (uint64) res->targrows) ? (int) r : -1;
	}
	res->seen += 1;
	if (slot < 0)
		return false;
	res->slots[res->npicked++] = slot;
	return true;
}

/*
 * Draw a sample of up to targrows rows of rel, much as ANALYZE does: up to
 * ZORDER_SAMPLE_BLOCKS blocks chosen at random, and a reservoir over the
 * rows of those blocks that are not dead.  The seed is fixed so that a
 * table gives the same sample, and the same layout, every time; the key
 * advisor (advisor.c) draws its sample here too, so that it sees what
 * optimize sees.  take(arg, slot, tuple, block) keeps what it needs of
 * each row that wins a slot (a slot taken again replaces a row drawn
 * before); the tuple is freed after.  Returns the rows sampled, with the
 * live rows seen and the blocks read in *seen and *nblocks_read.
 */
int
zorder_sample_rows(Relation rel, int targrows, ZSampleTake take, void *arg,
				   double *seen, BlockNumber *nblocks_read)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	BlockSamplerData bs;
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	ZorderBlockReader reader;
	Buffer		buf;
	SampleReservoir res;
	HeapTuple  *picked = palloc(sizeof(HeapTuple) * MaxHeapTuplesPerPage);
	BlockNumber nread = 0;

	memset(&res, 0, sizeof(res));
	res.targrows = targrows;
	res.oldest_xmin = GetOldestNonRemovableTransactionId(rel);
	pg_prng_seed(&res.prng, 0x5a4f52444552ULL ^ RelationGetRelid(rel));
	BlockSampler_Init(&bs, nblocks, Min(targrows, ZORDER_SAMPLE_BLOCKS),
					  (uint32) pg_prng_uint32(&res.prng));

	zorder_block_reader_begin(&reader, rel, strategy, false,
							  zorder_next_sampled_block, &bs);
	while ((buf = zorder_block_reader_next(&reader)) != InvalidBuffer)
	{
		BlockNumber blk = BufferGetBlockNumber(buf);
		int			npicked;

		CHECK_FOR_INTERRUPTS();
		nread++;
		res.npicked = 0;
		npicked = zorder_buffer_rows(rel, buf, sample_row, &res, picked);
		for (int i = 0; i < npicked; i++)
		{
			take(arg, res.slots[i], picked[i], blk);
			heap_freetuple(picked[i]);
		}
	}
	zorder_block_reader_end(&reader);
	FreeAccessStrategy(strategy);
	pfree(picked);
	if (seen)
		*seen = res.seen;
	if (nblocks_read)
		*nblocks_read = nread;
	return res.nsampled;
}

/* What zorder_sample_bounds keeps of each sampled row: its key values. */
typedef struct KeySample
{
	Relation	rel;
	int			nkeys;
	ZKeyColumn *cols;
	Datum	   *values;			/* targrows x nkeys */
	bool	   *nulls;
} KeySample;

static void
take_keys(void *arg, int slot, HeapTuple tuple, BlockNumber blk)
{
	KeySample  *ks = (KeySample *) arg;
	TupleDesc	desc = RelationGetDescr(ks->rel);

	/* a replaced sample's values are left to the sample's context */
	for (int k = 0; k < ks->nkeys; k++)
	{
		ZKeyColumn *col = &ks->cols[k];
		bool		isnull;
		Datum		d = heap_getattr(tuple, col->attnum, desc, &isnull);

		/* too wide: left out, as a NULL is (read without detoasting) */
		if (!isnull && col->typlen == -1 &&
			toast_raw_datum_size(d) > SAMPLE_WIDTH_LIMIT)
			isnull = true;
		ks->nulls[slot * ks->nkeys + k] = isnull;
		ks->values[slot * ks->nkeys + k] = isnull ? (Datum) 0 :
			zorder_copy_value(col, d);
	}
}

/*
 * Draw a sample of up to targrows rows (zorder_sample_rows) and give each
 * key column its boundaries: up to zorder_max_buckets() buckets (see
 * choose_bounds).
 *
 * Returns the number of rows sampled.
 */
int
zorder_sample_bounds(Relation rel, int nkeys, ZKeyColumn *cols, int bits,
					 int targrows)
{
	KeySample	ks;
	int			nsampled;
	Datum	   *values;
	bool	   *nulls;
	MemoryContext sample_cxt;
	MemoryContext oldcxt;

	sample_cxt = AllocSetContextCreate(CurrentMemoryContext,
									   "zorder sample",
									   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(sample_cxt);

	values = palloc(sizeof(Datum) * targrows * nkeys);
	nulls = palloc(sizeof(bool) * targrows * nkeys);
	ks.rel = rel;
	ks.nkeys = nkeys;
	ks.cols = cols;
	ks.values = values;
	ks.nulls = nulls;
	nsampled = zorder_sample_rows(rel, targrows, take_keys, &ks, NULL, NULL);

	/* boundaries live in the caller's context */
	for (int k = 0; k < nkeys; k++)
	{
		ZKeyColumn *col = &cols[k];
		Datum	   *sorted = palloc(sizeof(Datum) * Max(nsampled, 1));
		int			m = 0;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nsampled; i++)
			if (!nulls[i * nkeys + k])
				sorted[m++] = values[i * nkeys + k];
		qsort_arg(sorted, m, sizeof(Datum), compare_datums, col);
		zorder_bounds_from_sorted(col, sorted, m, nkeys, bits, oldcxt);
	}

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(sample_cxt);
	return nsampled;
}

/*
 * Give col, one of nkeys key columns, the boundaries a full optimize would
 * choose from the m sorted non-NULL sample values (see choose_bounds), in
 * cxt, and prepare them for a curve of bits bits.  zorder_sample_bounds
 * ends here, and so does the key advisor (advisor.c), which lays its own
 * sample out along each candidate's curve exactly as optimize would.
 */
void
zorder_bounds_from_sorted(ZKeyColumn *col, Datum *sorted, int m, int nkeys,
						  int bits, MemoryContext cxt)
{
	int64		nbuckets = Min(zorder_max_buckets(nkeys, bits), m);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

	col->bounds = palloc(sizeof(Datum) * Max(nbuckets, 1));
	col->nbounds = 0;
	if (nbuckets > 1)
		choose_bounds(col, sorted, m, (int) nbuckets, nkeys > 1, cxt);
	zorder_prepare_bounds(col, bits);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * An integer Datum as a uint64 of the same order, for the integer kinds.
 */
static inline uint64
ordered_u64(const ZKeyColumn *col, Datum value)
{
	switch (col->cmpkind)
	{
		case ZCMP_SIGNED:
			return (uint64) DatumGetInt64(value) ^ (UINT64CONST(1) << 63);
		case ZCMP_INT32:
			return (uint64) (uint32) DatumGetInt32(value) ^ UINT64CONST(0x80000000);
		default:
			return (uint64) value;
	}
}

/*
 * ordered_u64 for other modules: the regions of time-ordered keys
 * (regions.c) compare and store values of the integer kinds this way.
 */
uint64
zorder_ordered_u64(const ZKeyColumn *col, Datum value)
{
	Assert(col->cmpkind != ZCMP_GENERIC);
	return ordered_u64(col, value);
}

/*
 * The buckets that rows of an integer-kind column with values in (lo, hi]
 * (zorder_ordered_u64's, lo < hi) fall in: first to last, whose coordinates
 * are col->coord[first] to col->coord[last].  A value equal to boundaries
 * is spread over the buckets they close (zorder_row_coordinates): the span
 * holds them all.  Bands of values (regions.c) measure the table's share of
 * a band by its buckets, and find the ranges that hold its rows by their
 * coordinates.
 */
void
zorder_bucket_span(const ZKeyColumn *col, uint64 lo, uint64 hi,
				   uint32 *first, uint32 *last)
{
	Assert(col->ubounds != NULL && lo < hi);
	*first = zk_bound_table_count(&col->btable, lo + 1, true);
	*last = zk_bound_table_count(&col->btable, hi, false);
}

/*
 * Set up col's bucket search for boundaries already chosen or loaded, and
 * its coordinates on a curve of bits bits per column, in the memory
 * context of the boundaries.  Must follow every change of col->bounds.
 *
 * Integer kinds count boundaries through a slice table (keyenc.c); other
 * types by a binary search that calls the comparator.
 */
void
zorder_prepare_bounds(ZKeyColumn *col, int bits)
{
	MemoryContext cxt = GetMemoryChunkContext(col->bounds);
	uint32		ncells;
	uint32	   *start;

	col->coord_bits = bits;
	col->coord = MemoryContextAlloc(cxt, sizeof(uint32) * (col->nbounds + 1));
	for (int b = 0; b <= col->nbounds; b++)
		col->coord[b] = (uint32) (((uint64) b << bits) /
								  (uint64) (col->nbounds + 1));

	col->ubounds = NULL;
	if (col->cmpkind == ZCMP_GENERIC)
		return;
	col->ubounds = MemoryContextAlloc(cxt, sizeof(uint64) * Max(col->nbounds, 1));
	for (int i = 0; i < col->nbounds; i++)
		col->ubounds[i] = ordered_u64(col, col->bounds[i]);
	ncells = zk_bound_table_cells(col->nbounds);
	start = MemoryContextAlloc(cxt, sizeof(uint32) * (ncells + 1));
	zk_bound_table_build(&col->btable, col->ubounds, col->nbounds, ncells,
						 start);
}

/*
 * Number of boundaries <= value (strict: < value), by a branch-free binary
 * search: random keys make the branches of an ordinary one unpredictable.
 */
static int
bounds_count(ZKeyColumn *col, Datum value, bool strict)
{
	const Datum *base = col->bounds;
	int			n = col->nbounds;
	int			c;

	if (n == 0)
		return 0;
	while (n > 1)
	{
		int			half = n / 2;

		c = ApplySortComparator(base[half - 1], false, value, false,
								&col->ssup);
		base = (strict ? c < 0 : c <= 0) ? base + half : base;
		n -= half;
	}
	c = ApplySortComparator(*base, false, value, false, &col->ssup);
	return (base - col->bounds) + ((strict ? c < 0 : c <= 0) ? 1 : 0);
}

/*
 * Coordinates of one row on a curve of bits bits per column: coords[k] for
 * key column k, whose value is values[k] (isnull[k]).
 *
 * A value's coordinate is its bucket, spread evenly over [0, 2^bits) so
 * that columns with few buckets still split the space at the top levels of
 * the curve.  The nbounds + 1 buckets of values share the axis exactly:
 * with a power of two of them, every bucket boundary that is a multiple of
 * 2^k buckets lies on a line along which the curve splits the axis (see
 * choose_bounds).  NULLs take the last coordinate, in the cells of the last
 * bucket.
 *
 * A value equal to no boundary is in bucket hi, the number of boundaries
 * below it.  A value equal to r boundaries, lo .. lo + r - 1, owns the r
 * buckets after bucket lo, which holds the values just below it (bucket
 * lo + r holds the values just above it as well, when there are any); a
 * hash of a seed picks one of them, so the rows of a frequent value are
 * spread evenly over its share of the axis instead of piling up in one
 * thin slice that every block range then cuts across.
 *
 * The seed is drawn from the row's own buckets on every key column, nothing else:
 * the key of a row is then a function of its values alone, so that
 * zorder.layout_key (layoutkey.c) computes in SQL exactly the key the
 * rewrite sorts by, and the same row gets the same key in every call.
 * Rows of a frequent value still spread over its buckets as the other
 * columns vary; rows equal on every key column share one cell, which
 * costs no skipping since their values are the same.
 */
void
zorder_row_coordinates(ZKeyColumn *cols, int nkeys, const Datum *values,
					   const bool *isnull, int bits, uint32 *coords)
{
	uint32		hi[ZORDER_MAX_KEYS];
	uint32		lo[ZORDER_MAX_KEYS];
	uint32		seed = 0;
	bool		spread = false;

	for (int k = 0; k < nkeys; k++)
	{
		ZKeyColumn *col = &cols[k];

		Assert(col->coord != NULL && col->coord_bits == bits);
		if (isnull[k])
		{
			hi[k] = lo[k] = col->nbounds + 1;
			continue;
		}
		if (col->ubounds)
		{
			uint64		u = ordered_u64(col, values[k]);

			hi[k] = zk_bound_table_count(&col->btable, u, false);
			lo[k] = (hi[k] == 0 || col->ubounds[hi[k] - 1] != u) ? hi[k] :
				zk_bound_table_count(&col->btable, u, true);
		}
		else
		{
			hi[k] = (uint32) bounds_count(col, values[k], false);
			lo[k] = (hi[k] == 0 ||
					 ApplySortComparator(col->bounds[hi[k] - 1], false,
										 values[k], false, &col->ssup) != 0) ?
				hi[k] : (uint32) bounds_count(col, values[k], true);
		}
		spread |= (lo[k] != hi[k]);
	}
	if (spread)
		for (int k = 0; k < nkeys; k++)
			seed = hash_bytes_uint32(seed ^ hi[k]);
	for (int k = 0; k < nkeys; k++)
	{
		ZKeyColumn *col = &cols[k];

		if (isnull[k])
			coords[k] = (uint32) (((uint64) 1 << bits) - 1);
		else if (lo[k] == hi[k])
			coords[k] = col->coord[hi[k]];
		else
			coords[k] = col->coord[lo[k] + 1 +
								   (uint32) (((uint64) hash_bytes_uint32(seed ^ (k * 0x9e3779b9U)) *
											  (uint64) (hi[k] - lo[k])) >> 32)];
	}
}

/*
 * Stored form of a column's boundaries (one bytea per key column in
 * zorder.layouts.bounds).  It must read back the same whatever the reading
 * session's settings are: text output depends on DateStyle, IntervalStyle,
 * extra_float_digits and more, and a date written as 01/02/2024 under one
 * DateStyle is read back as another day under the next.  So the values are
 * kept in the binary form of the type's send function, read back with its
 * receive function.  Only a type without binary I/O keeps its text output.
 *
 * The type, typmod and collation the boundaries were chosen under come
 * first: boundaries chosen for another type or another order mean nothing
 * to the comparator of the column as it is now, so a reader that finds
 * them changed must take new boundaries rather than place rows with these.
 *
 * Layout, all integers in network byte order:
 *		int32	format version (BOUNDS_FORMAT)
 *		uint32	type OID
 *		int32	typmod
 *		uint32	collation OID
 *		byte	'b' (binary send form) or 't' (text output)
 *		int32	number of boundaries
 *		for each: int32 length, then that many bytes
 */
#define BOUNDS_FORMAT	1

Datum
zorder_bounds_to_bytea(ZKeyColumn *col)
{
	return zorder_bounds_encode(col, false);
}

/*
 * As zorder_bounds_to_bytea; text_form: in the text form even if the type
 * has binary I/O (whose form embeds OIDs for arrays and composites, which
 * a dump and restore changes).  The caller then fixes the settings that
 * text output depends on.
 */
Datum
zorder_bounds_encode(ZKeyColumn *col, bool text_form)
{
	StringInfoData buf;
	Oid			sendfunc;
	Oid			outfunc;
	bool		isvarlena;
	char		form;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	char		typdelim;
	Oid			typioparam;

	/* a type may have no send function: then its text form it is */
	get_type_io_data(col->typid, IOFunc_send, &typlen, &typbyval, &typalign,
					 &typdelim, &typioparam, &sendfunc);
	form = (OidIsValid(sendfunc) && !text_form) ? 'b' : 't';
	if (form == 't')
		getTypeOutputInfo(col->typid, &outfunc, &isvarlena);

	pq_begintypsend(&buf);
	pq_sendint32(&buf, BOUNDS_FORMAT);
	pq_sendint32(&buf, col->typid);
	pq_sendint32(&buf, col->typmod);
	pq_sendint32(&buf, col->collid);
	pq_sendbyte(&buf, form);
	pq_sendint32(&buf, col->nbounds);
	for (int i = 0; i < col->nbounds; i++)
	{
		if (form == 'b')
		{
			bytea	   *v = OidSendFunctionCall(sendfunc, col->bounds[i]);

			pq_sendint32(&buf, VARSIZE(v) - VARHDRSZ);
			pq_sendbytes(&buf, VARDATA(v), VARSIZE(v) - VARHDRSZ);
		}
		else
		{
			char	   *v = OidOutputFunctionCall(outfunc, col->bounds[i]);
			int			len = strlen(v);

			pq_sendint32(&buf, len);
			pq_sendbytes(&buf, v, len);
		}
	}
	return PointerGetDatum(pq_endtypsend(&buf));
}

/*
 * Error for stored boundaries that do not parse.  Not a corruption error:
 * the table is fine, only zorder's record of its layout is not (a hand
 * edit of zorder.layouts), and a full optimize writes a new one.
 */
static void
bounds_corrupt(ZKeyColumn *col)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the stored boundaries of a layout cannot be read"),
			 errdetail("Those of key column number %d are cut short or not in the format zorder writes.",
					   col->attnum),
			 errhint("Run zorder.optimize with full => true to lay the table out again.")));
}

/*
 * Load the boundaries stored by zorder_bounds_to_bytea into col, set up
 * for the column as it is now (zorder_prepare_key_column).  Returns false,
 * leaving col's boundaries empty, if they were chosen for another type,
 * typmod or collation than the column has now, or if they no longer read
 * back as that type (zorder_bounds_read_back).
 */
bool
zorder_bounds_from_bytea(ZKeyColumn *col, bytea *stored)
{
	return zorder_bounds_read_back(col, stored, true);
}

/*
 * Does an error raised while boundaries were read back say that they no
 * longer fit their type, rather than that the statement was cancelled or
 * the server is short of something?  The type's input function, a
 * domain's CHECK at any depth (which the table's owner writes) or the
 * record and array readers raise the first kind in any class but these.
 */
static bool
read_back_failed(const ErrorData *edata)
{
	int			class = ERRCODE_TO_CATEGORY(edata->sqlerrcode);

	return edata->elevel == ERROR &&
		class != ERRCODE_INSUFFICIENT_RESOURCES &&
		class != ERRCODE_OPERATOR_INTERVENTION &&
		class != ERRCODE_SYSTEM_ERROR &&
		class != ERRCODE_INTERNAL_ERROR;
}

/*
 * Check that stored boundaries are framed as zorder_bounds_encode writes
 * them (a header, then a length and the bytes of each value), reading no
 * value: what fails here is a damaged record, not a changed type.
 */
static void
bounds_check_framing(ZKeyColumn *col, bytea *stored)
{
	StringInfoData buf;
	char		form;
	int			n;

	buf.data = VARDATA_ANY(stored);
	buf.len = VARSIZE_ANY_EXHDR(stored);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (buf.len < 21 || pq_getmsgint(&buf, 4) != BOUNDS_FORMAT)
		bounds_corrupt(col);
	buf.cursor += 12;			/* type, typmod, collation */
	form = pq_getmsgbyte(&buf);
	n = (int) pq_getmsgint(&buf, 4);
	if ((form != 'b' && form != 't') || n < 0 ||
		n > (buf.len - buf.cursor) / 4)
		bounds_corrupt(col);
	for (int i = 0; i < n; i++)
	{
		int			len = (int) pq_getmsgint(&buf, 4);

		if (len < 0 || len > buf.len - buf.cursor)
			bounds_corrupt(col);
		buf.cursor += len;
		if (i < n - 1 && buf.len - buf.cursor < 4)
			bounds_corrupt(col);
	}
	if (buf.cursor != buf.len)
		bounds_corrupt(col);
}

/*
 * As zorder_bounds_decode, for boundaries stored while the key column's
 * type may have changed in place since: ALTER TYPE renames an enum label,
 * adds or drops a composite's attribute, or a domain gets a stricter
 * CHECK, and the type keeps its OID.  A boundary that no longer reads back
 * makes it return false, as for a changed type, so that the caller takes
 * new boundaries; it never shows the error, which quotes the stored value
 * (sampled from the table, maybe by a role the caller is not).  The input
 * functions run in a subtransaction, rolled back on such a failure; in
 * parallel mode, where none can start, such a failure raises an error that
 * quotes nothing instead.
 *
 * Callers run this as the table's owner in a security-restricted
 * operation: the input functions may run code the owner chose.
 */
typedef struct ReadBack
{
	ZKeyColumn *col;
	bytea	   *stored;
	bool		check_type;
	bool		ok;
} ReadBack;

static void
read_back(void *arg)
{
	ReadBack   *rb = (ReadBack *) arg;

	rb->ok = zorder_bounds_decode(rb->col, rb->stored, rb->check_type);
}

bool
zorder_bounds_read_back(ZKeyColumn *col, bytea *stored, bool check_type)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool ok = false;
	ReadBack	rb;
	ErrorData  *edata;

	/* a damaged record is an error of its own, whatever its type */
	bounds_check_framing(col, stored);
	if (IsInParallelMode())
	{
		PG_TRY();
		{
			ok = zorder_bounds_decode(col, stored, check_type);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			if (!read_back_failed(edata))
				PG_RE_THROW();
			FlushErrorState();
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("stored boundaries no longer read back as the type of their key column"),
					 errdetail("The type was changed in place (ALTER TYPE) since they were sampled."),
					 errhint("Store new boundaries with zorder.prepare_layout or CALL zorder.optimize.")));
		}
		PG_END_TRY();
		return ok;
	}

	rb.col = col;
	rb.stored = stored;
	rb.check_type = check_type;
	edata = zorder_try_in_subxact(read_back, &rb);
	if (edata == NULL)
		return rb.ok;
	if (!read_back_failed(edata))
		ReThrowError(edata);
	FreeErrorData(edata);
	col->nbounds = 0;
	col->bounds = NULL;
	return false;
}

/*
 * As zorder_bounds_from_bytea; check_type false: trust col's type, typmod
 * and collation over the OIDs recorded in stored (a boundary set records
 * them in a form that survives a dump and restore, where OIDs change).
 */
bool
zorder_bounds_decode(ZKeyColumn *col, bytea *stored, bool check_type)
{
	Oid			typid;
	int32		typmod;
	Oid			collid;
	StringInfoData buf;
	StringInfoData elem;
	char		form;
	int			n;
	Oid			iofunc;
	Oid			ioparam;

	col->nbounds = 0;
	col->bounds = NULL;
	buf.data = VARDATA_ANY(stored);
	buf.len = VARSIZE_ANY_EXHDR(stored);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (buf.len < 21)
		bounds_corrupt(col);
	if (pq_getmsgint(&buf, 4) != BOUNDS_FORMAT)
		bounds_corrupt(col);
	typid = (Oid) pq_getmsgint(&buf, 4);
	typmod = (int32) pq_getmsgint(&buf, 4);
	collid = (Oid) pq_getmsgint(&buf, 4);
	if (check_type &&
		(typid != col->typid || typmod != col->typmod || collid != col->collid))
		return false;
	form = pq_getmsgbyte(&buf);
	n = (int) pq_getmsgint(&buf, 4);
	if ((form != 'b' && form != 't') || n < 0 ||
		n > (buf.len - buf.cursor) / 4)
		bounds_corrupt(col);
	if (form == 'b')
		getTypeBinaryInputInfo(col->typid, &iofunc, &ioparam);
	else
		getTypeInputInfo(col->typid, &iofunc, &ioparam);

	col->bounds = palloc(sizeof(Datum) * Max(n, 1));
	initStringInfo(&elem);
	for (int i = 0; i < n; i++)
	{
		int			len = (int) pq_getmsgint(&buf, 4);

		if (len < 0 || len > buf.len - buf.cursor)
			bounds_corrupt(col);
		resetStringInfo(&elem);
		appendBinaryStringInfo(&elem, pq_getmsgbytes(&buf, len), len);
		if (form == 'b')
		{
			col->bounds[i] = OidReceiveFunctionCall(iofunc, &elem, ioparam,
													col->typmod);
			if (elem.cursor != elem.len)
				bounds_corrupt(col);
		}
		else
			col->bounds[i] = OidInputFunctionCall(iofunc, elem.data, ioparam,
												  col->typmod);
		col->nbounds++;
	}
	pfree(elem.data);
	if (buf.cursor != buf.len)
		bounds_corrupt(col);
	return true;
}

int
zorder_cmp_datums(const void *a, const void *b, void *ssup)
{
	return ApplySortComparator(*(const Datum *) a, false,
							   *(const Datum *) b, false, (SortSupport) ssup);
}

int64
zorder_count_below(SortSupport ssup, const Datum *sorted, int64 n, Datum v,
				   bool or_equal)
{
	int64		lo = 0;
	int64		hi = n;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;
		int			cmp = ApplySortComparator(sorted[mid], false, v, false,
											  ssup);

		if (cmp < 0 || (or_equal && cmp == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
