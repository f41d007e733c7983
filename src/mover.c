/*-------------------------------------------------------------------------
 *
 * mover.c
 *	  Moving one row of an incremental zorder.optimize, and the writer that
 *	  chooses where it goes.
 *
 * A move is a heap delete of the row and a heap insert of a copy, marked
 * as a move, with every index entry made: logical replication and
 * standbys see it as what it is, and a statement whose snapshot predates
 * it gets a serialization error rather than silently missing the row.  The
 * writer points heap_insert at the page the row goes to: whole BRIN ranges
 * that earlier moves emptied, new ranges at the end of the heap, or (for
 * placement) the pages of one range of the main run, into the room its
 * fillfactor keeps.  Also here: what a call's snapshot said about which
 * rows it found (FoundSnapshot), and the publications that would see the
 * moves as something else.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/xloginsert.h"
#include "catalog/partition.h"
#include "storage/freespace.h"
#include "storage/procarray.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "brin.h"
#include "heappage.h"
#include "mover.h"
#include "pg_compat.h"
#include "radix.h"
#include "runs.h"
#include "zorder.h"

/* Make sure block blk exists, extending rel with empty pages up to it. */
static void
extend_to(Relation rel, BlockNumber blk)
{
	while (RelationGetNumberOfBlocks(rel) <= blk)
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
}

/* A test of one item of a locked heap page (blocks_any_item). */
typedef bool (*ItemTest) (Relation rel, Buffer buf, Page page,
						  BlockNumber blk, OffsetNumber off, void *arg);

/*
 * True if an item of a page of blocks [from, to) passes test: each page is
 * read and share-locked in turn, and the walk stops at the first such item.
 */
static bool
blocks_any_item(Relation rel, BlockNumber from, BlockNumber to, ItemTest test,
				void *arg)
{
	to = Min(to, RelationGetNumberOfBlocks(rel));
	for (BlockNumber blk = from; blk < to; blk++)
	{
		Buffer		buf;
		Page		page;
		bool		found = false;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(rel, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!PageIsNew(page))
		{
			OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

			for (OffsetNumber off = FirstOffsetNumber;
				 off <= maxoff && !found; off++)
				found = test(rel, buf, page, blk, off, arg);
		}
		UnlockReleaseBuffer(buf);
		if (found)
			return true;
	}
	return false;
}

/* A row that was deleted but that a snapshot older than *arg may see. */
static bool
item_recently_dead(Relation rel, Buffer buf, Page page, BlockNumber blk,
				   OffsetNumber off, void *arg)
{
	HeapTupleData tup;

	return zorder_page_tuple(rel, page, blk, off, &tup) &&
		HeapTupleSatisfiesVacuum(&tup, *(TransactionId *) arg, buf) ==
		HEAPTUPLE_RECENTLY_DEAD;
}

/*
 * True if a page of blocks [from, to) holds a row that was deleted but that
 * some snapshot may still see: a BRIN summary made now covers its values
 * too, and VACUUM never makes a summarized range's summary tight again.
 */
bool
zorder_blocks_recently_dead(Relation rel, BlockNumber from, BlockNumber to)
{
	TransactionId oldest = GetOldestNonRemovableTransactionId(rel);

	return blocks_any_item(rel, from, to, item_recently_dead, &oldest);
}

/*
 * A tuple, live or dead: what pruning leaves (dead line pointers) takes no
 * room.
 */
static bool
item_takes_room(Relation rel, Buffer buf, Page page, BlockNumber blk,
				OffsetNumber off, void *arg)
{
	ItemId		id = PageGetItemId(page, off);

	return ItemIdIsNormal(id) || ItemIdIsRedirected(id);
}

/* True if no page of blocks [from, to) holds a tuple, live or dead. */
bool
zorder_blocks_empty(Relation rel, BlockNumber from, BlockNumber to)
{
	return !blocks_any_item(rel, from, to, item_takes_room, NULL);
}

