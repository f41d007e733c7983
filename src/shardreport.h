/*-------------------------------------------------------------------------
 *
 * shardreport.h
 *	  zorder.clustering_information of a Citus distributed table, put
 *	  together from its shards (shardreport.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_SHARDREPORT_H
#define ZORDER_SHARDREPORT_H

#include "postgres.h"

#include "fmgr.h"

extern void zorder_shard_report(FunctionCallInfo fcinfo, int probes,
								int requested_ppr);
extern void zorder_shard_report_each(FunctionCallInfo fcinfo, int probes,
									 int requested_ppr);

#endif							/* ZORDER_SHARDREPORT_H */
