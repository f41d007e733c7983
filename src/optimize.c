/*-------------------------------------------------------------------------
 *
 * optimize.c
 *	  zorder.optimize: lay a table out along a space-filling curve over its
 *	  clustering keys with a full, MVCC-safe rewrite.
 *
 * The rewrite follows CLUSTER's sequence (commands/cluster.c): a new heap
 * from make_new_heap, every tuple that some snapshot may still see copied
 * with the rewriteheap API so that headers and update chains survive, and
 * finish_heap_swap to swap the files at commit and rebuild the indexes.
 * What differs is the order: each tuple gets a 64-bit curve key from the
 * quantile buckets of its key columns, and tuples are sorted by that key
 * with our own sorter (radix sort in memory, zstd-compressed runs on disk)
 * instead of a comparison sort that calls a function per comparison.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/rewriteheap.h"
#include "access/tableam.h"
#include "access/toast_internals.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/catalog.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/progress.h"
#include "commands/tablecmds.h"
#include "commands/vacuum.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_relation.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "tcop/pquery.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "access.h"
#include "autokeys.h"
#include "boundsets.h"
#include "brin.h"
#include "citus.h"
#include "estimate.h"
#include "heappage.h"
#include "incremental.h"
#include "keyenc.h"
#include "layout.h"
#include "pending.h"
#include "pg_compat.h"
#include "place.h"
#include "preload.h"
#include "quantile.h"
#include "recognize.h"
#include "report.h"
#include "room.h"
#include "shards.h"
#include "shardsets.h"
#include "skipping.h"
#include "sorter.h"
#include "tables.h"
#include "tableset.h"
#include "zorder.h"


PG_FUNCTION_INFO_V1(zorder_optimize);
PG_FUNCTION_INFO_V1(zorder_optimize_with_set);
PG_FUNCTION_INFO_V1(zorder_cleanup);

static void optimize_call(FunctionCallInfo fcinfo, Oid relid, bool full,
						  text *curve, int given_set);

/* What one rewrite did, for the catalog. */
typedef struct RewriteResult
{
	double		num_tuples;
	BlockNumber num_pages;
	int			sample_rows;
	ZSorterStats sort;
	/* per key column of an integer kind: its highest value (regions.c) */
	bool		has_top[ZORDER_MAX_KEYS];
	uint64		top[ZORDER_MAX_KEYS];
	/* a row was recently dead, or its insert or delete in progress */
	bool		not_all_live;
	/* the newest inserter of a row copied unfrozen (note_newest_xmin) */
	TransactionId newest_xmin;
} RewriteResult;

/*
 * Copy one tuple into the new heap: dropped columns become NULL, as in
 * CLUSTER; rewrite_heap_tuple carries the original header over.
 */
static void
reform_and_rewrite(HeapTuple tuple, TupleDesc olddesc, TupleDesc newdesc,
				   Datum *values, bool *isnull, RewriteState rwstate)
{
	HeapTuple	copied;

	heap_deform_tuple(tuple, olddesc, values, isnull);
	for (int i = 0; i < newdesc->natts; i++)
		if (TupleDescAttr(newdesc, i)->attisdropped)
			isnull[i] = true;
	copied = heap_form_tuple(newdesc, values, isnull);
	rewrite_heap_tuple(rwstate, tuple, copied);
	heap_freetuple(copied);
}

/*
 * Visibility of each tuple of a locked page of OldHeap for the rewrite:
 * false for dead ones, which no snapshot can see any more; *not_live is
 * set for a surviving one that some snapshot may not see.  Also sets hint
 * bits, which rewrite_heap_tuple then copies over.
 */
static bool
tuple_survives(Relation OldHeap, HeapTuple tuple, TransactionId OldestXmin,
			   Buffer buf, bool *not_live)
{
	HTSV_Result r = HeapTupleSatisfiesVacuum(tuple, OldestXmin, buf);

	*not_live |= (r != HEAPTUPLE_LIVE && r != HEAPTUPLE_DEAD);
	switch (r)
	{
		case HEAPTUPLE_DEAD:
			return false;
		case HEAPTUPLE_LIVE:
		case HEAPTUPLE_RECENTLY_DEAD:
			return true;
		case HEAPTUPLE_INSERT_IN_PROGRESS:
			/* with our lock, only our own transaction can be inserting */
			if (!TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tuple->t_data)))
				elog(WARNING, "concurrent insert in progress within table \"%s\"",
					 RelationGetRelationName(OldHeap));
			return true;
		case HEAPTUPLE_DELETE_IN_PROGRESS:
			if (!TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetUpdateXid(tuple->t_data)))
				elog(WARNING, "concurrent delete in progress within table \"%s\"",
					 RelationGetRelationName(OldHeap));
			return true;
	}
	elog(ERROR, "unexpected HeapTupleSatisfiesVacuum result");
	return false;				/* keep compiler quiet */
}

/*
 * Write the sorted tuples into the new heap through the rewriteheap API,
 * re-formed when the table has dropped columns.
 */
static void
write_sorted(ZSorter *sorter, RewriteState rwstate, TupleDesc olddesc,
			 TupleDesc newdesc, bool reform, MemoryContext tuple_cxt)
{
	Datum	   *values = palloc(sizeof(Datum) * newdesc->natts);
	bool	   *isnull = palloc(sizeof(bool) * newdesc->natts);
	double		written = 0;
	HeapTuple	tuple;
	uint64		key;
	MemoryContext oldcxt;

	while ((tuple = zsorter_next(sorter, &key)) != NULL)
	{
		CHECK_FOR_INTERRUPTS();
		if (reform)
		{
			oldcxt = MemoryContextSwitchTo(tuple_cxt);
			reform_and_rewrite(tuple, olddesc, newdesc, values, isnull,
							   rwstate);
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(tuple_cxt);
		}
		else
		{
			HeapTupleData old;
			union
			{
				HeapTupleHeaderData hdr;
				double		align;
			}			old_hdr;

			/*
			 * The sorter's copy is ours to become the new tuple.
			 * rewrite_heap_tuple reads the old one's header after stamping
			 * the new one's: give it a copy of the header, all it reads.
			 */
			memcpy(&old_hdr.hdr, tuple->t_data, SizeofHeapTupleHeader);
			old.t_len = tuple->t_len;
			old.t_self = tuple->t_self;
			old.t_tableOid = tuple->t_tableOid;
			old.t_data = &old_hdr.hdr;
			rewrite_heap_tuple(rwstate, &old, tuple);
		}
		written += 1;
		if (((int64) written) % 1024 == 0)
			pgstat_progress_update_param(ZORDER_PROGRESS_TUPLES_WRITTEN,
										 (int64) written);
	}
	pgstat_progress_update_param(ZORDER_PROGRESS_TUPLES_WRITTEN,
								 (int64) written);
}

