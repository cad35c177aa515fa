#!/bin/sh
# plot-train-step.sh CSV [PNG]: a bar chart of loom-train-step's --csv output
# (step time per mode, with each mode's bound max(compute, communication)
# beside it). Needs gnuplot.
set -eu
csv=${1:?usage: plot-train-step.sh CSV [PNG]}
png=${2:-${csv%.csv}.png}
command -v gnuplot >/dev/null 2>&1 || { echo "plot-train-step.sh: gnuplot is not installed" >&2; exit 1; }
gnuplot <<GNUPLOT
set terminal pngcairo size 900,480 noenhanced
set output "$png"
set datafile separator ","
set title "loom-train-step: time per training step (median of the slowest rank)"
set ylabel "ms per step"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -20
set key top left
set yrange [0:*]
plot "$csv" using 2:xtic(1) skip 1 title "step", "" using 3 skip 1 title "bound: max(compute, comm)"
GNUPLOT
echo "plot: $png"
