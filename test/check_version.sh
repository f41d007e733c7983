#!/usr/bin/env bash
# test/check_version.sh: the extension has one version number.  Fails
# (exit 1, naming the file that disagrees) unless the Makefile's
# EXTVERSION, zorder.control's default_version, every "version" of
# META.json (as x.y.0), the upstream version of debian/changelog's newest
# entry and the install script sql/zorder--EXTVERSION.sql agree.  Needs
# only sed and grep: run first by test/package.sh and early by
# test/suite.sh.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
fail=0
bad() { echo "check_version: $*" >&2; fail=1; }

v=$(sed -n 's/^EXTVERSION[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/\1/p' Makefile)
[ -n "$v" ] || { bad "Makefile: no EXTVERSION"; exit 1; }

c=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" zorder.control)
[ "$c" = "$v" ] || bad "zorder.control: default_version '$c', Makefile EXTVERSION $v"

# META.json: the distribution's version and each provided extension's
metas=$(grep -o '"version"[[:space:]]*:[[:space:]]*"[^"]*"' META.json |
	sed 's/.*"\([^"]*\)"$/\1/')
n=0
while read -r m; do
	[ -n "$m" ] || continue
	case $m in
	1.0.0) ;; # meta-spec's own version
	*) n=$((n + 1))
	   [ "$m" = "$v.0" ] || bad "META.json: version $m, Makefile EXTVERSION $v (want $v.0)" ;;
	esac
done <<<"$metas"
[ "$n" -ge 2 ] || bad "META.json: expected the version and provides' version, found $n"
grep -q "\"file\"[[:space:]]*:[[:space:]]*\"sql/zorder--$v.sql\"" META.json ||
	bad "META.json: provides.zorder.file is not sql/zorder--$v.sql"

# debian/changelog: "zorder (UPSTREAM-REVISION) ..." on its first line
d=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' debian/changelog)
du=${d%-*}
du=${du#*:}
[ "$du" = "$v" ] || bad "debian/changelog: newest entry $d (upstream $du), Makefile EXTVERSION $v"

[ -f "sql/zorder--$v.sql" ] || bad "sql/zorder--$v.sql: no install script for EXTVERSION $v"

[ "$fail" = 0 ] && echo "check_version: $v everywhere"
exit $fail