/*
 * Keep the newest transaction ID that inserted a row the rewrite copies
 * unfrozen.  One newer than the rewrite's own (inserted in a subtransaction
 * of its caller, or committed while a rewrite that had its ID already
 * waited for its lock) counts as a newcomer of the run it is written into,
 * which note_rewritten must not hide.
 */
static void
note_newest_xmin(HeapTuple tup, RewriteResult *res)
{
	TransactionId xmin;

	if (HeapTupleHeaderXminFrozen(tup->t_data))
		return;
	xmin = HeapTupleHeaderGetXmin(tup->t_data);
	if (TransactionIdIsNormal(xmin) &&
		(!TransactionIdIsValid(res->newest_xmin) ||
		 TransactionIdFollows(xmin, res->newest_xmin)))
		res->newest_xmin = xmin;
}

/*
 * Keep the highest value of each key column of an integer kind, which
 * incremental calls compare newcomers with to tell time-ordered keys
 * (regions.c).
 */
static inline void
note_tops(ZKeyColumn *cols, int nkeys, const Datum *values,
		  const bool *isnull, RewriteResult *res)
{
	for (int k = 0; k < nkeys; k++)
	{
		uint64		u;

		if (isnull[k] || cols[k].cmpkind == ZCMP_GENERIC)
			continue;
		u = zorder_ordered_u64(&cols[k], values[k]);
		if (!res->has_top[k] || u > res->top[k])
		{
			res->has_top[k] = true;
			res->top[k] = u;
		}
	}
}

/*
 * Scan OldHeap, sort its surviving tuples by curve key and write them to
 * NewHeap.  Mirrors heapam's copy-for-cluster with our key and sorter.
 *
 * The scan reads a page at a time rather than through a table scan: each
 * page is locked once to judge all its tuples (SnapshotAny plus
 * HeapTupleSatisfiesVacuum, so recently dead rows are kept), then only
 * pinned while its tuples are keyed and copied into the sorter, which may
 * spill.  As in a page-at-a-time heap scan, the pin is enough to read
 * them: the pin keeps the page from being pruned, and with our lock no one
 * else changes it.  Pages are not pruned either: the old heap is about to
 * be dropped.
 */
static void
copy_sorted(Relation OldHeap, Relation NewHeap, int nkeys, ZKeyColumn *cols,
			ZCurve curve, int bits, TransactionId OldestXmin,
			TransactionId FreezeXid, MultiXactId MultiXactCutoff,
			RewriteResult *res)
{
	TupleDesc	olddesc = RelationGetDescr(OldHeap);
	TupleDesc	newdesc = RelationGetDescr(NewHeap);
	RewriteState rwstate;
	ZSorter    *sorter;
	BufferAccessStrategy strategy;
	ZorderBlockReader reader;
	ZorderBlockRange range;
	Buffer		buf;
	TupleTableSlot *slot;
	bool		survives[MaxHeapTuplesPerPage + 1];
	uint32		coords[ZORDER_MAX_KEYS];
	Datum		kvals[ZORDER_MAX_KEYS];
	bool		knulls[ZORDER_MAX_KEYS];
	BlockNumber nblocks;
	double		num_tuples = 0;
	MemoryContext tuple_cxt;
	MemoryContext oldcxt;
	bool		reform = false;

	/*
	 * Tuples are re-formed only to null out dropped columns, as CLUSTER
	 * does; otherwise the old tuple is the new tuple.
	 */
	for (int i = 0; i < newdesc->natts; i++)
		if (TupleDescAttr(newdesc, i)->attisdropped)
			reform = true;

	tuple_cxt = AllocSetContextCreate(CurrentMemoryContext,
									  "zorder per-tuple",
									  ALLOCSET_DEFAULT_SIZES);

	rwstate = begin_heap_rewrite(OldHeap, NewHeap, OldestXmin, FreezeXid,
								 MultiXactCutoff);
	sorter = zsorter_begin(maintenance_work_mem);

	zorder_progress_phase(ZORDER_PHASE_SEQ_SCAN_HEAP);
	nblocks = RelationGetNumberOfBlocks(OldHeap);
	pgstat_progress_update_param(ZORDER_PROGRESS_TOTAL_BLKS, nblocks);
	/* a tuple takes about as much room in the sorter as on its page */
	zsorter_expect(sorter, (double) nblocks * BLCKSZ);
	strategy = GetAccessStrategy(BAS_BULKREAD);
	slot = MakeSingleTupleTableSlot(olddesc, &TTSOpsHeapTuple);

	/* from 17 on, a read stream reads ahead of us */
	range.next = 0;
	range.end = nblocks;
	zorder_block_reader_begin(&reader, OldHeap, strategy, true,
							  zorder_next_in_range, &range);
	while ((buf = zorder_block_reader_next(&reader)) != InvalidBuffer)
	{
		BlockNumber blk = BufferGetBlockNumber(buf);
		Page		page;
		OffsetNumber maxoff;
		HeapTupleData tup;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		maxoff = PageGetMaxOffsetNumber(page);
		if (maxoff > MaxHeapTuplesPerPage)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid number of line pointers %u in block %u of relation \"%s\"",
							maxoff, blk, RelationGetRelationName(OldHeap))));
		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
			survives[off] = zorder_page_tuple(OldHeap, page, blk, off, &tup) &&
				tuple_survives(OldHeap, &tup, OldestXmin, buf,
							   &res->not_all_live);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);

		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			if (!zorder_page_tuple(OldHeap, page, blk, off, &tup))
				continue;
			if (!survives[off])
			{
				/* the rewrite still needs to know, for update chains */
				rewrite_heap_dead_tuple(rwstate, &tup);
				continue;
			}

			ExecStoreHeapTuple(&tup, slot, false);
			oldcxt = MemoryContextSwitchTo(tuple_cxt);
			for (int k = 0; k < nkeys; k++)
				kvals[k] = slot_getattr(slot, cols[k].attnum, &knulls[k]);
			/* the key of the row's values alone: zorder.layout_key's */
			zorder_row_coordinates(cols, nkeys, kvals, knulls, bits, coords);
			note_tops(cols, nkeys, kvals, knulls, res);
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(tuple_cxt);

			zsorter_put(sorter, zorder_curve_key(curve, nkeys, bits, coords),
						&tup);
			note_newest_xmin(&tup, res);
			num_tuples += 1;
		}
		ExecClearTuple(slot);
		ReleaseBuffer(buf);
		pgstat_progress_update_multi_param(2,
										   (const int[]) {
											   ZORDER_PROGRESS_BLKS_SCANNED,
											   ZORDER_PROGRESS_TUPLES_SCANNED
										   },
										   (const int64[]) {
											   blk + 1, (int64) num_tuples
										   });
	}
	zorder_block_reader_end(&reader);
	ExecDropSingleTupleTableSlot(slot);
	FreeAccessStrategy(strategy);

	zorder_progress_phase(ZORDER_PHASE_SORT_TUPLES);
	zsorter_performsort(sorter);

	zorder_progress_phase(ZORDER_PHASE_WRITE_NEW_HEAP);
	write_sorted(sorter, rwstate, olddesc, newdesc, reform, tuple_cxt);

	zsorter_stats(sorter, &res->sort);
	zsorter_end(sorter);
	end_heap_rewrite(rwstate);
	MemoryContextDelete(tuple_cxt);

	res->num_tuples = num_tuples;
}

