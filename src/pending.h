/*-------------------------------------------------------------------------
 *
 * pending.h
 *	  Records of the files a full rewrite is writing (pending.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_PENDING_H
#define ZORDER_PENDING_H


extern void zorder_pending_begin(void);
extern void zorder_pending_sync(void);
extern int	zorder_cleanup_orphans(void);
extern int	zorder_cleanup_orphans_wait(void);

#endif							/* ZORDER_PENDING_H */
