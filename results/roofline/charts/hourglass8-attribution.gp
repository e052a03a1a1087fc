# Drawn by `harness report --charts`; redraw with: gnuplot hourglass8-attribution.gp
set terminal svg size 900,570 dynamic noenhanced font "sans,12" background rgb "white"
set output "hourglass8-attribution.svg"
set title "hourglass8: where a traced step goes, by operation kind"
set grid
set ylabel "ms per traced step (dot: the timed steps' median)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
set key below horizontal maxcols 3
set xtics rotate by -20
plot "hourglass8-attribution.dat" using 2:xtic(1) title "convolution forward" lc rgb "#1f77b4", \
     "" using 3 title "convolution backward-data" lc rgb "#9ecae1", \
     "" using 4 title "convolution backward-weights" lc rgb "#17becf", \
     "" using 5 title "convolution backward (data and weights)" lc rgb "#393b79", \
     "" using 6 title "batch norm" lc rgb "#ff7f0e", \
     "" using 7 title "ReLU" lc rgb "#2ca02c", \
     "" using 8 title "pooling" lc rgb "#98df8a", \
     "" using 9 title "upsampling" lc rgb "#bcbd22", \
     "" using 10 title "sums" lc rgb "#9467bd", \
     "" using 11 title "loss" lc rgb "#e377c2", \
     "" using 12 title "optimizer" lc rgb "#d62728", \
     "" using 13 title "reorders and copies" lc rgb "#8c564b", \
     "" using 14 title "other" lc rgb "#7f7f7f", \
     "" using 15 title "unaccounted" lc rgb "#d9d9d9", \
     "" using 0:16 with points pt 7 ps 1.2 lc rgb "black" title "timed median"
