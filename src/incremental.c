/*-------------------------------------------------------------------------
 *
 * incremental.c
 *	  Incremental zorder.optimize: sort only the rows that are not yet in a
 *	  sorted run into a new run ("cube") at the end of the heap.
 *
 * After a full optimize the heap is one cube.  Appended rows land after it
 * (or in free space inside it); an incremental call finds them, computes
 * their curve keys with the boundaries the table's layout recorded, sorts
 * (key, TID) pairs, and moves the rows in key order into fresh pages that
 * start on a BRIN range boundary: a delete of the old version and an insert
 * of a copy, with every index entry made.  Trailing cubes smaller than what
 * is being added are merged into the new one, so that the number of cubes
 * stays logarithmic in the table's size, like a binary counter.
 *
 * The moves take EXCLUSIVE lock: plain SELECTs go on, while writers and row
 * lockers wait until the batch commits.  A writer that waited then takes its
 * snapshot after the commit and acts on the moved row, so no UPDATE
 * silently misses one.  Outside a transaction block, each batch of at most
 * zorder.max_batch_size rows commits on its own.  Moves are ordinary
 * heap deletes and inserts, so logical replication and standbys see them
 * as what they are; triggers do not fire.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/brin.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "access/xloginsert.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "commands/progress.h"
#include "commands/tablecmds.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "brin.h"
#include "keyenc.h"
#include "radix.h"
#include "zorder.h"

/* Most rows one batch moves before it commits (zorder.max_batch_size). */
int			zorder_max_batch_size = 100000;

typedef struct Cube
{
	int64		first_block;
	int64		nblocks;
	int64		rows;
	TransactionId xid;			/* rows with a newer xmin came later */
} Cube;

/* What an incremental call works from: the layout and the cubes. */
typedef struct IncrState
{
	int			nkeys;
	ZKeyColumn	cols[ZORDER_MAX_KEYS];
	ZCurve		curve;
	int			bits;
	int			ppr;			/* BRIN pages per range, at least 1 */
	int			ncubes;
	Cube	   *cubes;			/* in heap order */
} IncrState;

/* Parse "{a,b,...}" text of one key's boundaries back into Datums. */
static void
load_bounds(ZKeyColumn *col, const char *literal)
{
	Datum		arr;
	Datum	   *texts;
	bool	   *nulls;
	int			n;
	Oid			infunc;
	Oid			ioparam;

	arr = OidFunctionCall3(F_ARRAY_IN, CStringGetDatum(literal),
						   ObjectIdGetDatum(TEXTOID), Int32GetDatum(-1));
	deconstruct_array(DatumGetArrayTypeP(arr), TEXTOID, -1, false,
					  TYPALIGN_INT, &texts, &nulls, &n);
	getTypeInputInfo(col->typid, &infunc, &ioparam);
	col->bounds = palloc(sizeof(Datum) * Max(n, 1));
	col->nbounds = n;
	for (int i = 0; i < n; i++)
		col->bounds[i] = OidInputFunctionCall(infunc,
											  TextDatumGetCString(texts[i]),
											  ioparam, -1);
}

/* The table's cubes, in heap order. */
static void
load_cubes(Oid relid, IncrState *st)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		cubes;
	bool		isnull;

	zorder_catalog_exec("SELECT array_agg(ARRAY[first_block, nblocks, rows, "
						"created_xid::text::bigint] ORDER BY first_block) "
						"FROM zorder.cubes WHERE relid = $1",
						1, argtypes, args, NULL, &cubes, &isnull);
	st->ncubes = 0;
	st->cubes = NULL;
	if (!isnull)
	{
		Datum	   *elems;
		int			n;

		deconstruct_array(DatumGetArrayTypeP(cubes), INT8OID, 8, true,
						  TYPALIGN_DOUBLE, &elems, NULL, &n);
		st->ncubes = n / 4;
		st->cubes = palloc(sizeof(Cube) * Max(st->ncubes, 1));
		for (int i = 0; i < st->ncubes; i++)
		{
			st->cubes[i].first_block = DatumGetInt64(elems[4 * i]);
			st->cubes[i].nblocks = DatumGetInt64(elems[4 * i + 1]);
			st->cubes[i].rows = DatumGetInt64(elems[4 * i + 2]);
			st->cubes[i].xid = (TransactionId) DatumGetInt64(elems[4 * i + 3]);
		}
	}
}

