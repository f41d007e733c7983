# test/checklogs.sh: fail a test run whose server logs show a crash.
#
# Sourced.  check_server_logs FILE_OR_DIR... reads every server log given
# (for a directory: every *.log below it but the TAP scripts' own
# regress_log_* transcripts) and fails, printing the offending lines, if one
# contains a sign of a crash or of an internal error:
#   - "terminated by signal" (a backend died: SIGSEGV, SIGABRT, ...)
#   - "PANIC:" (a message of level PANIC)
#   - "TRAP:" (a failed assertion of an assert-enabled build)
#   - an ERROR, FATAL or PANIC with SQLSTATE XX000 (internal error), XX001
#     (data corrupted) or XX002 (index corrupted): nothing a user or a
#     concurrent DDL does may raise them.
#   - a WARNING about a resource leak at commit (relcache, buffer, snapshot,
#     tuple descriptor, temporary file...) or a lock released twice
# SQLSTATEs are visible only where the cluster logs them: test/lib.sh's
# start_cluster and the TAP nodes (through TEMP_CONFIG, see CHECKLOGS_CONF)
# put %e in log_line_prefix.
#
# A line a test provokes on purpose is declared in test/expected_log_errors
# (or $CHECKLOGS_ALLOW): one entry a line, "LOG-NAME REGEX", after a comment
# that says which test provokes it and why.  LOG-NAME is matched as a
# substring of the log's path ("*" for any); REGEX is an extended regular
# expression matched against the line.

CHECKLOGS_ALLOW=${CHECKLOGS_ALLOW:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/expected_log_errors}

# The postgresql.conf lines that make a cluster's log show SQLSTATEs.
CHECKLOGS_CONF="log_line_prefix = '%m [%p] %e %q%a '"

# The lines of the logs that show a crash or an internal error.
checklogs_suspects() {
	grep -HnE 'terminated by signal|PANIC:|TRAP:| XX00[012] .*(ERROR|FATAL|PANIC): |(ERROR|FATAL|PANIC):  XX00[012]: |WARNING:  .*(leak|you don.t own a lock)' "$@"
}

check_server_logs() {
	local files=() f bad=0 name re line allowed
	for f in "$@"; do
		if [ -d "$f" ]; then
			while IFS= read -r -d '' line; do
				files+=("$line")
			done < <(find "$f" -type f -name '*.log' ! -name 'regress_log_*' -print0)
		elif [ -f "$f" ]; then
			files+=("$f")
		fi
	done
	[ ${#files[@]} = 0 ] && return 0
	while IFS= read -r line; do
		allowed=0
		if [ -f "$CHECKLOGS_ALLOW" ]; then
			while read -r name re; do
				case $name in '' | '#'*) continue ;; esac
				[ "$name" = '*' ] || [[ ${line%%:*} == *"$name"* ]] || continue
				[[ ${line#*:*:} =~ $re ]] && { allowed=1; break; }
			done <"$CHECKLOGS_ALLOW"
		fi
		[ $allowed = 1 ] && continue
		[ $bad = 0 ] && echo "!! server logs show a crash or an internal error:"
		bad=$((bad + 1))
		echo "   $line"
	done < <(checklogs_suspects "${files[@]}")
	[ $bad = 0 ]
}
