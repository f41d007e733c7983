/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  Everything that differs between the PostgreSQL majors zorder supports
 *	  (15 to 19), behind wrappers named for what they do.
 *
 * The modules call these wrappers and never test PG_VERSION_NUM
 * themselves.  Each wrapper was written against the headers (and, where the
 * behaviour matters, the source) of every major; the comment above each says
 * which major changed what.  Include it after postgres.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_PG_COMPAT_H
#define ZORDER_PG_COMPAT_H

#include "access/heapam.h"
#include "access/tableam.h"
#include "catalog/pg_publication.h"
#include "commands/defrem.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "executor/executor.h"
#include "parser/parse_node.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/buffile.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "storage/smgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/sampling.h"

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 200000
#error "zorder supports PostgreSQL 15 to 19"
#endif

/* 16 moved the varlena macros out of postgres.h. */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * 17 brought read streams; 18 runs them on asynchronous I/O.  Building with
 * -DZORDER_NO_READ_STREAM reads block by block on every major (to measure
 * what the streams bring).
 */
#if PG_VERSION_NUM >= 170000
#include "storage/read_stream.h"
#ifndef ZORDER_NO_READ_STREAM
#define ZORDER_READ_STREAM 1
#endif
#endif

/* 19 turned CLUSTER into REPACK: make_new_heap and finish_heap_swap moved. */
#if PG_VERSION_NUM >= 190000
#include "commands/repack.h"
#else
#include "commands/cluster.h"
#endif

/*
 * Swap the files of a rewritten heap into place and rebuild its indexes, as
 * CLUSTER does (not a catalog, no constraint to check, an internal
 * operation).  19 made the index rebuild optional.
 */
static inline void
zorder_finish_heap_swap(Oid old_heap, Oid new_heap, bool swap_toast_by_content,
						TransactionId frozen_xid, MultiXactId cutoff_multi,
						char relpersistence)
{
#if PG_VERSION_NUM >= 190000
	finish_heap_swap(old_heap, new_heap, false, swap_toast_by_content, false,
					 true, true, frozen_xid, cutoff_multi, relpersistence);
#else
	finish_heap_swap(old_heap, new_heap, false, swap_toast_by_content, false,
					 true, frozen_xid, cutoff_multi, relpersistence);
#endif
}

/*
 * DefineIndex for a new, non-partitioned index with the checks of CREATE
 * INDEX: rights on the schema and tablespace, table not in use.  16 added
 * the number of partitions (-1: none to count), 19 a ParseState for error
 * positions (an empty one: the statement has no source text).
 */
static inline ObjectAddress
zorder_define_index(Oid relid, IndexStmt *stmt)
{
#if PG_VERSION_NUM >= 190000
	return DefineIndex(make_parsestate(NULL), relid, stmt, InvalidOid,
					   InvalidOid, InvalidOid, -1, false, true, true, false,
					   false);
#elif PG_VERSION_NUM >= 160000
	return DefineIndex(relid, stmt, InvalidOid, InvalidOid, InvalidOid, -1,
					   false, true, true, false, false);
#else
	return DefineIndex(relid, stmt, InvalidOid, InvalidOid, InvalidOid,
					   false, true, true, false, false);
#endif
}

/*
 * The publications that name a relation itself (not through a schema or
 * FOR ALL TABLES), and those that exclude it from FOR ALL TABLES: 19 added
 * exclusion lists and renamed the first.
 */
static inline List *
zorder_relation_publications(Oid relid)
{
#if PG_VERSION_NUM >= 190000
	return GetRelationIncludedPublications(relid);
#else
	return GetRelationPublications(relid);
#endif
}

static inline List *
zorder_excluded_publications(Oid relid)
{
#if PG_VERSION_NUM >= 190000
	return GetRelationExcludedPublications(relid);
#else
	return NIL;
#endif
}

/* A checkpoint without delay.  19 renamed CHECKPOINT_IMMEDIATE. */
#if PG_VERSION_NUM >= 190000
#define ZORDER_CHECKPOINT_FAST CHECKPOINT_FAST
#else
#define ZORDER_CHECKPOINT_FAST CHECKPOINT_IMMEDIATE
#endif

