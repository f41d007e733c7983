/*-------------------------------------------------------------------------
 *
 * pending.c
 *	  Records of the relation files a full optimize is writing, so that the
 *	  files a crashed run leaves behind can be removed later.
 *
 * A rewrite creates a new heap, its TOAST table and, while finish_heap_swap
 * rebuilds them, new files for every index.  If the server crashes before
 * the transaction commits, PostgreSQL forgets those files but leaves them on
 * disk.  While an optimize runs we append every file that is scheduled for
 * deletion at abort (the storage manager's own list) to a record under
 * $PGDATA/pg_zorder, fsync'd before the file receives data: once right after
 * the new heap is made, and again from a relcache callback, which runs when
 * each index gets its new file and before the index is built.  PostgreSQL
 * creates that file a moment before the callback runs (in
 * RelationSetNewRelfilenumber, before its CommandCounterIncrement): a crash
 * in that moment leaves the new, empty file of one index unrecorded.
 *
 * At commit or abort the record is removed (PostgreSQL itself deletes the
 * files of an aborted transaction).  A record that is still there later
 * belongs to a transaction that neither committed nor is running: the run
 * crashed.  zorder_cleanup_orphans() removes the files such a record lists,
 * skipping any file that some relation in pg_class uses.
 *
 * Removal goes the way DROP TABLE removes a relation's storage: each file
 * is scheduled for deletion at commit (RelationDropStorage), so that it is
 * named in the commit record and every standby, and crash recovery, drops
 * it too (all forks and segments).  A record is removed when the
 * transaction that dealt with it commits, and kept if it aborts.  Cleanups
 * take turns: each holds a lock on the extension until its transaction
 * ends, so no two schedule the same file, and none can drop a file number
 * that another's commit has freed and a new relation has taken since.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogutils.h"
#include "catalog/catalog.h"
#include "catalog/pg_extension.h"
#include "catalog/storage.h"
#include "commands/extension.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/smgr.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "pending.h"
#include "pg_compat.h"
#include "zorder.h"

#define PENDING_DIR "pg_zorder"

/* State of the optimize running in this backend, if any. */
static bool pending_active = false;
static bool callbacks_registered = false;
static char pending_path[MAXPGPATH];
static RelFileLocator *recorded = NULL;
static int	nrecorded = 0;
static int	maxrecorded = 0;
static MemoryContext pending_cxt = NULL;

/*
 * What cleanups in this transaction dealt with: the records to remove at
 * commit and the files scheduled for deletion then, each with the nesting
 * level of the subtransaction that did it (as storage.c keeps its list), in
 * TopTransactionContext.
 */
typedef struct CleanedRecord
{
	int			nestLevel;
	char		path[MAXPGPATH];
} CleanedRecord;

typedef struct DroppedFile
{
	int			nestLevel;
	RelFileLocator node;
} DroppedFile;

static List *cleaned_records = NIL;
static List *dropped_files = NIL;

static void pending_relcache_callback(Datum arg, Oid relid);
static void pending_xact_callback(XactEvent event, void *arg);
static void pending_subxact_callback(SubXactEvent event,
									 SubTransactionId mySubid,
									 SubTransactionId parentSubid, void *arg);

static bool
node_recorded(const RelFileLocator *node)
{
	for (int i = 0; i < nrecorded; i++)
		if (RelFileLocatorEquals(recorded[i], *node))
			return true;
	return false;
}

/*
 * Append the abort-pending files not yet recorded.  Returns false, with
 * errno set, if the record could not be written.
 */
static bool
pending_append_new(void)
{
	MemoryContext oldcxt;
	RelFileLocator *nodes;
	int			n;
	StringInfoData buf;
	bool		ok = true;

	oldcxt = MemoryContextSwitchTo(pending_cxt);
	n = smgrGetPendingDeletes(false, &nodes);
	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
	{
		if (node_recorded(&nodes[i]))
			continue;
		ZORDER_RESERVE(recorded, maxrecorded, nrecorded + 1, 16,
					   CurrentMemoryContext);
		recorded[nrecorded++] = nodes[i];
		appendStringInfo(&buf, "%u %u %u\n",
						 zorder_relfile_spc(nodes[i]), zorder_relfile_db(nodes[i]),
						 zorder_relfile_number(nodes[i]));
	}

	if (buf.len > 0)
	{
		int			fd = open(pending_path, O_WRONLY | O_APPEND | O_CREAT,
							  pg_file_create_mode);

		if (fd < 0)
			ok = false;
		else
		{
			if (write(fd, buf.data, buf.len) != buf.len || pg_fsync(fd) != 0)
				ok = false;
			close(fd);
		}
	}
	pfree(buf.data);
	if (nodes)
		pfree(nodes);
	MemoryContextSwitchTo(oldcxt);
	return ok;
}

