# test/citus.sh: Citus, built from the vendored release, in the chroots of
# the PostgreSQL majors it supports that test/chroot.sh makes (17 and 18).
#
# Sourced after test/chroot.sh (test/run.sh); needs root.  Debian does not
# package Citus, so the release tarball kept beside the repository
# ($repo/../shared/vendor, or ZORDER_VENDOR) is unpacked inside the chroot and
# built there with `./configure && make && make install` against that
# chroot's server, the first time only: a stamp written as the last step
# says the build is complete and of which tarball.  Citus is optional: where
# the tarball or the build is missing, a file says why and
# test/t/022_citus.pl skips with that reason; nothing here fails a run.
#
# The chroots are shared by concurrent runs.  The build holds an exclusive
# flock on a file inside the chroot (CITUS_STATE below, as the chroot sees
# it), so a second run waits for the first instead of building twice, and a
# test inside the chroot that finds Citus missing waits on the same lock
# (shared) for a build under way to end.  test/run.sh starts the builds in
# the background as soon as the chroots exist, so they overlap the targets
# that run meanwhile.

# Where the state of the build lives, as seen from inside the chroot:
# lock, stamp, why (the reason Citus is missing) and build.log.
CITUS_STATE=/var/lib/zorder-citus
CITUS_TARBALL=citus-14.0.1.tar.zst
CITUS_MAJORS="17 18"
CITUS_BUILD_DEPS="make gcc libc6-dev pkg-config libcurl4-openssl-dev liblz4-dev
	libzstd-dev libssl-dev libkrb5-dev libicu-dev"

citus_vendor() { echo "${ZORDER_VENDOR:-$repo/../shared/vendor}"; }

# citus_wanted MAJOR: whether Citus is built for that major at all.
citus_wanted() {
	case " $CITUS_MAJORS " in *" $1 "*) return 0 ;; esac
	return 1
}

# ensure_citus MAJOR: Citus installed in the chroot of MAJOR, built only when
# the stamp is missing or names another tarball.  Returns non-zero (and
# leaves the reason in $CITUS_STATE/why) when it cannot be; never exits.
ensure_citus() {
	local major=$1 dir state tarball key
	dir=$(chroot_dir "$major")
	state=$dir$CITUS_STATE
	tarball=$(citus_vendor)/$CITUS_TARBALL
	[ -f "$dir/.zorder-complete" ] || { echo "!! Citus for $major: no chroot" >&2; return 1; }
	mkdir -p "$state"
	chmod 755 "$state"
	touch "$state/lock"
	chmod 644 "$state/lock"
	(
		# Tell test/run.sh (CITUS_LOCKED) once the lock is held, or
		# waited for while another run builds: a test that starts from
		# then on waits for the build.
		if ! flock -n 9; then
			[ -n "${CITUS_LOCKED:-}" ] && touch "$CITUS_LOCKED"
			flock 9
		fi
		[ -n "${CITUS_LOCKED:-}" ] && touch "$CITUS_LOCKED"
		if [ ! -f "$tarball" ]; then
			# Keep a build already made from the tarball, if any.
			[ -f "$state/stamp" ] && [ -f "$dir/usr/lib/postgresql/$major/lib/citus.so" ] && exit 0
			echo "no Citus source: $tarball is missing" >"$state/why"
			echo "== Citus for PostgreSQL $major skipped: $tarball is missing" >&2
			exit 1
		fi
		key="$CITUS_TARBALL $(sha256sum <"$tarball" | cut -c1-16)"
		if [ "$(cat "$state/stamp" 2>/dev/null)" = "$key" ] &&
			[ -f "$dir/usr/lib/postgresql/$major/lib/citus.so" ]; then
			exit 0
		fi
		rm -f "$state/stamp"
		echo "building" >"$state/why"
		local t0 src=/var/tmp/zorder-citus-build log=$state/build.log
		t0=$(date +%s)
		echo "== building Citus ($CITUS_TARBALL) for PostgreSQL $major in $dir (log: $log)" >&2
		rm -rf "$dir$src"
		mkdir -p "$dir$src"
		if ! (
			set -e
			chroot_run "$major" apt-get -o DPkg::Lock::Timeout=600 install -y -q \
				$CITUS_BUILD_DEPS ||
				{ chroot_run "$major" apt-get -o DPkg::Lock::Timeout=600 update -qq &&
					chroot_run "$major" apt-get -o DPkg::Lock::Timeout=600 install -y -q \
						$CITUS_BUILD_DEPS; }
			chroot_run "$major" apt-get clean
			tar --zstd -xf "$tarball" -C "$dir$src" --strip-components=1
			chroot_run "$major" sh -c "cd $src &&
				PATH=/usr/lib/postgresql/$major/bin:\$PATH ./configure --quiet &&
				PATH=/usr/lib/postgresql/$major/bin:\$PATH make -s -j${CITUS_JOBS:-2} &&
				PATH=/usr/lib/postgresql/$major/bin:\$PATH make -s install"
		) >"$log" 2>&1; then
			echo "the Citus build for PostgreSQL $major failed (see $CITUS_STATE/build.log in the chroot, $log on the host)" >"$state/why"
			echo "!! building Citus for PostgreSQL $major failed; tail of $log:" >&2
			tail -n 20 "$log" >&2
			rm -rf "$dir$src"
			exit 1
		fi
		# The build tree is not needed any more; the stamp comes last.
		rm -rf "$dir$src"
		rm -f "$state/why"
		echo "$key" >"$state/stamp"
		echo "== Citus for PostgreSQL $major built in $(($(date +%s) - t0)) s" >&2
	) 9>"$state/lock"
}

# citus_start MAJOR: ensure_citus MAJOR in the background, its output in
# $out/citus-MAJOR.log; returns once the build holds its lock (or waits on
# another run's), so that a suite started afterwards finds the build.
citus_start() {
	local major=$1 pid
	citus_wanted "$major" || return 0
	# mounted here, not by the build and a suite at once
	chroot_mount "$(chroot_dir "$major")"
	rm -f "$out/citus-$major.locked"
	(
		t0=$(date +%s)
		if CITUS_LOCKED=$out/citus-$major.locked ensure_citus "$major"; then
			echo "== Citus for PostgreSQL $major: ready after $(($(date +%s) - t0)) s"
		else
			echo "== Citus for PostgreSQL $major: missing, its test is skipped ($(cat "$(chroot_dir "$major")$CITUS_STATE/why" 2>/dev/null))"
		fi
	) >"$out/citus-$major.log" 2>&1 &
	pid=$!
	while [ ! -f "$out/citus-$major.locked" ] && kill -0 "$pid" 2>/dev/null; do
		sleep 0.1
	done
}
