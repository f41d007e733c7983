/*-------------------------------------------------------------------------
 *
 * zorder.c
 *	  Module entry point of the zorder extension: each module registers
 *	  its own settings and hooks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

#include "autokeys.h"
#include "batch.h"
#include "brin.h"
#include "incremental.h"
#include "pg_compat.h"
#include "place.h"
#include "planner.h"
#include "preload.h"
#include "report.h"
#include "room.h"
#include "tables.h"
#include "zorder.h"


ZORDER_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	zorder_preload_init();
	zorder_batch_init();
	zorder_incremental_init();
	zorder_place_init();
	zorder_brin_init();
	zorder_tables_init();
	zorder_planner_init();
	zorder_report_init();
	zorder_autokeys_init();
	zorder_room_init();
	MarkGUCPrefixReserved("zorder");
}
