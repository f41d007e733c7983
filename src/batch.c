/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  The bounded batches of an incremental zorder.optimize.
 *
 * Each batch moves at most zorder.max_batch_size rows and, outside a
 * transaction block, commits on its own with the catalog rows that
 * describe it, so that the catalog always matches the heap and writers
 * wait at most one batch.  Between two batches the table's lock is
 * released: after the commit the table is opened again, everything the
 * next batch relies on is checked again (check_unchanged), and the pages
 * rows left are pruned so that the ranges they emptied take the rows of
 * later batches.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "batch.h"
#include "brin.h"
#include "collect.h"
#include "mover.h"
#include "pg_compat.h"
#include "tables.h"
#include "zorder.h"


/* Most rows one batch moves before it commits (zorder.max_batch_size). */
int			zorder_max_batch_size = 100000;

/* Called from _PG_init. */
void
zorder_batch_init(void)
{
	DefineCustomIntVariable("zorder.max_batch_size",
							"Most rows an incremental zorder.optimize moves in one transaction.",
							"Outside a transaction block, each batch commits on its own, so that "
							"writers wait at most one batch.",
							&zorder_max_batch_size,
							100000, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

static int
cmp_block(const void *a, const void *b)
{
	BlockNumber x = *(const BlockNumber *) a;
	BlockNumber y = *(const BlockNumber *) b;

	return (x > y) - (x < y);
}

void
zorder_batch_begin(CallState *cs)
{
	cs->pushed = false;
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		cs->pushed = true;
	}
	cs->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	/*
	 * The bulk insert state holding a pin is new in every batch, and others
	 * may have written on the page since the last one.
	 */
	cs->w->targeted = InvalidBlockNumber;
	cs->w->room = 0;
	cs->w->lines = 0;
}

/* Move the rows of items (sorted by key) where the writer puts them. */
void
zorder_move_items(CallState *cs, zr_item *items, size_t n)
{
	Relation	rel = cs->rel;
	IncrState  *st = cs->st;
	Writer	   *w = cs->w;
	MoveState	ms;

	ZORDER_RESERVE(cs->vacated, cs->maxvacated, cs->nvacated + n, 0,
				   cs->keep_cxt);

	zorder_move_begin(rel, &ms);
	for (size_t i = 0; i < n; i++)
	{
		ItemPointerData tid;
		uint64		val = items[i].val;
		BlockNumber from = (BlockNumber) ((val & CAND_TID_MASK) >> 16);
		BlockNumber blk;

		CHECK_FOR_INTERRUPTS();
		ItemPointerSet(&tid, from, (OffsetNumber) (val & 0xFFFF));
		cs->vacated[cs->nvacated++] = from;
		/* gone or moved, the row is no longer where its run was */
		if ((val & CAND_COUNTED) && from / st->lay.ppr < st->nranges)
			st->remaining[from / st->lay.ppr]--;
		w->key = items[i].key;
		blk = zorder_move_row(rel, st, w, &ms, &tid, cs->snapshot, cs->found);
		if (blk == InvalidBlockNumber)
			continue;
		cs->moved++;
		/* rows go in key order into pages filled one after another */
		if (cs->pages_written == 0 || blk != cs->last_written)
		{
			cs->pages_written++;
			cs->last_written = blk;
		}
		/* a row heap_insert put elsewhere is found by the next call */
		if (blk == w->cur)
			zorder_writer_record(st, w, blk);
	}
	zorder_move_end(&ms);

	/*
	 * A serializable transaction's SIREAD lock on a row's old TID does not
	 * cover the copy, and the mover is not serializable, so nothing links
	 * the reader to a later writer of the copy.  As for a full rewrite,
	 * promote the table's tuple and page locks to a lock on the table.
	 */
	if (n > 0)
		TransferPredicateLocksToHeapRelation(rel);
	pgstat_progress_update_param(ZORDER_PROGRESS_TUPLES_WRITTEN,
								 cs->moved);
}

/*
 * Note a BRIN range whose summary covers rows that left it, as some
 * snapshot still saw them when it was made: the next call summarizes it
 * again (zorder_resummarize_loose).
 */
void
zorder_add_loose(CallState *cs, BlockNumber r)
{
	for (int i = 0; i < cs->nloose; i++)
		if (cs->loose[i] == r)
			return;
	ZORDER_RESERVE(cs->loose, cs->maxloose, cs->nloose + 1, 16, cs->keep_cxt);
	cs->loose[cs->nloose++] = r;
}

/*
 * At the start of a call: summarize again the BRIN ranges the calls before
 * left loose (zorder.layouts.loose_ranges), now that the snapshots that
 * held their moved-out rows are likely gone; those still held stay loose.
 * VACUUM summarizes only ranges that have no summary, so without this a
 * loose summary would stay until a call wrote into its range.  Returns
 * true if the catalog listed any.
 */
bool
zorder_resummarize_loose(CallState *cs)
{
	int			n;
	int64	   *blocks = zorder_layout_loose_ranges(cs->relid, &n);
	BlockNumber nblocks = RelationGetNumberOfBlocks(cs->rel);
	BlockNumber ppr = cs->st->lay.ppr;

	for (int i = 0; i < n; i++)
	{
		BlockNumber r = (BlockNumber) blocks[i];

		if (blocks[i] < 0 || r >= nblocks || r % ppr != 0)
			continue;
		zorder_brin_ranges(cs->rel, r, r + ppr, true, true);
		if (zorder_blocks_recently_dead(cs->rel, r, r + ppr))
			zorder_add_loose(cs, r);
	}
	return n > 0;
}

/*
 * How long the end of a call waits, at most, for the snapshots that still
 * see rows it moved out of ranges it summarized, and how often it looks.
 */
#define LOOSE_WAIT_MS	1000
#define LOOSE_POLL_MS	20

/*
 * At the end of a call whose moves committed, if it left ranges loose: a
 * snapshot from before its last batch still sees rows that left them.  Such
 * snapshots are often short (autovacuum's ANALYZE of another table, a
 * report), so wait a moment for them to go, then summarize those ranges
 * again, rather than leave them loose until the next call.  Only DDL and
 * VACUUM of the table wait meanwhile: the call holds SHARE UPDATE EXCLUSIVE
 * lock.  Ranges still held stay listed for the next call.
 */
void
zorder_tighten_loose(CallState *cs)
{
	TransactionId xid = cs->saved_xid;
	BlockNumber ppr = cs->st->lay.ppr;
	BlockNumber *ranges;
	int			n = cs->nloose;
	int			waited = 0;

	if (n == 0 || !TransactionIdIsValid(xid))
		return;
	while (!TransactionIdPrecedes(xid, GetOldestNonRemovableTransactionId(cs->rel)))
	{
		if (waited >= LOOSE_WAIT_MS)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LOOSE_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		waited += LOOSE_POLL_MS;
	}
	ranges = palloc(sizeof(BlockNumber) * n);
	memcpy(ranges, cs->loose, sizeof(BlockNumber) * n);
	cs->nloose = 0;
	PushActiveSnapshot(GetTransactionSnapshot());
	for (int i = 0; i < n; i++)
	{
		zorder_brin_ranges(cs->rel, ranges[i], ranges[i] + ppr, true, true);
		if (zorder_blocks_recently_dead(cs->rel, ranges[i], ranges[i] + ppr))
			zorder_add_loose(cs, ranges[i]);
	}
	PopActiveSnapshot();
	pfree(ranges);
}

/*
 * Whether a prune after the next commit is likely to free what this
 * batch's moves leave: no snapshot still sees the rows the last batch
 * moved (one that does will see those of the next batch too).  Before the
 * call's first commit there is no telling another backend's snapshot from
 * the call's own, so not.
 */
bool
zorder_prune_frees(CallState *cs)
{
	return TransactionIdIsValid(cs->saved_xid) &&
		TransactionIdPrecedes(cs->saved_xid,
							  GetOldestNonRemovableTransactionId(cs->rel));
}

/*
 * After the moves committed: prune the pages rows left, so that ranges
 * now empty can take the rows of the next batches, and make the BRIN
 * summaries of the ranges rows left or came to tight again.
 */
void
zorder_after_commit(CallState *cs, bool find_free)
{
	Relation	rel = cs->rel;
	IncrState  *st = cs->st;
	Writer	   *w = cs->w;
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	BlockNumber last = InvalidBlockNumber;
	BlockNumber cur_range = InvalidBlockNumber;

	if (w->cur != InvalidBlockNumber)
		cur_range = w->cur - w->cur % st->lay.ppr;
	qsort(cs->vacated, cs->nvacated, sizeof(BlockNumber), cmp_block);
	if (cs->can_commit)
	{
		Buffer		vmbuf = InvalidBuffer;

		for (size_t i = 0; i < cs->nvacated; i++)
		{
			BlockNumber b = cs->vacated[i];
			Buffer		buf;

			if (b == last || b >= nblocks)
				continue;
			last = b;
			CHECK_FOR_INTERRUPTS();
			buf = ReadBuffer(rel, b);
			zorder_prune_page(rel, buf, &vmbuf);
			ReleaseBuffer(buf);
		}
		zorder_prune_done(&vmbuf);
	}

	last = InvalidBlockNumber;
	for (size_t i = 0; i < cs->nvacated; i++)
	{
		BlockNumber r = cs->vacated[i] - cs->vacated[i] % st->lay.ppr;

		if (r == last)
			continue;
		last = r;
		zorder_brin_ranges(rel, r, r + st->lay.ppr, true, true);
		if (zorder_blocks_recently_dead(rel, r, r + st->lay.ppr))
			zorder_add_loose(cs, r);
		if (find_free && cs->can_commit && r + st->lay.ppr <= nblocks &&
			r != cur_range &&
			!zorder_blocks_in_run(st, r, r + st->lay.ppr) &&
			zorder_blocks_empty(rel, r, r + st->lay.ppr))
			zorder_writer_add_free(w, r);
	}
	for (int i = 0; i < w->nstarted; i++)
		zorder_brin_ranges(rel, w->started[i], w->started[i] + st->lay.ppr, false, true);
	w->nstarted = 0;
	cs->nvacated = 0;
}

/* Save the runs, those written in this batch with its transaction ID. */
void
zorder_save_batch(CallState *cs)
{
	IncrState  *st = cs->st;

	for (int i = 0; i < st->nextents; i++)
		if (!TransactionIdIsValid(st->extents[i].r.xid))
			st->extents[i].r.xid = GetTopTransactionId();
	cs->saved_extents = zorder_save_extents(cs->relid, st);
	/* the highest values and regions the keys of these runs are of */
	zorder_layout_save_regions(cs->relid, &st->lay);
}

/*
 * True if the runs and the layout in the catalog are still those the call
 * saved last: nobody else wrote them since (another session's optimize,
 * full or incremental, zorder.cluster_by or zorder.clear_keys).
 */
static bool
catalog_unchanged(CallState *cs)
{
	return zorder_runs_unchanged(cs->relid, cs->saved_xid, cs->saved_extents);
}

/*
 * After the table's lock was released and taken again, check everything
 * the next batch relies on: the file its TIDs point into, the kind and
 * access method of the table, the type, typmod and collation of each key
 * column (the comparators and boundaries were set up for them), the keys
 * declared, and the layout and runs in the catalog.  Commands waiting for
 * the lock get in between two batches: ALTER TABLE, VACUUM FULL, CLUSTER,
 * TRUNCATE, another optimize.
 *
 * Returns true if nothing changed.  Else sets cs->changed to what did and,
 * when the table was rewritten, forgets its runs (if they are still the
 * ones this call saved): their blocks were those of a file that is gone,
 * so no run in the catalog may claim blocks of the new one.
 */
static bool
check_unchanged(CallState *cs)
{
	Relation	rel = cs->rel;
	TupleDesc	desc = RelationGetDescr(rel);
	IncrState  *st = cs->st;
	AttrNumber	attnums[ZORDER_MAX_KEYS];
	int			nkeys;
	bool		rewritten = false;

	cs->changed = NULL;
	if (rel->rd_rel->relfilenode != cs->relfilenode)
	{
		cs->changed = "The table was rewritten (by VACUUM FULL, CLUSTER, TRUNCATE, ALTER TABLE or another zorder.optimize).";
		rewritten = true;
	}
	else if (rel->rd_rel->relkind != cs->relkind ||
			 rel->rd_rel->relam != cs->relam)
		cs->changed = "The table's kind or access method changed.";
	for (int k = 0; k < st->lay.nkeys && cs->changed == NULL; k++)
	{
		ZKeyColumn *col = &st->lay.cols[k];
		Form_pg_attribute att;

		if (col->attnum > desc->natts)
		{
			cs->changed = "A key column was dropped.";
			break;
		}
		att = TupleDescAttr(desc, col->attnum - 1);
		if (att->attisdropped)
			cs->changed = "A key column was dropped.";
		else if (att->atttypid != col->typid ||
				 att->atttypmod != col->typmod ||
				 att->attcollation != col->collid ||
				 att->attlen != col->typlen ||
				 att->attbyval != col->typbyval)
			cs->changed = psprintf("The type or collation of key column \"%s\" changed.",
								   NameStr(att->attname));
	}
	if (cs->changed == NULL)
	{
		nkeys = zorder_get_keys(rel, attnums);
		if (nkeys != st->lay.nkeys)
			cs->changed = "The table's clustering keys changed.";
		for (int k = 0; k < nkeys && cs->changed == NULL; k++)
			if (attnums[k] != st->lay.cols[k].attnum)
				cs->changed = "The table's clustering keys changed.";
	}
	if (cs->changed == NULL && !catalog_unchanged(cs))
		cs->changed = "Another command changed the table's layout or sorted runs in the catalog.";
	if (cs->changed == NULL)
		return true;

	if (rewritten && catalog_unchanged(cs))
		zorder_runs_forget(cs->relid);
	return false;
}

/*
 * Commit, then open the table again with lockmode and work as its owner
 * again.  Returns false if something the batches rely on changed in
 * between (see check_unchanged).
 */
bool
zorder_commit_and_reopen(CallState *cs, LOCKMODE lockmode)
{
	/* the batch's writes to the catalog carry its transaction ID */
	cs->saved_xid = GetTopTransactionIdIfAny();
	zorder_found_add_own(cs->found, cs->saved_xid);
	zorder_restore_user(&cs->owner);
	table_close(cs->rel, NoLock);
	MemoryContextSwitchTo(cs->caller_cxt);
	SPI_commit();
	MemoryContextSwitchTo(cs->keep_cxt);
	cs->rel = zorder_open_checked(cs->relid, lockmode, "zorder.optimize");
	zorder_become_owner(cs->rel->rd_rel->relowner, &cs->owner);
	return check_unchanged(cs);
}

/*
 * Stop the call after check_unchanged found a change between two batches:
 * commit what it did about it, then raise the error.  The batches that
 * committed before stand, with the runs they saved.
 *
 * The error is a serialization failure (40001), as when a concurrent
 * transaction changed a row a statement had to update: the cause is
 * another session's command, nothing is wrong with the table or the
 * call's arguments, and calling again (what a retry loop on 40001 does)
 * starts from a fresh scan of the table as it is now and succeeds.
 */
static void
stop_changed(CallState *cs)
{
	const char *detail = cs->changed;
	char	   *relname = pstrdup(RelationGetRelationName(cs->rel));

	zorder_restore_user(&cs->owner);
	table_close(cs->rel, NoLock);
	cs->rel = NULL;
	MemoryContextSwitchTo(cs->caller_cxt);
	SPI_commit();
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("table \"%s\" changed between two batches of zorder.optimize",
					relname),
			 errdetail("%s The batches that committed before stand.", detail),
			 errhint("Call zorder.optimize again: it starts from the table as it is now.")));
}