/*
 * Read the table's layout.  Returns false if the table has no layout, or
 * one whose keys or curve (NULL: any) differ from the ones given.
 */
static bool
load_state(Relation rel, int nkeys, AttrNumber *attnums, const char *curve,
		   IncrState *st)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	Datum		row;
	bool		isnull;
	HeapTupleHeader hdr;
	HeapTupleData tup;
	TupleDesc	desc;
	Datum		values[5];
	bool		nulls[5];
	Datum	   *keys;
	int			nlayoutkeys;
	Datum	   *bounds;
	int			nbounds;

	zorder_catalog_exec("SELECT ROW(keys, curve, bits, bounds, "
						"coalesce(pages_per_range, 0)) "
						"FROM zorder.layouts WHERE relid = $1",
						1, argtypes, args, NULL, &row, &isnull);
	if (isnull)
		return false;

	hdr = DatumGetHeapTupleHeader(row);
	tup.t_len = HeapTupleHeaderGetDatumLength(hdr);
	tup.t_data = hdr;
	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(hdr),
								  HeapTupleHeaderGetTypMod(hdr));
	heap_deform_tuple(&tup, desc, values, nulls);
	ReleaseTupleDesc(desc);
	st->ppr = Max(DatumGetInt32(values[4]), 1);
	st->curve = strcmp(TextDatumGetCString(values[1]), "z") == 0 ?
		ZCURVE_Z : ZCURVE_HILBERT;

	deconstruct_array(DatumGetArrayTypeP(values[0]), INT2OID, 2, true,
					  TYPALIGN_SHORT, &keys, NULL, &nlayoutkeys);
	if (nlayoutkeys != nkeys)
		return false;
	for (int k = 0; k < nkeys; k++)
		if (DatumGetInt16(keys[k]) != attnums[k])
			return false;
	if (curve != NULL && strcmp(TextDatumGetCString(values[1]), curve) != 0)
		return false;

	st->nkeys = nkeys;
	st->bits = DatumGetInt32(values[2]);
	deconstruct_array(DatumGetArrayTypeP(values[3]), TEXTOID, -1, false,
					  TYPALIGN_INT, &bounds, NULL, &nbounds);
	if (nbounds != nkeys)
		return false;
	for (int k = 0; k < nkeys; k++)
	{
		zorder_prepare_key_column(rel, attnums[k], &st->cols[k]);
		load_bounds(&st->cols[k], TextDatumGetCString(bounds[k]));
	}

	return true;
}

/* Growable array of (key, TID) pairs. */
typedef struct Candidates
{
	zr_item    *items;
	size_t		n;
	size_t		cap;
} Candidates;

static void
add_candidate(Candidates *c, uint64 key, ItemPointer tid)
{
	if (c->n == c->cap)
	{
		c->cap = Max(1024, c->cap * 2);
		c->items = c->items ?
			repalloc_huge(c->items, c->cap * sizeof(zr_item)) :
			palloc_extended(c->cap * sizeof(zr_item), MCXT_ALLOC_HUGE);
	}
	c->items[c->n].key = key;
	c->items[c->n].val = ((uint64) ItemPointerGetBlockNumber(tid) << 16) |
		ItemPointerGetOffsetNumber(tid);
	c->n++;
}

/* Which rows of a block range collect_block_range takes. */
typedef enum CollectMode
{
	COLLECT_ALL,				/* outside every run */
	COLLECT_NEWER,				/* inserted after the run was written */
	COLLECT_OLDER				/* the rest of a run being merged */
} CollectMode;

