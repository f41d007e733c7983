#!/usr/bin/env bash
# test/pg16.sh SOURCE: build PostgreSQL 16 for the test suite.
#
# Debian has no PostgreSQL 16 package for any suite test/chroot.sh uses, so
# 16 is built from source: SOURCE is a PostgreSQL source tree of branch
# REL_16_STABLE (an unpacked release tarball, or `git archive REL_16_STABLE`
# of a clone of the public repository), or a git directory holding that
# branch.  Installs into $ZORDER_CACHE/pg16 (default /var/cache/zorder/pg16)
# with TAP support and the contrib modules the tests load; test/run.sh then
# runs the suite on 16 too (it says it skipped 16 while the build is
# missing).  Needs root for the build dependencies (Debian's packages).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/test/lib.sh"

src=${1:-}
[ -n "$src" ] || die "usage: test/pg16.sh SOURCE (a PostgreSQL 16 tree, or a git directory with REL_16_STABLE)"
prefix=$ZORDER_CACHE/pg16
deps="gcc make bison flex pkg-config libicu-dev liblz4-dev libzstd-dev
	zlib1g-dev libreadline-dev libipc-run-perl perl"

missing=""
for p in $deps; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

build=$(mktemp -d /tmp/zorder-pg16.XXXXXX)
trap 'rm -rf "$build"' EXIT
if [ -d "$src/.git" ] || [ -f "$src/HEAD" ]; then
	git --git-dir="$( [ -d "$src/.git" ] && echo "$src/.git" || echo "$src")" \
		archive REL_16_STABLE | tar -x -C "$build"
else
	cp -a "$src/." "$build/"
fi
grep -q 'PACKAGE_VERSION=.16' "$build/configure" || die "$src is not PostgreSQL 16"

cd "$build"
echo "== configuring PostgreSQL 16 into $prefix"
./configure --prefix="$prefix" --enable-tap-tests --with-icu --with-lz4 \
	--with-zstd --without-llvm >configure.log 2>&1 || { tail -n 30 configure.log; die "configure failed"; }
echo "== building (make -j2)"
make -s -j2 >build.log 2>&1 || { tail -n 30 build.log; die "build failed"; }
make -s install DESTDIR= prefix="$prefix" >/dev/null
for m in amcheck pageinspect test_decoding pgstattuple pg_visibility; do
	make -s -C "contrib/$m" install >/dev/null
done
# PGXS's TAP and isolation support come with the build tree's installs.
make -s -C src/test/isolation install >/dev/null
touch "$prefix/.zorder-complete"
echo "== PostgreSQL 16 in $prefix: $("$prefix/bin/postgres" --version)"
