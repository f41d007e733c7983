/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Running a step in a subtransaction so that its error can be weighed.
 *
 * Two steps may fail without failing the statement around them: reading
 * stored boundaries back (quantile.c), where a type changed in place since
 * the sample makes the input function refuse a value, and the planner's
 * lookup of a layout (planner.c), where nothing may fail a query on some
 * table for want of a model.  An error caught with PG_TRY alone leaves the
 * transaction in an unknown state; rolling back a subtransaction releases
 * what the step took (locks, buffers, memory, snapshots).  Each caller
 * then decides which errors it swallows and rethrows the others.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "subxact.h"

/*
 * Run fn(arg) in an internal subtransaction.  Returns NULL once fn has
 * returned and the subtransaction is committed, else the error fn raised,
 * copied into the caller's memory context, with the subtransaction rolled
 * back.  Either way the caller's memory context and resource owner are
 * current again.  Not in parallel mode, where no subtransaction can start.
 */
ErrorData *
zorder_try_in_subxact(ZSubxactFn fn, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	Assert(!IsInParallelMode());
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		/* copy the error out before the rollback frees its memory */
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return edata;
}

/*
 * Rethrow an error a step caught that is not the step's to weigh: a cancel,
 * a shutdown or running out of memory is for the query, whatever the step.
 */
void
zorder_rethrow_if_fatal(ErrorData *edata)
{
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
		ERRCODE_TO_CATEGORY(edata->sqlerrcode) ==
		ERRCODE_TO_CATEGORY(ERRCODE_ADMIN_SHUTDOWN) ||
		edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY)
		ReThrowError(edata);
}