/*
 * Scan blocks [from, to) and add the rows visible to snapshot that mode
 * selects, xid being the run's.  With skip_frozen, pages VACUUM marked
 * all-frozen are skipped.
 */
static void
collect_block_range(Relation rel, IncrState *st, BlockNumber from,
					BlockNumber to, CollectMode mode, TransactionId xid,
					bool skip_frozen, Snapshot snapshot, Candidates *c,
					MemoryContext tmpcxt)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Buffer		vmbuf = InvalidBuffer;
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	uint32		coords[ZORDER_MAX_KEYS];
	HeapTuple	picked[MaxHeapTuplesPerPage];
	int			npicked;
	MemoryContext oldcxt;

	for (BlockNumber blk = from; blk < to; blk++)
	{
		Buffer		buf;
		Page		page;
		OffsetNumber maxoff;

		CHECK_FOR_INTERRUPTS();

		/*
		 * An insert clears a page's all-frozen bit, and VACUUM sets it again
		 * only once every row there is frozen: a full rewrite freezes what
		 * it writes, so after the VACUUM that follows it the pages of the
		 * first run are skipped unread until a newcomer lands on them.
		 */
		if (skip_frozen && VM_ALL_FROZEN(rel, blk, &vmbuf))
			continue;

		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		maxoff = PageGetMaxOffsetNumber(page);

		/*
		 * Copy the rows first: their keys may need detoasting, which must
		 * not happen under the buffer lock.
		 */
		npicked = 0;
		oldcxt = MemoryContextSwitchTo(tmpcxt);
		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			HeapTupleData tuple;

			if (!zorder_page_tuple(rel, page, blk, off, &tuple))
				continue;
			if (!HeapTupleSatisfiesVisibility(&tuple, snapshot, buf))
				continue;
			if (mode != COLLECT_ALL)
			{
				bool		newer;

				newer = !HeapTupleHeaderXminFrozen(tuple.t_data) &&
					TransactionIdFollows(HeapTupleHeaderGetXmin(tuple.t_data),
										 xid);
				if (newer != (mode == COLLECT_NEWER))
					continue;
			}
			picked[npicked++] = heap_copytuple(&tuple);
		}
		MemoryContextSwitchTo(oldcxt);
		UnlockReleaseBuffer(buf);

		oldcxt = MemoryContextSwitchTo(tmpcxt);
		for (int i = 0; i < npicked; i++)
		{
			uint64		key;

			for (int k = 0; k < st->nkeys; k++)
			{
				bool		null;
				Datum		d = heap_getattr(picked[i], st->cols[k].attnum,
											 desc, &null);

				/* a different hash per row and key spreads frequent values */
				coords[k] = zorder_coordinate(&st->cols[k], d, null, st->bits,
											  hash_bytes_uint32((uint32) c->n ^ (k * 0x9e3779b9U)));
			}
			key = st->curve == ZCURVE_HILBERT ?
				zk_hilbert64(st->nkeys, st->bits, coords) :
				zk_morton64(st->nkeys, st->bits, coords);
			MemoryContextSwitchTo(oldcxt);
			add_candidate(c, key, &picked[i]->t_self);
			MemoryContextSwitchTo(tmpcxt);
		}
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(tmpcxt);
	}
	if (BufferIsValid(vmbuf))
		ReleaseBuffer(vmbuf);
	FreeAccessStrategy(strategy);
}

