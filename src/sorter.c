/*-------------------------------------------------------------------------
 *
 * sorter.c
 *	  External sort of heap tuples by a 64-bit layout key.
 *
 * The full rewrite feeds every surviving tuple of a table through here and
 * writes them back in key order.  tuplesort would compare through a
 * SortSupport per pair and spill uncompressed; our key is a plain uint64,
 * so tuples are ordered by radix sort and spilled runs are compressed
 * with zstd, which cuts the temporary bytes written to a fraction.
 *
 * Loading: tuples are copied into large arena blocks and indexed by an
 * array of (key, pointer): a batch.  When the batch reaches its memory
 * budget, the array is radix-sorted and written out as one sorted run.
 * A run is one zstd frame of records
 *
 *		[uint64 key][uint32 t_len][ItemPointerData t_self][t_len bytes]
 *
 * (native byte order: the files never leave this backend), stored in a
 * temporary BufFile shared with other runs: one file for the initial runs
 * and one per intermediate merge pass, deleted as soon as no run in it is
 * needed.  A BufFile per run would cost its 8 kB buffer for every run.
 *
 * Compression costs more than everything else about spilling, so it runs
 * on a second core: libzstd's own worker thread (ZSTD_c_nbWorkers)
 * compresses a run while this thread goes on loading.  Once spilling,
 * there are two batches of half the budget each: while one loads, the
 * other, sorted, is handed to zstd a stage at a time by zs_drain_pump
 * (every few tuples put), never more than zstd takes without waiting.
 * When the loading batch is full, the other must be done: usually it is.
 * The worker runs only zstd code on zstd's buffers, with all signals
 * blocked; this thread does all the file I/O, elog and interrupts.
 * Without thread support in libzstd, or with a small budget, batches are
 * compressed in this thread as they fill, using the whole budget.
 *
 * Output: if nothing was spilled, the array is sorted in place and read
 * back directly.  Otherwise the runs are merged with a binary heap on
 * (key, run position); runs stay in input order, so the position breaks
 * ties and the whole sort is stable.  The last batch is not spilled if
 * the readers of the runs fit beside it: it is merged from memory, as the
 * last input.  When there are more runs than the budget affords
 * decompressors for, groups of adjacent runs are first merged into bigger
 * runs (adjacent, so input order is kept).  Decompressing is then most of
 * a merge's cost, so a thread of our own does it, a little ahead of the
 * merge in every run (see zs_decode_job).
 *
 * Everything, including libzstd's own state (through a custom allocator,
 * or in workspaces), lives in the sorter's memory context, and temporary
 * files belong to the resource owner, so an error or cancel leaks nothing.
 * The exception is the compressor with a worker, which allocates from its
 * own thread: it is malloc'd, and freed (joining the thread) by a reset
 * callback of the sorter's context.  The decoder thread is joined by a
 * reset callback of the merge's context, which holds all it touches.
 *
 * Why one file of this size: like PostgreSQL's tuplesort.c, the loading,
 * the in-memory radix sort, the compressed spill files and the merge share
 * one state (arenas, run headers, the zstd contexts and their memory
 * accounting) that no other module should see; split, each part would
 * export that state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <pthread.h>

#define ZSTD_STATIC_LINKING_ONLY	/* custom allocator, size estimates,
									 * progress of the workers */
#include <zstd.h>

#include "commands/tablespace.h"
#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "pg_compat.h"
#include "radix.h"
#include "sorter.h"

/*
 * zstd parameters.  A small window bounds each decompressor's memory
 * (about 230 kB at 2^15, 620 kB at 2^17), hence the merge fan-in.
 * Neighbouring tuples in a sorted run are where the redundancy is: on
 * 3M rows of mixed text, a 2^17 window compressed only 2-4% better.
 *
 * Compression is most of the cost of spilling, so the level is a fast
 * negative one; but negative levels also turn off the Huffman coding of
 * literals, which is where most of the gain on tuple data is (they wrote
 * 25-40% more bytes), so it is turned back on.  A 2^11 hash table (the
 * window is small) and 7-byte minimum matches are both faster and a
 * little tighter here.  On 100 MB of the benchmark's sorted runs, level
 * 1 wrote 57.5 MB, this 57.1 MB in half the CPU time (on the table's
 * heap pages instead, 2% more bytes than level 1, also twice as fast).
 * All can be overridden at build time for experiments.
 */
#ifndef ZS_LEVEL
#define ZS_LEVEL		(-3)
#endif
#ifndef ZS_WINDOW_LOG
#define ZS_WINDOW_LOG	15
#endif
#ifndef ZS_HASH_LOG
#define ZS_HASH_LOG		11
#endif
#ifndef ZS_MIN_MATCH
#define ZS_MIN_MATCH	7
#endif

/*
 * Worker threads of libzstd that compress a run while this thread goes on
 * scanning, sorting and staging (0: compress in this thread).  Jobs are
 * ZS_JOB_SIZE bytes of input; each begins with the last bytes of the one
 * before as its history, so the output hardly grows.  See
 * zs_compress_stream for what keeps the threads away from PostgreSQL.
 */
#ifndef ZS_WORKERS
#define ZS_WORKERS		1
#endif
#ifndef ZS_JOB_SIZE
#define ZS_JOB_SIZE		(1024 * 1024)
#endif
/* Decompress runs on a thread of our own while merging (0: in this one). */
#ifndef ZS_DECODER
#define ZS_DECODER		1
#endif
/* Workers only if their buffers take at most 1/ZS_WORKER_SHARE of budget. */
#ifndef ZS_WORKER_SHARE
#define ZS_WORKER_SHARE	8
#endif
/* Feed the workers every this many tuples put. */
#define ZS_PUMP_EVERY	64

/* Bytes handed to the compressor per call, and read from a run per call. */
#define ZS_STAGE_SIZE	(128 * 1024)
#define ZS_READ_SIZE	(16 * 1024)
/*
 * Decompressed-record window of a reader (grows for big records), and the
 * most a job decompresses into it at once.
 */
#define ZS_OUT_SIZE		(64 * 1024)
#define ZS_JOB_OUT		(16 * 1024)

/* On-disk record header: key, t_len, t_self, unaligned. */
#define ZS_REC_KEY_OFF	0
#define ZS_REC_LEN_OFF	(ZS_REC_KEY_OFF + sizeof(uint64))
#define ZS_REC_TID_OFF	(ZS_REC_LEN_OFF + sizeof(uint32))
#define ZS_REC_HDR		(ZS_REC_TID_OFF + sizeof(ItemPointerData))

/* Largest record we accept back from a run; anything bigger is corrupt. */
#define ZS_MAX_TUPLE_LEN	((size_t) MaxAllocSize - ZS_REC_HDR)

/* Header of a tuple in the arena; the tuple follows, MAXALIGNed. */
typedef struct ZMemTuple
{
	uint32		t_len;
	ItemPointerData t_self;
} ZMemTuple;

#define ZS_MEMTUP_HDR	MAXALIGN(sizeof(ZMemTuple))

/* Tuples bigger than this get their own arena chunk instead of a block. */
#define ZS_BIG_TUPLE(s)	((s)->block_size / 4)

#define ZS_MIN_ITEMS	1024

/*
 * Smallest merge fan-in, even if the budget affords fewer readers: at the
 * smallest budgets a fan-in of 2 or 3 means a dozen passes over the data.
 * tuplesort makes the same trade (MINORDER).
 */
#define ZS_MIN_FANIN	6

/*
 * Sorted items point all over the arena: fetching tuples a few items ahead
 * hides most of the cache misses when writing a run or reading back.
 */
#define ZS_PREFETCH_AHEAD	8
#if defined(__GNUC__) || defined(__clang__)
#define zs_prefetch(p)	__builtin_prefetch(p)
#else
#define zs_prefetch(p)	((void) 0)
#endif