/*
 * 16 renamed RelFileNode to RelFileLocator (spcNode, dbNode, relNode became
 * spcOid, dbOid, relNumber) and utils/relfilenodemap.h to
 * utils/relfilenumbermap.h.  The modules use the new names; on 15 they
 * map onto the old ones.
 */
#if PG_VERSION_NUM >= 160000
#include "utils/relfilenumbermap.h"
#define zorder_relfile_spc(l)	((l).spcOid)
#define zorder_relfile_db(l)	((l).dbOid)
#define zorder_relfile_number(l) ((l).relNumber)
#else
#include "utils/relfilenodemap.h"
typedef RelFileNode RelFileLocator;
#define RelFileLocatorEquals(a, b) RelFileNodeEquals(a, b)
#define zorder_relfile_spc(l)	((l).spcNode)
#define zorder_relfile_db(l)	((l).dbNode)
#define zorder_relfile_number(l) ((l).relNode)
#endif

/* The relation file of tablespace spc, database db, file number number. */
static inline RelFileLocator
zorder_relfile(Oid spc, Oid db, Oid number)
{
	RelFileLocator l;

	zorder_relfile_spc(l) = spc;
	zorder_relfile_db(l) = db;
	zorder_relfile_number(l) = number;
	return l;
}

/* The relation that uses file number "number" now (InvalidOid if none). */
static inline Oid
zorder_relation_by_file(Oid reltablespace, Oid number)
{
#if PG_VERSION_NUM >= 160000
	return RelidByRelfilenumber(reltablespace, number);
#else
	return RelidByRelfilenode(reltablespace, number);
#endif
}

/*
 * Open the storage of a permanent (not backend-local) relation file.  17
 * replaced the BackendId argument by a ProcNumber.
 */
static inline SMgrRelation
zorder_smgr_open_shared(RelFileLocator l)
{
#if PG_VERSION_NUM >= 170000
	return smgropen(l, INVALID_PROC_NUMBER);
#else
	return smgropen(l, InvalidBackendId);
#endif
}

/*
 * Lock a database object of the current database if no one holds a
 * conflicting lock; false, without waiting, if someone does.  The 16.2 source
 * has no ConditionalLockDatabaseObject (15 and 17 to 19 do): there, the same
 * through the lock manager.
 */
static inline bool
zorder_try_lock_object(Oid classid, Oid objid, LOCKMODE mode)
{
#if PG_VERSION_NUM >= 160000 && PG_VERSION_NUM < 170000
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, classid, objid, 0);
	if (LockAcquire(&tag, mode, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	/* as ConditionalLockDatabaseObject: see what the holder committed */
	AcceptInvalidationMessages();
	return true;
#else
	return ConditionalLockDatabaseObject(classid, objid, 0, mode);
#endif
}

/* Is role the owner of relation relid?  16 made ownership checks generic. */
static inline bool
zorder_is_relation_owner(Oid relid, Oid roleid)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(RelationRelationId, relid, roleid);
#else
	return pg_class_ownercheck(relid, roleid);
#endif
}

/*
 * The cutoffs of a rewrite that freezes as much as possible, as CLUSTER
 * and VACUUM FULL take them (freeze ages 0).  16 replaced
 * vacuum_set_xid_limits by vacuum_get_cutoffs.
 */
static inline void
zorder_rewrite_cutoffs(Relation rel, TransactionId *oldest_xmin,
					   TransactionId *freeze_xid, MultiXactId *cutoff_multi)
{
#if PG_VERSION_NUM >= 160000
	VacuumParams params;
	struct VacuumCutoffs cutoffs;

	memset(&params, 0, sizeof(params));
	vacuum_get_cutoffs(rel, &params, &cutoffs);
	*oldest_xmin = cutoffs.OldestXmin;
	*freeze_xid = cutoffs.FreezeLimit;
	*cutoff_multi = cutoffs.MultiXactCutoff;
#else
	MultiXactId oldest_mxact;

	vacuum_set_xid_limits(rel, 0, 0, 0, 0, oldest_xmin, &oldest_mxact,
						  freeze_xid, cutoff_multi);
#endif
}