static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;
	CacheRegisterRelcacheCallback(pending_relcache_callback, (Datum) 0);
	RegisterXactCallback(pending_xact_callback, NULL);
	RegisterSubXactCallback(pending_subxact_callback, NULL);
	pending_cxt = AllocSetContextCreate(TopMemoryContext,
										"zorder pending files",
										ALLOCSET_SMALL_SIZES);
	callbacks_registered = true;
}

/*
 * Start recording for this transaction.  Call before creating any file.
 */
void
zorder_pending_begin(void)
{
	TransactionId xid = GetTopTransactionId();

	register_callbacks();

	if (MakePGDirectory(PENDING_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", PENDING_DIR)));

	if (!pending_active)
	{
		snprintf(pending_path, sizeof(pending_path), "%s/%u-%u",
				 PENDING_DIR, MyDatabaseId, xid);
		nrecorded = 0;
		pending_active = true;
	}
}

/*
 * Record the files created so far; raises an error if that is impossible,
 * since the caller is about to write data into them.
 */
void
zorder_pending_sync(void)
{
	if (!pending_active)
		return;
	/* the xid naming the record must survive a crash: flush its WAL */
	XLogFlush(XactLastRecEnd);
	if (!pending_append_new())
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", pending_path)));
	fsync_fname(PENDING_DIR, true);
}

static void
pending_relcache_callback(Datum arg, Oid relid)
{
	/* An error here would come at an awkward moment; warn instead. */
	if (pending_active && !pending_append_new())
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", pending_path)));
}

static void
pending_forget(bool remove_record)
{
	if (!pending_active)
		return;
	if (remove_record)
		unlink(pending_path);
	pending_active = false;
	nrecorded = 0;
	maxrecorded = 0;
	recorded = NULL;
	MemoryContextReset(pending_cxt);
}

/* Remove the records of crashed runs that this transaction dealt with. */
static void
remove_cleaned_records(void)
{
	ListCell   *lc;

	foreach(lc, cleaned_records)
	{
		CleanedRecord *cr = (CleanedRecord *) lfirst(lc);

		if (unlink(cr->path) < 0 && errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", cr->path)));
	}
}

/*
 * Before PREPARE TRANSACTION: the files this transaction scheduled for
 * deletion are deleted only if and when it commits, which a later cleanup
 * must be able to tell.  Move them from the records of the crashed runs to
 * a record named by our own transaction: while prepared it is skipped as
 * running, once committed its files are gone, once rolled back they are
 * orphans again.
 */
static void
carry_over_to_own_record(void)
{
	char		path[MAXPGPATH];
	StringInfoData buf;
	ListCell   *lc;

	if (dropped_files != NIL)
	{
		int			fd;

		initStringInfo(&buf);
		foreach(lc, dropped_files)
		{
			DroppedFile *df = (DroppedFile *) lfirst(lc);

			appendStringInfo(&buf, "%u %u %u\n", zorder_relfile_spc(df->node),
							 zorder_relfile_db(df->node),
							 zorder_relfile_number(df->node));
		}
		/* dropping storage assigned the transaction id */
		snprintf(path, sizeof(path), "%s/%u-%u", PENDING_DIR, MyDatabaseId,
				 GetTopTransactionId());
		fd = OpenTransientFile(path, O_WRONLY | O_APPEND | O_CREAT | PG_BINARY);
		if (fd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", path)));
		errno = 0;
		if (write(fd, buf.data, buf.len) != buf.len)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", path)));
		}
		if (pg_fsync(fd) != 0)
			ereport(data_sync_elevel(ERROR),
					(errcode_for_file_access(),
					 errmsg("could not fsync file \"%s\": %m", path)));
		CloseTransientFile(fd);
		fsync_fname(PENDING_DIR, true);
		pfree(buf.data);
	}
	remove_cleaned_records();
	cleaned_records = NIL;
	dropped_files = NIL;
}

static void
pending_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			/*
			 * The commit record, flushed by now, names the files we
			 * scheduled; deletion follows.  A crash from here on replays it.
			 */
			remove_cleaned_records();
			cleaned_records = NIL;
			dropped_files = NIL;
			pending_forget(true);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/* nothing was deleted: keep the records of crashed runs */
			cleaned_records = NIL;
			dropped_files = NIL;
			pending_forget(true);
			break;
		case XACT_EVENT_PRE_PREPARE:
			carry_over_to_own_record();
			break;
		case XACT_EVENT_PREPARE:
			/* the prepared transaction decides; cleanup checks later */
			pending_forget(false);
			break;
		default:
			break;
	}
}

/*
 * A subtransaction's deletions are forgotten when it aborts and become its
 * parent's when it commits, as in storage.c.
 */
static void
pending_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			foreach(lc, cleaned_records)
			{
				if (((CleanedRecord *) lfirst(lc))->nestLevel >= level)
					cleaned_records = foreach_delete_current(cleaned_records, lc);
			}
			foreach(lc, dropped_files)
			{
				if (((DroppedFile *) lfirst(lc))->nestLevel >= level)
					dropped_files = foreach_delete_current(dropped_files, lc);
			}
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			foreach(lc, cleaned_records)
			{
				CleanedRecord *cr = (CleanedRecord *) lfirst(lc);

				if (cr->nestLevel >= level)
					cr->nestLevel = level - 1;
			}
			foreach(lc, dropped_files)
			{
				DroppedFile *df = (DroppedFile *) lfirst(lc);

				if (df->nestLevel >= level)
					df->nestLevel = level - 1;
			}
			break;
		default:
			break;
	}
}

