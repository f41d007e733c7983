/*-------------------------------------------------------------------------
 *
 * zorder.c
 *	  Module entry point of the zorder extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "brin.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	zorder_brin_init();
	MarkGUCPrefixReserved("zorder");
}
