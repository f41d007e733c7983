# test/chroot.sh: Debian chroots that carry the PostgreSQL majors Debian 12
# does not have (17 from trixie, 18 from sid, 19 from sid + experimental).
#
# Sourced, not run (test/versions.sh, test/run.sh and test/package.sh use it);
# needs root.  Each chroot is made once with `debootstrap --variant=minbase`
# from the mirror the machine's apt sources name and cached under
# $ZORDER_CACHE; a marker file written as the very last step says it is
# complete, so a half-built chroot (an interrupted run) is thrown away and made
# again.  Later runs only mount /proc and /dev/shm and copy the tree in.

ZORDER_CACHE=${ZORDER_CACHE:-/var/cache/zorder}

# The Debian suite that carries PostgreSQL major $1.
chroot_suite() {
	case $1 in
		17) echo trixie ;;
		18) echo sid ;;
		19) echo sid ;;
		*) return 1 ;;
	esac
}

chroot_dir() { echo "$ZORDER_CACHE/chroot-$1"; }

# The first deb.debian.org-style URI of the machine's apt sources (deb822 or
# one-line format); Debian's own mirror if none is found.
chroot_mirror() {
	local m
	m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/ && $2 ~ /\/debian\/?$/ { print $2; exit }')
	[ -z "$m" ] && m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }')
	echo "${m:-http://deb.debian.org/debian}"
}

# Mount what PostgreSQL and postgresql-common need; idempotent.
chroot_mount() {
	local dir=$1
	mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
	mkdir -p "$dir/dev/shm"
	mountpoint -q "$dir/dev/shm" || mount -t tmpfs -o mode=1777 tmpfs "$dir/dev/shm"
	# debootstrap makes the device nodes itself where it may; where it may
	# not (some containers), bind the few a build and a server use.
	local d
	for d in null zero random urandom; do
		[ -c "$dir/dev/$d" ] && continue
		rm -f "$dir/dev/$d"
		touch "$dir/dev/$d"
		mount --bind "/dev/$d" "$dir/dev/$d"
	done
}

chroot_umount() {
	local dir=$1 m
	# Deepest first.
	for m in $(findmnt -rn -o TARGET | grep "^$dir/" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
}

# Run a command inside the chroot of major $1 as root.
chroot_run() {
	local dir
	dir=$(chroot_dir "$1"); shift
	chroot_mount "$dir"
	chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
}

# Extensions the TAP tests use, installed in a chroot where Debian packages
# them for its major (the tests that need one skip, saying so, where it is
# missing): pg_cron (003), pg_repack (010), pg_qualstats (023, the key
# advisor).
chroot_extra_packages() {
	echo "postgresql-$1-cron postgresql-$1-repack postgresql-$1-pg-qualstats"
}

# Install into a finished chroot the extra packages added to the list since
# it was made, where Debian has them (19 from experimental).  Not fatal: a
# package that fails to install leaves its tests to skip.
chroot_extras() {
	local major=$1 p missing="" target=()
	[ "$major" = 19 ] && target=(-t experimental)
	for p in $(chroot_extra_packages "$major"); do
		chroot_run "$major" dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "ok installed" && continue
		missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	chroot_run "$major" apt-get update -qq || return 0
	for p in $missing; do
		chroot_run "$major" apt-cache show "$p" >/dev/null 2>&1 || continue
		chroot_run "$major" apt-get install -y -q "${target[@]}" "$p" || true
	done
	chroot_run "$major" apt-get clean
}

# ensure_chroot MAJOR: a complete chroot with PostgreSQL MAJOR and what the
# tests need; made (or remade) only when its marker is missing.  Safe to call
# from parallel runs: one makes it, the others wait on the lock.
ensure_chroot() {
	local major=$1 suite dir mirror log
	suite=$(chroot_suite "$major") || { echo "no chroot for PostgreSQL $major" >&2; return 1; }
	dir=$(chroot_dir "$major")
	mkdir -p "$ZORDER_CACHE"
	log="$ZORDER_CACHE/chroot-$major.log"
	(
		flock 9
		if [ -f "$dir/.zorder-complete" ]; then
			chroot_extras "$major" >>"$log" 2>&1
			exit 0
		fi
		set -e
		echo "== making the PostgreSQL $major chroot ($suite) in $dir (log: $log)"
		if ! command -v debootstrap >/dev/null; then
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
				--no-install-recommends debootstrap >/dev/null 2>&1 ||
				{ apt-get update -qq >/dev/null 2>&1 &&
					DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
						--no-install-recommends debootstrap >/dev/null; }
		fi
		chroot_umount "$dir"
		rm -rf --one-file-system "$dir"
		mirror=$(chroot_mirror)
		debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$log" 2>&1
		cp /etc/resolv.conf "$dir/etc/resolv.conf"
		# The mirror may be a dated snapshot whose Release files expired.
		echo 'Acquire::Check-Valid-Until "false";' >"$dir/etc/apt/apt.conf.d/99zorder-snapshot"
		echo 'APT::Install-Recommends "false";' >>"$dir/etc/apt/apt.conf.d/99zorder-snapshot"
		if [ "$major" = 19 ]; then
			echo "deb $mirror experimental main" >"$dir/etc/apt/sources.list.d/experimental.list"
		fi
		# No service starts inside, and no default cluster: the tests
		# make their own.
		printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
		chmod +x "$dir/usr/sbin/policy-rc.d"
		mkdir -p "$dir/etc/postgresql-common"
		echo "create_main_cluster = false" >"$dir/etc/postgresql-common/createcluster.conf"
		chroot_run "$major" apt-get update -qq >>"$log" 2>&1
		# The tools first, from the suite itself: 19 alone comes from
		# experimental, whose newer perl or libc the tools must not pull.
		chroot_run "$major" apt-get install -y -q make gcc libc6-dev libzstd-dev \
			libipc-run-perl perl >>"$log" 2>&1
		local target=() pkgs p
		[ "$major" = 19 ] && target=(-t experimental)
		pkgs="postgresql-$major postgresql-server-dev-$major"
		# Extensions the TAP tests use, where Debian packages them for
		# this major.
		for p in $(chroot_extra_packages "$major"); do
			chroot_run "$major" apt-cache show "$p" >/dev/null 2>&1 && pkgs="$pkgs $p"
		done
		chroot_run "$major" apt-get install -y -q "${target[@]}" $pkgs >>"$log" 2>&1
		chroot_run "$major" apt-get clean
		chroot_run "$major" dpkg-query -W "postgresql-$major" "postgresql-$major-*" >>"$log" 2>&1 || true
		touch "$dir/.zorder-complete"
	) 9>"$ZORDER_CACHE/chroot-$major.lock"
	local rc=$?
	[ $rc = 0 ] || { echo "!! making the PostgreSQL $major chroot failed; tail of $log:" >&2; tail -n 30 "$log" >&2; }
	return $rc
}
