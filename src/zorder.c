/*-------------------------------------------------------------------------
 *
 * zorder.c
 *	  Module entry point of the zorder extension: its settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

#include "brin.h"
#include "pg_compat.h"
#include "zorder.h"

ZORDER_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("zorder.max_batch_size",
							"Most rows an incremental zorder.optimize moves in one transaction.",
							"Outside a transaction block, each batch commits on its own, so that "
							"writers wait at most one batch.",
							&zorder_max_batch_size,
							100000, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("zorder.merge_threshold",
							 "Share of a table's rows outside its main sorted run above which an "
							 "incremental zorder.optimize merges them into it (1: never).",
							 "A merge moves the whole main run, one key slice per batch; lower "
							 "values keep skipping closer to a full optimize and move more rows.",
							 &zorder_merge_threshold,
							 1.0, 0.0, 1.0,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("zorder.placement",
							 "Incremental zorder.optimize places new rows into the ranges of the "
							 "main sorted run that hold their keys.",
							 "Off: new rows make sorted runs of their own (cubes), each spanning "
							 "the whole key space.",
							 &zorder_placement,
							 true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	zorder_brin_init();
	zorder_catalog_init();
	MarkGUCPrefixReserved("zorder");
}