static bool
file_dropped(const RelFileLocator *node)
{
	ListCell   *lc;

	foreach(lc, dropped_files)
	{
		if (RelFileLocatorEquals(((DroppedFile *) lfirst(lc))->node, *node))
			return true;
	}
	return false;
}

static bool
record_cleaned(const char *path)
{
	ListCell   *lc;

	foreach(lc, cleaned_records)
	{
		if (strcmp(((CleanedRecord *) lfirst(lc))->path, path) == 0)
			return true;
	}
	return false;
}

/*
 * Schedule the deletion at commit of the files of one crashed run.
 * Returns the number of relation files scheduled.
 */
static int
cleanup_record(const char *path)
{
	FILE	   *f;
	unsigned	spc,
				db,
				rel;
	int			removed = 0;

	f = AllocateFile(path, "r");
	if (f == NULL)
	{
		if (errno == ENOENT)
			return 0;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	while (fscanf(f, "%u %u %u", &spc, &db, &rel) == 3)
	{
		RelFileLocator node;
		SMgrRelation srel;
		Oid			reltablespace;
		bool		exists;
		Relation	fakerel;
		MemoryContext oldcxt;
		DroppedFile *df;

		CHECK_FOR_INTERRUPTS();
		if (db != MyDatabaseId)
			continue;
		node = zorder_relfile(spc, db, rel);
		if (file_dropped(&node))
			continue;

		/* Never touch a file that a relation uses. */
		reltablespace = (spc == MyDatabaseTableSpace) ? InvalidOid : spc;
		if (OidIsValid(zorder_relation_by_file(reltablespace, rel)))
			continue;

		/*
		 * Only a file whose main fork exists: while it does, no new relation
		 * gets its number (GetNewRelFileNode checks), and the extension lock
		 * keeps any other cleanup from deleting it before we commit.
		 */
		srel = zorder_smgr_open_shared(node);
		exists = smgrexists(srel, MAIN_FORKNUM);
		smgrclose(srel);
		if (!exists)
			continue;

		/*
		 * Schedule the deletion as DROP TABLE does.  A commit record names
		 * deleted files only when the transaction has an id.  The fake
		 * relcache entry carries the file's identity, all that
		 * RelationDropStorage reads; storage.c uses one outside recovery as
		 * well.
		 */
		(void) GetTopTransactionId();
		fakerel = CreateFakeRelcacheEntry(node);
		RelationDropStorage(fakerel);
		FreeFakeRelcacheEntry(fakerel);

		oldcxt = MemoryContextSwitchTo(TopTransactionContext);
		df = palloc(sizeof(DroppedFile));
		df->nestLevel = GetCurrentTransactionNestLevel();
		df->node = node;
		dropped_files = lappend(dropped_files, df);
		MemoryContextSwitchTo(oldcxt);
		removed++;
	}
	FreeFile(f);
	return removed;
}

/* Can the commit status of xid still be looked up in the commit log? */
static bool
xid_status_known(TransactionId xid)
{
	bool		known;

	LWLockAcquire(XactTruncationLock, LW_SHARED);
	known = !TransactionIdPrecedes(xid, zorder_oldest_clog_xid());
	LWLockRelease(XactTruncationLock);
	return known;
}

/*
 * Deal with the records of crashed runs in this database: with
 * do_it false, only say whether there is one.  Returns the number of
 * relation files scheduled for deletion (or, without do_it, of records).
 */
static int
scan_records(bool do_it)
{
	DIR		   *dir;
	struct dirent *de;
	int			found = 0;

	dir = AllocateDir(PENDING_DIR);
	if (dir == NULL && errno == ENOENT)
		return 0;				/* nothing was ever recorded */

	while ((de = ReadDir(dir, PENDING_DIR)) != NULL)
	{
		unsigned	db;
		TransactionId xid;
		char		path[MAXPGPATH];
		MemoryContext oldcxt;
		CleanedRecord *cr;

		CHECK_FOR_INTERRUPTS();
		if (sscanf(de->d_name, "%u-%u", &db, &xid) != 2 ||
			db != MyDatabaseId)
			continue;
		snprintf(path, sizeof(path), "%s/%s", PENDING_DIR, de->d_name);

		/* our own run, or one that is still running or prepared */
		if (pending_active && strcmp(path, pending_path) == 0)
			continue;
		if (TransactionIdIsInProgress(xid))
			continue;
		/* dealt with earlier in this transaction */
		if (record_cleaned(path))
			continue;

		if (!do_it)
		{
			found++;
			break;
		}

		/*
		 * A committed run's files are in use; the reference check in
		 * cleanup_record() protects them even when the commit status can no
		 * longer be looked up.
		 */
		if (!xid_status_known(xid) || !TransactionIdDidCommit(xid))
			found += cleanup_record(path);

		oldcxt = MemoryContextSwitchTo(TopTransactionContext);
		cr = palloc(sizeof(CleanedRecord));
		cr->nestLevel = GetCurrentTransactionNestLevel();
		strlcpy(cr->path, path, sizeof(cr->path));
		cleaned_records = lappend(cleaned_records, cr);
		MemoryContextSwitchTo(oldcxt);
	}
	FreeDir(dir);
	return found;
}

/*
 * Schedule the deletion, at commit, of the files that crashed optimize runs
 * in this database left behind.  With wait false, leave them if another
 * transaction is cleaning up (it holds the lock until it ends).  Returns
 * the number of relation files scheduled for deletion.
 */
static int
cleanup_orphans(bool wait)
{
	Oid			extoid;

	register_callbacks();

	/* most of the time there is nothing to do: no lock then */
	if (scan_records(false) == 0)
		return 0;

	extoid = get_extension_oid("zorder", true);
	if (!OidIsValid(extoid))
		return 0;
	if (wait)
		LockDatabaseObject(ExtensionRelationId, extoid, 0, ExclusiveLock);
	else if (!zorder_try_lock_object(ExtensionRelationId, extoid, ExclusiveLock))
		return 0;

	/* under the lock, look again: another cleanup may have committed */
	return scan_records(true);
}

/* Before an optimize: clean up unless another transaction is at it. */
int
zorder_cleanup_orphans(void)
{
	return cleanup_orphans(false);
}

/* zorder.cleanup(): wait for the turn. */
int
zorder_cleanup_orphans_wait(void)
{
	return cleanup_orphans(true);
}