/* Set the new heap's relpages and reltuples, as CLUSTER does. */
static void
update_new_heap_stats(Oid relid, BlockNumber pages, double tuples)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	reltup;
	Form_pg_class relform;

	reltup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(reltup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	relform = (Form_pg_class) GETSTRUCT(reltup);
	relform->relpages = pages;
	relform->reltuples = tuples;
	CatalogTupleUpdate(pg_class, &reltup->t_self, reltup);
	heap_freetuple(reltup);
	table_close(pg_class, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * The layout the rewrite wrote, and the rewritten heap as its one sorted
 * run; then the call in the history.
 */
static void
save_layout(Oid relid, int nkeys, ZKeyColumn *cols, ZCurve curve, int bits,
			RewriteResult *res, ZCallReport *rep, const ZRoomRecord *room)
{
	ZRewriteRecord rec = {
		.sample_rows = res->sample_rows,
		.rows = (int64) res->num_tuples,
		.pages = res->num_pages,
		.started = rep->started,
		.sort_runs = res->sort.nruns,
		.temp_bytes = res->sort.spill_bytes,
		.has_top = res->has_top,
		.top = res->top,
	};

	zorder_layout_save_full(relid, nkeys, cols, curve, bits, &rec);
	zorder_runs_set_main(relid, res->num_pages, (int64) res->num_tuples,
						 InvalidTransactionId);
	zorder_record_runs_filenode(relid);
	rep->pages_written = res->num_pages;
	zorder_report_end(relid, rep, "full", (int64) res->num_tuples, -1, room);
}

/*
 * No row can come into the new heap before this transaction's ACCESS
 * EXCLUSIVE goes at commit, and each it holds is its run's, not newer than
 * this transaction: then the first incremental call reads none of its
 * pages for newcomers unless written since (zorder.layouts.scan_lsn, as
 * incremental.c's note_scan_lsn records it).  Not where a row is newer
 * (res->newest_xmin), nor where the pages do not show their writes in
 * their LSN (an unlogged table, or wal_level minimal, which writes the
 * new file without WAL).
 */
static void
note_rewritten(Oid relid, const RewriteResult *res)
{
	Relation	rel = relation_open(relid, NoLock);

	if (RelationNeedsWAL(rel) &&
		(!TransactionIdIsValid(res->newest_xmin) ||
		 !TransactionIdFollows(res->newest_xmin, GetTopTransactionId())))
		zorder_layout_set_scan_lsn(relid, GetXLogInsertRecPtr());
	relation_close(rel, NoLock);
}

/*
 * The skipping after the rewrite, from the rebuilt BRIN indexes, beside
 * the skipping before in the call's record (report.c).
 */
static void
report_skipping_after(Oid relid, const ZCallReport *rep)
{
	Relation	rel = relation_open(relid, NoLock);
	double		after[ZORDER_MAX_KEYS];

	zorder_report_point_ranges(rel, rep->nkeys, rep->attnums, after);
	relation_close(rel, NoLock);
	zorder_report_skipping(relid, rep, after);
}

/*
 * Boundaries from set id for OldHeap's key columns attnums, instead of a
 * sample: a Citus distributed table's set, which its coordinator sampled
 * from every shard (tableset.c).  The caller runs as the table's owner; a
 * set is taken only from a table of that owner, and only if it was sampled
 * for these key columns and their types.  Returns the set's bits; *curve
 * is the set's.
 */
static int
take_given_set(Relation OldHeap, int id, int nkeys, const AttrNumber *attnums,
			   ZKeyColumn *cols, ZCurve *curve)
{
	LayoutSet  *set = zorder_load_owned_boundary_set(id,
													 OldHeap->rd_rel->relowner);
	char	   *why = NULL;

	if (!zorder_set_fits(OldHeap, set, nkeys, attnums, &why))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("boundary set %d does not fit table \"%s\"", id,
						RelationGetRelationName(OldHeap)),
				 errdetail_internal("%s", why)));
	if (!zorder_decode_boundary_set(set))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stored boundaries no longer read back as the type of their key column"),
				 errdetail("The type was changed in place (ALTER TYPE) since boundary set %d was sampled.", id)));
	for (int k = 0; k < nkeys; k++)
	{
		cols[k].nbounds = set->cols[k].nbounds;
		cols[k].bounds = set->cols[k].bounds;
		zorder_prepare_bounds(&cols[k], set->bits);
	}
	*curve = set->curve;
	return set->bits;
}

/*
 * Fully rewrite one table (not partitioned) along the curve.  auto_reason:
 * why zorder chose the rewrite itself (automatic_rewrite), for the
 * history, or NULL.  given_set: the boundary set to lay it out with
 * instead of a sample (take_given_set), or 0.
 */
