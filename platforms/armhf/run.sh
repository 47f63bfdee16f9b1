#!/usr/bin/env bash
# Runs a armhf build under qemu: platforms/armhf/run.sh PROGRAM [ARGS...] (see platforms/qemu_run.sh).
exec "$(dirname "${BASH_SOURCE[0]}")/../qemu_run.sh" armhf "$@"
