# test/cassert.sh: an assert-enabled PostgreSQL 15 for the test suite.
#
# Sourced after test/lib.sh.  cassert_pgbin builds, the first time only,
# Debian's own PostgreSQL 15 source with --enable-cassert --enable-debug
# (plus TAP support, so PostgreSQL::Test::Cluster, pg_regress and
# pg_isolation_regress come with it, and the contrib modules the tests load)
# and prints the bin directory of that build.  Assertions catch what a
# release build hides: lock and buffer-pin leaks, memory context misuse, bad
# tuple handling.
#
# The build is kept under $CASSERT_CACHE (default $ZORDER_CACHE), keyed by
# the source version and the configure options, so a later run only rebuilds
# the extension.  It needs root the first time (apt-get) and nothing but
# Debian's package mirror.

CASSERT_CACHE=${CASSERT_CACHE:-${ZORDER_CACHE:-/var/cache/zorder}}
CASSERT_CONFIGURE="--enable-cassert --enable-debug --enable-tap-tests
	--with-icu --with-lz4 --with-zstd --without-readline --without-llvm"
# Contrib modules the tests create; pg_cron comes from Debian's binary (see
# cassert_pg_cron).
CASSERT_CONTRIB="amcheck pageinspect test_decoding file_fdw pgstattuple
	pg_visibility pg_stat_statements"
CASSERT_BUILD_DEPS="dpkg-dev gcc make bison flex pkg-config libicu-dev
	liblz4-dev libzstd-dev zlib1g-dev libipc-run-perl"

# Make apt-get source work: a deb-src line for each Debian entry in the
# machine's deb822 or one-line sources, unless there already is one.
cassert_deb_src() {
	local f=/etc/apt/sources.list.d/zorder-deb-src.sources s
	grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list \
		/etc/apt/sources.list.d/ && return 0
	: >"$f.new"
	for s in /etc/apt/sources.list.d/*.sources; do
		[ -f "$s" ] || continue
		# keep the Debian stanzas (mirror and security), as deb-src
		awk -v RS= -v ORS='\n\n' '/URIs: *[^ \n]*debian/' "$s" |
			sed 's/^Types:.*/Types: deb-src/' >>"$f.new"
	done
	# one-line format
	[ -f /etc/apt/sources.list ] &&
		grep -E '^deb [^#]*debian' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
			>/etc/apt/sources.list.d/zorder-deb-src.list
	if [ -s "$f.new" ]; then mv "$f.new" "$f"; else rm -f "$f.new"; fi
	apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null || die "apt-get update failed"
}

cassert_build_deps() {
	local missing="" p
	for p in $CASSERT_BUILD_DEPS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "== installing for the assert-enabled build:$missing" >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
		$missing >/dev/null || die "apt-get install failed"
}

# Debian's postgresql-15-cron is built against the release server.  Its
# module magic block (major version, NAMEDATALEN, FUNC_MAX_ARGS, ...) does not
# depend on assertions, so the same binary loads into the assert-enabled
# server: copy it in.  (Checked by test/t/003_pg_cron.pl, which preloads it.)
# The same holds for postgresql-15-pg-qualstats (test/t/023_advisor.pl).
# Copied on every call, not only after a build, so that a cached build gets
# a module added to the list later.
cassert_pg_cron() {
	local prefix=$1 lib share m
	lib=$("$prefix/bin/pg_config" --pkglibdir)
	share=$("$prefix/bin/pg_config" --sharedir)/extension
	for m in pg_cron pg_qualstats; do
		[ -f /usr/lib/postgresql/15/lib/$m.so ] || continue
		cp /usr/lib/postgresql/15/lib/$m.so "$lib/"
		cp /usr/share/postgresql/15/extension/$m[-.]* "$share/"
	done
}

# Print the bin directory of the assert-enabled build, building it first if
# the cache has none for this source version and these options.
cassert_pgbin() {
	local version key prefix src log t0 jobs=${CASSERT_JOBS:-2}
	mkdir -p "$CASSERT_CACHE"
	(
		flock 9
		version=$(dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null)
		key=$(echo "2 $version $CASSERT_CONFIGURE $CASSERT_CONTRIB" | md5sum | cut -c1-12)
		prefix=$CASSERT_CACHE/pg15-cassert
		if [ "$(cat "$prefix/.stamp" 2>/dev/null)" = "$key" ]; then
			cassert_pg_cron "$prefix"
			exit 0
		fi
		[ "$(id -u)" = 0 ] || die "the assert-enabled build needs root the first time"
		t0=$(date +%s)
		echo "== building PostgreSQL 15 with assertions into $prefix (once)" >&2
		cassert_deb_src
		cassert_build_deps
		rm -rf "$CASSERT_CACHE/src" "$CASSERT_CACHE/stage" "$prefix"
		mkdir -p "$CASSERT_CACHE/src"
		log=$CASSERT_CACHE/build.log
		# the version of the installed release server, so both builds match,
		# else the newest the mirror serves (a mirror may list sources it
		# does not have)
		(cd "$CASSERT_CACHE/src" &&
			for v in $version $(apt-cache showsrc postgresql-15 |
				awk '/^Version:/ { print $2 }' | sort -rV); do
				apt-get source -qq "postgresql-15=$v" && exit 0
				rm -rf ./*
			done; exit 1) >"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "apt-get source postgresql-15 failed"; }
		src=$(ls -d "$CASSERT_CACHE"/src/postgresql-15-*/ | head -n 1)
		(
			set -e
			cd "$src"
			# Debian's patches put the modules in /usr/lib/postgresql/15/lib
			# unless libdir names postgresql: keep everything under $prefix
			./configure --prefix="$prefix" --libdir="$prefix/lib/postgresql" \
				$CASSERT_CONFIGURE CFLAGS="-O1 -g -fno-omit-frame-pointer"
			make -j"$jobs"
			for m in $CASSERT_CONTRIB; do
				make -j"$jobs" -C "contrib/$m"
			done
			# install into a staging directory first, and refuse anything
			# that would land outside $prefix (the release server's files)
			make install DESTDIR="$CASSERT_CACHE/stage"
			for m in $CASSERT_CONTRIB; do
				make -C "contrib/$m" install DESTDIR="$CASSERT_CACHE/stage"
			done
			outside=$(find "$CASSERT_CACHE/stage" ! -type d \
				! -path "$CASSERT_CACHE/stage$prefix/*" | head)
			if [ -n "$outside" ]; then
				echo "install would write outside $prefix: $outside"
				exit 1
			fi
			mv "$CASSERT_CACHE/stage$prefix" "$prefix"
			rm -rf "$CASSERT_CACHE/stage"
		) >>"$log" 2>&1 || { tail -n 40 "$log" >&2; die "assert-enabled build failed (see $log)"; }
		cassert_pg_cron "$prefix"
		# the build tree is not needed any more
		rm -rf "$CASSERT_CACHE/src"
		echo "$key" >"$prefix/.stamp"
		echo "== assert-enabled build took $(($(date +%s) - t0)) s" >&2
	) 9>"$CASSERT_CACHE/.lock" || return 1
	echo "$CASSERT_CACHE/pg15-cassert/bin"
}