static void
optimize_relation(Oid relid, const char *curve_name, const char *auto_reason,
				  int given_set)
{
	Relation	OldHeap;
	Relation	NewHeap;
	ZOwnerSwitch sw;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	ZKeyColumn	cols[ZORDER_MAX_KEYS];
	int			nkeys;
	int			bits;
	ZCurve		curve;
	Oid			tablespace;
	Oid			accessmethod;
	char		relpersistence;
	Oid			OIDNewHeap;
	bool		swap_toast_by_content;
	TransactionId OldestXmin;
	TransactionId FreezeXid;
	MultiXactId MultiXactCutoff;
	RewriteResult res;
	ZRoomRecord room;
	ZCallReport rep;

	CHECK_FOR_INTERRUPTS();
	memset(&res, 0, sizeof(res));
	zorder_report_start(&rep);

	OldHeap = zorder_open_checked(relid, AccessExclusiveLock, "zorder.optimize");
	if (OldHeap->rd_rel->relkind != RELKIND_RELATION)
		elog(ERROR, "\"%s\" is not an ordinary table",
			 RelationGetRelationName(OldHeap));
	CheckTableNotInUse(OldHeap, "zorder.optimize");

	nkeys = zorder_get_keys_required(OldHeap, attnums);
	/* NULL keeps the table's curve (read now that its rows are current) */
	curve = zorder_parse_curve(curve_name ? curve_name : zorder_layout_curve(relid));

	/*
	 * The rewrite moves every tuple, so the SIREAD locks of serializable
	 * transactions on tuples and pages of the table would name the wrong
	 * rows afterwards.  As CLUSTER does, promote them to one lock on the
	 * relation; those on indexes are promoted when the indexes are rebuilt.
	 */
	TransferPredicateLocksToHeapRelation(OldHeap);

	/*
	 * Run as the table's owner, as CLUSTER does, so that comparison
	 * functions and index expressions cannot act with our privileges.
	 */
	zorder_become_owner(OldHeap->rd_rel->relowner, &sw);

	/* report.c: the skipping before, to set beside the skipping after */
	rep.nkeys = nkeys;
	memcpy(rep.attnums, attnums, sizeof(AttrNumber) * nkeys);
	zorder_report_point_ranges(OldHeap, nkeys, attnums, rep.before);

	zorder_progress_start(relid);

	/* files a crashed earlier run left behind */
	zorder_cleanup_orphans();

	for (int k = 0; k < nkeys; k++)
		zorder_prepare_key_column(OldHeap, attnums[k], &cols[k]);
	if (given_set != 0)
		bits = take_given_set(OldHeap, given_set, nkeys, attnums, cols, &curve);
	else
	{
		bits = zorder_curve_bits(nkeys);
		res.sample_rows = zorder_sample_bounds(OldHeap, nkeys, cols, bits,
											   ZORDER_SAMPLE_ROWS);
	}

	/*
	 * room.c: the fillfactor the new heap's pages are written with, unless
	 * the owner set one; make_new_heap copies it from pg_class.
	 */
	zorder_room_before_full(OldHeap, &room);
	if (auto_reason != NULL)
		room.reason = room.reason ?
			psprintf("%s; %s", auto_reason, room.reason) : pstrdup(auto_reason);

	tablespace = OldHeap->rd_rel->reltablespace;
	accessmethod = OldHeap->rd_rel->relam;
	relpersistence = OldHeap->rd_rel->relpersistence;

	zorder_pending_begin();
	OIDNewHeap = make_new_heap(relid, tablespace, accessmethod,
							   relpersistence, AccessExclusiveLock);
	zorder_pending_sync();
	NewHeap = table_open(OIDNewHeap, AccessExclusiveLock);

	/* keep autovacuum off the old TOAST table; see copy_table_data() */
	if (OldHeap->rd_rel->reltoastrelid)
		LockRelationOid(OldHeap->rd_rel->reltoastrelid, AccessExclusiveLock);
	swap_toast_by_content = (OldHeap->rd_rel->reltoastrelid &&
							 NewHeap->rd_rel->reltoastrelid);
	if (swap_toast_by_content)
		NewHeap->rd_toastoid = OldHeap->rd_rel->reltoastrelid;

	/* the whole table is rewritten: freeze as aggressively as possible */
	zorder_rewrite_cutoffs(OldHeap, &OldestXmin, &FreezeXid, &MultiXactCutoff);
	/* relfrozenxid and relminmxid must not go backwards */
	if (TransactionIdIsValid(OldHeap->rd_rel->relfrozenxid) &&
		TransactionIdPrecedes(FreezeXid, OldHeap->rd_rel->relfrozenxid))
		FreezeXid = OldHeap->rd_rel->relfrozenxid;
	if (MultiXactIdIsValid(OldHeap->rd_rel->relminmxid) &&
		MultiXactIdPrecedes(MultiXactCutoff, OldHeap->rd_rel->relminmxid))
		MultiXactCutoff = OldHeap->rd_rel->relminmxid;

	copy_sorted(OldHeap, NewHeap, nkeys, cols, curve, bits, OldestXmin,
				FreezeXid, MultiXactCutoff, &res);

	NewHeap->rd_toastoid = InvalidOid;
	res.num_pages = RelationGetNumberOfBlocks(NewHeap);
	table_close(NewHeap, NoLock);
	table_close(OldHeap, NoLock);
	update_new_heap_stats(OIDNewHeap, res.num_pages, res.num_tuples);

	/* swaps the files, rebuilds every index, drops the old heap at commit */
	zorder_finish_heap_swap(relid, OIDNewHeap, swap_toast_by_content,
							FreezeXid, MultiXactCutoff, relpersistence);

	save_layout(relid, nkeys, cols, curve, bits, &res, &rep, &room);
	/* layoutkey.c: the boundaries as a set zorder.layout_key can use */
	zorder_layout_set_boundary_set(relid, given_set != 0 ? given_set :
								   zorder_save_boundary_set(relid, nkeys, cols,
															curve, bits,
															res.sample_rows,
															"optimize"));

	/* BRIN (brin.c): create the index if asked, record pages_per_range */
	zorder_brin_after_optimize(relid, nkeys, attnums);

	/*
	 * place.c: the run range by range, counted from the pages just written,
	 * so that the first incremental call need not read them all.  Not where
	 * a page may hold a row some snapshot cannot see.
	 */
	if (zorder_placement && !res.not_all_live)
	{
		Relation	rel = table_open(relid, NoLock);

		zorder_main_run_ranges_written(rel, nkeys, attnums);
		table_close(rel, NoLock);
	}
	note_rewritten(relid, &res);
	report_skipping_after(relid, &rep);

	pgstat_progress_end_command();
	zorder_restore_user(&sw);
}

/*
 * How long, and how often, a call that would rewrite a table by itself
 * tries to take ACCESS EXCLUSIVE without waiting in the lock queue, where
 * it would hold up every reader and writer that comes after it: as VACUUM
 * tries for the lock that truncates a table (vacuumlazy.c).
 */
#define AUTO_LOCK_TRIES_MS		5000
#define AUTO_LOCK_INTERVAL_MS	50

/*
 * Take ACCESS EXCLUSIVE on relid if no session holds a conflicting lock at
 * one of the tries within AUTO_LOCK_TRIES_MS.
 */
static bool
lock_without_queueing(Oid relid)
{
	for (int waited = 0; waited < AUTO_LOCK_TRIES_MS;
		 waited += AUTO_LOCK_INTERVAL_MS)
	{
		if (ConditionalLockRelationOid(relid, AccessExclusiveLock))
			return true;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(AUTO_LOCK_INTERVAL_MS * 1000L);
	}
	return false;
}

/*
 * Whether a call on relid that was not asked for a full rewrite makes one
 * by itself: zorder's room is used up (room.c), and the rewrite's ACCESS
 * EXCLUSIVE lock, estimated as zorder.estimate does, lasts at most
 * zorder.auto_rewrite_limit.  Returns the reason for the history, or NULL,
 * with a NOTICE where the rewrite would pay off but is not made.
 *
 * Only in a call that commits its own work (CALL outside a transaction
 * block), so that the lock ends with the rewrite, one leaf of a
 * partitioned table at a time.  The lock is taken without waiting in the
 * queue; once held, the room is looked at again, since another call may
 * have laid the table out, or its owner set a fillfactor, in between.  The
 * rewrite then opens the table under the lock this holds.
 */