/*
 * The oldest xid whose commit status the commit log still has.  17
 * renamed ShmemVariableCache to TransamVariables.  Caller holds
 * XactTruncationLock.
 */
static inline TransactionId
zorder_oldest_clog_xid(void)
{
#if PG_VERSION_NUM >= 170000
	return TransamVariables->oldestClogXid;
#else
	return ShmemVariableCache->oldestClogXid;
#endif
}

/*
 * Delete a row that is moving elsewhere in the same table, marked as a
 * move (as a row moving to another partition is), so that a concurrent
 * updater gets a serialization error instead of finding the row gone.  19
 * turned heap_delete's trailing booleans into option flags.
 */
static inline TM_Result
zorder_heap_delete_moved(Relation rel, ItemPointer tid, CommandId cid,
						 TM_FailureData *tmfd)
{
#if PG_VERSION_NUM >= 190000
	return heap_delete(rel, tid, cid, TABLE_DELETE_CHANGING_PARTITION,
					   InvalidSnapshot, true, tmfd);
#else
	return heap_delete(rel, tid, cid, InvalidSnapshot, true, tmfd, true);
#endif
}

/*
 * Insert the index entries of a newly inserted (not updated) heap tuple
 * into every index.  16 added onlySummarizing, 19 folded the booleans into
 * flags and reordered the arguments.
 */
static inline void
zorder_insert_index_entries(ResultRelInfo *rri, TupleTableSlot *slot,
							EState *estate)
{
#if PG_VERSION_NUM >= 190000
	(void) ExecInsertIndexTuples(rri, estate, 0, slot, NIL, NULL);
#elif PG_VERSION_NUM >= 160000
	(void) ExecInsertIndexTuples(rri, slot, estate, false, false, NULL, NIL,
								 false);
#else
	(void) ExecInsertIndexTuples(rri, slot, estate, false, false, NULL, NIL);
#endif
}

/*
 * Prune a heap page if it is worth it (heap_page_prune_opt).  19 wants a
 * visibility-map buffer the caller keeps pinned across pages (released by
 * zorder_prune_done) and whether the relation is only read.
 */
static inline void
zorder_prune_page(Relation rel, Buffer buf, Buffer *vmbuf)
{
#if PG_VERSION_NUM >= 190000
	heap_page_prune_opt(rel, buf, vmbuf, false);
#else
	heap_page_prune_opt(rel, buf);
#endif
}

static inline void
zorder_prune_done(Buffer *vmbuf)
{
	if (BufferIsValid(*vmbuf))
		ReleaseBuffer(*vmbuf);
	*vmbuf = InvalidBuffer;
}

/* A plain sequential scan under snapshot.  19 added scan option flags. */
static inline TableScanDesc
zorder_table_beginscan(Relation rel, Snapshot snapshot)
{
#if PG_VERSION_NUM >= 190000
	return table_beginscan(rel, snapshot, 0, NULL, SO_NONE);
#else
	return table_beginscan(rel, snapshot, 0, NULL);
#endif
}

/* Read exactly len bytes from a BufFile or fail (16 has its own). */
static inline void
zorder_buffile_read_exact(BufFile *file, void *ptr, size_t len)
{
#if PG_VERSION_NUM >= 160000
	BufFileReadExact(file, ptr, len);
#else
	size_t		got = BufFileRead(file, ptr, len);

	if (got != len)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from zorder sort temporary file: read only %zu of %zu bytes",
						got, len)));
#endif
}

/*
 * Progress reporting.  The rewrite and the incremental moves show in
 * pg_stat_progress_cluster as a CLUSTER.  19 renamed the command to REPACK
 * (pg_stat_progress_cluster is a view over pg_stat_progress_repack there)
 * and "tuples written" to "tuples inserted".
 */