void
zorder_writer_add_free(Writer *w, BlockNumber start)
{
	int			pos = 0;

	while (pos < w->nfree && w->free[pos] < start)
		pos++;
	if (pos < w->nfree && w->free[pos] == start)
		return;
	ZORDER_RESERVE(w->free, w->maxfree, w->nfree + 1, 64, CurrentMemoryContext);
	memmove(&w->free[pos + 1], &w->free[pos],
			sizeof(BlockNumber) * (w->nfree - pos));
	w->free[pos] = start;
	w->nfree++;
}

/* Start a new range: the lowest empty one, or a new one at the end. */
static void
writer_next_range(Relation rel, IncrState *st, Writer *w)
{
	BlockNumber start = InvalidBlockNumber;

	while (w->nfree > 0)
	{
		start = w->free[0];
		w->nfree--;
		memmove(&w->free[0], &w->free[1], sizeof(BlockNumber) * w->nfree);

		/*
		 * Others may have inserted there between two batches, before this
		 * call kept them out of the range; what VACUUM truncated since is
		 * empty and comes back with extend_to.
		 */
		if (zorder_blocks_empty(rel, start,
								Min(start + st->lay.ppr, RelationGetNumberOfBlocks(rel))))
			break;
		start = InvalidBlockNumber;
	}
	if (start != InvalidBlockNumber)
	{
		/* a summary made before would cover what comes in too */
		zorder_brin_ranges(rel, start, start + st->lay.ppr, true, false);
		/* and inserts by others between batches must not land here */
		for (BlockNumber b = start; b < start + st->lay.ppr; b++)
			RecordPageWithFreeSpace(rel, b, 0);
	}
	else
	{
		BlockNumber end = RelationGetNumberOfBlocks(rel);

		start = ((end + st->lay.ppr - 1) / st->lay.ppr) * st->lay.ppr;
	}
	w->cur = start;
	w->range_end = start + st->lay.ppr;
	w->room = 0;
	w->lines = 0;
	ZORDER_RESERVE(w->started, w->maxstarted, w->nstarted + 1, 64,
				   CurrentMemoryContext);
	w->started[w->nstarted++] = start;
}

/* Start writing run number run on a fresh range. */
void
zorder_writer_start_run(Writer *w, int run)
{
	w->run = run;
	w->out = -1;
	w->cur = InvalidBlockNumber;
}

/*
 * True if page blk can take a tuple of need bytes; *room gets its free
 * space and *lines how many line pointers it can still add.
 */
static bool
page_has_room(Relation rel, BlockNumber blk, Size need, Size *room,
			  int *lines)
{
	Buffer		buf = ReadBuffer(rel, blk);
	Page		page;
	bool		fits;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	*room = PageIsNew(page) ? MaxHeapTupleSize : PageGetHeapFreeSpace(page);
	*lines = MaxHeapTuplesPerPage -
		(PageIsNew(page) ? 0 : (int) PageGetMaxOffsetNumber(page));
	/* an empty page takes whatever it can: no better page exists */
	fits = PageIsNew(page) || PageIsEmpty(page) || *room >= need;
	UnlockReleaseBuffer(buf);
	return fits;
}

/*
 * Point heap_insert at the page where a tuple of len bytes goes next.
 * heap_insert without the free space map uses that page if the tuple fits,
 * which page_has_room made sure of.
 */