static char *
automatic_rewrite(Oid relid, bool can_commit)
{
	Relation	rel;
	ZOwnerSwitch sw;
	ZRoomSpent	spent;
	double		lock_seconds = 0;
	bool		due;
	char	   *name;

	if (zorder_auto_rewrite_limit <= 0 || !can_commit)
		return NULL;
	rel = zorder_open_owned(relid, AccessShareLock, "zorder.optimize");
	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		!zorder_catalog_rows_current(relid,
									 rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP,
									 true) ||
		!zorder_layout_exists(relid))
	{
		table_close(rel, AccessShareLock);
		return NULL;
	}
	name = pstrdup(RelationGetRelationName(rel));
	zorder_become_owner(rel->rd_rel->relowner, &sw);
	due = zorder_room_rewrite_due(rel, &spent, &lock_seconds);
	zorder_restore_user(&sw);
	table_close(rel, AccessShareLock);
	if (!due)
		return NULL;

	if (lock_seconds > zorder_auto_rewrite_limit)
	{
		ereport(NOTICE,
				(errmsg("the room zorder kept on table \"%s\" is used up", name),
				 errdetail("Since the table was laid out with room for %.1f %%, appends spread over the keys grew it %.1f %%, and splits of ranges without room wrote as much as a full rewrite would. "
						   "A full rewrite would make room again, but its ACCESS EXCLUSIVE lock is estimated at %.1f s, longer than zorder.auto_rewrite_limit (%d s).",
						   spent.room * 100.0, spent.growth * 100.0,
						   lock_seconds, zorder_auto_rewrite_limit),
				 errhint("Run CALL zorder.optimize with full => true at a quiet hour, lay the table out online with zorder.prepare_layout, or raise zorder.auto_rewrite_limit.")));
		return NULL;
	}
	if (!lock_without_queueing(relid))
	{
		ereport(NOTICE,
				(errmsg("could not lock table \"%s\" to rewrite it in full", name),
				 errdetail("The room zorder kept on it is used up, but other sessions held conflicting locks on it at every try for %d s. This call places the new rows instead.",
						   AUTO_LOCK_TRIES_MS / 1000),
				 errhint("The next call tries again.")));
		return NULL;
	}
	rel = try_table_open(relid, NoLock);
	due = rel != NULL && zorder_room_used_up(rel, &spent);
	if (rel != NULL)
		table_close(rel, NoLock);
	if (!due)
	{
		UnlockRelationOid(relid, AccessExclusiveLock);
		return NULL;
	}
	return psprintf("automatic full rewrite: %s; its lock estimated at %.1f s, "
					"within zorder.auto_rewrite_limit",
					zorder_room_spent_reason(&spent), lock_seconds);
}

/*
 * Optimize one table (not partitioned): incrementally when asked and the
 * table has a layout, else with a full rewrite.  Runs with a snapshot, as
 * utility commands do.
 */
static void
optimize_one(Oid relid, bool full, const char *curve_name, bool can_commit,
			 int given_set)
{
	bool		pushed = false;
	char	   *auto_reason = NULL;

	/*
	 * When transactions commit between leaves, the snapshot must be the
	 * portal's, which a commit releases; else our own.
	 */
	if (can_commit)
		EnsurePortalSnapshotExists();
	else if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	/* autokeys.c: automatic keys weighed against the workload first */
	zorder_autokeys_before_call(relid);
	/* layoutkey.c: a heap laid out online by a prepared set is one run */
	if (!full)
	{
		zorder_recognize_layout(relid);
		auto_reason = automatic_rewrite(relid, can_commit);
	}
	if (full || auto_reason != NULL ||
		!zorder_optimize_incremental(relid, curve_name, can_commit))
		optimize_relation(relid, curve_name, auto_reason, given_set);
	if (pushed && ActiveSnapshotSet())
		PopActiveSnapshot();
}

/*
 * Whether a node's catalog has the functions by which a shard's set goes
 * to and from the coordinator (0.8), and the node the distributed table's
 * shell, which keeps the table's set there (Citus makes one on every node
 * unless its metadata is not synced): a node without them still has its
 * shards laid out, each with a set of its own.
 */
#define SHARD_SETS_PROBE \
	"SELECT pg_catalog.to_regprocedure('zorder._adopt_layout_set(pg_catalog.regclass, pg_catalog.jsonb)') IS NOT NULL " \
	"AND pg_catalog.to_regprocedure('zorder._shard_layout_set(pg_catalog.regclass, integer)') IS NOT NULL " \
	"AND pg_catalog.to_regprocedure('zorder._shard_sample_set(pg_catalog.regclass, pg_catalog.text)') IS NOT NULL " \
	"AND pg_catalog.to_regprocedure('zorder._take_table_set(pg_catalog.regclass, pg_catalog.regclass, integer, pg_catalog.jsonb)') IS NOT NULL " \
	"AND pg_catalog.to_regprocedure('zorder._optimize_with_set(pg_catalog.regclass, integer, boolean, pg_catalog.text)') IS NOT NULL " \
	"AND pg_catalog.to_regclass(%s) IS NOT NULL"

/* What optimize_shards's commands are made of */
typedef struct ShardHandoff
{
	const char *keys;			/* ", 'a', 'b'": the key columns */
	const char *call_args;		/* the rest of the CALL's arguments */
	const char *resume_args;	/* ... for a shard a full call did not reach */
	int			fillfactor;		/* the room zorder gave the table (0: none) */
	ZShardSet  *sets;			/* recorded on the coordinator, by shard */
	int			nsets;
	const char *curve;			/* the set's curve, a literal (sampling) */
	const char *table;			/* the distributed table's name, a literal */
	int			table_set;		/* its set (tableset.c), or 0 */
	const char *table_set_doc;	/* ... as a literal document */
	const char *table_set_raw;	/* ... and as the document itself */
} ShardHandoff;

/* The set recorded for shardid, or NULL */
static const ZShardSet *
recorded_set(const ShardHandoff *h, int64 shardid)
{
	for (int i = 0; i < h->nsets; i++)
		if (h->sets[i].shardid == shardid)
			return &h->sets[i];
	return NULL;
}

/* Whether the shard's node has the functions of SHARD_SETS_PROBE */
static bool
node_takes_sets(const ZShard *shard)
{
	return shard->probe != NULL && strcmp(shard->probe, "t") == 0;
}

