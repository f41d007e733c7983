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
 * array of (key, pointer).  When the arena and array reach the memory
 * budget, the array is radix-sorted, written out as one sorted run and the
 * arena is reset.  A run is one zstd stream of records
 *
 *		[uint64 key][uint32 t_len][ItemPointerData t_self][t_len bytes]
 *
 * (native byte order: the files never leave this backend), stored in a
 * temporary BufFile shared with other runs: one file for the initial runs
 * and one per intermediate merge pass, deleted as soon as no run in it is
 * needed.  A BufFile per run would cost its 8 kB buffer for every run.
 *
 * Output: if nothing was spilled, the array is sorted in place and read
 * back directly.  Otherwise the runs are merged with a binary heap on
 * (key, run position); runs stay in input order, so the position breaks
 * ties and the whole sort is stable.  When there are more runs than the
 * budget affords decompressors for, groups of adjacent runs are first
 * merged into bigger runs (adjacent, so input order is kept).
 *
 * Everything, including libzstd's own state (through a custom allocator),
 * lives in the sorter's memory context, and temporary files belong to the
 * resource owner, so an error or cancel leaks nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#define ZSTD_STATIC_LINKING_ONLY	/* custom allocator, size estimates */
#include <zstd.h>

#include "commands/tablespace.h"
#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "radix.h"
#include "sorter.h"

/*
 * zstd parameters.  A small window bounds each decompressor's memory
 * (about 230 kB at 2^15, 620 kB at 2^17), hence the merge fan-in.
 * Neighbouring tuples in a sorted run are where the redundancy is: on
 * 3M rows of mixed text, a 2^17 window compressed only 2-4% better.
 * Negative levels were 10-20% faster but wrote 25-40% more bytes.  Both
 * can be overridden at build time for experiments.
 */
#ifndef ZS_LEVEL
#define ZS_LEVEL		1
#endif
#ifndef ZS_WINDOW_LOG
#define ZS_WINDOW_LOG	15
#endif

/* Bytes handed to the compressor per call, and read from a run per call. */
#define ZS_STAGE_SIZE	(128 * 1024)
#define ZS_READ_SIZE	(16 * 1024)
/* Initial decompressed-record window of a reader; grows for big records. */
#define ZS_OUT_SIZE		(16 * 1024)

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
	ZFile	   *zf;
	int64		read_off;		/* offset in zf of the next unread byte */
	int64		comp_left;		/* compressed bytes not yet read */
	ZSTD_DCtx  *dctx;
	char	   *inbuf;
	ZSTD_inBuffer in;
	char	   *out;			/* decompressed bytes [pos, end) */
	size_t		outcap;
	size_t		pos;
	size_t		end;
	bool		frame_done;
	/* current record: out[pos .. pos + reclen) */
	size_t		reclen;
	uint64		key;
} ZReader;

typedef struct ZHeapEntry
{
	uint64		key;
	int			reader;			/* also the run's input position */
} ZHeapEntry;

typedef enum ZSState
{
	ZS_LOADING,
	ZS_READ_MEMORY,
	ZS_READ_MERGE
} ZSState;

struct ZSorter
{
	MemoryContext cxt;			/* everything below lives here */
	MemoryContext arena_cxt;	/* tuples of the current run */
	ZSState		state;

	int64		budget;			/* bytes */
	int64		load_budget;	/* bytes for arena + item arrays */
	size_t		reader_cost;	/* estimated bytes per merge input */
	size_t		writer_cost;	/* estimated bytes of a run writer */

	/* loading */
	zr_item    *items;
	zr_item    *tmp;
	size_t		nitems;
	size_t		capitems;
	size_t		captmp;
	char	   *blk_ptr;		/* free space of the current block */
	char	   *blk_end;
	size_t		block_size;
	int64		arena_used;		/* bytes allocated in arena_cxt */

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
	ZSTD_CCtx  *cctx;
	char	   *stage;
	size_t		stage_used;
	char	   *cout;
	size_t		coutcap;
	ZFile	   *w_zf;
	int64		w_start;
	int64		w_comp;

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

static void
zs_check_compress(size_t ret)
{
	if (ZSTD_isError(ret))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("zorder sort could not compress temporary data: %s",
						ZSTD_getErrorName(ret))));
}

static void
zs_check_decompress(size_t ret)
{
	if (ZSTD_isError(ret))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("zorder sort could not decompress temporary file: %s",
						ZSTD_getErrorName(ret))));
}

