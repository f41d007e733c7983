/*-------------------------------------------------------------------------
 *
 * placement.h
 *	  Where an incremental call puts a newcomer: the pure decisions.
 *
 * After a full optimize, every BRIN range of the main run holds a
 * contiguous stretch of the curve, from its lowest key up to the next
 * range's.  A newcomer whose key falls in that stretch lies inside the
 * range's box, so it goes there while the range has room; a range without
 * room for its newcomers gives the rows beyond a cut in its keys to a
 * neighbour or to a new range, as a B-tree leaf shares with a sibling or
 * splits.  This file decides which range, where to cut, how many ways a
 * range splits when no cut will do, and the budget; the moves themselves
 * are in place.c.
 *
 * Pure C: nothing here includes PostgreSQL headers, so the decisions can
 * be tested alone (test/unit/test_placement.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_PLACEMENT_H
#define ZORDER_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The range whose key interval holds key, given the ranges' lowest keys in
 * ascending order: the last one whose lowest key is at most key, or the
 * first one if key is below them all (the first range's interval reaches
 * down to the lowest key).  n must be at least 1.
 */
extern size_t zp_find_range(const uint64_t *key_lo, size_t n, uint64_t key);

/*
 * True if rows of need bytes (line pointers included) fit in room bytes
 * spread over npages pages, the largest row being maxrow bytes: each page
 * may waste up to one row's worth at its end.
 */
extern bool zp_fits(uint64_t room, uint64_t need, uint32_t npages,
					uint32_t maxrow);

/*
 * How many ranges rows of total bytes fill, none above fill_pct percent of
 * range_bytes: at least one.
 */
extern uint32_t zp_fill_ways(uint64_t total, uint64_t range_bytes,
							 int fill_pct);

/*
 * How many ranges a split writes rows of total bytes into: at least two,
 * and enough that none is filled above fill_pct percent of range_bytes, so
 * that each has room again for newcomers.
 */
extern uint32_t zp_split_ways(uint64_t total, uint64_t range_bytes,
							  int fill_pct);

/*
 * Where the pieces of a split start: rows [start[i], start[i + 1]) of the n
 * rows, sorted by key, go to piece i of ways (start has ways + 1 entries).
 * Pieces hold equal shares of the rows' bytes, len[j] being row j's.
 */
extern void zp_split_points(const uint32_t *len, size_t n, uint32_t ways,
							size_t *start);

/*
 * A split in two of rows of total bytes: the percent of the bytes its
 * first piece takes, tilt (zp_split_tilt's) as far as neither piece then
 * fills more than fill_pct percent of range_bytes; and where the second
 * piece starts (start as zp_split_points's, three entries).
 */
extern uint32_t zp_split_share(uint64_t total, uint64_t range_bytes,
							   int fill_pct, uint32_t tilt);
extern void zp_split_two(const uint32_t *len, size_t n, uint32_t first_pct,
						 size_t *start);

/*
 * Where a full range shares its room with a neighbour (the next one in key
 * order) or with a new range: of the range's rows and newcomers, n of them
 * sorted by key, rows [cut, n) go to the other range, whose keys then start
 * at key[cut], and the rest stays.  room and nroom are the free bytes of
 * the range and of the other now, less the waste zp_fits allows (so they
 * may be negative); len[j] is row j's bytes, its line pointer of lp bytes
 * included; is_new[j] says whether row j is a newcomer, which takes room
 * wherever it goes, where one of the range's own rows frees its bytes but
 * not its line pointer when it leaves, once its page is pruned.  Both
 * sides must have room once pruned, and the newcomers that stay must fit
 * the range's room before that too.  Of such cuts, the one that leaves
 * the two the most even room, moving at least one row and never parting
 * equal keys.  With at_edge (a split in two), the cut below the lowest
 * newcomer if no more than half the rows above it are the range's own and
 * the other side takes them all: rows that arrive in key order then move
 * once, and none of the range's older rows with them.  Returns n if there
 * is no cut.
 */
extern size_t zp_shift_cut(const uint64_t *key, const uint32_t *len,
						   const bool *is_new, size_t n, int64_t room,
						   int64_t nroom, uint32_t lp, bool at_edge);

/*
 * The share of the room (30 to 70 percent) a range whose lowest key is key
 * keeps when it splits in two.
 */