/* Document doc's value of key, or NULL */
static Jsonb *
doc_value(const char *doc, const char *key)
{
	Jsonb	   *j = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
													   CStringGetDatum(doc)));
	JsonbValue *v;

	if (!JB_ROOT_IS_OBJECT(j))
		return NULL;
	v = getKeyJsonValueFromContainer(&j->root, key, strlen(key), NULL);
	return v ? JsonbValueToJsonb(v) : NULL;
}

/*
 * Whether two sets' documents are for the same key columns and curve: a
 * shard on an older set of the table with other keys or another curve is
 * not behind a full call, but before a change of keys or curve, which an
 * incremental call takes in as it does on one table (new rows follow the
 * new keys; the shard is not rewritten).
 */
static bool
same_keys_and_curve(const char *a, const char *b)
{
	const char *keys[] = {"columns", "types", "curve"};

	if (a == NULL || b == NULL)
		return false;
	for (int i = 0; i < (int) lengthof(keys); i++)
	{
		Jsonb	   *va = doc_value(a, keys[i]);
		Jsonb	   *vb = doc_value(b, keys[i]);

		if (va == NULL || vb == NULL ||
			compareJsonbContainers(&va->root, &vb->root) != 0)
			return false;
	}
	return true;
}

/*
 * A shard's commands: (0) its keys, with, where its node takes them, the
 * set its last layout had, if the shard has moved to another node group
 * since, and the room zorder gave the distributed table, which a shard
 * Citus made since has; (1) the table's set, under its id; (2) the call,
 * with the table's set for a full rewrite; (3) where its node takes them,
 * the set of its layout, sent only if its id is not the one recorded for
 * it on that node group.  The keys go first in a CASE, whose condition is
 * evaluated before its result, as a command gives back one value.
 */
static char *
optimize_command(const ZShard *shard, int step, void *arg)
{
	ShardHandoff *h = (ShardHandoff *) arg;
	const ZShardSet *set = recorded_set(h, shard->shardid);
	bool		moved = set != NULL && set->group != shard->groupid;
	char	   *name = quote_literal_cstr(shard->name);

	switch (step)
	{
		case 0:
			if (!node_takes_sets(shard))
				return psprintf("SELECT zorder.cluster_by(%s::pg_catalog.regclass%s)",
								name, h->keys);
			return psprintf("WITH s(r, d) AS (SELECT %s::pg_catalog.regclass, "
							"COALESCE(%s::pg_catalog.jsonb, '{}') OPERATOR(pg_catalog.||) "
							"pg_catalog.jsonb_build_object('fillfactor', %d)) "
							"SELECT CASE WHEN zorder.cluster_by(s.r%s) IS NULL "
							"THEN NULL ELSE zorder._adopt_layout_set(s.r, s.d) END FROM s",
							name, moved ? quote_literal_cstr(set->doc) : "NULL",
							h->fillfactor, h->keys);
		case 1:
			/* a shard laid out with the set since has it on its node */
			if (h->table_set == 0 || !node_takes_sets(shard) ||
				(set != NULL && !moved && set->set_id == h->table_set))
				return NULL;
			return psprintf("SELECT zorder._take_table_set(%s, %s, %d, %s)",
							name, h->table, h->table_set, h->table_set_doc);
		case 2:
			if (h->table_set == 0 || !node_takes_sets(shard))
				return psprintf("CALL zorder.optimize(%s%s", name, h->call_args);

			/*
			 * A shard last laid out with an older set of the table: the full
			 * call that made the newer one did not reach it (cancelled, or
			 * it failed there).  This call finishes that one: the shard is
			 * rewritten with the table's set.  Not a shard moved since (its
			 * copy is recognised), nor one laid out with a set of its own
			 * (below ZORDER_TABLE_SET_FIRST_ID: before the table had one),
			 * nor one whose set is for other keys or another curve.
			 */
			if (set != NULL && !moved &&
				set->set_id >= ZORDER_TABLE_SET_FIRST_ID &&
				set->set_id != h->table_set &&
				same_keys_and_curve(set->doc, h->table_set_raw))
				return psprintf("CALL zorder._optimize_with_set(%s, %d%s", name,
								h->table_set, h->resume_args);
			return psprintf("CALL zorder._optimize_with_set(%s, %d%s", name,
							h->table_set, h->call_args);
		default:
			if (!node_takes_sets(shard))
				return NULL;
			if (set != NULL && !moved)
				return psprintf("SELECT zorder._shard_layout_set(%s, %d)",
								name, set->set_id);
			return psprintf("SELECT zorder._shard_layout_set(%s)", name);
	}
}

/* A shard's command of the sampling pass: its keys, then its sample */
static char *
sample_command(const ZShard *shard, int step, void *arg)
{
	ShardHandoff *h = (ShardHandoff *) arg;

	if (!node_takes_sets(shard))
		return NULL;
	return psprintf("SELECT CASE WHEN zorder.cluster_by(s.r%s) IS NULL THEN NULL "
					"ELSE zorder._shard_sample_set(s.r, %s) END "
					"FROM (SELECT %s::pg_catalog.regclass) s(r)",
					h->keys, h->curve,
					quote_literal_cstr(shard->name));
}

/* A number in a node's answer, or -1 */
static double
answer_number(const char *answer, const char *key)
{
	Jsonb	   *doc = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
														 CStringGetDatum(answer)));
	JsonbValue *v;

	if (!JB_ROOT_IS_OBJECT(doc))
		return -1;
	v = getKeyJsonValueFromContainer(&doc->root, key, strlen(key), NULL);
	if (v == NULL || v->type != jbvNumeric)
		return -1;
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8,
											  NumericGetDatum(v->val.numeric)));
}

/*
 * The set every shard is laid out with (tableset.c): the one the table
 * has, unless the call is full, or the table's keys changed since, or the
 * call names another curve; else a new one, from a sample of every shard,
 * under an id that no node gives a set of its own.  0 where a node cannot
 * take sets (its catalog is 0.7): the shards then sample their own.  A
 * shard that fails to give its sample (its node down, or not the caller's
 * there) is left out of the set, and fails again when laid out, after the
 * others; if every shard fails, the call fails here.  *made: whether the
 * set is new.
 */
