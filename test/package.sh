#!/usr/bin/env bash
# test/package.sh: build the Debian package postgresql-NN-zorder with
# pg_buildext (debian/) for each PostgreSQL major, install it, create the
# extension in a fresh cluster and run a smoke test.
#
# Run as root on Debian 12.  15 is built and installed on this machine
# (dpkg -i: it replaces a `make install` of the extension); 17, 18 and 19 in
# their chroots (test/chroot.sh).  16 has no Debian server package to build
# against and is not packaged here.  PG_VERSIONS narrows the list ("15 18").
# ZORDER_PKG_ROOT=DIR unpacks the 15 package into DIR (a private copy of the
# server, see test/lib.sh) with dpkg-deb -x instead of installing it.
# Ends with "N passed, N failed" over the versions.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/test/lib.sh"
. "$repo/test/chroot.sh"

[ "$(id -u)" = 0 ] || die "run as root"
targets=${PG_VERSIONS:-15 17 18 19}
port=${ZORDER_TEST_PORT:-54330}
BUILD_PACKAGES="dpkg-dev debhelper postgresql-server-dev-all libzstd-dev"

# Inside a chroot (or here for 15): build, install, smoke test.  Called
# with --inside MAJOR SRC.
if [ "${1:-}" = --inside ]; then
	major=$2 src=$3
	export DEBIAN_FRONTEND=noninteractive
	missing=""
	for p in $BUILD_PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		echo "== installing:$missing"
		# 19 alone comes from experimental; the tools from the suite
		apt-get -o Acquire::Check-Valid-Until=false update -qq >/dev/null 2>&1
		apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
			die "apt-get install$missing failed"
	fi
	cd "$src" || exit 1
	# one package, for this major only
	export PG_SUPPORTED_VERSIONS=$major
	pg_buildext updatecontrol >/dev/null
	echo "== dpkg-buildpackage (PostgreSQL $major)"
	# -d: the build dependencies are installed above and by
	# test/chroot.sh; build-essential would add a C++ compiler for nothing
	dpkg-buildpackage -us -uc -b -d >"$src/../build.log" 2>&1 ||
		{ tail -n 40 "$src/../build.log"; die "dpkg-buildpackage failed"; }
	deb=$(ls "$src"/../postgresql-"$major"-zorder_*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || die "no postgresql-$major-zorder package was built"
	echo "== built $(basename "$deb"):"
	dpkg-deb -c "$deb" | awk '{ print "   " $6 }' | grep -v '/$'
	if [ -n "${ZORDER_PKG_ROOT:-}" ]; then
		dpkg-deb -x "$deb" "$ZORDER_PKG_ROOT" || die "dpkg-deb -x failed"
		PGBIN=$ZORDER_PKG_ROOT/usr/lib/postgresql/$major/bin
	else
		dpkg -i "$deb" >/dev/null || die "dpkg -i failed"
		dpkg-query -W "postgresql-$major-zorder"
		PGBIN=/usr/lib/postgresql/$major/bin
	fi
	cd / # the cluster's owner cannot enter the build directory
	dir=$(mktemp -d /tmp/zorder-pkg-cluster.XXXXXX)
	trap 'stop_cluster "$dir"; rm -rf "$dir"' EXIT
	start_cluster "$dir" "$port"
	echo "== smoke test"
	$PGBIN/psql -X -v ON_ERROR_STOP=1 -q -At <<'SQL' || die "smoke test failed"
CREATE EXTENSION zorder;
CREATE EXTENSION amcheck;
CREATE TABLE smoke (a int, b int, c text);
INSERT INTO smoke SELECT (g * 7919) % 10007, (g * 104729) % 1009, 'row ' || g
FROM generate_series(1, 20000) g;
CREATE TABLE smoke_before AS SELECT * FROM smoke;
SELECT zorder.cluster_by('smoke', 'a', 'b');
CALL zorder.optimize('smoke');
INSERT INTO smoke SELECT g, g, 'new ' || g FROM generate_series(1, 500) g;
INSERT INTO smoke_before SELECT g, g, 'new ' || g FROM generate_series(1, 500) g;
CALL zorder.optimize('smoke');
-- nothing lost, nothing changed, the heap sound
SELECT 'rows differ' FROM (
	(SELECT * FROM smoke EXCEPT ALL SELECT * FROM smoke_before)
	UNION ALL
	(SELECT * FROM smoke_before EXCEPT ALL SELECT * FROM smoke)) d LIMIT 1;
SELECT 'heap corrupt' FROM verify_heapam('smoke') LIMIT 1;
SELECT 'version ' || extversion FROM pg_extension WHERE extname = 'zorder';
SELECT 'keys ordered ' || (zorder.zorder_key(1, 2) < zorder.zorder_key(1, 3))::text;
SELECT 'postgres ' || current_setting('server_version_num');
SQL
	echo "== PostgreSQL $major: package built, installed and working"
	exit 0
fi

# One version number before anything is built: a package named for one
# version must not ship another (test/check_version.sh).
"$repo/test/check_version.sh" || die "the version numbers disagree"

pass=0 fail=0
for v in $targets; do
	t0=$(date +%s)
	echo "=== PostgreSQL $v"
	case $v in
		15)
			ensure_packages
			work=$(mktemp -d /tmp/zorder-pkg.XXXXXX)
			mkdir "$work/src"
			(cd "$repo" && cp -r Makefile zorder.control README.md src sql expected test debian "$work/src/")
			if (PG_VERSION=15 "$repo/test/package.sh" --inside 15 "$work/src"); then ok=1; else ok=0; fi
			rm -rf "$work"
			;;
		17 | 18 | 19)
			if ensure_chroot "$v"; then
				dir=$(chroot_dir "$v")
				rm -rf "$dir/tmp/zorder-pkg"
				mkdir -p "$dir/tmp/zorder-pkg/src"
				(cd "$repo" && cp -r Makefile zorder.control README.md src sql expected test debian "$dir/tmp/zorder-pkg/src/")
				if chroot_run "$v" env PG_VERSION="$v" ZORDER_TEST_PORT="$port" \
					bash /tmp/zorder-pkg/src/test/package.sh --inside "$v" /tmp/zorder-pkg/src; then
					ok=1
				else
					ok=0
				fi
				rm -rf "$dir/tmp/zorder-pkg"
			else
				ok=0
			fi
			;;
		*)
			echo "!! no package test for PostgreSQL $v"
			ok=0
			;;
	esac
	if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "!! PostgreSQL $v: package test failed"; fi
	echo "=== PostgreSQL $v: $(($(date +%s) - t0)) s"
done
echo
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