#if PG_VERSION_NUM >= 190000
#define ZORDER_PROGRESS_COMMAND			PROGRESS_COMMAND_REPACK
#define ZORDER_PROGRESS_COMMAND_PARAM	PROGRESS_REPACK_COMMAND
#define ZORDER_PROGRESS_COMMAND_CLUSTER REPACK_COMMAND_CLUSTER
#define ZORDER_PROGRESS_PHASE			PROGRESS_REPACK_PHASE
#define ZORDER_PROGRESS_TOTAL_BLKS		PROGRESS_REPACK_TOTAL_HEAP_BLKS
#define ZORDER_PROGRESS_BLKS_SCANNED	PROGRESS_REPACK_HEAP_BLKS_SCANNED
#define ZORDER_PROGRESS_TUPLES_SCANNED	PROGRESS_REPACK_HEAP_TUPLES_SCANNED
#define ZORDER_PROGRESS_TUPLES_WRITTEN	PROGRESS_REPACK_HEAP_TUPLES_INSERTED
#define ZORDER_PHASE_SEQ_SCAN_HEAP		PROGRESS_REPACK_PHASE_SEQ_SCAN_HEAP
#define ZORDER_PHASE_SORT_TUPLES		PROGRESS_REPACK_PHASE_SORT_TUPLES
#define ZORDER_PHASE_WRITE_NEW_HEAP		PROGRESS_REPACK_PHASE_WRITE_NEW_HEAP
#else
#define ZORDER_PROGRESS_COMMAND			PROGRESS_COMMAND_CLUSTER
#define ZORDER_PROGRESS_COMMAND_PARAM	PROGRESS_CLUSTER_COMMAND
#define ZORDER_PROGRESS_COMMAND_CLUSTER PROGRESS_CLUSTER_COMMAND_CLUSTER
#define ZORDER_PROGRESS_PHASE			PROGRESS_CLUSTER_PHASE
#define ZORDER_PROGRESS_TOTAL_BLKS		PROGRESS_CLUSTER_TOTAL_HEAP_BLKS
#define ZORDER_PROGRESS_BLKS_SCANNED	PROGRESS_CLUSTER_HEAP_BLKS_SCANNED
#define ZORDER_PROGRESS_TUPLES_SCANNED	PROGRESS_CLUSTER_HEAP_TUPLES_SCANNED
#define ZORDER_PROGRESS_TUPLES_WRITTEN	PROGRESS_CLUSTER_HEAP_TUPLES_WRITTEN
#define ZORDER_PHASE_SEQ_SCAN_HEAP		PROGRESS_CLUSTER_PHASE_SEQ_SCAN_HEAP
#define ZORDER_PHASE_SORT_TUPLES		PROGRESS_CLUSTER_PHASE_SORT_TUPLES
#define ZORDER_PHASE_WRITE_NEW_HEAP		PROGRESS_CLUSTER_PHASE_WRITE_NEW_HEAP
#endif

/* Report progress of relid as a CLUSTER. */
static inline void
zorder_progress_start(Oid relid)
{
	pgstat_progress_start_command(ZORDER_PROGRESS_COMMAND, relid);
	pgstat_progress_update_param(ZORDER_PROGRESS_COMMAND_PARAM,
								 ZORDER_PROGRESS_COMMAND_CLUSTER);
}

/* One of the ZORDER_PHASE_* values. */
static inline void
zorder_progress_phase(int64 phase)
{
	pgstat_progress_update_param(ZORDER_PROGRESS_PHASE, phase);
}

/*
 * BRIN's range map.  17 dropped the snapshot argument of
 * brinRevmapInitialize and brinGetTupleForHeapBlock.
 */
#if PG_VERSION_NUM >= 170000
#define zorder_brin_revmap_init(idx, ppr) brinRevmapInitialize((idx), (ppr))
#define zorder_brin_range_tuple(revmap, blk, buf, off, size, mode) \
	brinGetTupleForHeapBlock((revmap), (blk), (buf), (off), (size), (mode))
#else
#define zorder_brin_revmap_init(idx, ppr) brinRevmapInitialize((idx), (ppr), NULL)
#define zorder_brin_range_tuple(revmap, blk, buf, off, size, mode) \
	brinGetTupleForHeapBlock((revmap), (blk), (buf), (off), (size), (mode), NULL)
#endif

/*
 * Reading the blocks of a relation in an order a callback decides
 * (ascending, or a random sample).  From 17 on this is a read stream, which
 * issues the reads ahead of the caller (with asynchronous I/O in 18); on 15
 * and 16 each block is read when it is asked for.
 *
 * next_block returns the next block to read, or InvalidBlockNumber at the
 * end.  Returned buffers are pinned, not locked; the caller releases them.
 */
