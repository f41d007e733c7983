/*-------------------------------------------------------------------------
 *
 * recognize.h
 *	  Recognising a heap laid out by an external rewrite (recognize.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZORDER_RECOGNIZE_H
#define ZORDER_RECOGNIZE_H

#include "postgres.h"

#include "utils/relcache.h"

/*
 * Before an incremental zorder.optimize: if relid has a prepared boundary
 * set newer than its layout, or its heap was rewritten since its runs were
 * recorded, check in one scan whether the heap is in that set's key order
 * and, if so, record it as one sorted run of a layout with that set.
 */
extern void zorder_recognize_layout(Oid relid);

/*
 * Whether set (boundsets.h) was sampled for rel's key columns attnums, of
 * their types and collations; if not, *why says why, naming only columns
 * and types.  The set then takes rel's attribute numbers.
 */
struct LayoutSet;
extern bool zorder_set_fits(Relation rel, struct LayoutSet *set, int nkeys,
							const AttrNumber *attnums, char **why);

#endif							/* ZORDER_RECOGNIZE_H */
