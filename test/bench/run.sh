#!/usr/bin/env bash
# test/bench/run.sh [BENCH...]: run benchmarks on a throwaway cluster.
#
# Run as root on Debian 12, like the tests: installs the packages it needs,
# builds and installs the extension, starts a cluster in ./tmp_bench as the
# "postgres" user, runs each named benchmark (default: keys rewrite
# skipping incremental layout_key online_layout estimate restore) and stops the
# cluster.  Figures are ratios measured side by side in one run; on a
# shared machine run it more than once before believing a figure.
# PG_VERSION picks the major, as for test/demo.sh.  BENCH_PORT (default
# 54322) and BENCH_DIR (the cluster's directory, default ./tmp_bench;
# removed and made afresh) let two runs share a machine.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/test/lib.sh"

benches=${*:-keys rewrite skipping incremental layout_key online_layout estimate restore}

# PG_VERSION=18 ./test/bench/run.sh: the benchmarks on 18, in its chroot
run_elsewhere test/bench/run.sh "$@"
ensure_packages
build_install "$repo"
if [ -n "${BENCH_DIR:-}" ]; then
	dir=$BENCH_DIR
else
	dir=$repo/tmp_bench
	as_pg test -x "$repo" 2>/dev/null || dir=/tmp/zorder-bench
fi
trap 'stop_cluster "$dir"' EXIT
start_cluster "$dir" "${BENCH_PORT:-54322}" "
shared_preload_libraries = 'zorder'
shared_buffers = 1GB
max_wal_size = 8GB
checkpoint_timeout = 30min
max_parallel_maintenance_workers = 0
jit = off
wal_level = logical
"
for b in $benches; do
	echo "== $b"
	"$repo/test/bench/$b.sh" || die "benchmark $b failed"
done