/* A temporary file holding runs back to back. */
typedef struct ZFile
{
	BufFile    *file;
	int64		size;			/* bytes written */
	int			nlive;			/* runs in it not merged away yet */
} ZFile;

typedef struct ZRun
{
	ZFile	   *zf;
	int64		start;			/* offset of its first byte in zf */
	int64		comp_bytes;		/* compressed length */
} ZRun;

/* Streaming reader of one run during a merge. */
typedef struct ZReader
{
	/* the batch kept in memory, read in place (then zf is NULL) */
	const zr_item *mitems;
	size_t		mpos;			/* next item */
	size_t		mcount;
	const ZMemTuple *mt;		/* current record */

	ZFile	   *zf;
	int64		read_off;		/* offset in zf of the next unread byte */
	int64		comp_left;		/* compressed bytes not yet read */
	ZSTD_DCtx  *dctx;			/* static, in a workspace: never allocates */
	char	   *inbuf;
	ZSTD_inBuffer in;
	char	   *out;			/* decompressed bytes [pos, end) */
	size_t		outcap;
	size_t		pos;
	size_t		end;
	bool		frame_done;
	/* decompressing ahead, on the decoder thread if dec is set */
	struct ZDecoder *dec;
	int			job;			/* ZS_JOB_*: under dec->lock */
	bool		in_queue;		/* in dec's queue: under dec->lock */
	size_t		job_at;			/* the job writes out[job_at ..] */
	size_t		job_room;		/* ... at most so many bytes */
	size_t		job_out;		/* result: bytes written */
	size_t		job_ret;		/* result: zstd's return code */
	/* current record: out[pos .. pos + reclen) */
	size_t		reclen;
	uint64		key;
} ZReader;

#define ZS_JOB_NONE		0
#define ZS_JOB_QUEUED	1		/* waiting for the decoder */
#define ZS_JOB_RUNNING	2		/* being decompressed */
#define ZS_JOB_DONE		3

/* The decoder thread and its queue of jobs (readers). */
typedef struct ZDecoder
{
	pthread_t	thread;
	pthread_mutex_t lock;
	pthread_cond_t posted;		/* a job was queued, or stop */
	pthread_cond_t done;		/* a job is done */
	bool		stop;
	ZReader   **queue;			/* ring of qcap: a reader has one job */
	int			qcap;
	int			qhead;			/* next to take */
	int			qlen;			/* entries queued */
	MemoryContextCallback stop_cb;
} ZDecoder;

typedef struct ZHeapEntry
{
	uint64		key;
	int			reader;			/* also the run's input position */
} ZHeapEntry;

/*
 * Tuples in memory: an arena of blocks and the array of (key, pointer)
 * items indexing them.
 */
typedef struct ZBatch
{
	MemoryContext arena_cxt;
	int64		arena_used;		/* bytes allocated in arena_cxt */
	char	   *blk_ptr;		/* free space of the current block */
	char	   *blk_end;
	zr_item    *items;
	size_t		nitems;
	size_t		capitems;
} ZBatch;

typedef enum ZSState
{
	ZS_LOADING,
	ZS_READ_MEMORY,
	ZS_READ_MERGE
} ZSState;

struct ZSorter
{
	MemoryContext cxt;			/* everything below lives here */
	ZSState		state;

	int64		budget;			/* bytes */
	int64		load_budget;	/* bytes for arena + item arrays */
	int64		batch_budget;	/* the same, of the batch being loaded */
	size_t		reader_cost;	/* estimated bytes per merge input */
	size_t		writer_cost;	/* estimated bytes of a run writer */

	/* loading */
	ZBatch		ld;
	zr_item    *tmp;			/* radix sort's scratch, for either batch */
	size_t		captmp;
	size_t		block_size;
	uint32		nputs;			/* puts since the last pump */

	/* the sorted batch being compressed into a run, while ld loads */
	ZBatch		dr;
	bool		draining;
	size_t		dr_pos;			/* items of dr staged so far */

	/* final merge: ld is one of its inputs, read in place */
	bool		keep_last;

	/* reading back from memory */
	size_t		iter;

	/* runs on disk, in input order, and the files holding them */
	ZRun	   *runs;
	int			nruns;
	int			capruns;
	ZFile	  **files;
	int			nfiles;
	int			capfiles;
	ZFile	   *load_file;		/* target of the initial runs */

	/* run writer (one at a time) */
	ZSTD_customMem zmem_cxt;	/* zstd allocating in cxt */
	int			nworkers;		/* zstd worker threads of the writer */
	ZSTD_CCtx  *cctx;			/* malloc'd, see zs_free_cctx */
	MemoryContextCallback cctx_cb;
	char	   *stage;
	size_t		stage_used;
	size_t		stage_pos;		/* stage[stage_pos .. stage_used) not taken */
	char	   *cout;
	size_t		coutcap;
	ZFile	   *w_zf;
	int64		w_start;
	int64		w_comp;
	bool		w_ended;		/* ZSTD_e_end given, all input taken */
	size_t		w_remaining;	/* then: bytes zstd has yet to give back */

	/* merge */
	MemoryContext merge_cxt;
	ZReader    *readers;
	int			nreaders;
	ZHeapEntry *heap;
	int			heapsize;
	int			last;			/* reader of the tuple last returned */
	char	   *tupbuf;			/* MAXALIGNed copy of the returned tuple */
	size_t		tupcap;

	HeapTupleData cur;
	ZSorterStats stats;
};

/* ----------------------------------------------------------------
 * zstd glue
 * ----------------------------------------------------------------
 */

/*
 * libzstd allocates through these, so its state is in a memory context
 * and goes away with it on error.  NO_OOM: zstd reports the failure
 * itself, and we must not longjmp out of the middle of libzstd.
 */
