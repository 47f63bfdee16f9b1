# Shared set-up of the CLI end-to-end scripts (sourced, not run): BIN and DATA from the script's
# arguments, skip (or fail under BERTRT_REQUIRE_DATA=1) when the data is absent, a temp folder $T
# removed on exit, pass/fail counters and the expect_ok / expect_error checks.
# shellcheck shell=bash
BIN=$1
DATA=${BERTRT_DATA:-$2}
VOCAB=$DATA/vocab/bert-base-uncased-vocab.txt
if [ ! -f "$VOCAB" ]; then
  if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "required data missing: $VOCAB"; exit 1; fi
  echo "SKIP: data missing ($VOCAB)"; exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_error NAME OUTFILE PATTERN -- CMD...: non-zero exit, stderr matches PATTERN, OUTFILE absent.
expect_error() {
  local name=$1 out=$2 pattern=$3; shift 4
  "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
  local rc=$?
  if [ $rc -eq 0 ]; then bad "$name: exit 0"; return; fi
  if ! grep -qiE -- "$pattern" "$T/stderr"; then bad "$name: stderr lacks /$pattern/: $(cat "$T/stderr")"; return; fi
  if [ -n "$out" ] && [ -e "$out" ]; then bad "$name: left $out behind"; return; fi
  ok
}
# expect_ok NAME CMD...: exit 0.
expect_ok() {
  local name=$1; shift
  if "$@" >"$T/stdout" 2>"$T/stderr"; then ok; else bad "$name: exit $?: $(tail -3 "$T/stderr")"; fi
}