/*
 * End a batch: save the runs, and unless it is the last one, commit when
 * allowed and take the lock again for the next.
 */
void
zorder_batch_end(CallState *cs, bool more)
{
	zorder_save_batch(cs);
	UnregisterSnapshot(cs->snapshot);
	if (cs->pushed)
		PopActiveSnapshot();
	MemoryContextReset(cs->batch_cxt);

	if (more && cs->can_commit)
	{
		/* let waiting writers in between batches */
		if (!zorder_commit_and_reopen(cs, ExclusiveLock))
			stop_changed(cs);

		/*
		 * A publication may have taken the table in meanwhile (ALTER
		 * PUBLICATION ... ADD TABLE waits only for the batch's lock), or
		 * changed what it publishes: the next moves must be allowed too.
		 * The batches before stand.
		 */
		CheckCmdReplicaIdentity(cs->rel, CMD_DELETE);
		zorder_check_publications(cs->rel);
		PushActiveSnapshot(GetTransactionSnapshot());
		zorder_after_commit(cs, true);
		PopActiveSnapshot();
	}
}

/* Commit the batch once it moved zorder.max_batch_size rows; start the next. */
void
zorder_batch_rotate(CallState *cs, int64 *batch_rows)
{
	if (*batch_rows < zorder_max_batch_size)
		return;
	zorder_trim_extents(cs->st, &cs->w->out, cs->w->run);
	zorder_batch_end(cs, true);
	zorder_batch_begin(cs);
	*batch_rows = 0;
}

/*
 * Move items (sorted by key) as one run in batches of at most
 * zorder.max_batch_size rows, each ended and, when allowed, committed.
 * With leave_open, the last batch is left open for the caller to end (an
 * empty one too, when there are no items).
 */
void
zorder_batch_move(CallState *cs, zr_item *items, size_t n, bool leave_open)
{
	size_t		pos = 0;

	do
	{
		size_t		end = Min(n, pos + (size_t) zorder_max_batch_size);

		zorder_batch_begin(cs);
		zorder_move_items(cs, items + pos, end - pos);
		zorder_trim_extents(cs->st, &cs->w->out, cs->w->run);
		pos = end;
		if (pos >= n && leave_open)
			break;
		zorder_batch_end(cs, true);
	} while (pos < n);
}