static void *
zs_zalloc(void *opaque, size_t size)
{
	return MemoryContextAllocExtended((MemoryContext) opaque, size,
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
zs_zfree(void *opaque, void *address)
{
	if (address != NULL)
		pfree(address);
}

static ZSTD_customMem
zs_custom_mem(MemoryContext cxt)
{
	ZSTD_customMem m;

	m.customAlloc = zs_zalloc;
	m.customFree = zs_zfree;
	m.opaque = cxt;
	return m;
}

/*
 * A zstd call's result: an error compressing is ours (internal), one
 * decompressing means the temporary file is not what we wrote.
 */
static void
zs_check(size_t ret, bool compressing)
{
	if (ZSTD_isError(ret))
		ereport(ERROR,
				(errcode(compressing ? ERRCODE_INTERNAL_ERROR :
						 ERRCODE_DATA_CORRUPTED),
				 compressing ?
				 errmsg("zorder sort could not compress temporary data: %s",
						ZSTD_getErrorName(ret)) :
				 errmsg("zorder sort could not decompress temporary file: %s",
						ZSTD_getErrorName(ret))));
}

#define zs_check_compress(ret)		zs_check((ret), true)
#define zs_check_decompress(ret)	zs_check((ret), false)

static ZSTD_compressionParameters
zs_cparams(void)
{
	ZSTD_compressionParameters cp = ZSTD_getCParams(ZS_LEVEL, 0, 0);

	cp.windowLog = ZS_WINDOW_LOG;
	cp.hashLog = ZS_HASH_LOG;
	cp.minMatch = ZS_MIN_MATCH;
	return ZSTD_adjustCParams(cp, 0, 0);
}

/*
 * Worker threads we will ask libzstd for: ZS_WORKERS, unless the library
 * was built without thread support.
 */
static int
zs_nworkers(void)
{
	ZSTD_bounds b;

	if (ZS_WORKERS <= 0)
		return 0;
	b = ZSTD_cParam_getBounds(ZSTD_c_nbWorkers);
	if (ZSTD_isError(b.error) || b.upperBound < 1)
		return 0;
	return Min(ZS_WORKERS, b.upperBound);
}

/*
 * Memory of the run writer.  With workers, zstd keeps the input of the
 * jobs in flight plus slack in a ring of (workers + 3) jobs, an output
 * buffer per job in flight and a compressor per worker; this thread's
 * own compressor is only used for runs too small to hand out.
 */
static size_t
zs_writer_cost(int nworkers)
{
	ZSTD_compressionParameters cp = zs_cparams();
	size_t		cost;

	cost = ZSTD_estimateCStreamSize_usingCParams(cp) +
		ZS_STAGE_SIZE + ZSTD_CStreamOutSize() + BLCKSZ;
	if (nworkers > 0)
		cost += (size_t) (nworkers + 3) * ZS_JOB_SIZE +
			(size_t) (nworkers + 1) * ZSTD_compressBound(ZS_JOB_SIZE) +
			(size_t) nworkers * ZSTD_estimateCCtxSize_usingCParams(cp);
	return cost;
}

/*
 * Free the run writer's compressor.  Also the sorter context's reset
 * callback, so that an error or cancel stops zstd's threads too: the
 * compressor is malloc'd, not in the context, because those threads
 * allocate, and memory contexts are not thread-safe.  Freeing it joins
 * the threads, after at most the job each is on.
 */
static void
zs_free_cctx(void *arg)
{
	ZSorter    *s = (ZSorter *) arg;

	if (s->cctx != NULL)
	{
		ZSTD_CCtx  *cctx = s->cctx;

		s->cctx = NULL;
		ZSTD_freeCCtx(cctx);
	}
}

/*
 * ZSTD_compressStream2, with every signal blocked when there are workers.
 * libzstd starts its threads inside this call (the first time it has
 * enough input for a job), and a new thread inherits the mask: so signals
 * are only ever delivered to this thread, where PostgreSQL's handlers
 * expect to run, and the workers run nothing but zstd code on zstd's own
 * buffers (the input is copied into them).  Nothing in here can elog or
 * longjmp, so the mask is always restored; signals that arrive meanwhile
 * wait a few milliseconds at most, the time zstd may block for a job.
 * Faults stay deliverable, so that a crash in zstd is reported as one.
 */
static size_t
zs_compress_stream(ZSorter *s, ZSTD_outBuffer *out, ZSTD_inBuffer *in,
				   ZSTD_EndDirective mode)
{
	sigset_t	all;
	sigset_t	old;
	size_t		ret;

	if (s->nworkers == 0)
		return ZSTD_compressStream2(s->cctx, out, in, mode);

	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0)
		elog(ERROR, "pthread_sigmask failed");
	ret = ZSTD_compressStream2(s->cctx, out, in, mode);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* ----------------------------------------------------------------
 * Begin, load
 * ----------------------------------------------------------------
 */

ZSorter *
zsorter_begin(int work_mem_kb)
{
	MemoryContext cxt;
	ZSorter    *s;
	int64		floor_budget;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "zorder sorter",
								ALLOCSET_DEFAULT_SIZES);
	s = MemoryContextAllocZero(cxt, sizeof(ZSorter));
	s->cxt = cxt;
	s->ld.arena_cxt = AllocSetContextCreate(cxt, "zorder sorter tuples",
											ALLOCSET_DEFAULT_SIZES);
	s->state = ZS_LOADING;
	s->budget = (int64) Max(work_mem_kb, 64) * 1024;
	s->last = -1;
	s->zmem_cxt = zs_custom_mem(cxt);
	s->cctx_cb.func = zs_free_cctx;
	s->cctx_cb.arg = s;
	MemoryContextRegisterResetCallback(cxt, &s->cctx_cb);

	/*
	 * A worker's buffers cost several megabytes: only worth it when they
	 * are a small part of the budget.
	 */
	s->nworkers = zs_nworkers();
	while (s->nworkers > 0 &&
		   (int64) zs_writer_cost(s->nworkers) > s->budget / ZS_WORKER_SHARE)
		s->nworkers--;

	/*
	 * Compressor and staging buffers are needed from the first spill on,
	 * so tuples get what is left (about 600 kB goes to the writer, a few
	 * MB with a worker thread).  At the smallest budgets that would leave
	 * next to nothing: keep half the budget for tuples and accept the
	 * overrun rather than writing absurdly small runs.
	 */
	s->writer_cost = zs_writer_cost(s->nworkers);
	s->reader_cost = ZSTD_estimateDStreamSize((size_t) 1 << ZS_WINDOW_LOG) +
		ZS_READ_SIZE + ZS_OUT_SIZE + sizeof(ZReader) +
		sizeof(ZHeapEntry) + sizeof(ZRun) + 1024;
	floor_budget = s->budget / 2;
	s->load_budget = Max(s->budget - (int64) s->writer_cost, floor_budget);
	s->batch_budget = s->load_budget;

	/* ~32 blocks per run: little waste at the end, few mallocs */
	s->block_size = Min(Max(s->load_budget / 32, 16 * 1024), 2 * 1024 * 1024);
	s->block_size = MAXALIGN_DOWN(s->block_size);

	return s;
}

/*
 * The caller expects to put about this many bytes of tuples.  If that is
 * more than fits, batches are half-sized from the start, so that the
 * first one too is compressed while the next loads.  (Otherwise the
 * first batch gets the whole budget, so that sorts that fit in memory
 * never spill, and is compressed while loading waits.)
 */
void
zsorter_expect(ZSorter *s, double bytes)
{
	if (s->nworkers > 0 && s->state == ZS_LOADING && s->nruns == 0 &&
		!s->draining && bytes > (double) s->load_budget)
		s->batch_budget = s->load_budget / 2;
}

/* Arena plus both item arrays of a batch (tmp is counted before it exists). */
static inline int64
zs_batch_mem(const ZBatch *b)
{
	return b->arena_used + (int64) b->capitems * 2 * sizeof(zr_item);
}

/* Grow the item array within the budget; false means "spill first". */
static bool
zs_grow_items(ZSorter *s)
{
	ZBatch	   *b = &s->ld;
	int64		room = s->batch_budget - zs_batch_mem(b);
	size_t		newcap = Max(b->capitems * 2, ZS_MIN_ITEMS);
	size_t		affordable = b->capitems + Max(room, 0) / (2 * sizeof(zr_item));

	if (newcap > affordable && b->capitems > 0)
		newcap = affordable;
	if (newcap > MaxAllocHugeSize / sizeof(zr_item))
		newcap = MaxAllocHugeSize / sizeof(zr_item);
	if (newcap <= b->capitems)
		return false;
	if (b->items == NULL)
		b->items = MemoryContextAllocHuge(s->cxt, newcap * sizeof(zr_item));
	else
		b->items = repalloc_huge(b->items, newcap * sizeof(zr_item));
	b->capitems = newcap;
	return true;
}

/*
 * Space for one tuple of need bytes (header included) in the arena, or
 * NULL when the budget is reached and the run should be spilled first.
 * With an empty run it always succeeds, so a run holds at least one tuple.
 */
static char *
zs_arena_alloc(ZSorter *s, size_t need)
{
	ZBatch	   *b = &s->ld;
	char	   *p;

	if (need <= (size_t) (b->blk_end - b->blk_ptr))
	{
		p = b->blk_ptr;
		b->blk_ptr += need;
		return p;
	}

	if (need > ZS_BIG_TUPLE(s))
	{
		/* own chunk; keep the current block for the small ones */
		if (b->nitems > 0 &&
			zs_batch_mem(b) + (int64) need > s->batch_budget)
			return NULL;
		b->arena_used += need;
		return MemoryContextAllocHuge(b->arena_cxt, need);
	}

	if (b->nitems > 0 &&
		zs_batch_mem(b) + (int64) s->block_size > s->batch_budget)
		return NULL;
	p = MemoryContextAlloc(b->arena_cxt, s->block_size);
	b->arena_used += s->block_size;
	b->blk_ptr = p + need;
	b->blk_end = p + s->block_size;
	return p;
}

/* Empty a batch, keeping its item array. */
static void
zs_batch_reset(ZBatch *b)
{
	MemoryContextReset(b->arena_cxt);
	b->arena_used = 0;
	b->blk_ptr = b->blk_end = NULL;
	b->nitems = 0;
}

/* Free a batch's item array too. */
static void
zs_batch_free_items(ZBatch *b)
{
	if (b->items)
		pfree(b->items);
	b->items = NULL;
	b->capitems = 0;
}

static void zs_spill(ZSorter *s);
static void zs_drain_pump(ZSorter *s);

void
zsorter_put(ZSorter *s, uint64 key, HeapTuple tup)
{
	size_t		need = ZS_MEMTUP_HDR + MAXALIGN(tup->t_len);
	ZBatch	   *b = &s->ld;
	char	   *p;
	ZMemTuple  *mt;

	if (s->state != ZS_LOADING)
		elog(ERROR, "zorder sorter: put after performsort");

	/* keep the compressor fed with the batch before this one */
	if (s->draining && ++s->nputs >= ZS_PUMP_EVERY)
	{
		s->nputs = 0;
		zs_drain_pump(s);
	}

	if (b->nitems == b->capitems && !zs_grow_items(s))
		zs_spill(s);
	p = zs_arena_alloc(s, need);
	if (p == NULL)
	{
		zs_spill(s);
		p = zs_arena_alloc(s, need);
	}
	/* the spill may have left an empty batch with no item array yet */
	if (b->nitems == b->capitems && !zs_grow_items(s))
		elog(ERROR, "zorder sorter: no room for a single item");

	mt = (ZMemTuple *) p;
	mt->t_len = tup->t_len;
	mt->t_self = tup->t_self;
	memcpy(p + ZS_MEMTUP_HDR, tup->t_data, tup->t_len);

	b->items[b->nitems].key = key;
	b->items[b->nitems].val = (uint64) (uintptr_t) mt;
	b->nitems++;
	s->stats.ntuples++;
}

/* Sort a batch's items; tmp is allocated lazily and kept across runs. */
static void
zs_sort_items(ZSorter *s, ZBatch *b)
{
	if (b->nitems >= 2)
	{
		if (s->captmp < b->nitems)
		{
			if (s->tmp)
				pfree(s->tmp);
			s->tmp = MemoryContextAllocHuge(s->cxt,
											b->capitems * sizeof(zr_item));
			s->captmp = b->capitems;
		}
		zr_sort(b->items, s->tmp, b->nitems);
	}
}

static void
zs_free_tmp(ZSorter *s)
{
	if (s->tmp)
		pfree(s->tmp);
	s->tmp = NULL;
	s->captmp = 0;
}

/* ----------------------------------------------------------------
 * Run writer
 * ----------------------------------------------------------------
 */

/* A new, empty temporary file for runs. */
static ZFile *
zs_new_file(ZSorter *s)
{
	MemoryContext oldcxt;
	ZFile	   *zf;

	if (s->nfiles == s->capfiles)
	{
		s->capfiles = Max(s->capfiles * 2, 4);
		if (s->files == NULL)
			s->files = MemoryContextAlloc(s->cxt,
										  s->capfiles * sizeof(ZFile *));
		else
			s->files = repalloc(s->files, s->capfiles * sizeof(ZFile *));
	}
	if (s->nfiles == 0)
		PrepareTempTablespaces();	/* honour temp_tablespaces */

	zf = MemoryContextAllocZero(s->cxt, sizeof(ZFile));
	oldcxt = MemoryContextSwitchTo(s->cxt);
	zf->file = BufFileCreateTemp(false);
	MemoryContextSwitchTo(oldcxt);
	s->files[s->nfiles++] = zf;
	return zf;
}

/* One run of zf is merged away; delete the file with its last run. */
static void
zs_release_run(ZSorter *s, ZFile *zf)
{
	int			i;

	if (--zf->nlive > 0)
		return;
	for (i = 0; i < s->nfiles; i++)
	{
		if (s->files[i] == zf)
		{
			s->files[i] = s->files[--s->nfiles];
			break;
		}
	}
	if (zf == s->load_file)
		s->load_file = NULL;
	BufFileClose(zf->file);
	pfree(zf);
}

/* Start a run at the end of zf. */
static void
zs_writer_begin(ZSorter *s, ZFile *zf)
{
	if (s->cctx == NULL)
	{
		/* malloc'd for the workers (see zs_free_cctx), else in cxt */
		if (s->nworkers > 0)
			s->cctx = ZSTD_createCCtx();
		else
			s->cctx = ZSTD_createCCtx_advanced(s->zmem_cxt);
		if (s->cctx == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("Could not create a zstd compression context.")));
		zs_check_compress(ZSTD_CCtx_setParameter(s->cctx,
												 ZSTD_c_compressionLevel,
												 ZS_LEVEL));
		zs_check_compress(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_windowLog,
												 ZS_WINDOW_LOG));
		zs_check_compress(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_hashLog,
												 ZS_HASH_LOG));
		zs_check_compress(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_minMatch,
												 ZS_MIN_MATCH));
		zs_check_compress(ZSTD_CCtx_setParameter(s->cctx,
												 ZSTD_c_literalCompressionMode,
												 ZSTD_ps_enable));
		/* cheap, and turns a damaged temp file into an error */
		zs_check_compress(ZSTD_CCtx_setParameter(s->cctx,
												 ZSTD_c_checksumFlag, 1));
		if (s->nworkers > 0)
		{
			zs_check_compress(ZSTD_CCtx_setParameter(s->cctx,
													 ZSTD_c_nbWorkers,
													 s->nworkers));
			zs_check_compress(ZSTD_CCtx_setParameter(s->cctx,
													 ZSTD_c_jobSize,
													 ZS_JOB_SIZE));
		}
		s->stage = MemoryContextAlloc(s->cxt, ZS_STAGE_SIZE);
		s->coutcap = ZSTD_CStreamOutSize();
		s->cout = MemoryContextAlloc(s->cxt, s->coutcap);
	}
	else
		zs_check_compress(ZSTD_CCtx_reset(s->cctx, ZSTD_reset_session_only));

	/* nobody reads zf while we write it, so one seek suffices */
	if (BufFileSeek(zf->file, 0, (off_t) zf->size, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek in zorder sort temporary file: %m")));
	s->w_zf = zf;
	s->w_start = zf->size;
	s->w_comp = 0;
	s->w_ended = false;
	s->w_remaining = 0;
	s->stage_used = 0;
	s->stage_pos = 0;
}

/* One call into the compressor; what it produced is written out. */
static size_t
zs_writer_call(ZSorter *s, ZSTD_inBuffer *in, ZSTD_EndDirective mode)
{
	ZSTD_outBuffer out;
	size_t		remaining;

	out.dst = s->cout;
	out.size = s->coutcap;
	out.pos = 0;
	remaining = zs_compress_stream(s, &out, in, mode);
	zs_check_compress(remaining);
	if (out.pos > 0)
	{
		BufFileWrite(s->w_zf->file, s->cout, out.pos);
		s->w_comp += out.pos;
	}
	return remaining;
}

/*
 * Hand the staged bytes to the compressor.  ZSTD_e_end also ends the run's
 * frame: with wait, it returns once all of it is written out; without,
 * as soon as zstd has taken the bytes, and the workers finish the frame
 * while zs_writer_flush_ready or zs_writer_end collect it.  Workers make
 * these calls return without waiting as long as zstd has room for the
 * input, which zs_drain_pump sees to.
 */
static void
zs_writer_compress(ZSorter *s, ZSTD_EndDirective mode, bool wait)
{
	ZSTD_inBuffer in;
	size_t		remaining;

	in.src = s->stage + s->stage_pos;
	in.size = s->stage_used - s->stage_pos;
	in.pos = 0;
	for (;;)
	{
		remaining = zs_writer_call(s, &in, mode);
		if (in.pos == in.size &&
			(mode != ZSTD_e_end || !wait || remaining == 0))
			break;
	}
	if (mode == ZSTD_e_end)
	{
		s->w_ended = true;
		s->w_remaining = remaining;
	}
	s->stats.raw_bytes += in.size;
	s->stage_used = 0;
	s->stage_pos = 0;
}

/*
 * Write out what the workers have compressed so far, without waiting for
 * more.  This also hands them the next job if it waits for a free worker.
 */
static void
zs_writer_flush_ready(ZSorter *s)
{
	while (!(s->w_ended && s->w_remaining == 0) &&
		   ZSTD_toFlushNow(s->cctx) > 0)
	{
		ZSTD_inBuffer in = {NULL, 0, 0};
		size_t		remaining;

		remaining = zs_writer_call(s, &in,
								   s->w_ended ? ZSTD_e_end : ZSTD_e_continue);
		if (s->w_ended)
			s->w_remaining = remaining;
	}
}

static void
zs_writer_bytes(ZSorter *s, const char *data, size_t len)
{
	while (len > 0)
	{
		size_t		n = ZS_STAGE_SIZE - s->stage_used;

		if (n == 0)
		{
			zs_writer_compress(s, ZSTD_e_continue, false);
			n = ZS_STAGE_SIZE;
		}
		if (n > len)
			n = len;
		memcpy(s->stage + s->stage_used, data, n);
		s->stage_used += n;
		data += n;
		len -= n;
	}
}

static inline void
zs_writer_record(ZSorter *s, uint64 key, uint32 len,
				 const ItemPointerData *tid, const char *data)
{
	char	   *p;

	if (ZS_STAGE_SIZE - s->stage_used < ZS_REC_HDR + len)
	{
		/* slow path: the record straddles stage flushes */
		char		hdr[ZS_REC_HDR];

		memcpy(hdr + ZS_REC_KEY_OFF, &key, sizeof(uint64));
		memcpy(hdr + ZS_REC_LEN_OFF, &len, sizeof(uint32));
		memcpy(hdr + ZS_REC_TID_OFF, tid, sizeof(ItemPointerData));
		zs_writer_bytes(s, hdr, ZS_REC_HDR);
		zs_writer_bytes(s, data, len);
		return;
	}
	p = s->stage + s->stage_used;
	memcpy(p + ZS_REC_KEY_OFF, &key, sizeof(uint64));
	memcpy(p + ZS_REC_LEN_OFF, &len, sizeof(uint32));
	memcpy(p + ZS_REC_TID_OFF, tid, sizeof(ItemPointerData));
	memcpy(p + ZS_REC_HDR, data, len);
	s->stage_used += ZS_REC_HDR + len;
}

/* Finish the current run, waiting for the workers. */
static ZRun
zs_writer_end(ZSorter *s)
{
	ZRun		run;

	if (!s->w_ended || s->stage_pos < s->stage_used)
		zs_writer_compress(s, ZSTD_e_end, true);
	while (s->w_remaining > 0)
	{
		ZSTD_inBuffer in = {NULL, 0, 0};

		s->w_remaining = zs_writer_call(s, &in, ZSTD_e_end);
	}
	s->stats.spill_bytes += s->w_comp;
	run.zf = s->w_zf;
	run.start = s->w_start;
	run.comp_bytes = s->w_comp;
	s->w_zf->size += s->w_comp;
	s->w_zf->nlive++;
	s->w_zf = NULL;
	return run;
}

static void
zs_add_run(ZSorter *s, ZRun run)
{
	if (s->nruns == s->capruns)
	{
		s->capruns = Max(s->capruns * 2, 16);
		if (s->runs == NULL)
			s->runs = MemoryContextAlloc(s->cxt, s->capruns * sizeof(ZRun));
		else
			s->runs = repalloc(s->runs, s->capruns * sizeof(ZRun));
	}
	s->runs[s->nruns++] = run;
}

/* ----------------------------------------------------------------
 * Spilling: the draining batch
 * ----------------------------------------------------------------
 */

/*
 * Stage the next records of the draining batch: as many as fit in the
 * stage, or all the rest (then full stages go to the compressor, which may
 * make us wait for the workers).
 */
static void
zs_drain_stage(ZSorter *s, bool all)
{
	ZBatch	   *b = &s->dr;
	size_t		i;

	for (i = s->dr_pos; i < b->nitems; i++)
	{
		const ZMemTuple *mt = (const ZMemTuple *) (uintptr_t) b->items[i].val;

		if (i + ZS_PREFETCH_AHEAD < b->nitems)
		{
			const char *ahead = (const char *) (uintptr_t)
				b->items[i + ZS_PREFETCH_AHEAD].val;

			zs_prefetch(ahead);
			zs_prefetch(ahead + 64);
		}
		if (!all && s->stage_used > 0 &&
			ZS_STAGE_SIZE - s->stage_used < ZS_REC_HDR + mt->t_len)
			break;
		zs_writer_record(s, b->items[i].key, mt->t_len, &mt->t_self,
						 (const char *) mt + ZS_MEMTUP_HDR);
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	s->dr_pos = i;
}

/*
 * Keep the worker busy with the draining batch without ever waiting for
 * it: write out what it has compressed, and hand it staged bytes only as
 * far as zstd takes them at once.  zstd copies input into a job of
 * ZS_JOB_SIZE bytes and starts the job when it is full, if a worker is
 * free; while none is, it refuses more input, and a call with input then
 * blocks until a worker is done.  So while the worker is busy, the job
 * being filled is left one byte short.  Called every ZS_PUMP_EVERY tuples
 * while the next batch loads.
 */
static void
zs_drain_pump(ZSorter *s)
{
	for (;;)
	{
		ZSTD_frameProgression fp;
		ZSTD_inBuffer in;
		size_t		filling;
		size_t		allowed;
		bool		last;

		zs_writer_flush_ready(s);
		if (s->w_ended)
			break;
		if (s->stage_pos == s->stage_used)
		{
			s->stage_pos = s->stage_used = 0;
			zs_drain_stage(s, false);
		}
		last = (s->dr_pos == s->dr.nitems);

		fp = ZSTD_getFrameProgression(s->cctx);
		filling = (size_t) (fp.ingested % ZS_JOB_SIZE);
		if (fp.nbActiveWorkers >= (unsigned) s->nworkers)
			allowed = ZS_JOB_SIZE - filling - 1;	/* workers busy */
		else
			allowed = s->stage_used - s->stage_pos;
		if (allowed == 0)
			break;

		in.src = s->stage + s->stage_pos;
		in.size = Min(allowed, s->stage_used - s->stage_pos);
		in.pos = 0;
		/* the frame ends with its last bytes, so that zstd need not wait */
		if (last && in.size == s->stage_used - s->stage_pos)
		{
			s->w_remaining = zs_writer_call(s, &in, ZSTD_e_end);
			if (in.pos == in.size)
				s->w_ended = true;
		}
		else
			(void) zs_writer_call(s, &in, ZSTD_e_continue);
		s->stage_pos += in.pos;
		s->stats.raw_bytes += in.pos;
		if (in.pos == 0)
			break;
	}
}

/* Compress the rest of the draining batch, wait for it and empty it. */
static void
zs_drain_finish(ZSorter *s)
{
	if (!s->draining)
		return;
	if (!s->w_ended)
		zs_drain_stage(s, true);
	zs_add_run(s, zs_writer_end(s));
	s->stats.nruns++;
	zs_batch_reset(&s->dr);
	s->dr_pos = 0;
	s->draining = false;
}

/*
 * The loading batch is full (or loading is over): sort it and make it the
 * draining batch, loading into the emptied other one.  Unless workers
 * compress it while the next batch loads, it is compressed right away.
 * The first batch may use the whole loading budget, so that sorts that
 * fit in memory never spill; once spilling, batches get half of it each,
 * one loading while the other is compressed.
 */
static void
zs_spill(ZSorter *s)
{
	ZBatch		tmpb;
	bool		first = (s->nruns == 0 && !s->draining &&
						 s->batch_budget == s->load_budget);

	zs_drain_finish(s);
	zs_sort_items(s, &s->ld);

	tmpb = s->dr;
	s->dr = s->ld;
	s->ld = tmpb;
	if (s->ld.arena_cxt == NULL)
		s->ld.arena_cxt = AllocSetContextCreate(s->cxt,
												"zorder sorter tuples",
												ALLOCSET_DEFAULT_SIZES);

	if (s->load_file == NULL)
		s->load_file = zs_new_file(s);
	zs_writer_begin(s, s->load_file);
	s->dr_pos = 0;
	s->draining = true;
	s->nputs = 0;

	if (s->nworkers == 0 || first)
	{
		zs_drain_finish(s);
		/* load into the emptied batch again, with its item array */
		tmpb = s->dr;
		s->dr = s->ld;
		s->ld = tmpb;
		if (s->nworkers > 0)
		{
			/* batches get half the budget now; these had all of it */
			zs_batch_free_items(&s->ld);
			zs_free_tmp(s);
			s->batch_budget = s->load_budget / 2;
		}
	}
	else
		zs_drain_pump(s);
}

/* ----------------------------------------------------------------
 * Run readers and merging
 * ----------------------------------------------------------------
 */

/*
 * Decompressing runs happens on a thread of our own while merging, the
 * way compressing them happens on libzstd's: decompression is most of
 * what a merge costs this thread, and the writing that consumes the
 * merge needs all of it.  Each reader decompresses ahead into its window
 * in jobs of at most ZS_JOB_OUT bytes; a job is queued as soon as the one
 * before is collected, so it is usually done when its bytes are needed.
 *
 * Like libzstd's workers, the thread runs only zstd code, on buffers this
 * thread allocated beforehand (each reader's decompressor is a static one
 * in a workspace of the merge context, so zstd never allocates), with all
 * signals blocked.  A job touches only its reader's input buffer, its
 * decompressor and the part of its window past the decompressed bytes;
 * this thread reads the file, compacts or grows the window and reads the
 * job's results only while the reader has no job queued.  The thread is
 * stopped and joined by a reset callback of the merge context, before the
 * context's memory goes, whether the merge ends or fails.
 */

/* A job of r: decompress into out[job_at .. job_at + job_room). */
static void
zs_decode_job(ZReader *r)
{
	ZSTD_outBuffer out;
	size_t		ret = 1;

	out.dst = r->out;
	out.size = r->job_at + r->job_room;
	out.pos = r->job_at;
	while (out.pos < out.size)
	{
		size_t		in_before = r->in.pos;
		size_t		out_before = out.pos;

		ret = ZSTD_decompressStream(r->dctx, &out, &r->in);
		if (ZSTD_isError(ret) || ret == 0)
			break;
		if (r->in.pos == in_before && out.pos == out_before)
			break;				/* needs input */
	}
	r->job_out = out.pos - r->job_at;
	r->job_ret = ret;
}

static void *
zs_decoder_main(void *arg)
{
	ZDecoder   *d = (ZDecoder *) arg;

#ifdef __linux__
	/* so that it can be told apart, in top -H or /proc */
	pthread_setname_np(pthread_self(), "zorder decode");
#endif
	pthread_mutex_lock(&d->lock);
	for (;;)
	{
		ZReader    *r;

		while (!d->stop && d->qlen == 0)
			pthread_cond_wait(&d->posted, &d->lock);
		if (d->stop)
			break;
		r = d->queue[d->qhead];
		d->qhead = (d->qhead + 1) % d->qcap;
		d->qlen--;
		r->in_queue = false;
		if (r->job != ZS_JOB_QUEUED)
			continue;			/* taken back by the merge */
		r->job = ZS_JOB_RUNNING;
		pthread_mutex_unlock(&d->lock);
		zs_decode_job(r);
		pthread_mutex_lock(&d->lock);
		r->job = ZS_JOB_DONE;
		pthread_cond_signal(&d->done);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* Reset callback of the merge context: stop and join the thread. */
static void
zs_decoder_stop(void *arg)
{
	ZDecoder   *d = (ZDecoder *) arg;

	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->posted);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->posted);
	pthread_cond_destroy(&d->done);
	pthread_mutex_destroy(&d->lock);
}

/*
 * Start the decoder thread for nreaders readers, in the merge context.
 * NULL if it cannot start: the readers then decompress in this thread.
 */
static ZDecoder *
zs_decoder_start(ZSorter *s, int nreaders)
{
	ZDecoder   *d;
	sigset_t	all;
	sigset_t	old;
	int			rc;

	d = MemoryContextAllocZero(s->merge_cxt, sizeof(ZDecoder));
	d->queue = MemoryContextAlloc(s->merge_cxt, sizeof(ZReader *) * nreaders);
	d->qcap = nreaders;
	if (pthread_mutex_init(&d->lock, NULL) != 0)
		return NULL;
	if (pthread_cond_init(&d->posted, NULL) != 0)
	{
		pthread_mutex_destroy(&d->lock);
		return NULL;
	}
	if (pthread_cond_init(&d->done, NULL) != 0)
	{
		pthread_cond_destroy(&d->posted);
		pthread_mutex_destroy(&d->lock);
		return NULL;
	}

	/* the thread inherits the mask: every signal stays with this thread */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0)
		elog(ERROR, "pthread_sigmask failed");
	rc = pthread_create(&d->thread, NULL, zs_decoder_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
	{
		pthread_cond_destroy(&d->done);
		pthread_cond_destroy(&d->posted);
		pthread_mutex_destroy(&d->lock);
		return NULL;
	}
	d->stop_cb.func = zs_decoder_stop;
	d->stop_cb.arg = d;
	MemoryContextRegisterResetCallback(s->merge_cxt, &d->stop_cb);
	return d;
}

/*
 * Queue the next job of r, which has none: read more of the run if the
 * input is used up, and make room for the job (and for need bytes from
 * pos) in the window.  False if there is nothing left to decompress.
 */
static bool
zs_reader_post(ZReader *r, size_t need)
{
	size_t		avail = r->end - r->pos;
	size_t		room;

	Assert(r->job == ZS_JOB_NONE);
	if (r->frame_done)
		return false;
	if (r->in.pos == r->in.size)
	{
		size_t		want;
		size_t		got;

		/* zstd may still hold output only if the last job filled its room */
		if (r->comp_left == 0)
		{
			if (r->job_out < r->job_room)
				return false;
		}
		else
		{
			want = Min((int64) ZS_READ_SIZE, r->comp_left);
			/* other readers share the file: position every time */
			if (BufFileSeek(r->zf->file, 0, (off_t) r->read_off,
							SEEK_SET) != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not seek in zorder sort temporary file: %m")));
			zorder_buffile_read_exact(r->zf->file, r->inbuf, want);
			got = want;
			r->in.src = r->inbuf;
			r->in.size = got;
			r->in.pos = 0;
			r->comp_left -= got;
			r->read_off += got;
		}
	}

	/* room for a whole job after the bytes not yet consumed */
	room = Max((size_t) ZS_JOB_OUT, need > avail ? need - avail : 0);
	if (r->outcap - r->end < room)
	{
		if (r->pos > 0)
		{
			if (avail > 0)
				memmove(r->out, r->out + r->pos, avail);
			r->pos = 0;
			r->end = avail;
		}
		if (r->outcap - r->end < room)
		{
			r->outcap = Max(r->end + room, r->outcap * 2);
			r->out = repalloc_huge(r->out, r->outcap);
		}
	}
	r->job_at = r->end;
	r->job_room = room;

	if (r->dec == NULL)
	{
		zs_decode_job(r);
		r->job = ZS_JOB_DONE;
	}
	else
	{
		ZDecoder   *d = r->dec;

		pthread_mutex_lock(&d->lock);
		r->job = ZS_JOB_QUEUED;
		/* an entry left by a job taken back serves for this one */
		if (!r->in_queue)
		{
			d->queue[(d->qhead + d->qlen++) % d->qcap] = r;
			r->in_queue = true;
		}
		pthread_cond_signal(&d->posted);
		pthread_mutex_unlock(&d->lock);
	}
	return true;
}

/*
 * Take r's job: wait for the decoder to finish it, or, if it has not
 * started it, do it here rather than wait for the thread to be scheduled.
 * Then queue the next one.
 */
static void
zs_reader_collect(ZReader *r)
{
	ZDecoder   *d = r->dec;

	if (d != NULL)
	{
		bool		steal;

		pthread_mutex_lock(&d->lock);
		steal = (r->job == ZS_JOB_QUEUED);
		while (!steal && r->job != ZS_JOB_DONE)
			pthread_cond_wait(&d->done, &d->lock);
		r->job = ZS_JOB_NONE;
		pthread_mutex_unlock(&d->lock);
		if (steal)
			zs_decode_job(r);
	}
	else
		r->job = ZS_JOB_NONE;
	zs_check_decompress(r->job_ret);
	r->end += r->job_out;
	if (r->job_ret == 0)
		r->frame_done = true;
	(void) zs_reader_post(r, 0);
}

/*
 * Make at least need bytes of decompressed data available at out[pos..].
 * False if the run ends sooner.
 */
static bool
zs_reader_fill(ZReader *r, size_t need)
{
	while (r->end - r->pos < need)
	{
		if (r->job == ZS_JOB_NONE && !zs_reader_post(r, need))
			return false;
		zs_reader_collect(r);
	}
	return true;
}

static void
zs_truncated(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("zorder sort temporary file is truncated")));
}

/* Step to the next record of the run; false at its end. */
static bool
zs_reader_next(ZReader *r)
{
	uint32		len;

	if (r->mitems != NULL)
	{
		if (r->mpos >= r->mcount)
			return false;
		if (r->mpos + ZS_PREFETCH_AHEAD < r->mcount)
			zs_prefetch((const char *) (uintptr_t)
						r->mitems[r->mpos + ZS_PREFETCH_AHEAD].val);
		r->key = r->mitems[r->mpos].key;
		r->mt = (const ZMemTuple *) (uintptr_t) r->mitems[r->mpos].val;
		r->mpos++;
		return true;
	}

	r->pos += r->reclen;
	r->reclen = 0;

	if (r->end - r->pos < ZS_REC_HDR && !zs_reader_fill(r, ZS_REC_HDR))
	{
		if (r->end == r->pos && r->frame_done)
			return false;
		zs_truncated();
	}
	memcpy(&r->key, r->out + r->pos + ZS_REC_KEY_OFF, sizeof(uint64));
	memcpy(&len, r->out + r->pos + ZS_REC_LEN_OFF, sizeof(uint32));
	if (len > ZS_MAX_TUPLE_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("zorder sort temporary file holds an invalid tuple length %u",
						len)));
	if (r->end - r->pos < ZS_REC_HDR + len &&
		!zs_reader_fill(r, ZS_REC_HDR + len))
		zs_truncated();
	r->reclen = ZS_REC_HDR + len;
	return true;
}

