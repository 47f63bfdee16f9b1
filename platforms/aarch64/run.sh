#!/usr/bin/env bash
# Runs a aarch64 build under qemu: platforms/aarch64/run.sh PROGRAM [ARGS...] (see platforms/qemu_run.sh).
exec "$(dirname "${BASH_SOURCE[0]}")/../qemu_run.sh" aarch64 "$@"
