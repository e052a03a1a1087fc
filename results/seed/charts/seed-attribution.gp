# Drawn by `harness report --charts`; redraw with: gnuplot seed-attribution.gp
set terminal svg size 900,700 dynamic noenhanced font "sans,12" background rgb "white"
set output "seed-attribution.svg"
set title "seed: where the step goes, by operation kind (ms per step)"
set grid
set ylabel "ms per step"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
set key outside right top autotitle columnheader
set xtics rotate by -20
plot for [k=2:16] "seed-attribution.dat" using k:xtic(1)
