#!/bin/bash
# The loops of docs/simulator.md: the 160 cells (four workloads x 2x14 same/own, 4x8 own, 8x32 own) and the 40 spinning cells.
# usage: docs/results/sim-loops.sh PINLEARN NAME [EXTRA FLAGS...]  -> /tmp/simc/NAME-MACHINE-SESSION-WORKLOAD.json, /tmp/sims/NAME-MACHINE-SESSION.json
# (with `best-static`, the load model's optimum, since 2026-12-04: about 9 minutes on this 2-CPU machine; list the worst cells with
#  docs/results/sim-worst-cells.py DIR NAME; compare two NAMEs with docs/results/sim-guard-variants-2026-11-28.py, SIM_DIR=/tmp/simc or /tmp/sims, BASE=NAME)
BIN=$1; NAME=$2; shift 2
mkdir -p /tmp/simc /tmp/sims
G="--matrix full --duration 60s --schedulers os,static,best-static,learn -q"
for w in barrier barrier-spin independent pipeline; do
  $BIN sim $G --workload $w --seeds 6 --load-session same "$@" --json /tmp/simc/$NAME-2x14-same-$w.json >/dev/null
  $BIN sim $G --workload $w --seeds 6 --load-session own "$@" --json /tmp/simc/$NAME-2x14-own-$w.json >/dev/null
  $BIN sim $G --workload $w --seeds 6 --load-session own --topology "node:4 core:8 pu:1" "$@" --json /tmp/simc/$NAME-4x8-own-$w.json >/dev/null
  $BIN sim $G --workload $w --seeds 3 --load-session own --topology "node:8 core:32 pu:1" --threads 256 "$@" --json /tmp/simc/$NAME-8x32-own-$w.json >/dev/null
done
S="--workload barrier-spin --spin 200us --grain 0.2ms"
$BIN sim $G $S --seeds 6 --load-session same "$@" --json /tmp/sims/$NAME-2x14-same.json >/dev/null
$BIN sim $G $S --seeds 6 --load-session own "$@" --json /tmp/sims/$NAME-2x14-own.json >/dev/null
$BIN sim $G $S --seeds 6 --load-session own --topology "node:4 core:8 pu:1" "$@" --json /tmp/sims/$NAME-4x8-own.json >/dev/null
$BIN sim $G $S --seeds 3 --load-session own --topology "node:8 core:32 pu:1" --threads 256 "$@" --json /tmp/sims/$NAME-8x32-own.json >/dev/null
echo done $NAME