static int
table_set(Relation rel, int nkeys, const AttrNumber *attnums, bool full,
		  const char *curve_name, ShardHandoff *h, bool *made)
{
	ZShardCall call = {0};
	int			id;
	char	  **docs;
	double	   *pages;
	int			nsamples = 0;
	ZCurve		curve = ZCURVE_HILBERT;

	*made = false;
	id = zorder_table_set_current(rel, nkeys, attnums, &curve);
	if (!full && id != 0 &&
		(curve_name == NULL || zorder_parse_curve(curve_name) == curve))
		return id;
	/* the call's curve, else the one the table has */
	if (curve_name != NULL)
		curve = zorder_parse_curve(curve_name);
	h->curve = quote_literal_cstr(zorder_curve_name(curve));
	call.fname = "zorder.optimize";
	call.probe = psprintf(SHARD_SETS_PROBE, h->table);
	call.nsteps = 1;
	call.command = sample_command;
	call.arg = h;
	zorder_shards_run(RelationGetRelid(rel), &call);
	if (call.nfailed == call.nshards)
		zorder_shards_check(&call);

	docs = palloc0(sizeof(char *) * Max(call.nshards, 1));
	pages = palloc0(sizeof(double) * Max(call.nshards, 1));
	for (int i = 0; i < call.nshards; i++)
	{
		ZShard	   *sh = &call.shards[i];

		/* it fails again below, and the others are laid out */
		if (sh->failed)
			continue;
		if (!node_takes_sets(sh))
			return 0;
		/* no sample where row-level security hides rows (layoutkey.c) */
		if (sh->result == NULL)
			continue;
		if ((pages[i] = answer_number(sh->result, "pages")) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("unexpected sample from shard \"%s\"", sh->name),
					 errdetail("It does not say the shard's pages.")));
		docs[i] = sh->result;
		nsamples++;
	}
	if (nsamples == 0)
		return 0;
	id = zorder_table_set_make(rel, nkeys, attnums, call.nshards, docs, pages,
							   curve);
	*made = true;
	ereport(NOTICE,
			(errmsg("table \"%s\" is laid out by boundary set %d",
					RelationGetRelationName(rel), id)));
	return id;
}

/* rel's qualified name as a literal, for the shards' commands */
static const char *
table_literal(Relation rel)
{
	return quote_literal_cstr(quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
														 RelationGetRelationName(rel)));
}

/*
 * Commit a new set of the table before any shard is laid out with it: a
 * node reads it in a transaction of its own, the coordinator too where it
 * holds shards, and the shards laid out with it keep it if the call fails
 * later.  The commit lets the table's lock go: taken again, the table must
 * still be the one the set was made for, with the same keys.
 */
static Relation
commit_table_set(Relation rel, int nkeys, const AttrNumber *attnums, int id)
{
	Oid			relid = RelationGetRelid(rel);
	AttrNumber	now[ZORDER_MAX_KEYS];
	ZCurve		curve;

	table_close(rel, NoLock);
	SPI_connect_ext(SPI_OPT_NONATOMIC);
	SPI_commit();
	SPI_finish();
	rel = zorder_open_shell(relid, ShareUpdateExclusiveLock, "zorder.optimize");
	if (zorder_get_keys_required(rel, now) != nkeys ||
		memcmp(now, attnums, sizeof(AttrNumber) * nkeys) != 0 ||
		zorder_table_set_current(rel, nkeys, attnums, &curve) != id)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the keys of table \"%s\" changed during zorder.optimize",
						RelationGetRelationName(rel)),
				 errhint("Call zorder.optimize again.")));
	return rel;
}

/*
 * A Citus distributed table, called on the coordinator: its keys, declared
 * on the shell, go to every shard with the call, so that shards made since
 * (a split, a rebalance onto a new node) have them too, and each shard is
 * laid out on its node (shards.c), in a transaction of its own there.  A
 * shard that has no layout on its node (moved there since) is given the
 * set of its last layout first, so that its node recognises the order the
 * move kept rather than rewrite the shard; and after the call, the set of
 * each shard's layout is recorded for the next (shardsets.c), those of the
 * shards done even if others failed.
 */
static void
optimize_shards(Oid relid, bool full, const char *curve_name)
{
	Relation	rel;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	StringInfoData keys;
	ShardHandoff handoff;
	ZShardCall	call = {0};
	int64	   *ids;
	int32	   *groups;
	char	  **docs;
	int			fillfactor;
	bool		made;

	/*
	 * The lock of cluster_by and clear_keys on the distributed table, held
	 * to the end: the keys sent are the ones every shard is laid out with,
	 * and two calls on one table do not race shard by shard.  Inserts and
	 * queries through the coordinator go on.
	 */
	rel = zorder_open_shell(relid, ShareUpdateExclusiveLock, "zorder.optimize");
	nkeys = zorder_get_keys_required(rel, attnums);
	initStringInfo(&keys);
	for (int k = 0; k < nkeys; k++)
		appendStringInfo(&keys, ", %s",
						 quote_literal_cstr(NameStr(*attnumAttName(rel, attnums[k]))));

	handoff.keys = keys.data;
	handoff.call_args = psprintf(", \"full\" => %s, curve => %s)",
								 full ? "true" : "false",
								 curve_name ? quote_literal_cstr(curve_name) : "NULL");
	handoff.resume_args = psprintf(", \"full\" => true, curve => %s)",
								   curve_name ? quote_literal_cstr(curve_name) : "NULL");
	handoff.fillfactor = zorder_room_given_fillfactor(relid);
	handoff.sets = zorder_shard_sets_load(relid, &handoff.nsets);
	handoff.table = table_literal(rel);
	handoff.table_set = table_set(rel, nkeys, attnums, full, curve_name,
								  &handoff, &made);
	handoff.table_set_raw = handoff.table_set == 0 ? NULL :
		zorder_boundary_set_export(handoff.table_set);
	handoff.table_set_doc = handoff.table_set == 0 ? NULL :
		quote_literal_cstr(handoff.table_set_raw);
	if (made)
	{
		/* the lock went with the commit: the table may have a new name */
		rel = commit_table_set(rel, nkeys, attnums, handoff.table_set);
		handoff.table = table_literal(rel);
	}
	call.fname = "zorder.optimize";
	call.verb = "laid out";
	call.probe = psprintf(SHARD_SETS_PROBE, handoff.table);
	call.nsteps = 4;
	call.command = optimize_command;
	call.arg = &handoff;
	zorder_shards_run(relid, &call);

	ids = palloc(sizeof(int64) * Max(call.nshards, 1));
	groups = palloc(sizeof(int32) * Max(call.nshards, 1));
	docs = palloc(sizeof(char *) * Max(call.nshards, 1));
	for (int i = 0; i < call.nshards; i++)
	{
		ZShard	   *sh = &call.shards[i];

		ids[i] = sh->shardid;
		groups[i] = sh->groupid;
		docs[i] = sh->failed || !node_takes_sets(sh) ? NULL : sh->result;
	}
	fillfactor = zorder_shard_sets_record(relid, call.nshards, ids, groups,
										  docs);

	/*
	 * The room chosen on the shards goes to the distributed table, whose
	 * definition Citus makes new shards from (room.c).
	 */
	if (fillfactor != 0)
	{
		ZOwnerSwitch sw;

		zorder_become_owner(rel->rd_rel->relowner, &sw);
		zorder_room_give_fillfactor(relid, fillfactor);
		zorder_restore_user(&sw);
	}
	/* every shard is on the table's set now: the older ones go */
	if (call.nfailed == 0 && handoff.table_set != 0)
		zorder_boundary_sets_drop_older(relid, handoff.table_set);
	table_close(rel, NoLock);

	/*
	 * What the shards done did is on their nodes, committed: so is its
	 * record here, before the error about the others.  The caller's memory
	 * context outlives the commit.
	 */
	if (call.nfailed > 0)
	{
		SPI_connect_ext(SPI_OPT_NONATOMIC);
		SPI_commit();
		SPI_finish();
		zorder_shards_check(&call);
	}
}