static ZSTD_compressionParameters
zs_cparams(void)
{
	ZSTD_compressionParameters cp = ZSTD_getCParams(ZS_LEVEL, 0, 0);

	cp.windowLog = ZS_WINDOW_LOG;
	return ZSTD_adjustCParams(cp, 0, 0);
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
	s->arena_cxt = AllocSetContextCreate(cxt, "zorder sorter tuples",
										 ALLOCSET_DEFAULT_SIZES);
	s->state = ZS_LOADING;
	s->budget = (int64) Max(work_mem_kb, 64) * 1024;
	s->last = -1;
	s->zmem_cxt = zs_custom_mem(cxt);

	/*
	 * Compressor and staging buffers are needed from the first spill on,
	 * so tuples get what is left (about 600 kB goes to the writer).  At
	 * the smallest budgets that would leave next to nothing: keep half the
	 * budget for tuples and accept the overrun rather than writing
	 * absurdly small runs.
	 */
	s->writer_cost = ZSTD_estimateCStreamSize_usingCParams(zs_cparams()) +
		ZS_STAGE_SIZE + ZSTD_CStreamOutSize() + BLCKSZ;
	s->reader_cost = ZSTD_estimateDStreamSize((size_t) 1 << ZS_WINDOW_LOG) +
		ZS_READ_SIZE + ZS_OUT_SIZE + sizeof(ZReader) +
		sizeof(ZHeapEntry) + sizeof(ZRun) + 1024;
	floor_budget = s->budget / 2;
	s->load_budget = Max(s->budget - (int64) s->writer_cost, floor_budget);

	/* ~32 blocks per run: little waste at the end, few mallocs */
	s->block_size = Min(Max(s->load_budget / 32, 16 * 1024), 2 * 1024 * 1024);
	s->block_size = MAXALIGN_DOWN(s->block_size);

	s->capitems = ZS_MIN_ITEMS;
	s->items = MemoryContextAllocHuge(cxt, s->capitems * sizeof(zr_item));

	return s;
}

/* Arena plus both item arrays (tmp is counted before it exists). */
static inline int64
zs_load_mem(ZSorter *s)
{
	return s->arena_used + (int64) s->capitems * 2 * sizeof(zr_item);
}

/* Grow the item array within the budget; false means "spill first". */
static bool
zs_grow_items(ZSorter *s)
{
	int64		room = s->load_budget - zs_load_mem(s);
	size_t		newcap = s->capitems * 2;
	size_t		affordable = s->capitems + Max(room, 0) / (2 * sizeof(zr_item));

	if (newcap > affordable)
		newcap = affordable;
	if (newcap > MaxAllocHugeSize / sizeof(zr_item))
		newcap = MaxAllocHugeSize / sizeof(zr_item);
	if (newcap <= s->capitems)
		return false;
	s->items = repalloc_huge(s->items, newcap * sizeof(zr_item));
	s->capitems = newcap;
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
	char	   *p;

	if (need <= (size_t) (s->blk_end - s->blk_ptr))
	{
		p = s->blk_ptr;
		s->blk_ptr += need;
		return p;
	}

	if (need > ZS_BIG_TUPLE(s))
	{
		/* own chunk; keep the current block for the small ones */
		if (s->nitems > 0 && zs_load_mem(s) + (int64) need > s->load_budget)
			return NULL;
		s->arena_used += need;
		return MemoryContextAllocHuge(s->arena_cxt, need);
	}

	if (s->nitems > 0 &&
		zs_load_mem(s) + (int64) s->block_size > s->load_budget)
		return NULL;
	p = MemoryContextAlloc(s->arena_cxt, s->block_size);
	s->arena_used += s->block_size;
	s->blk_ptr = p + need;
	s->blk_end = p + s->block_size;
	return p;
}

static void zs_dump_run(ZSorter *s);

void
zsorter_put(ZSorter *s, uint64 key, HeapTuple tup)
{
	size_t		need = ZS_MEMTUP_HDR + MAXALIGN(tup->t_len);
	char	   *p;
	ZMemTuple  *mt;

	if (s->state != ZS_LOADING)
		elog(ERROR, "zorder sorter: put after performsort");

	if (s->nitems == s->capitems && !zs_grow_items(s))
		zs_dump_run(s);
	p = zs_arena_alloc(s, need);
	if (p == NULL)
	{
		zs_dump_run(s);
		p = zs_arena_alloc(s, need);
	}

	mt = (ZMemTuple *) p;
	mt->t_len = tup->t_len;
	mt->t_self = tup->t_self;
	memcpy(p + ZS_MEMTUP_HDR, tup->t_data, tup->t_len);

	s->items[s->nitems].key = key;
	s->items[s->nitems].val = (uint64) (uintptr_t) mt;
	s->nitems++;
	s->stats.ntuples++;
}