/* (key, run position) order: position breaks ties, keeping input order */
static inline bool
zs_heap_less(const ZHeapEntry *a, const ZHeapEntry *b)
{
	return a->key < b->key || (a->key == b->key && a->reader < b->reader);
}

static void
zs_heap_sift_down(ZHeapEntry *heap, int n, int i)
{
	ZHeapEntry	e = heap[i];

	for (;;)
	{
		int			c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && zs_heap_less(&heap[c + 1], &heap[c]))
			c++;
		if (!zs_heap_less(&heap[c], &e))
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = e;
}

/*
 * Open readers on runs[first .. first + n), plus one on the loading batch
 * if with_memory (it comes after all runs in input order), and build the
 * heap.
 */
static void
zs_merge_open(ZSorter *s, int first, int n, bool with_memory)
{
	int			nr = n + (with_memory ? 1 : 0);
	size_t		dsize = ZSTD_estimateDStreamSize((size_t) 1 << ZS_WINDOW_LOG);
	ZDecoder   *dec = NULL;
	int			i;

	s->merge_cxt = AllocSetContextCreate(s->cxt, "zorder sorter merge",
										 ALLOCSET_DEFAULT_SIZES);
	s->readers = MemoryContextAllocZero(s->merge_cxt, nr * sizeof(ZReader));
	s->heap = MemoryContextAlloc(s->merge_cxt, nr * sizeof(ZHeapEntry));
	s->nreaders = nr;
	s->heapsize = 0;
	s->last = -1;

	for (i = 0; i < n; i++)
	{
		ZReader    *r = &s->readers[i];
		void	   *workspace = MemoryContextAlloc(s->merge_cxt, dsize);

		r->zf = s->runs[first + i].zf;
		r->read_off = s->runs[first + i].start;
		r->comp_left = s->runs[first + i].comp_bytes;
		r->dctx = ZSTD_initStaticDStream(workspace, dsize);
		if (r->dctx == NULL)
			elog(ERROR, "could not set up a zstd decompression context");
		/* a frame asking for more (a damaged file) fails cleanly */
		zs_check_decompress(ZSTD_DCtx_setParameter(r->dctx,
												   ZSTD_d_windowLogMax,
												   ZS_WINDOW_LOG));
		r->inbuf = MemoryContextAlloc(s->merge_cxt, ZS_READ_SIZE);
		r->in.src = r->inbuf;
		r->in.size = 0;
		r->in.pos = 0;
		r->outcap = ZS_OUT_SIZE;
		r->out = MemoryContextAlloc(s->merge_cxt, r->outcap);
	}

	/* start decompressing every run, on the decoder thread if it starts */
	if (n > 0 && ZS_DECODER)
		dec = zs_decoder_start(s, n);
	for (i = 0; i < n; i++)
	{
		s->readers[i].dec = dec;
		(void) zs_reader_post(&s->readers[i], 0);
	}

	for (i = 0; i < nr; i++)
	{
		ZReader    *r = &s->readers[i];

		if (i == n)
		{
			r->mitems = s->ld.items;
			r->mcount = s->ld.nitems;
			r->mpos = 0;
		}
		if (zs_reader_next(r))
		{
			s->heap[s->heapsize].key = r->key;
			s->heap[s->heapsize].reader = i;
			s->heapsize++;
		}
	}
	for (i = s->heapsize / 2 - 1; i >= 0; i--)
		zs_heap_sift_down(s->heap, s->heapsize, i);
}

