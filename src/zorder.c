/*-------------------------------------------------------------------------
 *
 * zorder.c
 *	  Module entry point of the zorder extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
}
