#!/usr/bin/env bash
# Prints the machine a benchmark runs on (sourced by the bench/run_*.sh scripts).
echo "nproc: $(nproc)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
     "(family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')," \
     "model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
