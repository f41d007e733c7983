#!/usr/bin/env bash
# test/pg_upgrade.sh OLD NEW: pg_upgrade from PostgreSQL major OLD to NEW
# keeps what zorder knows of a table: keys, curve, layout, boundary sets,
# sorted runs and history come over unchanged (pg_upgrade keeps relation
# OIDs and, from 15 on, file numbers, so the runs still name the right
# blocks; boundary sets name their collations, whose OIDs it does not
# keep), and the table goes on with incremental calls that move only new
# rows.
#
# Needs both majors' servers and server-dev packages in one place: this
# machine when /usr/lib/postgresql/OLD and NEW are there, otherwise the
# chroot of NEW (test/chroot.sh), into which OLD is installed from Debian
# when it is not there yet (sid carries 18 beside 19's chroot).  Nothing is
# installed into the shared servers: the extension is built into private
# copies of both.  Run as root.  Exits non-zero if a check fails.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
old=${1:?usage: test/pg_upgrade.sh OLD NEW}
new=${2:?usage: test/pg_upgrade.sh OLD NEW}
port=${ZORDER_TEST_PORT:-54390}

die() { echo "error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root"

if [ ! -x /usr/lib/postgresql/$old/bin/pg_upgrade ] ||
	[ ! -x /usr/lib/postgresql/$new/bin/pg_upgrade ] ||
	[ ! -x /usr/lib/postgresql/$old/bin/pg_config ] ||
	[ ! -x /usr/lib/postgresql/$new/bin/pg_config ]; then
	[ -n "${ZORDER_IN_CHROOT:-}" ] || {
		. "$repo/test/chroot.sh"
		ensure_chroot "$new" || die "no chroot for PostgreSQL $new"
		dir=$(chroot_dir "$new")
		# the old major from Debian, beside the new one
		(
			flock 9
			chroot_run "$new" sh -c "dpkg -s postgresql-$old postgresql-server-dev-$old >/dev/null 2>&1 ||
				apt-get install -y -qq --no-install-recommends postgresql-$old postgresql-server-dev-$old" >/dev/null
		) 9>"$ZORDER_CACHE/chroot-$new.lock" ||
			die "could not install PostgreSQL $old in the chroot of $new"
		copy=/tmp/zorder-pg-upgrade-$$
		rm -rf "$dir$copy"
		mkdir -p "$dir$copy"
		(cd "$repo" && cp -r Makefile zorder.control src sql expected test "$dir$copy/")
		chroot_run "$new" env ZORDER_IN_CHROOT=1 ZORDER_TEST_PORT="$port" ZORDER_KEEP="${ZORDER_KEEP:-}" \
			bash "$copy/test/pg_upgrade.sh" "$old" "$new"
		rc=$?
		rm -rf "$dir$copy"
		exit $rc
	}
	die "PostgreSQL $old and $new are not both installed here"
fi

work=$(mktemp -d /tmp/zorder-pg-upgrade.XXXXXX)
cleanup() {
	local v
	for v in $old $new; do
		[ -f $work/$v/postmaster.pid ] &&
			runuser -u postgres -- $work/pg/usr/lib/postgresql/$v/bin/pg_ctl \
				-D $work/$v -m fast -w stop >/dev/null 2>&1
	done
	[ -n "${ZORDER_KEEP:-}" ] || rm -rf $work
}
trap cleanup EXIT

# private copies of both servers, the extension built into each
P=$work/pg
mkdir -p $P/usr/lib/postgresql $P/usr/share/postgresql $P/usr/include
for v in $old $new; do
	cp -a /usr/lib/postgresql/$v $P/usr/lib/postgresql/
	cp -a /usr/share/postgresql/$v $P/usr/share/postgresql/
done
cp -a /usr/include/postgresql $P/usr/include/
cp -r "$repo" $work/src
for v in $old $new; do
	make -C $work/src -s PG_CONFIG=$P/usr/lib/postgresql/$v/bin/pg_config clean >/dev/null 2>&1
	make -C $work/src -s PG_CONFIG=$P/usr/lib/postgresql/$v/bin/pg_config with_llvm=no \
		COPT=-Werror >/dev/null || die "build for $v failed"
	make -C $work/src -s PG_CONFIG=$P/usr/lib/postgresql/$v/bin/pg_config with_llvm=no \
		install >/dev/null || die "install for $v failed"
done
chown -R postgres: $work
oldbin=$P/usr/lib/postgresql/$old/bin
newbin=$P/usr/lib/postgresql/$new/bin

as_pg() { (cd $work && runuser -u postgres -- "$@"); }
for v in $old $new; do
	bin=$P/usr/lib/postgresql/$v/bin
	as_pg $bin/initdb -D $work/$v -E UTF8 --locale=C.UTF-8 -A trust -U postgres \
		>$work/initdb-$v.log 2>&1 || { cat $work/initdb-$v.log; die "initdb $v failed"; }
	cat >>$work/$v/postgresql.conf <<CONF
listen_addresses = ''
port = $port
unix_socket_directories = '$work'
autovacuum = off
fsync = off
CONF
done

psql_on() { as_pg $1/psql -X -h $work -p $port -U postgres -d zdb -v ON_ERROR_STOP=1 -At "${@:2}"; }
fails=0
check() {
	local what=$1 got=$2 want=$3
	if [ "$got" = "$want" ]; then
		echo "ok - $what"
	else
		echo "not ok - $what"
		echo "  got:  $got"
		echo "  want: $want"
		fails=$((fails + 1))
	fi
}

as_pg $oldbin/pg_ctl -D $work/$old -l $work/$old.log -w start >/dev/null || die "old server did not start"
as_pg $oldbin/createdb -h $work -p $port -U postgres zdb
# Placement off until after the upgrade: new rows then make a run of their
# own, so the catalog has two runs whose block numbers must survive.
psql_on $oldbin -q <<'SQL' || die "set-up on $old failed"
SET zorder.placement = off;
CREATE EXTENSION zorder;
CREATE EXTENSION amcheck;
CREATE TABLE ev (id bigint PRIMARY KEY, a int, b text, c int);
INSERT INTO ev SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(1, 20000) g;
CREATE INDEX ev_a_brin ON ev USING brin (a) WITH (pages_per_range = 4);
SELECT zorder.cluster_by('ev', 'b', 'a');
CALL zorder.optimize('ev', curve => 'z');
INSERT INTO ev SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(20001, 20300) g;
CALL zorder.optimize('ev');
SQL

# scan_lsn as a number of bytes: 19 prints a pg_lsn zero-padded
catalog_query="
SELECT 'keys ' || string_agg(format('%s %s %s', relid, keys, key_names), ';') FROM zorder.tables
UNION ALL
SELECT 'layout ' || string_agg((to_jsonb(l) - 'scan_lsn')::text || ' ' ||
	coalesce((l.scan_lsn - '0/0')::text, '-'), ';') FROM zorder.layouts l
UNION ALL
SELECT 'runs ' || string_agg(c::text, ';' ORDER BY first_block) FROM zorder.runs c
UNION ALL
SELECT 'history ' || string_agg(h::text, ';' ORDER BY started_at) FROM zorder.history h
UNION ALL
SELECT 'sets ' || string_agg(b::text, ';' ORDER BY id) FROM zorder.boundary_sets b
UNION ALL
SELECT 'file ' || (SELECT layout_filenode = pg_relation_filenode('ev') FROM zorder.layouts)
UNION ALL
SELECT 'extension ' || extversion FROM pg_extension WHERE extname = 'zorder'"
contents_query="SELECT md5(string_agg(e::text || ctid::text, ',' ORDER BY id)) FROM ev e"
# the keys of the layout's boundary set: its collations are kept by name
# (the text key's is the database default), as pg_upgrade keeps no
# collation OIDs
keys_query="SELECT md5(string_agg(zorder.layout_key(l.boundary_set, b, a)::text, ',' ORDER BY id))
FROM ev, zorder.layouts l"
catalog_before=$(psql_on $oldbin -c "$catalog_query")
contents_before=$(psql_on $oldbin -c "$contents_query")
keys_before=$(psql_on $oldbin -c "$keys_query")
check "$old: the layout has a boundary set" \
	"$(psql_on $oldbin -c "SELECT count(*) FROM zorder.boundary_sets b JOIN zorder.layouts l ON l.boundary_set = b.id")" 1
check "$old: the table has a main run and a newer run" \
	"$(psql_on $oldbin -c "SELECT count(DISTINCT run) FROM zorder.runs")" 2
as_pg $oldbin/pg_ctl -D $work/$old -w stop >/dev/null

echo "== pg_upgrade $old -> $new"
as_pg $newbin/pg_upgrade -b $oldbin -B $newbin -d $work/$old -D $work/$new \
	-s $work -p $port -P $port >$work/pg_upgrade.log 2>&1 ||
	{ cat $work/pg_upgrade.log; die "pg_upgrade failed"; }

as_pg $newbin/pg_ctl -D $work/$new -l $work/$new.log -w start >/dev/null || die "new server did not start"
check "$new: keys, layout, runs, history unchanged" \
	"$(psql_on $newbin -c "$catalog_query")" "$catalog_before"
check "$new: the runs name the table's file" \
	"$(psql_on $newbin -c "SELECT layout_filenode = pg_relation_filenode('ev') FROM zorder.layouts")" t
check "$new: rows and their places unchanged" \
	"$(psql_on $newbin -c "$contents_query")" "$contents_before"
check "$new: the boundary set gives the keys it gave" \
	"$(psql_on $newbin -c "$keys_query")" "$keys_before"
check "$new: keys and curve" \
	"$(psql_on $newbin -c "SELECT \"table\" || ' ' || keys::text || ' ' || curve FROM zorder.clustered_tables")" \
	"ev {b,a} z"