static bool
writer_place(Relation rel, IncrState *st, Writer *w, BulkInsertState bistate,
			 Size len)
{
	Size		need = MAXALIGN(len) + w->savefree;
	Size		used = MAXALIGN(len) + sizeof(ItemIdData);

	/*
	 * Within a batch only this call inserts into the table (its lock keeps
	 * writers out) and pruning only frees space, so what the page had left
	 * after the last insert is a floor: read it again only when that is
	 * not enough.
	 */
	if (!(w->cur != InvalidBlockNumber && w->cur < w->range_end &&
		  w->room >= need && w->lines > 0))
	{
		for (;;)
		{
			if (w->in_range && w->cur >= w->range_end && !w->wrapped)
			{
				/* on with the pages before the one filled first */
				w->cur = w->range_first;
				w->wrapped = true;
			}
			if (w->in_range &&
				(w->cur >= w->range_end || (w->wrapped && w->cur >= w->wrap_start)))
			{
				/* the range is full after all: heap_insert finds a page */
				w->room = 0;
				w->lines = 0;
				ReleaseBulkInsertStatePin(bistate);
				w->targeted = InvalidBlockNumber;
				RelationSetTargetBlock(rel, InvalidBlockNumber);
				return false;
			}
			if (w->cur == InvalidBlockNumber || w->cur >= w->range_end)
				writer_next_range(rel, st, w);
			extend_to(rel, w->cur);
			if (page_has_room(rel, w->cur, need, &w->room, &w->lines))
				break;
			w->cur++;
		}
	}
	/*
	 * As PageGetHeapFreeSpace counts: a line pointer off too, and nothing
	 * left once the page has as many as a page can (one reused instead of
	 * added only leaves more).
	 */
	w->room = w->room > used ? w->room - used : 0;
	w->lines--;
	if (w->targeted != w->cur)
	{
		/* heap_insert would go on with the page it holds pinned */
		ReleaseBulkInsertStatePin(bistate);
		w->targeted = w->cur;
	}
	RelationSetTargetBlock(rel, w->cur);
	return true;
}

/* Count a row written on page blk in the extent being written. */
void
zorder_writer_record(IncrState *st, Writer *w, BlockNumber blk)
{
	Extent	   *e = w->out >= 0 ? &st->extents[w->out] : NULL;

	if (e && blk >= e->r.first_block && blk < e->r.first_block + e->r.nblocks)
		;
	else if (e && blk == e->r.first_block + e->r.nblocks &&
			 !(w->per_range && blk % st->lay.ppr == 0))
		e->r.nblocks++;
	else
	{
		w->out = zorder_add_extent(st, blk, 1, 0, InvalidTransactionId, w->run,
								   w->has_key_lo_next ? w->key_lo_next : w->key);
		w->has_key_lo_next = false;
		e = &st->extents[w->out];
		e->fresh = true;
	}
	e->r.rows++;
	/* saved with the xid of the batch that wrote last into it */
	e->r.xid = InvalidTransactionId;
}

void
zorder_move_begin(Relation rel, MoveState *ms)
{
	ms->estate = CreateExecutorState();
	ms->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(ms->rri, rel, 1, NULL, 0);
	ExecOpenIndices(ms->rri, false);
	ms->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
										&TTSOpsHeapTuple);
	ms->bistate = GetBulkInsertState();
}

void
zorder_move_end(MoveState *ms)
{
	FreeBulkInsertState(ms->bistate);
	ExecDropSingleTupleTableSlot(ms->slot);
	ExecCloseIndices(ms->rri);
	FreeExecutorState(ms->estate);
}

FoundSnapshot *
zorder_found_snapshot(Snapshot snapshot, MemoryContext cxt)
{
	FoundSnapshot *f = MemoryContextAllocZero(cxt, sizeof(FoundSnapshot));

	f->xmin = snapshot->xmin;
	f->xmax = snapshot->xmax;
	f->xcnt = snapshot->xcnt;
	f->xip = MemoryContextAlloc(cxt, sizeof(TransactionId) * Max(f->xcnt, 1));
	memcpy(f->xip, snapshot->xip, sizeof(TransactionId) * f->xcnt);
	f->suboverflowed = snapshot->suboverflowed;
	f->subxcnt = f->suboverflowed ? 0 : snapshot->subxcnt;
	f->subxip = MemoryContextAlloc(cxt, sizeof(TransactionId) * Max(f->subxcnt, 1));
	memcpy(f->subxip, snapshot->subxip, sizeof(TransactionId) * f->subxcnt);
	f->maxown = 16;
	f->own = MemoryContextAlloc(cxt, sizeof(TransactionId) * f->maxown);
	return f;
}

