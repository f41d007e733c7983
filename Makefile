# Makefile for the zorder extension (PGXS)

EXTENSION = zorder
EXTVERSION = 0.8
MODULE_big = zorder
# The install script of each version, and the update scripts between them.
# zorder--0.1.control: what 0.1's control file said that later ones do not.
DATA = sql/zorder--$(EXTVERSION).sql sql/zorder--0.1.sql sql/zorder--0.2.sql \
	sql/zorder--0.3.sql sql/zorder--0.4.sql sql/zorder--0.5.sql sql/zorder--0.6.sql sql/zorder--0.7.sql \
	sql/zorder--0.1--0.2.sql sql/zorder--0.2--0.3.sql sql/zorder--0.3--0.4.sql \
	sql/zorder--0.4--0.5.sql sql/zorder--0.5--0.6.sql sql/zorder--0.6--0.7.sql sql/zorder--0.7--0.8.sql \
	sql/zorder--0.1.control
PGFILEDESC = "zorder - Z-order and Hilbert clustering of heap tables"

# Pure algorithms (no PostgreSQL headers) and the modules that use them.
PURE_OBJS = src/keyenc.o src/radix.o src/placement.o src/rangemodel.o src/advise.o \
	src/costmodel.o
OBJS = $(PURE_OBJS) src/zorder.o src/keyfuncs.o src/catalog.o src/citus.o src/shards.o src/access.o src/tables.o src/layout.o \
	src/heappage.o src/quantile.o src/sorter.o src/optimize.o \
	src/runs.o src/collect.o src/regions.o src/mover.o src/batch.o src/place.o \
	src/incremental.o src/cubes.o src/arrivals.o src/room.o src/fillfactor.o src/pending.o \
	src/brin.o src/skipping.o src/boundsets.o src/layoutkey.o src/recognize.o \
	src/preload.o src/planner.o src/subxact.o src/workload.o src/advisor.o \
	src/report.o src/estimate.o src/autokeys.o src/shardreport.o src/shardsets.o src/tableset.o

# The version the module reports (PG_MODULE_MAGIC_EXT, 18 and later).
PG_CPPFLAGS = -I$(srcdir)/src -DZORDER_VERSION='"$(EXTVERSION)"'
# -Wall comes from PostgreSQL's own CFLAGS.  Of -Wextra, unused-parameter is
# off: PostgreSQL's headers (ilist.h, bufpage.h, fmgr.h) and its callback
# signatures raise it.
PG_CFLAGS = -Wextra -Wno-unused-parameter
SHLIB_LINK = -lzstd

REGRESS = keys optimize errors decoding brin incremental incremental_partitions incremental_placement merge security rls hardening bounds names fuzz_found layout attack planner room report estimate
REGRESS_OPTS = --load-extension=zorder --load-extension=amcheck
ISOLATION = full_locks full_mvcc full_ssi incremental_locks incremental_ssi merge_locks prepared_locks names
ISOLATION_OPTS = --inputdir=test/isolation --load-extension=zorder --load-extension=amcheck
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS does not track headers: every object depends on all of ours.
$(OBJS): $(wildcard $(srcdir)/src/*.h)

# Fast tests of the pure algorithms: plain C, no server.
UNIT_TESTS = test/unit/test_keyenc test/unit/test_radix test/unit/test_placement \
	test/unit/test_rangemodel test/unit/test_advise test/unit/test_costmodel
UNIT_CFLAGS = -O2 -g -Wall -Wextra -Werror -std=c99 -I$(srcdir)/src

test/unit/test_keyenc: test/unit/test_keyenc.c src/keyenc.c src/keyenc.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_keyenc.c src/keyenc.c -lm

test/unit/test_radix: test/unit/test_radix.c src/radix.c src/radix.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_radix.c src/radix.c

test/unit/test_placement: test/unit/test_placement.c src/placement.c src/placement.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_placement.c src/placement.c -lm

test/unit/test_rangemodel: test/unit/test_rangemodel.c src/rangemodel.c src/rangemodel.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_rangemodel.c src/rangemodel.c -lm

test/unit/test_advise: test/unit/test_advise.c src/advise.c src/advise.h src/rangemodel.c src/rangemodel.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_advise.c src/advise.c src/rangemodel.c -lm

test/unit/test_costmodel: test/unit/test_costmodel.c src/costmodel.c src/costmodel.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_costmodel.c src/costmodel.c -lm

.PHONY: unittest layercheck installcheck-regress installcheck-isolation installcheck-tap
unittest: $(UNIT_TESTS)
	@status=0; for t in $(UNIT_TESTS); do ./$$t || status=1; done; exit $$status

# No cycle between the modules of src/, by their includes and by the
# symbols their objects use (test/layers.pl).
layercheck: $(OBJS)
	perl $(srcdir)/test/layers.pl $(srcdir)/src

installcheck-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)

installcheck-isolation:
ifneq ($(strip $(ISOLATION)),)
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)
endif

installcheck-tap:
	$(prove_installcheck)

EXTRA_CLEAN = $(UNIT_TESTS) output_iso