/* Take the rows' new layout from a sample when keys or curve changed. */
static void
new_layout(Relation rel, int nkeys, AttrNumber *attnums, const char *curve,
		   IncrState *st)
{
	Datum		keys[ZORDER_MAX_KEYS];
	Datum		bounds[ZORDER_MAX_KEYS];
	Oid			argtypes[6] = {OIDOID, INT2ARRAYOID, TEXTOID, INT4OID,
	TEXTARRAYOID, INT4OID};
	Datum		args[6];
	int			sampled;

	st->nkeys = nkeys;
	st->curve = strcmp(curve, "z") == 0 ? ZCURVE_Z : ZCURVE_HILBERT;
	st->bits = zorder_curve_bits(nkeys);
	for (int k = 0; k < nkeys; k++)
		zorder_prepare_key_column(rel, attnums[k], &st->cols[k]);
	sampled = zorder_sample_bounds(rel, nkeys, st->cols, st->bits,
								   ZORDER_SAMPLE_ROWS);
	for (int k = 0; k < nkeys; k++)
	{
		keys[k] = Int16GetDatum(attnums[k]);
		bounds[k] = CStringGetTextDatum(zorder_bounds_to_text(&st->cols[k]));
	}
	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	args[1] = PointerGetDatum(construct_array(keys, nkeys, INT2OID, 2, true,
											  TYPALIGN_SHORT));
	args[2] = CStringGetTextDatum(curve);
	args[3] = Int32GetDatum(st->bits);
	args[4] = PointerGetDatum(construct_array(bounds, nkeys, TEXTOID, -1,
											  false, TYPALIGN_INT));
	args[5] = Int32GetDatum(sampled);
	zorder_catalog_exec("UPDATE zorder.layouts SET keys = $2, curve = $3, "
						"bits = $4, bounds = $5, sample_rows = $6 "
						"WHERE relid = $1",
						6, argtypes, args, NULL, NULL, NULL);
}

/* Extend rel with empty pages through the next multiple of ppr. */
static BlockNumber
pad_to_boundary(Relation rel, int ppr)
{
	BlockNumber end = RelationGetNumberOfBlocks(rel);
	BlockNumber target = ((end + ppr - 1) / ppr) * ppr;

	/* the run's first page must exist, so that inserts can target it */
	while (RelationGetNumberOfBlocks(rel) <= target)
	{
		Buffer		buf;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		LockRelationForExtension(rel, ExclusiveLock);
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK,
								 NULL);
		UnlockRelationForExtension(rel, ExclusiveLock);
		page = BufferGetPage(buf);
		START_CRIT_SECTION();
		PageInit(page, BufferGetPageSize(buf), 0);
		MarkBufferDirty(buf);
		if (RelationNeedsWAL(rel))
			log_newpage_buffer(buf, true);
		END_CRIT_SECTION();
		UnlockReleaseBuffer(buf);
	}
	return target;
}

static int
cmp_block(const void *a, const void *b)
{
	BlockNumber x = *(const BlockNumber *) a;
	BlockNumber y = *(const BlockNumber *) b;

	return (x > y) - (x < y);
}

/*
 * Keep every BRIN index of rel tight: summarize the new run's ranges, and
 * summarize afresh the ranges rows were moved out of (blocks, sorted), whose
 * summaries still cover the moved rows.  Run after the moves committed, a
 * fresh summary leaves the dead versions out.
 */
static void
summarize_brin(Relation rel, BlockNumber *blocks, int nblocks)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		Relation	index;
		BlockNumber ppr;
		BlockNumber last = InvalidBlockNumber;

		index = index_open(indexoid, AccessShareLock);
		if (index->rd_rel->relam != BRIN_AM_OID)
		{
			index_close(index, AccessShareLock);
			continue;
		}
		ppr = BrinGetPagesPerRange(index);
		index_close(index, AccessShareLock);

		for (int i = 0; i < nblocks; i++)
		{
			BlockNumber start = blocks[i] - blocks[i] % ppr;

			CHECK_FOR_INTERRUPTS();
			if (start == last)
				continue;
			last = start;
			DirectFunctionCall2(brin_desummarize_range,
								ObjectIdGetDatum(indexoid),
								Int64GetDatum((int64) start));
			DirectFunctionCall2(brin_summarize_range,
								ObjectIdGetDatum(indexoid),
								Int64GetDatum((int64) start));
		}
		DirectFunctionCall1(brin_summarize_new_values,
							ObjectIdGetDatum(indexoid));
	}
}