/* Record a batch of the call that is about to commit (see found_before). */
void
zorder_found_add_own(FoundSnapshot *f, TransactionId xid)
{
	if (f == NULL || !TransactionIdIsValid(xid))
		return;
	ZORDER_RESERVE(f->own, f->maxown, f->nown + 1, 16, CurrentMemoryContext);
	f->own[f->nown++] = xid;
}

/*
 * True unless the tuple at a TID the call found was inserted after it
 * found it: then the row it found there is gone, VACUUM freed its line
 * pointer between two batches and another row took it, which is not the
 * call's to move.  (A table rewritten in between is caught before, by its
 * new file.)  Only the inserting transaction tells the two apart: one that
 * had committed when the call looked is old enough.  A subtransaction
 * that was running then is not in the snapshot's list when that list
 * overflowed, and is taken for committed; a row VACUUM froze since is
 * taken for old.
 */
static bool
found_before(HeapTupleHeader tup, ItemPointer tid, const FoundSnapshot *f)
{
	TransactionId xmin;
	bool		own;

	if (f == NULL || HeapTupleHeaderXminFrozen(tup))
		return true;
	xmin = HeapTupleHeaderGetRawXmin(tup);
	if (!TransactionIdIsNormal(xmin) || TransactionIdPrecedes(xmin, f->xmin))
		return true;
	own = TransactionIdIsCurrentTransactionId(xmin);
	for (int i = 0; i < f->nown && !own; i++)
		own = TransactionIdEquals(xmin, f->own[i]);
	if (own)
	{
		uint64		t = ((uint64) ItemPointerGetBlockNumber(tid) << 16) |
			ItemPointerGetOffsetNumber(tid);

		/*
		 * A row the call wrote is the call's to move when it found it since
		 * (a split or shift collects its range again); at a TID found
		 * before any of that, it took a line pointer that pruning or
		 * VACUUM freed in between, and is not the row found there.
		 */
		return f->ntids == 0 ||
			bsearch(&t, f->tids, f->ntids, sizeof(uint64),
					zr_cmp_u64) == NULL;
	}
	if (!TransactionIdPrecedes(xmin, f->xmax))
		return false;
	for (int i = 0; i < f->xcnt; i++)
		if (TransactionIdEquals(xmin, f->xip[i]))
			return false;
	for (int i = 0; i < f->subxcnt; i++)
		if (TransactionIdEquals(xmin, f->subxip[i]))
			return false;
	return true;
}

/*
 * heap_insert into the page the writer chose, taking the room the table's
 * fillfactor keeps free there: heap_insert honours fillfactor on its target
 * page too, which is what keeps ordinary INSERTs out of that room.  The
 * setting is lowered in this backend's relation cache entry for the one
 * call and put back at once, error or not; the table's lock keeps others
 * from changing it meanwhile, and an invalidation that rebuilt the entry
 * in between only means the row goes elsewhere.
 */
static void
insert_into_reserve(Relation rel, HeapTuple tup, CommandId cid,
					BulkInsertState bistate)
{
	StdRdOptions *opts = (StdRdOptions *) rel->rd_options;
	int			saved;

	if (opts == NULL || opts->fillfactor >= 100)
	{
		heap_insert(rel, tup, cid, HEAP_INSERT_SKIP_FSM, bistate);
		return;
	}
	saved = opts->fillfactor;
	opts->fillfactor = 100;
	PG_TRY();
	{
		heap_insert(rel, tup, cid, HEAP_INSERT_SKIP_FSM, bistate);
	}
	PG_FINALLY();
	{
		opts = (StdRdOptions *) rel->rd_options;
		if (opts != NULL)
			opts->fillfactor = saved;
	}
	PG_END_TRY();
}

/*
 * Move one row: delete it and insert a copy where the writer says.
 * Returns the new block, or InvalidBlockNumber if the row is gone or
 * changed, or is not the one the call found at that TID (see
 * found_before).
 */