/* Sort the loaded items; tmp is allocated lazily and kept across runs. */
static void
zs_sort_items(ZSorter *s)
{
	if (s->nitems >= 2)
	{
		if (s->captmp < s->nitems)
		{
			if (s->tmp)
				pfree(s->tmp);
			s->tmp = MemoryContextAllocHuge(s->cxt,
											s->capitems * sizeof(zr_item));
			s->captmp = s->capitems;
		}
		zr_sort(s->items, s->tmp, s->nitems);
	}
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
		/* cheap, and turns a damaged temp file into an error */
		zs_check_compress(ZSTD_CCtx_setParameter(s->cctx,
												 ZSTD_c_checksumFlag, 1));
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
	s->stage_used = 0;
}

/* Compress the staged bytes; ZSTD_e_end also finishes the stream. */
static void
zs_writer_compress(ZSorter *s, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in;

	in.src = s->stage;
	in.size = s->stage_used;
	in.pos = 0;
	for (;;)
	{
		ZSTD_outBuffer out;
		size_t		remaining;

		out.dst = s->cout;
		out.size = s->coutcap;
		out.pos = 0;
		remaining = ZSTD_compressStream2(s->cctx, &out, &in, mode);
		zs_check_compress(remaining);
		if (out.pos > 0)
		{
			BufFileWrite(s->w_zf->file, s->cout, out.pos);
			s->w_comp += out.pos;
		}
		if (mode == ZSTD_e_end ? remaining == 0 : in.pos == in.size)
			break;
	}
	s->stats.raw_bytes += s->stage_used;
	s->stage_used = 0;
}

