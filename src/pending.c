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
 * each index gets its new file and before the index is built.
 *
 * At commit or abort the record is removed (PostgreSQL itself deletes the
 * files of an aborted transaction).  A record that is still there later
 * belongs to a transaction that neither committed nor is running: the run
 * crashed.  zorder_cleanup_orphans() removes the files such a record lists,
 * skipping any file that some relation in pg_class uses.
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
#include "catalog/catalog.h"
#include "catalog/storage.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "postmaster/bgwriter.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/smgr.h"
#include "utils/inval.h"
#include "utils/memutils.h"

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

static void pending_relcache_callback(Datum arg, Oid relid);
static void pending_xact_callback(XactEvent event, void *arg);

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
		if (nrecorded == maxrecorded)
		{
			maxrecorded = Max(16, maxrecorded * 2);
			recorded = recorded ?
				repalloc(recorded, maxrecorded * sizeof(RelFileLocator)) :
				palloc(maxrecorded * sizeof(RelFileLocator));
		}
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

/*
 * Start recording for this transaction.  Call before creating any file.
 */
void
zorder_pending_begin(void)
{
	TransactionId xid = GetTopTransactionId();

	if (!callbacks_registered)
	{
		CacheRegisterRelcacheCallback(pending_relcache_callback, (Datum) 0);
		RegisterXactCallback(pending_xact_callback, NULL);
		pending_cxt = AllocSetContextCreate(TopMemoryContext,
											"zorder pending files",
											ALLOCSET_SMALL_SIZES);
		callbacks_registered = true;
	}

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
		elog(WARNING, "could not write file \"%s\": %m", pending_path);
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

static void
pending_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			pending_forget(true);
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
 * Remove the files of one crashed run.  Returns the number of relation
 * files removed.
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
		return 0;
	while (fscanf(f, "%u %u %u", &spc, &db, &rel) == 3)
	{
		RelFileLocator node;
		SMgrRelation srel;
		Oid			reltablespace;

		if (db != MyDatabaseId)
			continue;
		node = zorder_relfile(spc, db, rel);

		/* Never touch a file that a relation uses. */
		reltablespace = (spc == MyDatabaseTableSpace) ? InvalidOid : spc;
		if (OidIsValid(zorder_relation_by_file(reltablespace, rel)))
			continue;

		srel = zorder_smgr_open_shared(node);
		if (!smgrexists(srel, MAIN_FORKNUM))
		{
			smgrclose(srel);
			continue;
		}
		smgrdounlinkall(&srel, 1, false);
		smgrclose(srel);
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
 * Remove the files that crashed optimize runs in this database left behind.
 * Returns the number of relation files removed.
 */
int
zorder_cleanup_orphans(void)
{
	DIR		   *dir;
	struct dirent *de;
	int			removed = 0;

	dir = AllocateDir(PENDING_DIR);
	if (dir == NULL)
		return 0;				/* nothing was ever recorded */

	while ((de = ReadDir(dir, PENDING_DIR)) != NULL)
	{
		unsigned	db;
		TransactionId xid;
		char		path[MAXPGPATH];

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

		/*
		 * A committed run's files are in use; the reference check in
		 * cleanup_record() protects them even when the commit status can no
		 * longer be looked up.
		 */
		if (!xid_status_known(xid) || !TransactionIdDidCommit(xid))
		{
			int			n = cleanup_record(path);

			/*
			 * mdunlink only truncates a main fork; the checkpointer unlinks
			 * it after the next checkpoint.  Keep the record until then.
			 */
			if (n > 0)
				RequestCheckpoint(ZORDER_CHECKPOINT_FAST | CHECKPOINT_FORCE |
								  CHECKPOINT_WAIT);
			removed += n;
		}
		if (unlink(path) < 0 && errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", path)));
	}
	FreeDir(dir);
	return removed;
}