typedef BlockNumber (*ZorderNextBlock) (void *arg);

typedef struct ZorderBlockReader
{
	Relation	rel;
	BufferAccessStrategy strategy;
	ZorderNextBlock next_block;
	void	   *arg;
#ifdef ZORDER_READ_STREAM
	ReadStream *stream;
#endif
} ZorderBlockReader;

#ifdef ZORDER_READ_STREAM
static inline BlockNumber
zorder_read_stream_next(ReadStream *stream, void *private_data,
						void *per_buffer_data)
{
	ZorderBlockReader *r = (ZorderBlockReader *) private_data;

	return r->next_block(r->arg);
}
#endif

/* A ZorderNextBlock that gives the blocks next .. end - 1 in order. */
typedef struct ZorderBlockRange
{
	BlockNumber next;
	BlockNumber end;
} ZorderBlockRange;

static inline BlockNumber
zorder_next_in_range(void *arg)
{
	ZorderBlockRange *r = (ZorderBlockRange *) arg;

	return r->next < r->end ? r->next++ : InvalidBlockNumber;
}

/* A ZorderNextBlock that gives the blocks a BlockSampler draws. */
static inline BlockNumber
zorder_next_sampled_block(void *arg)
{
	BlockSampler bs = (BlockSampler) arg;

	return BlockSampler_HasMore(bs) ? BlockSampler_Next(bs) : InvalidBlockNumber;
}

/*
 * sequential says the blocks come in ascending order (a full scan), which
 * lets the stream read ahead as far as it can.
 */
static inline void
zorder_block_reader_begin(ZorderBlockReader *r, Relation rel,
						  BufferAccessStrategy strategy, bool sequential,
						  ZorderNextBlock next_block, void *arg)
{
	r->rel = rel;
	r->strategy = strategy;
	r->next_block = next_block;
	r->arg = arg;
#ifdef ZORDER_READ_STREAM
	r->stream = read_stream_begin_relation(sequential ?
										   READ_STREAM_SEQUENTIAL | READ_STREAM_FULL :
										   READ_STREAM_DEFAULT,
										   strategy, rel, MAIN_FORKNUM,
										   zorder_read_stream_next, r, 0);
#endif
}

/* The next block, pinned, or InvalidBuffer at the end. */
static inline Buffer
zorder_block_reader_next(ZorderBlockReader *r)
{
#ifdef ZORDER_READ_STREAM
	return read_stream_next_buffer(r->stream, NULL);
#else
	BlockNumber blk = r->next_block(r->arg);

	if (blk == InvalidBlockNumber)
		return InvalidBuffer;
	return ReadBufferExtended(r->rel, MAIN_FORKNUM, blk, RBM_NORMAL,
							  r->strategy);
#endif
}

static inline void
zorder_block_reader_end(ZorderBlockReader *r)
{
#ifdef ZORDER_READ_STREAM
	read_stream_end(r->stream);
#endif
}

/*
 * ANALYZE's sampling through the table access method: the blocks of a
 * BlockSampler, each given to table_scan_analyze_next_block.  17 reads them
 * through a read stream; 19 no longer takes OldestXmin in
 * table_scan_analyze_next_tuple (the access method computes it).
 */
typedef struct ZorderAnalyzeSample
{
	TableScanDesc scan;
	BlockSampler bs;
	BufferAccessStrategy strategy;
	TransactionId oldest_xmin;
#if PG_VERSION_NUM >= 170000
	ReadStream *stream;
#endif
} ZorderAnalyzeSample;

#if PG_VERSION_NUM >= 170000
static inline BlockNumber
zorder_sample_stream_next(ReadStream *stream, void *private_data,
						  void *per_buffer_data)
{
	BlockSampler bs = (BlockSampler) private_data;

	return BlockSampler_HasMore(bs) ? BlockSampler_Next(bs) : InvalidBlockNumber;
}
#endif