BlockNumber
zorder_move_row(Relation rel, IncrState *st, Writer *w, MoveState *ms,
				ItemPointer tid, Snapshot snapshot, const FoundSnapshot *found)
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
	if (!found_before(copy->t_data, tid, found))
	{
		heap_freetuple(copy);
		return InvalidBlockNumber;
	}

	/*
	 * Delete first, so that unique indexes see no duplicate.  The delete is
	 * marked as a move (as a row moving to another partition is): a
	 * statement whose snapshot predates the move and that then tries to
	 * update or lock the row gets a serialization error to retry on,
	 * instead of silently finding the row gone.
	 */
	if (zorder_heap_delete_moved(rel, tid, cid, &tmfd) != TM_Ok)
	{
		heap_freetuple(copy);
		return InvalidBlockNumber;
	}
	if (writer_place(rel, st, w, ms->bistate, copy->t_len) &&
		w->ignore_fillfactor)
		insert_into_reserve(rel, copy, cid, ms->bistate);
	else
		heap_insert(rel, copy, cid, HEAP_INSERT_SKIP_FSM, ms->bistate);
	ExecStoreHeapTuple(copy, ms->slot, true);
	zorder_insert_index_entries(ms->rri, ms->slot, ms->estate);
	ResetPerTupleExprContext(ms->estate);
	return ItemPointerGetBlockNumber(&copy->t_self);
}

/*
 * OIDs of the publications whose changes of rel a walsender decodes, as
 * RelationBuildPublicationDesc gathers them: those that list the table or
 * a partition ancestor, those of the schema of either, and those FOR ALL
 * TABLES.  19 names the first lookup GetRelationIncludedPublications and
 * lets FOR ALL TABLES leave out tables listed with EXCEPT, which are named
 * by the topmost ancestor of a partition.
 */
static List *
relation_publications(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			root = relid;
	List	   *puboids;
	List	   *alltables;
	ListCell   *lc;

	puboids = zorder_relation_publications(relid);
	puboids = list_concat_unique_oid(puboids,
									 GetSchemaPublications(RelationGetNamespace(rel)));
	if (rel->rd_rel->relispartition)
	{
		foreach(lc, get_partition_ancestors(relid))
		{
			Oid			ancestor = lfirst_oid(lc);

			puboids = list_concat_unique_oid(puboids,
											 zorder_relation_publications(ancestor));
			puboids = list_concat_unique_oid(puboids,
											 GetSchemaPublications(get_rel_namespace(ancestor)));
			root = ancestor;
		}
	}
	alltables = GetAllTablesPublications();
	alltables = list_difference_oid(alltables,
									zorder_excluded_publications(root));
	return list_concat_unique_oid(puboids, alltables);
}

/*
 * Refuse moves on a table published by a publication that replicates
 * inserts but not deletes, or the reverse.
 *
 * Every publication that carries the table's changes counts, a partition's
 * through an ancestor too (with publish_via_partition_root, its rows reach
 * the subscriber under the root's name).  Everything is looked up by OID,
 * never by a name that a concurrent rename could point elsewhere.
 */
void
zorder_check_publications(Relation rel)
{
	List	   *puboids;
	ListCell   *lc;

	if (!is_publishable_relation(rel))
		return;

	puboids = relation_publications(rel);
	foreach(lc, puboids)
	{
		HeapTuple	tup;
		Form_pg_publication pubform;

		tup = SearchSysCache1(PUBLICATIONOID, ObjectIdGetDatum(lfirst_oid(lc)));
		if (!HeapTupleIsValid(tup))
			continue;			/* dropped since: it publishes nothing */
		pubform = (Form_pg_publication) GETSTRUCT(tup);
		if (pubform->pubinsert != pubform->pubdelete)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot move rows of table \"%s\" incrementally",
							RelationGetRelationName(rel)),
					 errdetail("Publication \"%s\" publishes either inserts or deletes but not both, so a subscriber would not see the moves as moves.",
							   NameStr(pubform->pubname)),
					 errhint("Use zorder.optimize with full => true: logical replication does not see a rewrite.")));
		ReleaseSysCache(tup);
	}
	list_free(puboids);
}