/*
 * Reader holding the next record in merge order, or NULL at the end.
 * The previous one's record is consumed only now, so it stays readable
 * until this call.
 */
static inline ZReader *
zs_merge_next(ZSorter *s)
{
	if (s->last >= 0)
	{
		ZReader    *r = &s->readers[s->last];

		if (zs_reader_next(r))
			s->heap[0].key = r->key;
		else
			s->heap[0] = s->heap[--s->heapsize];
		if (s->heapsize > 1)
			zs_heap_sift_down(s->heap, s->heapsize, 0);
	}
	if (s->heapsize == 0)
	{
		s->last = -1;
		return NULL;
	}
	s->last = s->heap[0].reader;
	return &s->readers[s->last];
}

/* Free the readers (their files are the sorter's). */
static void
zs_merge_close(ZSorter *s)
{
	if (s->merge_cxt == NULL)
		return;
	/* its reset callback stops the decoder thread */
	MemoryContextDelete(s->merge_cxt);
	s->merge_cxt = NULL;
	s->readers = NULL;
	s->nreaders = 0;
	s->heap = NULL;
	s->heapsize = 0;
	s->last = -1;
}

/*
 * Merge runs[first .. first + n) into one run in out that takes their
 * place.
 */
static void
zs_merge_group(ZSorter *s, int first, int n, ZFile *out)
{
	ZReader    *r;
	ZRun		merged;
	uint64		count = 0;
	int			i;

	zs_merge_open(s, first, n, false);
	zs_writer_begin(s, out);
	while ((r = zs_merge_next(s)) != NULL)
	{
		/* a record is contiguous in the window: copy it whole */
		if (ZS_STAGE_SIZE - s->stage_used >= r->reclen)
		{
			memcpy(s->stage + s->stage_used, r->out + r->pos, r->reclen);
			s->stage_used += r->reclen;
		}
		else
			zs_writer_bytes(s, r->out + r->pos, r->reclen);
		if ((++count & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	merged = zs_writer_end(s);
	zs_merge_close(s);
	for (i = first; i < first + n; i++)
		zs_release_run(s, s->runs[i].zf);

	s->runs[first] = merged;
	memmove(&s->runs[first + 1], &s->runs[first + n],
			(s->nruns - first - n) * sizeof(ZRun));
	s->nruns -= n - 1;
}

/*
 * One intermediate pass: merge groups of at most fanin adjacent runs until
 * at most target runs remain.  Only as many runs as needed are touched.
 */
static void
zs_merge_pass(ZSorter *s, int fanin, int target)
{
	int			reduce = s->nruns - target;
	int			i = 0;
	ZFile	   *out = zs_new_file(s);

	while (reduce > 0)
	{
		int			g = Min(fanin, reduce + 1);

		zs_merge_group(s, i, g, out);
		reduce -= g - 1;
		i++;
	}
	s->stats.nmerges++;
}

void
zsorter_performsort(ZSorter *s)
{
	int			fanin_final;
	int			fanin_inter;
	int64		ld_mem;

	if (s->state != ZS_LOADING)
		elog(ERROR, "zorder sorter: performsort called twice");

	if (s->nruns == 0 && !s->draining)
	{
		zs_sort_items(s, &s->ld);
		s->iter = 0;
		s->state = ZS_READ_MEMORY;
		return;
	}

	zs_drain_finish(s);
	if (s->dr.arena_cxt != NULL)
	{
		MemoryContextDelete(s->dr.arena_cxt);
		s->dr.arena_cxt = NULL;
		zs_batch_free_items(&s->dr);
	}

	/*
	 * The last batch is merged straight from memory if the readers of the
	 * runs fit beside it (the writer's memory is free by then): that saves
	 * compressing, writing and reading it back.
	 */
	ld_mem = s->ld.arena_used + (int64) s->ld.capitems * sizeof(zr_item);
	if (s->ld.nitems > 0 &&
		(int64) (s->nruns + 1) * (int64) s->reader_cost + ld_mem <= s->budget)
	{
		zs_sort_items(s, &s->ld);
		s->keep_last = true;
	}
	else if (s->ld.nitems > 0)
	{
		zs_spill(s);
		zs_drain_finish(s);
	}
	zs_free_tmp(s);

	if (!s->keep_last)
	{
		/* loading memory is not needed any more; give it to the readers */
		MemoryContextDelete(s->ld.arena_cxt);
		s->ld.arena_cxt = NULL;
		zs_batch_free_items(&s->ld);
		s->ld.arena_used = 0;
		s->ld.nitems = 0;
		s->ld.blk_ptr = s->ld.blk_end = NULL;
		if (s->dr.arena_cxt != NULL)
		{
			MemoryContextDelete(s->dr.arena_cxt);
			s->dr.arena_cxt = NULL;
			zs_batch_free_items(&s->dr);
		}

		fanin_final = (int) Min(s->budget / (int64) s->reader_cost,
								INT_MAX / 2);
		fanin_final = Max(fanin_final, ZS_MIN_FANIN);
		fanin_inter = (int) Min((s->budget - (int64) s->writer_cost) /
								(int64) s->reader_cost, INT_MAX / 2);
		fanin_inter = Max(fanin_inter, ZS_MIN_FANIN);

		while (s->nruns > fanin_final)
		{
			int			target;

			target = (s->nruns + fanin_inter - 1) / fanin_inter;
			target = Max(target, fanin_final);
			zs_merge_pass(s, fanin_inter, target);
		}
	}

	/* no more writing */
	if (s->cctx)
	{
		zs_free_cctx(s);
		pfree(s->stage);
		s->stage = NULL;
		pfree(s->cout);
		s->cout = NULL;
	}

	zs_merge_open(s, 0, s->nruns, s->keep_last);

	s->state = ZS_READ_MERGE;
}

HeapTuple
zsorter_next(ZSorter *s, uint64 *key)
{
	if (s->state == ZS_READ_MEMORY)
	{
		const ZMemTuple *mt;

		if (s->iter >= s->ld.nitems)
			return NULL;
		mt = (const ZMemTuple *) (uintptr_t) s->ld.items[s->iter].val;
		if (s->iter + ZS_PREFETCH_AHEAD < s->ld.nitems)
			zs_prefetch((const char *) (uintptr_t)
						s->ld.items[s->iter + ZS_PREFETCH_AHEAD].val);
		if (key)
			*key = s->ld.items[s->iter].key;
		s->iter++;
		s->cur.t_len = mt->t_len;
		s->cur.t_self = mt->t_self;
		s->cur.t_tableOid = InvalidOid;
		s->cur.t_data = (HeapTupleHeader) ((char *) mt + ZS_MEMTUP_HDR);
		return &s->cur;
	}
	else if (s->state == ZS_READ_MERGE)
	{
		ZReader    *r;
		uint32		len;

		CHECK_FOR_INTERRUPTS();
		r = zs_merge_next(s);
		if (r == NULL)
			return NULL;
		if (key)
			*key = r->key;

		if (r->mitems != NULL)
		{
			/* from the batch in memory: aligned, and stays put */
			s->cur.t_len = r->mt->t_len;
			s->cur.t_self = r->mt->t_self;
			s->cur.t_tableOid = InvalidOid;
			s->cur.t_data = (HeapTupleHeader) ((char *) r->mt + ZS_MEMTUP_HDR);
			return &s->cur;
		}

		/* the window is unaligned: copy to an aligned buffer */
		len = (uint32) (r->reclen - ZS_REC_HDR);
		if (len > s->tupcap)
		{
			size_t		newcap = Max((size_t) len, Max(s->tupcap * 2, 1024));

			if (s->tupbuf)
				pfree(s->tupbuf);
			s->tupbuf = MemoryContextAllocHuge(s->cxt, newcap);
			s->tupcap = newcap;
		}
		memcpy(s->tupbuf, r->out + r->pos + ZS_REC_HDR, len);
		memcpy(&s->cur.t_self, r->out + r->pos + ZS_REC_TID_OFF,
			   sizeof(ItemPointerData));
		s->cur.t_len = len;
		s->cur.t_tableOid = InvalidOid;
		s->cur.t_data = (HeapTupleHeader) s->tupbuf;
		return &s->cur;
	}

	elog(ERROR, "zorder sorter: next called before performsort");
	return NULL;				/* keep compiler quiet */
}

void
zsorter_stats(ZSorter *s, ZSorterStats *stats)
{
	*stats = s->stats;
}

void
zsorter_end(ZSorter *s)
{
	int			i;

	zs_merge_close(s);
	for (i = 0; i < s->nfiles; i++)
		BufFileClose(s->files[i]->file);
	/* the context's reset callback frees the compressor */
	MemoryContextDelete(s->cxt);
}
