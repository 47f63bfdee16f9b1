# shellcheck shell=bash
# Argument checks of the bench scripts, sourced by them: a bad argument stops the script before it
# does any work, with one line on stderr naming the argument and the path, exit 2 (not a bench
# figure, a bash error or a Python traceback three steps later).
# The script sets USAGE (its usage, environment and one example) before need_args.

usage() { printf '%s\n' "$USAGE" >&2; exit 2; }
check_fail() { echo "${0##*/}: $*" >&2; exit 2; }

# need_args N "$@": at least N arguments, else the usage; -h/--help prints it on stdout
need_args() {
  local n=$1; shift
  case ${1:-} in -h|--help) printf '%s\n' "$USAGE"; exit 0;; esac
  [ $# -ge "$n" ] || usage
}

# need_file NAME PATH: PATH is a regular, readable file (NAME: the argument, for the message)
need_file() {
  if [ ! -e "$2" ]; then check_fail "$1 $2: no such file"
  elif [ ! -f "$2" ]; then check_fail "$1 $2: not a regular file"
  elif [ ! -r "$2" ]; then check_fail "$1 $2: not readable"
  fi
}

# need_exe NAME PATH: PATH is an executable file
need_exe() {
  need_file "$1" "$2"
  [ -x "$2" ] || check_fail "$1 $2: not executable"
}

# need_dir NAME PATH [HINT]: PATH is a folder (HINT: how to name another)
need_dir() {
  if [ ! -e "$2" ]; then check_fail "$1 $2: no such folder${3:+ ($3)}"
  elif [ ! -d "$2" ]; then check_fail "$1 $2: not a folder${3:+ ($3)}"
  fi
}
