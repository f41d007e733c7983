/*-------------------------------------------------------------------------
 *
 * estimate.h
 *	  What a zorder.optimize call would do, told before it runs
 *	  (estimate.c): for zorder.estimate, and for optimize's own choice of
 *	  a full rewrite when zorder's room is used up.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_ESTIMATE_H
#define ZORDER_ESTIMATE_H

#include "postgres.h"

#include "utils/relcache.h"

#include "room.h"

extern bool zorder_room_rewrite_due(Relation rel, ZRoomSpent *spent,
									double *lock_seconds);

#endif							/* ZORDER_ESTIMATE_H */
