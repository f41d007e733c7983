# test/lib.sh: shared set-up for the demo, the tests and the benchmarks.
#
# Sourced, not run.  Installs what the project needs from Debian's packages,
# builds and installs the extension, and runs throwaway PostgreSQL clusters
# as the unprivileged "postgres" user (initdb refuses to run as root).

# PGBIN may name a relocated copy of the server (a private install for
# parallel work); Debian's is the default.
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PACKAGES="make gcc postgresql-15 postgresql-server-dev-15 postgresql-contrib
	libzstd-dev libipc-run-perl postgresql-15-cron"

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
	make -C "$dir" -s PG_CONFIG=$PGBIN/pg_config with_llvm=no \
		COPT="-Werror" >/dev/null || die "build failed"
	make -C "$dir" -s PG_CONFIG=$PGBIN/pg_config with_llvm=no install >/dev/null ||
		die "install failed"
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
