/*-------------------------------------------------------------------------
 *
 * arrivals.h
 *	  How a table's latest rows arrived, read from its heap order
 *	  (arrivals.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_ARRIVALS_H
#define ZORDER_ARRIVALS_H

#include "postgres.h"

#include "utils/relcache.h"

#include "placement.h"

extern zp_arrivals zorder_heap_arrivals(Relation rel);

#endif							/* ZORDER_ARRIVALS_H */