extern uint32_t zp_split_tilt(uint64_t key);

/*
 * zp_shift_cut, but the cut leaves the range about stay_pct percent of the
 * two sides' room rather than half (50: zp_shift_cut), and the newcomers
 * that stay must fit room_now before the prune rather than room: INT64_MAX
 * when they can wait for it (the caller commits, prunes and places them
 * then), so that a full range whose newcomers lie all over its keys moves
 * only the rows beyond the cut, not every row.
 */
extern size_t zp_tilted_cut(const uint64_t *key, const uint32_t *len,
							const bool *is_new, size_t n, int64_t room,
							int64_t nroom, int64_t room_now, uint32_t lp,
							bool at_edge, uint32_t stay_pct);

/*
 * The split budget of a call, in rows: splits may move at most this many
 * rows besides the moving ones the call places (the rows that arrived
 * since the last call, and rows earlier calls left unmoved), so that no
 * call moves more than five times what arrived, or, when little arrived,
 * a bounded constant (a few ranges' worth, so that a range can split at
 * all).
 */
extern uint64_t zp_split_budget(uint64_t arrived, uint64_t moving,
								uint64_t range_rows);

/*
 * Splits ahead of need.  The n ranges that the same newcomers as this
 * call's would fill beyond their room next call, the most urgent first,
 * would cost cost[i] rows each to split then.  Returns how many of them to
 * split now, the first ones, so that those left cost at most next_budget
 * (the budget a call like this one gets): ranges that fill at the same
 * pace would otherwise all split in one call, more than it may move, and
 * the newcomers it cannot place wait outside the sorted run.
 */
extern size_t zp_split_ahead(const uint64_t *cost, size_t n,
							 uint64_t next_budget);

/*
 * Time-ordered keys (regions.c).  A key column is taken for time-ordered
 * when more than half of the seen newcomers of a call lie beyond every
 * value the layout had on it (beyond of them).
 */
extern bool zp_time_ordered(uint64_t beyond, uint64_t seen);

/*
 * How a table's latest rows arrived, by one key column, before any call
 * has seen appends (arrivals.c): ranks are positions in [0, 1] among the
 * values of the rows before them.  zp_rank_span sorts ranks and gives
 * the distance from their 10th to their 90th percentile (0 for none).
 * zp_key_arrivals: spread when the latest rows' span is at least half that
 * of as many earlier rows, as zorder_room_spread asks of a call's
 * newcomers over the ranges; crowded below (a time-ordered key puts them
 * all above, a band in a sliver); unknown from fewer than ZP_ARRIVALS_ROWS
 * rows on either side, or when the earlier rows themselves span less than
 * ZP_ARRIVALS_LEAST_SPAN (a key of few values tells nothing).
 */
typedef enum zp_arrivals
{
	ZP_ARRIVALS_UNKNOWN,
	ZP_ARRIVALS_SPREAD,
	ZP_ARRIVALS_CROWDED
} zp_arrivals;

#define ZP_ARRIVALS_ROWS		100
#define ZP_ARRIVALS_LEAST_SPAN	0.2

extern double zp_rank_span(double *ranks, size_t n);
extern zp_arrivals zp_key_arrivals(double tail_span, size_t ntail,
								   double base_span, size_t nbase);

/*
 * The bands of a new region (keyenc.h's zk_region_row_key) for a main run
 * of nranges ranges and nkeys key columns, when a call brings rows rows
 * into it and BRIN ranges are ppr pages: about 1.5 times
 * nranges^((nkeys - 1) / nkeys), which is about what a point filter on one
 * key column reads of a full optimize.  A filter on the region's column
 * reads a range or two per band; one on another column the ranges of its
 * band, which grow with the region.  But no more than rows / ppr: a band's
 * first range must get a row for each of its pages, or its extent would
 * end before its BRIN range does and the rest of that range would stay
 * empty.  Once the table has grown so that a new region would get twice
 * the bands, the next region opens (regions.c).  1 with one key column
 * (the region is in the column's order), at most ZP_MAX_BANDS.
 */
#define ZP_MAX_BANDS	(1 << 20)
extern uint32_t zp_region_bands(uint64_t nranges, int nkeys, uint64_t rows,
								uint32_t ppr);

#endif							/* ZORDER_PLACEMENT_H */
