/*-------------------------------------------------------------------------
 *
 * collect.h
 *	  The rows an incremental call collects, as candidates to move
 *	  (collect.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_COLLECT_H
#define ZORDER_COLLECT_H

#include "access/htup_details.h"
#include "access/xlogdefs.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "radix.h"
#include "runs.h"

/* a candidate's val: block << 16 | offset, and this bit if it is counted */
#define CAND_COUNTED	(UINT64CONST(1) << 63)
#define CAND_TID_MASK	UINT64CONST(0x0000FFFFFFFFFFFF)

/* A TID as a candidate's val holds it (val & CAND_TID_MASK). */
static inline uint64
zorder_cand_tid(ItemPointer tid)
{
	return ((uint64) ItemPointerGetBlockNumber(tid) << 16) |
		ItemPointerGetOffsetNumber(tid);
}
/* and, in bits 48 to 62, the row's length in bytes (at most a page) */
#define CAND_LEN_SHIFT	48
#define CAND_LEN_MASK	UINT64CONST(0x7FFF)
#define CAND_LEN(val)	((uint32) (((val) >> CAND_LEN_SHIFT) & CAND_LEN_MASK))

/* Growable array of (key, TID) pairs. */
typedef struct Candidates
{
	zr_item    *items;
	size_t		n;
	size_t		cap;
} Candidates;

/* Which rows of a block range zorder_collect_block_range takes. */
typedef enum CollectMode
{
	COLLECT_ALL,				/* outside every run */
	COLLECT_NEWER,				/* inserted after the run was written */
	COLLECT_OLDER				/* the rest of a run being merged */
} CollectMode;

/* Which rows of a page a collection takes. */
typedef struct CollectFilter
{
	Snapshot	snapshot;		/* those visible to it */
	CollectMode mode;
	TransactionId xid;			/* the run's, unless COLLECT_ALL */
	const ItemPointerData *skip;	/* rows not taken, in TID order: those
									 * listed apart as misplaced */
	int			nskip;
} CollectFilter;

/*
 * The pages of a run a scan for newcomers leaves unread: those VACUUM
 * marked all-frozen, and, where since is valid, those whose LSN is not
 * past it (zorder.layouts.scan_lsn: no row came into them since a call
 * saw every one of theirs).
 */
typedef struct PageSkip
{
	XLogRecPtr	since;
	/* counts, for the call's DEBUG1 message */
	BlockNumber nfrozen;		/* left unread as all-frozen */
	BlockNumber nunchanged;		/* as not written since */
	BlockNumber nread;			/* read */
} PageSkip;

extern void zorder_add_candidate(Candidates *c, uint64 key, ItemPointer tid,
								 bool counted, uint32 len);
extern uint64 zorder_row_key(IncrState *st, TupleDesc desc, HeapTuple tuple);
extern void zorder_collect_block_range(Relation rel, IncrState *st,
									   BlockNumber from, BlockNumber to,
									   CollectMode mode, TransactionId xid,
									   PageSkip *skip, bool counted,
									   Snapshot snapshot, Candidates *c,
									   MemoryContext tmpcxt);
extern void zorder_sort_candidates(Candidates *c);
extern bool zorder_collect_keep(HeapTuple tuple, Buffer buf, void *arg);
extern int	zorder_cmp_tid(const void *a, const void *b);

#endif							/* ZORDER_COLLECT_H */
