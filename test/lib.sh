# test/lib.sh: shared set-up for the demo, the tests and the benchmarks.
#
# Sourced, not run.  Installs what the project needs from Debian's packages,
# builds and installs the extension, and runs throwaway PostgreSQL clusters
# as the unprivileged "postgres" user (initdb refuses to run as root).

# PG_VERSION picks the PostgreSQL major (15, the system's, by default): 16
# from a source build (with TAP support) installed under $ZORDER_CACHE/pg16,
# 17 to 19 in Debian chroots (test/chroot.sh).  PGBIN may name a relocated
# copy of the server instead (a private install for parallel work).
PG_VERSION=${PG_VERSION:-15}
ZORDER_CACHE=${ZORDER_CACHE:-/var/cache/zorder}
if [ -z "${PGBIN:-}" ]; then
	case $PG_VERSION in
		16) PGBIN=$ZORDER_CACHE/pg16/bin ;;
		*) PGBIN=/usr/lib/postgresql/$PG_VERSION/bin ;;
	esac
fi
PACKAGES="make gcc libzstd-dev libipc-run-perl"
# Debian's server packages, where the server is Debian's
case $PGBIN in
	/usr/lib/postgresql/*)
		PACKAGES="$PACKAGES postgresql-$PG_VERSION postgresql-server-dev-$PG_VERSION"
		[ "$PG_VERSION" = 15 ] &&
			PACKAGES="$PACKAGES postgresql-contrib postgresql-15-cron postgresql-15-repack postgresql-15-pg-qualstats"
		;;
esac

die() { echo "error: $*" >&2; exit 1; }

# Install the Debian packages that are missing (needs root).
ensure_packages() {
	local missing="" p
	for p in $PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages:$missing (run as root to install them)"
	echo "== installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
		die "apt-get install failed"
}

# Build and install the extension from directory $1 (needs root to install).
build_install() {
	local dir=$1
	echo "== building"
	# objects left by a build for another major must not be linked in
	make -C "$dir" -s PG_CONFIG=$PGBIN/pg_config clean >/dev/null 2>&1
	make -C "$dir" -s PG_CONFIG=$PGBIN/pg_config with_llvm=no \
		COPT="-Werror" >/dev/null || die "build failed"
	# scripts and control files of another version of the tree must not
	# stay beside ours (a zorder--0.1.control of 0.2 with 0.1's script)
	rm -f "$($PGBIN/pg_config --sharedir)"/extension/zorder.control \
		"$($PGBIN/pg_config --sharedir)"/extension/zorder--*
	make -C "$dir" -s PG_CONFIG=$PGBIN/pg_config with_llvm=no install >/dev/null ||
		die "install failed"
}

# run_elsewhere SCRIPT [ARGS]: when PG_VERSION is a major this machine does
# not have (17, 18, 19), run SCRIPT (a path below the repository) inside that
# major's chroot on a copy of the tree, with the same DEMO_*, BENCH_* and
# ZORDER_* settings and the benchmarks' (ROWS, REPS, ROUNDS, MWM, KEEP), and
# exit with its status.  Returns when the script
# should run here.
run_elsewhere() {
	local script=$1 dir copy
	shift
	[ -x "$PGBIN/pg_config" ] && return 0
	[ -n "${ZORDER_IN_CHROOT:-}" ] && die "no PostgreSQL $PG_VERSION in $PGBIN"
	. "$repo/test/chroot.sh"
	chroot_suite "$PG_VERSION" >/dev/null ||
		die "PostgreSQL $PG_VERSION is not on this machine (15: Debian's; 16: a build in $ZORDER_CACHE/pg16; 17 to 19: chroots)"
	[ "$(id -u)" = 0 ] || die "PostgreSQL $PG_VERSION runs in a chroot: run as root"
	ensure_chroot "$PG_VERSION" || die "no chroot for PostgreSQL $PG_VERSION"
	dir=$(chroot_dir "$PG_VERSION")
	copy=/tmp/zorder-$(basename "$script" .sh)
	rm -rf "$dir$copy"
	mkdir -p "$dir$copy"
	(cd "$repo" && cp -r Makefile zorder.control src sql expected test "$dir$copy/")
	local vars=() v
	while IFS= read -r v; do
		vars+=("$v=${!v}")
	done < <(compgen -e | grep -E '^(DEMO_|BENCH_|ZORDER_|ROWS$|REPS|ROUNDS$|MWM$|KEEP$)' |
		grep -v '^ZORDER_CACHE$')
	echo "== PostgreSQL $PG_VERSION: running $script in $dir"
	chroot_run "$PG_VERSION" env "${vars[@]}" PG_VERSION="$PG_VERSION" \
		ZORDER_IN_CHROOT=1 bash "$copy/$script" "$@"
	exit $?
}

# Run a command as the cluster's owner.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# start_cluster DIR PORT [extra postgresql.conf lines]: a fresh cluster in DIR
# listening only on a Unix socket in DIR.
start_cluster() {
	local dir=$1 port=$2 conf=${3:-}
	stop_cluster "$dir"
	rm -rf "$dir"
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	as_pg $PGBIN/initdb -D "$dir/data" -E UTF8 --locale=C.UTF-8 -A trust \
		-U postgres >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log"; die "initdb failed"; }
	cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
port = $port
unix_socket_directories = '$dir'
fsync = off
log_min_messages = warning
# SQLSTATEs in the log, for test/checklogs.sh (an XX000 must be visible)
log_line_prefix = '%m [%p] %e %q%a '
$conf
CONF
	as_pg $PGBIN/pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null ||
		{ cat "$dir/server.log"; die "server did not start"; }
	export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
}

stop_cluster() {
	local dir=$1
	[ -f "$dir/data/postmaster.pid" ] &&
		as_pg $PGBIN/pg_ctl -D "$dir/data" -m fast -w stop >/dev/null 2>&1
	return 0
}