/*
 * CALL zorder.optimize(rel regclass, full boolean, curve text)
 *
 * A partitioned table is optimized leaf by leaf with the keys of the
 * partitioned table.  When the call may commit (CALL outside a transaction
 * block), each leaf, and each batch of an incremental call, commits on its
 * own; else all go in the caller's transaction.
 */
Datum
zorder_optimize(PG_FUNCTION_ARGS)
{
	zorder_arg_required(fcinfo, 0, "table");
	zorder_arg_required(fcinfo, 1, "\"full\"");
	optimize_call(fcinfo, PG_GETARG_OID(0), PG_GETARG_BOOL(1),
				  PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_PP(2), 0);
	PG_RETURN_VOID();
}

/*
 * CALL zorder._optimize_with_set(rel regclass, boundary_set integer,
 *								  full boolean, curve text)
 *
 * zorder.optimize of one table, where a full rewrite lays it out with the
 * boundary set given instead of sampling (its curve too): a Citus shard,
 * laid out with the set its coordinator sampled from every shard.
 */
Datum
zorder_optimize_with_set(PG_FUNCTION_ARGS)
{
	Oid			relid;
	int			id;
	Relation	rel;
	LayoutSet  *set;

	zorder_arg_required(fcinfo, 0, "table");
	zorder_arg_required(fcinfo, 1, "boundary_set");
	zorder_arg_required(fcinfo, 2, "\"full\"");
	relid = PG_GETARG_OID(0);
	id = PG_GETARG_INT32(1);
	rel = zorder_open_shard(relid, AccessShareLock, "zorder.optimize");
	set = zorder_load_owned_boundary_set(id, rel->rd_rel->relowner);
	table_close(rel, AccessShareLock);
	optimize_call(fcinfo, relid, PG_GETARG_BOOL(2),
				  PG_ARGISNULL(3) ? NULL : PG_GETARG_TEXT_PP(3), id);
	/* the table's sets before it, if no shard here is on them now */
	if (set->relid != relid)
		zorder_boundary_sets_drop_older(set->relid, id);
	PG_RETURN_VOID();
}

/* The body of both: given_set as optimize_relation takes it */
static void
optimize_call(FunctionCallInfo fcinfo, Oid relid, bool full, text *curve,
			  int given_set)
{
	char	   *curve_name = NULL;
	bool		atomic = true;
	char		relkind;
	List	   *leaves = NIL;
	ListCell   *lc;
	MemoryContext keep_cxt;
	MemoryContext oldcxt;

	PreventCommandDuringRecovery("zorder.optimize");
	zorder_notice_not_preloaded("zorder.optimize");
	if (fcinfo->context && IsA(fcinfo->context, CallContext))
		atomic = ((CallContext *) fcinfo->context)->atomic;

	/* what must outlive the commits */
	keep_cxt = AllocSetContextCreate(PortalContext, "zorder optimize",
									 ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(keep_cxt);
	if (curve != NULL)
	{
		curve_name = text_to_cstring(curve);
		(void) zorder_parse_curve(curve_name);
	}

	relkind = get_rel_relkind(relid);
	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	if (relkind == RELKIND_RELATION && zorder_citus_sharded(relid))
	{
		/*
		 * Each shard is laid out in a transaction of its own on its node:
		 * a transaction block around the call could not undo them, and
		 * they would wait for the locks it holds on the shards.  A
		 * subtransaction (a PL/pgSQL block with EXCEPTION) could not undo
		 * them either.
		 */
		if (atomic || IsSubTransaction())
			ereport(ERROR,
					(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
					 IsSubTransaction() ?
					 errmsg("zorder.optimize of a distributed table cannot run inside a subtransaction") :
					 IsTransactionBlock() ?
					 errmsg("zorder.optimize of a distributed table cannot run inside a transaction block") :
					 errmsg("zorder.optimize of a distributed table cannot be executed from a function"),
					 errdetail("Each shard is laid out in a transaction of its own on its node."),
					 IsSubTransaction() ?
					 errhint("Run the CALL outside any PL/pgSQL block with an EXCEPTION clause, and outside savepoints.") :
					 errhint("Run the CALL on its own, outside BEGIN and COMMIT and not from a function.")));
		/* in keep_cxt: a failure commits what the shards done did */
		optimize_shards(relid, full, curve_name);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(keep_cxt);
		return;
	}
	if (relkind != RELKIND_PARTITIONED_TABLE)
		leaves = list_make1_oid(relid);
	else
	{
		Relation	parent;
		AttrNumber	attnums[ZORDER_MAX_KEYS];
		List	   *all;

		parent = zorder_open_checked(relid, AccessShareLock,
									 "zorder.optimize");
		(void) zorder_get_keys_required(parent, attnums);
		all = find_all_inheritors(relid, AccessShareLock, NULL);
		foreach(lc, all)
		{
			if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
				leaves = lappend_oid(leaves, lfirst_oid(lc));
		}
		table_close(parent, NoLock);
	}
	MemoryContextSwitchTo(oldcxt);

	if (!atomic)
		SPI_connect_ext(SPI_OPT_NONATOMIC);
	foreach(lc, leaves)
	{
		optimize_one(lfirst_oid(lc), full, curve_name, !atomic, given_set);
		if (!atomic && lnext(leaves, lc) != NULL)
			SPI_commit();
	}
	if (!atomic)
		SPI_finish();
	MemoryContextDelete(keep_cxt);
	return;
}

/*
 * zorder.cleanup(): remove relation files that crashed optimize runs left
 * in this database.  They are deleted when the calling transaction commits,
 * on standbys too, as a dropped table's are.  Returns how many relation
 * files it removes.
 */
Datum
zorder_cleanup(PG_FUNCTION_ARGS)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to run zorder.cleanup")));
	/* it writes WAL, as DROP TABLE does */
	PreventCommandDuringRecovery("zorder.cleanup()");
	PreventCommandIfReadOnly("zorder.cleanup()");
	PG_RETURN_INT32(zorder_cleanup_orphans_wait());
}
