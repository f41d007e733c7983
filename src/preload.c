/*-------------------------------------------------------------------------
 *
 * preload.c
 *	  Whether the library was loaded through shared_preload_libraries.
 *
 * The planner support (planner.c) is a hook: it is in a session only if
 * the library is loaded there before its first plan, which for every
 * session of every application means shared_preload_libraries.  Loaded any
 * other way (by a call to one of our functions), it serves only the
 * session that loaded it, from then on; zorder.optimize and
 * zorder.clustering_information say so.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "preload.h"

static bool loaded_at_start = false;

void
zorder_preload_init(void)
{
	loaded_at_start = process_shared_preload_libraries_in_progress;
}

bool
zorder_preloaded(void)
{
	return loaded_at_start;
}

void
zorder_notice_not_preloaded(const char *fname)
{
	static bool told = false;

	/* once a session is enough: pg_cron would repeat it in every run */
	if (loaded_at_start || told)
		return;
	told = true;
	ereport(NOTICE,
			(errcode(ERRCODE_WARNING),
			 errmsg("%s: library \"zorder\" is not in shared_preload_libraries",
					fname),
			 errdetail("Without it, the planner does not know how the layout lets BRIN indexes skip, and may choose a sequential scan where a BRIN scan reads far fewer blocks."),
			 errhint("Add zorder to shared_preload_libraries and restart the server.")));
}