/* bs is initialised by the caller and outlives the sample. */
static inline void
zorder_analyze_sample_begin(ZorderAnalyzeSample *s, Relation rel,
							BlockSampler bs)
{
	s->scan = table_beginscan_analyze(rel);
	s->bs = bs;
	s->strategy = GetAccessStrategy(BAS_BULKREAD);
	s->oldest_xmin = GetOldestNonRemovableTransactionId(rel);
#if PG_VERSION_NUM >= 170000
	s->stream = read_stream_begin_relation(READ_STREAM_MAINTENANCE,
										   s->strategy, rel, MAIN_FORKNUM,
										   zorder_sample_stream_next, bs, 0);
#endif
}

/* Move to the next sampled block; false when there is none left. */
static inline bool
zorder_analyze_sample_next_block(ZorderAnalyzeSample *s)
{
#if PG_VERSION_NUM >= 170000
	return table_scan_analyze_next_block(s->scan, s->stream);
#else
	while (BlockSampler_HasMore(s->bs))
	{
		BlockNumber blk = BlockSampler_Next(s->bs);

		CHECK_FOR_INTERRUPTS();
		if (table_scan_analyze_next_block(s->scan, blk, s->strategy))
			return true;
	}
	return false;
#endif
}

/* The next live row of the current block into slot; false at its end. */
static inline bool
zorder_analyze_sample_next_tuple(ZorderAnalyzeSample *s, double *liverows,
								 double *deadrows, TupleTableSlot *slot)
{
#if PG_VERSION_NUM >= 190000
	return table_scan_analyze_next_tuple(s->scan, liverows, deadrows, slot);
#else
	return table_scan_analyze_next_tuple(s->scan, s->oldest_xmin, liverows,
										 deadrows, slot);
#endif
}

static inline void
zorder_analyze_sample_end(ZorderAnalyzeSample *s)
{
#if PG_VERSION_NUM >= 170000
	read_stream_end(s->stream);
#endif
	table_endscan(s->scan);
	FreeAccessStrategy(s->strategy);
}

/*
 * The planner hook where a relation's index list can be edited once the
 * catalogs have been read.  Up to 18 that is get_relation_info_hook (the
 * table's OID and whether this is an inheritance parent come as
 * arguments); 19 removed it for build_simple_rel_hook, called at the end
 * of build_simple_rel with the range table entry.  A module declares its
 * hook as
 *	  static void fn(ZORDER_RELINFO_HOOK_ARGS)
 * and reads the relation's OID (InvalidOid: not a table) and inheritance
 * flag through ZORDER_RELINFO_RELID and ZORDER_RELINFO_INH.
 */
#if PG_VERSION_NUM >= 190000
#include "optimizer/pathnode.h"
#define ZORDER_RELINFO_HOOK build_simple_rel_hook
#define ZORDER_RELINFO_HOOK_TYPE build_simple_rel_hook_type
#define ZORDER_RELINFO_HOOK_ARGS \
	PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte
#define ZORDER_RELINFO_HOOK_PASS root, rel, rte
#define ZORDER_RELINFO_RELID \
	(rte->rtekind == RTE_RELATION ? rte->relid : InvalidOid)
#define ZORDER_RELINFO_INH (rte->inh)
#else
#include "optimizer/plancat.h"
#define ZORDER_RELINFO_HOOK get_relation_info_hook
#define ZORDER_RELINFO_HOOK_TYPE get_relation_info_hook_type
#define ZORDER_RELINFO_HOOK_ARGS \
	PlannerInfo *root, Oid relationObjectId, bool inhparent, RelOptInfo *rel
#define ZORDER_RELINFO_HOOK_PASS root, relationObjectId, inhparent, rel
#define ZORDER_RELINFO_RELID (relationObjectId)
#define ZORDER_RELINFO_INH (inhparent)
#endif

/*
 * The module's magic block.  18 records the name and version, which
 * pg_get_loaded_modules() shows.
 */
#if PG_VERSION_NUM >= 180000
#define ZORDER_MODULE_MAGIC \
	PG_MODULE_MAGIC_EXT(.name = "zorder", .version = ZORDER_VERSION)
#else
#define ZORDER_MODULE_MAGIC PG_MODULE_MAGIC
#endif

#endif							/* ZORDER_PG_COMPAT_H */