/* One batch's executor state for index insertion. */
typedef struct MoveState
{
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	BulkInsertState bistate;
} MoveState;

static void
move_begin(Relation rel, MoveState *ms)
{
	ms->estate = CreateExecutorState();
	ms->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(ms->rri, rel, 1, NULL, 0);
	ExecOpenIndices(ms->rri, false);
	ms->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
										&TTSOpsHeapTuple);
	ms->bistate = GetBulkInsertState();
}

static void
move_end(MoveState *ms)
{
	FreeBulkInsertState(ms->bistate);
	ExecDropSingleTupleTableSlot(ms->slot);
	ExecCloseIndices(ms->rri);
	FreeExecutorState(ms->estate);
}

/*
 * Move one row: delete it and insert a copy at the end of the run.  Returns
 * the new block, or InvalidBlockNumber if the row is gone or changed.
 */
static BlockNumber
move_row(Relation rel, MoveState *ms, ItemPointer tid, Snapshot snapshot)
{
	HeapTupleData tuple;
	Buffer		buf;
	HeapTuple	copy;
	TM_FailureData tmfd;
	CommandId	cid = GetCurrentCommandId(true);

	tuple.t_self = *tid;
	if (!heap_fetch(rel, snapshot, &tuple, &buf, false))
		return InvalidBlockNumber;
	copy = heap_copytuple(&tuple);
	ReleaseBuffer(buf);

	/*
	 * Delete first, so that unique indexes see no duplicate.  The delete is
	 * marked as a move (as a row moving to another partition is): a
	 * statement whose snapshot predates the move and that then tries to
	 * update or lock the row gets a serialization error to retry on,
	 * instead of silently finding the row gone.
	 */
	if (heap_delete(rel, tid, cid, InvalidSnapshot, true, &tmfd,
					true) != TM_Ok)
	{
		heap_freetuple(copy);
		return InvalidBlockNumber;
	}
	heap_insert(rel, copy, cid, HEAP_INSERT_SKIP_FSM, ms->bistate);
	ExecStoreHeapTuple(copy, ms->slot, true);
#if PG_VERSION_NUM >= 160000
	ExecInsertIndexTuples(ms->rri, ms->slot, ms->estate, false, false, NULL,
						  NIL, false);
#else
	ExecInsertIndexTuples(ms->rri, ms->slot, ms->estate, false, false, NULL,
						  NIL);
#endif
	ResetPerTupleExprContext(ms->estate);
	return ItemPointerGetBlockNumber(&copy->t_self);
}

/*
 * Refuse moves on a table published by a publication that replicates
 * inserts but not deletes, or the reverse.
 */
static void
check_publications(Relation rel)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(RelationGetRelid(rel))};
	Datum		pubname;
	bool		isnull;

	zorder_catalog_exec("SELECT p.pubname::text FROM pg_publication p "
						"JOIN pg_publication_tables t ON t.pubname = p.pubname "
						"WHERE format('%I.%I', t.schemaname, t.tablename)::regclass "
						"OPERATOR(pg_catalog.=) $1 "
						"AND p.pubinsert OPERATOR(pg_catalog.<>) p.pubdelete "
						"LIMIT 1",
						1, argtypes, args, NULL, &pubname, &isnull);
	if (!isnull)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot move rows of table \"%s\" incrementally",
						RelationGetRelationName(rel)),
				 errdetail("Publication \"%s\" publishes either inserts or deletes but not both, so a subscriber would not see the moves as moves.",
						   TextDatumGetCString(pubname)),
				 errhint("Use zorder.optimize with full => true: logical replication does not see a rewrite.")));
}

/*
 * Incremental optimize of one table.  Returns false, having changed
 * nothing, if the table has no layout yet (a full optimize must come
 * first).  With can_commit, batches commit one by one.
 */