# two commands, not one string: that would be one transaction, whose own
# rows an optimize leaves where they are
out=$(psql_on $newbin -c "SET zorder.placement = off" -c "
INSERT INTO ev SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(20301, 20500) g" -c "CALL zorder.optimize('ev')" 2>&1)
case $out in
	*rewritten*) check "$new: the runs are trusted" "$out" "" ;;
	*) echo "ok - $new: the runs are trusted" ;;
esac
check "$new: an incremental call moves only the new rows" \
	"$(psql_on $newbin -c "SELECT mode || ' ' || rows_moved FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1")" \
	"incremental 200"
# placement (the default) puts new rows into the main run's ranges that
# hold their keys (moving old rows too where a range splits)
psql_on $newbin -q -c "
INSERT INTO ev SELECT g, (g * 7919) % 1000, 'k' || ((g * 104729) % 613), g % 17
FROM generate_series(20501::bigint, 20600) g" -c "CALL zorder.optimize('ev')" >/dev/null
check "$new: an incremental call with placement moves the new rows" \
	"$(psql_on $newbin -c "SELECT mode || ' ' || (rows_moved >= 100) FROM zorder.optimize_history ORDER BY started_at DESC LIMIT 1")" \
	"incremental true"
psql_on $newbin -q -c "CALL zorder.optimize('ev', full => true)" >/dev/null
check "$new: a full call keeps the curve" \
	"$(psql_on $newbin -c "SELECT curve FROM zorder.clustered_tables")" z
check "$new: verify_heapam finds nothing" \
	"$(psql_on $newbin -c "SELECT count(*) FROM verify_heapam('ev')")" 0
check "$new: bt_index_check passes" \
	"$(psql_on $newbin -c "SELECT bt_index_check('ev_pkey', true)" 2>&1)" ""
check "$new: the rows are those inserted" \
	"$(psql_on $newbin -c "SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM ev e")" \
	"$(psql_on $newbin -c "SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM (
		SELECT g AS id, (g * 7919) % 1000 AS a, 'k' || ((g * 104729) % 613) AS b, g % 17 AS c
		FROM generate_series(1::bigint, 20600) g) e")"
as_pg $newbin/pg_ctl -D $work/$new -w stop >/dev/null

echo "== pg_upgrade $old -> $new: $fails failed"
[ $fails = 0 ]
