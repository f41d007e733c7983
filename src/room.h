/*-------------------------------------------------------------------------
 *
 * room.h
 *	  The room zorder keeps free on a table's pages for placement, when the
 *	  table's owner set no fillfactor (room.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_ROOM_H
#define ZORDER_ROOM_H

#include "postgres.h"

#include "utils/relcache.h"

#include "layout.h"

/* a first full rewrite, with no appends observed yet and none to read */
#define ZORDER_ROOM_DEFAULT		90
/*
 * A first full rewrite of a table whose latest rows came spread over the
 * keys: room for ZORDER_ROOM_HORIZON calls of 1 % within the 70 % of it
 * that filled before ranges split at 1 M rows with 10 % room
 * (test/bench/upkeep.sh, as rows fall unevenly on the ranges; more of it
 * at larger tables), 100 / (1 + 0.2 / 0.7) = 78, and at
 * least ZORDER_ROOM_LEAST: the fillfactor that met every goal of its 20
 * rounds when set by hand.
 */
#define ZORDER_ROOM_FIRST_SPREAD	75
/* the least fillfactor zorder chooses: the size goal is 1.4x */
#define ZORDER_ROOM_LEAST		75
/* incremental calls the room of spread appends is sized for */
#define ZORDER_ROOM_HORIZON		20

extern PGDLLIMPORT int zorder_auto_rewrite_limit;

/* What zorder_room_spent found */
typedef struct ZRoomSpent
{
	int			written_fillfactor; /* the pages' when laid out */
	double		room;			/* the growth that fillfactor leaves room for */
	double		growth;			/* the growth since */
	double		split_cost;		/* bytes splits wrote since, beyond placement */
	double		rewrite_cost;	/* bytes a full rewrite would write */
} ZRoomSpent;

extern void zorder_room_init(void);
extern int	zorder_room_choose(const ZRoomHistory *h, char **reason);
extern bool zorder_room_spent(const ZRoomHistory *h, ZRoomSpent *s);
extern char *zorder_room_spent_reason(const ZRoomSpent *s);
extern bool zorder_room_used_up(Relation rel, ZRoomSpent *s);
extern bool zorder_room_spread(int64 ranges_main, int64 ranges_reached,
							   int64 newcomers);
extern void zorder_room_before_full(Relation rel, ZRoomRecord *rec);
extern int	zorder_room_full_fillfactor(Relation rel, bool own_history);
extern int	zorder_room_fillfactor_chosen(Oid relid);
extern int	zorder_room_given_fillfactor(Oid relid);
extern void zorder_room_give_fillfactor(Oid relid, int ff);
extern void zorder_room_take_fillfactor(Oid relid, int ff);
extern double zorder_room_call_cost(int64 wal_bytes, int64 pages_written);
extern void zorder_room_after_call(Relation rel, int64 arrived, int64 moved,
								   double cost, int64 main_rows,
								   const char *appends, ZRoomRecord *rec);

#endif							/* ZORDER_ROOM_H */