static void
zs_writer_bytes(ZSorter *s, const char *data, size_t len)
{
	while (len > 0)
	{
		size_t		n = ZS_STAGE_SIZE - s->stage_used;

		if (n == 0)
		{
			zs_writer_compress(s, ZSTD_e_continue);
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

/* Finish the current run. */
static ZRun
zs_writer_end(ZSorter *s)
{
	ZRun		run;

	zs_writer_compress(s, ZSTD_e_end);
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

/* Sort what is loaded, write it as a run, and empty the arena. */
static void
zs_dump_run(ZSorter *s)
{
	size_t		i;

	zs_sort_items(s);
	if (s->load_file == NULL)
		s->load_file = zs_new_file(s);
	zs_writer_begin(s, s->load_file);
	for (i = 0; i < s->nitems; i++)
	{
		const ZMemTuple *mt = (const ZMemTuple *) (uintptr_t) s->items[i].val;

		if (i + ZS_PREFETCH_AHEAD < s->nitems)
		{
			const char *ahead = (const char *) (uintptr_t)
				s->items[i + ZS_PREFETCH_AHEAD].val;

			zs_prefetch(ahead);
			zs_prefetch(ahead + 64);
		}

		zs_writer_record(s, s->items[i].key, mt->t_len, &mt->t_self,
						 (const char *) mt + ZS_MEMTUP_HDR);
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	zs_add_run(s, zs_writer_end(s));
	s->stats.nruns++;

	s->nitems = 0;
	MemoryContextReset(s->arena_cxt);
	s->arena_used = 0;
	s->blk_ptr = s->blk_end = NULL;
}

/* ----------------------------------------------------------------
 * Run readers and merging
 * ----------------------------------------------------------------
 */

/*
 * Make at least need bytes of decompressed data available at out[pos..].
 * Compacts the window to its start first.  False if the run ends sooner.
 */
static bool
zs_reader_fill(ZReader *r, size_t need)
{
	size_t		avail = r->end - r->pos;

	if (r->pos > 0)
	{
		if (avail > 0)
			memmove(r->out, r->out + r->pos, avail);
		r->pos = 0;
		r->end = avail;
	}
	if (need > r->outcap)
	{
		size_t		newcap = Max(need, r->outcap * 2);

		r->out = repalloc_huge(r->out, newcap);
		r->outcap = newcap;
	}

	while (r->end < need)
	{
		ZSTD_outBuffer out;
		size_t		ret;
		size_t		before = r->end;

		if (r->in.pos == r->in.size && r->comp_left > 0)
		{
			size_t		want = Min((int64) ZS_READ_SIZE, r->comp_left);
			size_t		got;

			/* other readers share the file: position every time */
			if (BufFileSeek(r->zf->file, 0, (off_t) r->read_off,
							SEEK_SET) != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not seek in zorder sort temporary file: %m")));
#if PG_VERSION_NUM >= 160000
			BufFileReadExact(r->zf->file, r->inbuf, want);
			got = want;
#else
			got = BufFileRead(r->zf->file, r->inbuf, want);
			if (got != want)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not read from zorder sort temporary file: read only %zu of %zu bytes",
								got, want)));
#endif
			r->in.src = r->inbuf;
			r->in.size = got;
			r->in.pos = 0;
			r->comp_left -= got;
			r->read_off += got;
		}

		out.dst = r->out;
		out.size = r->outcap;
		out.pos = r->end;
		ret = ZSTD_decompressStream(r->dctx, &out, &r->in);
		zs_check_decompress(ret);
		r->end = out.pos;
		if (ret == 0)
			r->frame_done = true;

		/* nothing more to come: input used up and no output produced */
		if (r->end == before && r->in.pos == r->in.size && r->comp_left == 0)
			break;
	}
	return r->end >= need;
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

/* Open readers on runs[first .. first + n) and build the heap. */
static void
zs_merge_open(ZSorter *s, int first, int n)
{
	ZSTD_customMem zmem;
	int			i;

	s->merge_cxt = AllocSetContextCreate(s->cxt, "zorder sorter merge",
										 ALLOCSET_DEFAULT_SIZES);
	zmem = zs_custom_mem(s->merge_cxt);
	s->readers = MemoryContextAllocZero(s->merge_cxt, n * sizeof(ZReader));
	s->heap = MemoryContextAlloc(s->merge_cxt, n * sizeof(ZHeapEntry));
	s->nreaders = n;
	s->heapsize = 0;
	s->last = -1;

	for (i = 0; i < n; i++)
	{
		ZReader    *r = &s->readers[i];

		r->zf = s->runs[first + i].zf;
		r->read_off = s->runs[first + i].start;
		r->comp_left = s->runs[first + i].comp_bytes;
		r->dctx = ZSTD_createDCtx_advanced(zmem);
		if (r->dctx == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("Could not create a zstd decompression context.")));
		zs_check_decompress(ZSTD_DCtx_setParameter(r->dctx,
												   ZSTD_d_windowLogMax,
												   ZS_WINDOW_LOG));
		r->inbuf = MemoryContextAlloc(s->merge_cxt, ZS_READ_SIZE);
		r->in.src = r->inbuf;
		r->in.size = 0;
		r->in.pos = 0;
		r->outcap = ZS_OUT_SIZE;
		r->out = MemoryContextAlloc(s->merge_cxt, r->outcap);

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
	int			i;

	if (s->merge_cxt == NULL)
		return;
	for (i = 0; i < s->nreaders; i++)
	{
		ZReader    *r = &s->readers[i];

		if (r->dctx)
			ZSTD_freeDCtx(r->dctx);
	}
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

	zs_merge_open(s, first, n);
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

	if (s->state != ZS_LOADING)
		elog(ERROR, "zorder sorter: performsort called twice");

	if (s->nruns == 0)
	{
		zs_sort_items(s);
		s->iter = 0;
		s->state = ZS_READ_MEMORY;
		return;
	}

	if (s->nitems > 0)
		zs_dump_run(s);

	/* loading memory is not needed any more; give it to the readers */
	MemoryContextReset(s->arena_cxt);
	pfree(s->items);
	s->items = NULL;
	s->capitems = 0;
	if (s->tmp)
		pfree(s->tmp);
	s->tmp = NULL;
	s->captmp = 0;

	fanin_final = (int) Min(s->budget / (int64) s->reader_cost, INT_MAX / 2);
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

	/* no more writing */
	if (s->cctx)
	{
		ZSTD_freeCCtx(s->cctx);
		s->cctx = NULL;
		pfree(s->stage);
		s->stage = NULL;
		pfree(s->cout);
		s->cout = NULL;
	}

	zs_merge_open(s, 0, s->nruns);
	s->state = ZS_READ_MERGE;
}

HeapTuple
zsorter_next(ZSorter *s, uint64 *key)
{
	if (s->state == ZS_READ_MEMORY)
	{
		const ZMemTuple *mt;

		if (s->iter >= s->nitems)
			return NULL;
		mt = (const ZMemTuple *) (uintptr_t) s->items[s->iter].val;
		if (s->iter + ZS_PREFETCH_AHEAD < s->nitems)
			zs_prefetch((const char *) (uintptr_t)
						s->items[s->iter + ZS_PREFETCH_AHEAD].val);
		if (key)
			*key = s->items[s->iter].key;
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
		if (key)
			*key = r->key;
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
	if (s->cctx)
		ZSTD_freeCCtx(s->cctx);
	MemoryContextDelete(s->cxt);
}