bool
zorder_optimize_incremental(Oid relid, const char *curve, bool can_commit)
{
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	IncrState	st;
	Candidates	cand = {0};
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	MemoryContext keep_cxt;
	MemoryContext tmp_cxt;
	MemoryContext oldcxt;
	Snapshot	snapshot;
	BlockNumber nblocks;
	BlockNumber first_block;
	BlockNumber last_block = InvalidBlockNumber;
	int			nmerged = 0;
	int64		accumulated;
	int64		moved = 0;
	size_t		pos = 0;
	TimestampTz started = GetCurrentTimestamp();
	bool		have_layout;
	bool		final_snapshot = false;
	BlockNumber *vacated;

	rel = zorder_open_checked(relid, ExclusiveLock, "zorder.optimize");
	CheckTableNotInUse(rel, "zorder.optimize");
	nkeys = zorder_get_keys_required(rel, attnums);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(rel->rd_rel->relowner,
						   save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();

	/* what must outlive the commits between batches */
	keep_cxt = AllocSetContextCreate(PortalContext, "zorder incremental",
									 ALLOCSET_DEFAULT_SIZES);
	tmp_cxt = AllocSetContextCreate(keep_cxt, "zorder incremental row",
									ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(keep_cxt);

	memset(&st, 0, sizeof(st));
	have_layout = load_state(rel, nkeys, attnums, curve, &st);
	if (!have_layout)
	{
		/* no layout at all: a full optimize must lay the table out first */
		Datum		exists;
		bool		isnull;
		Oid			argtypes[1] = {OIDOID};
		Datum		args[1] = {ObjectIdGetDatum(relid)};

		zorder_catalog_exec("SELECT true FROM zorder.layouts WHERE relid = $1",
							1, argtypes, args, NULL, &exists, &isnull);
		if (isnull)
		{
			MemoryContextSwitchTo(oldcxt);
			MemoryContextDelete(keep_cxt);
			AtEOXact_GUC(false, save_nestlevel);
			SetUserIdAndSecContext(save_userid, save_sec_context);
			/* let the full optimize take its stronger lock afresh */
			table_close(rel, ExclusiveLock);
			return false;
		}

		/*
		 * Keys or curve changed: old runs stay as they are, new rows follow
		 * the new keys.
		 */
		new_layout(rel, nkeys, attnums,
				   curve ? curve : (st.curve == ZCURVE_Z ? "z" : "hilbert"),
				   &st);
	}

	load_cubes(relid, &st);

	/* files a crashed full optimize left behind */
	zorder_cleanup_orphans();

	/*
	 * Moves are deletes and inserts: refuse them where a DELETE would be
	 * refused, and where a publication carries only one of the two, as a
	 * subscriber would then lose or duplicate the moved rows.
	 */
	CheckCmdReplicaIdentity(rel, CMD_DELETE);
	check_publications(rel);

	pgstat_progress_start_command(PROGRESS_COMMAND_CLUSTER, relid);
	pgstat_progress_update_param(PROGRESS_CLUSTER_COMMAND,
								 PROGRESS_CLUSTER_COMMAND_CLUSTER);
	pgstat_progress_update_param(PROGRESS_CLUSTER_PHASE,
								 PROGRESS_CLUSTER_PHASE_SEQ_SCAN_HEAP);

	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	nblocks = RelationGetNumberOfBlocks(rel);

	/*
	 * Rows outside every run: appended after the last one, or in pages a
	 * merged run or padding left behind.
	 */
	{
		BlockNumber next = 0;

		for (int i = 0; i <= st.ncubes; i++)
		{
			BlockNumber start = i < st.ncubes ?
				(BlockNumber) Min(st.cubes[i].first_block, nblocks) : nblocks;

			if (start > next)
				collect_block_range(rel, &st, next, start, COLLECT_ALL,
									InvalidTransactionId, false, snapshot,
									&cand, tmp_cxt);
			if (i < st.ncubes)
				next = Max(next, (BlockNumber) Min(st.cubes[i].first_block +
												   st.cubes[i].nblocks,
												   nblocks));
		}
	}

	/*
	 * Rows that came into free space inside the runs.  They are told apart
	 * by an xmin newer than the run's: a newcomer that VACUUM froze since
	 * is taken for an old row, and stays until the next full optimize.
	 */
	for (int i = 0; i < st.ncubes; i++)
		collect_block_range(rel, &st, st.cubes[i].first_block,
							Min(st.cubes[i].first_block + st.cubes[i].nblocks,
								nblocks),
							COLLECT_NEWER, st.cubes[i].xid, true, snapshot,
							&cand, tmp_cxt);

	/*
	 * Merge the newest runs while they are no bigger than what comes in, so
	 * that run sizes at least double going back and their number stays
	 * logarithmic.  The first run is never merged: full => true does that.
	 */
	accumulated = cand.n;
	while (nmerged < st.ncubes - 1)
	{
		Cube	   *cube = &st.cubes[st.ncubes - 1 - nmerged];

		if (cube->rows > accumulated)
			break;
		collect_block_range(rel, &st, cube->first_block,
							Min(cube->first_block + cube->nblocks, nblocks),
							COLLECT_OLDER, cube->xid, false, snapshot, &cand,
							tmp_cxt);
		accumulated += cube->rows;
		nmerged++;
	}
	UnregisterSnapshot(snapshot);

	/* the blocks rows leave, for BRIN afterwards */
	vacated = palloc_extended(Max(cand.n, 1) * sizeof(BlockNumber),
							  MCXT_ALLOC_HUGE);
	for (size_t i = 0; i < cand.n; i++)
		vacated[i] = (BlockNumber) (cand.items[i].val >> 16);
	qsort(vacated, cand.n, sizeof(BlockNumber), cmp_block);

	pgstat_progress_update_param(PROGRESS_CLUSTER_PHASE,
								 PROGRESS_CLUSTER_PHASE_SORT_TUPLES);
	if (cand.n > 1)
	{
		zr_item    *tmp = palloc_extended(cand.n * sizeof(zr_item),
										  MCXT_ALLOC_HUGE);

		zr_sort(cand.items, tmp, cand.n);
		pfree(tmp);
	}

	pgstat_progress_update_param(PROGRESS_CLUSTER_PHASE,
								 PROGRESS_CLUSTER_PHASE_WRITE_NEW_HEAP);
	first_block = InvalidBlockNumber;
	if (cand.n > 0)
	{
		first_block = pad_to_boundary(rel, st.ppr);
		RelationSetTargetBlock(rel, first_block);
	}

	while (pos < cand.n)
	{
		MoveState	ms;
		size_t		end = Min(cand.n, pos + (size_t) zorder_max_batch_size);
		bool		pushed = false;

		/* after a commit, the batch needs a snapshot of its own */
		if (!ActiveSnapshotSet())
		{
			PushActiveSnapshot(GetTransactionSnapshot());
			pushed = true;
		}
		snapshot = RegisterSnapshot(GetTransactionSnapshot());
		move_begin(rel, &ms);
		for (; pos < end; pos++)
		{
			ItemPointerData tid;
			BlockNumber blk;

			CHECK_FOR_INTERRUPTS();
			ItemPointerSet(&tid, (BlockNumber) (cand.items[pos].val >> 16),
						   (OffsetNumber) (cand.items[pos].val & 0xFFFF));
			blk = move_row(rel, &ms, &tid, snapshot);
			if (blk == InvalidBlockNumber)
				continue;
			moved++;
			if (last_block == InvalidBlockNumber || blk > last_block)
				last_block = blk;
		}
		move_end(&ms);
		UnregisterSnapshot(snapshot);
		if (pushed)
			PopActiveSnapshot();
		pgstat_progress_update_param(PROGRESS_CLUSTER_HEAP_TUPLES_WRITTEN,
									 moved);

		if (pos < cand.n && can_commit)
		{
			/* let waiting writers in between batches */
			AtEOXact_GUC(false, save_nestlevel);
			SetUserIdAndSecContext(save_userid, save_sec_context);
			table_close(rel, NoLock);
			MemoryContextSwitchTo(oldcxt);
			SPI_commit();
			MemoryContextSwitchTo(keep_cxt);
			rel = zorder_open_checked(relid, ExclusiveLock, "zorder.optimize");
			GetUserIdAndSecContext(&save_userid, &save_sec_context);
			SetUserIdAndSecContext(rel->rd_rel->relowner,
								   save_sec_context | SECURITY_RESTRICTED_OPERATION);
			save_nestlevel = NewGUCNestLevel();
			/* rows keep going where the run goes on */
			if (last_block != InvalidBlockNumber)
				RelationSetTargetBlock(rel, last_block);
		}
	}

	/* the catalog: the new run replaces the merged ones */
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		final_snapshot = true;
	}
	{
		Oid			argtypes[7] = {OIDOID, INT8OID, INT8OID, INT8OID, INT8OID,
		INT4OID, TIMESTAMPTZOID};
		Datum		args[7];
		int64		keep_from = nmerged > 0 ?
			st.cubes[st.ncubes - nmerged].first_block : PG_INT64_MAX;

		args[0] = ObjectIdGetDatum(relid);
		args[1] = Int64GetDatum(first_block == InvalidBlockNumber ? 0 :
								(int64) first_block);
		args[2] = Int64GetDatum(last_block == InvalidBlockNumber ? 0 :
								(int64) last_block - first_block + 1);
		args[3] = Int64GetDatum(moved);
		args[4] = Int64GetDatum(keep_from);
		args[5] = Int32GetDatum(nmerged);
		args[6] = TimestampTzGetDatum(started);
		zorder_catalog_exec("DELETE FROM zorder.cubes WHERE relid = $1 "
							"AND first_block >= $5",
							7, argtypes, args, NULL, NULL, NULL);
		if (moved > 0)
			zorder_catalog_exec("INSERT INTO zorder.cubes (relid, first_block, "
								"nblocks, rows, created_xid) "
								"VALUES ($1, $2, $3, $4, pg_current_xact_id()::xid)",
								7, argtypes, args, NULL, NULL, NULL);
		zorder_catalog_exec("INSERT INTO zorder.history (relid, started_at, mode, "
							"rows_moved, cubes_merged, cubes_after, duration) "
							"SELECT $1, $7, 'incremental', $4, $6, "
							"(SELECT count(*) FROM zorder.cubes WHERE relid = $1), "
							"clock_timestamp() - $7",
							7, argtypes, args, NULL, NULL, NULL);
	}

	table_close(rel, NoLock);
	if (final_snapshot)
	{
		PopActiveSnapshot();
		final_snapshot = false;
	}

	if (moved > 0)
	{
		/* commit the moves first, so that fresh summaries leave them out */
		if (can_commit)
		{
			AtEOXact_GUC(false, save_nestlevel);
			SetUserIdAndSecContext(save_userid, save_sec_context);
			MemoryContextSwitchTo(oldcxt);
			SPI_commit();
			MemoryContextSwitchTo(keep_cxt);
			GetUserIdAndSecContext(&save_userid, &save_sec_context);
			rel = zorder_open_checked(relid, ShareUpdateExclusiveLock,
									  "zorder.optimize");
			SetUserIdAndSecContext(rel->rd_rel->relowner,
								   save_sec_context | SECURITY_RESTRICTED_OPERATION);
			save_nestlevel = NewGUCNestLevel();
		}
		else
			rel = table_open(relid, NoLock);
		PushActiveSnapshot(GetTransactionSnapshot());
		summarize_brin(rel, vacated, (int) Min(cand.n, INT_MAX));
		PopActiveSnapshot();
		table_close(rel, NoLock);
	}

	/* BRIN (brin.c): create the index if asked, record pages_per_range */
	zorder_brin_after_optimize(relid, nkeys, attnums);

	pgstat_progress_end_command();
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(keep_cxt);
	return true;
}
