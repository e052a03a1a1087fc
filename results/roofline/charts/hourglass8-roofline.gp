# Drawn by `harness report --charts`; redraw with: gnuplot hourglass8-roofline.gp
set terminal svg size 900,672 dynamic noenhanced font "sans,12" background rgb "white"
set output "hourglass8-roofline.svg"
set title "hourglass8: each layer kind against the roofline (492.4 GFLOP/s FMA, 31.0 GB/s triad, 2 threads)"
set grid
set logscale xy
set xlabel "arithmetic intensity (FLOPs per byte moved at the least)"
set ylabel "GFLOP/s achieved"
set xrange [0.0375:191.118]
set yrange [0.0966544:984.866]
set samples 400
set key below horizontal maxcols 3
F = 492.433  # GFLOP/s, float32 FMA, best of 7
B = 31.0034  # GB/s, triad, best of 10
ceiling(x) = B * x < F ? B * x : F
plot ceiling(x) with lines lw 2 lc rgb "#333333" title "roof", \
     "hourglass8-roofline.dat" index 0 using 2:3:4 with points pt 7 ps 1.4 lc rgb variable notitle, \
     "hourglass8-roofline.dat" index 1 using 2:3:4 with points pt 5 ps 1.4 lc rgb variable notitle, \
     "hourglass8-roofline.dat" index 2 using 2:3:4 with points pt 9 ps 1.4 lc rgb variable notitle, \
     "hourglass8-roofline.dat" index 3 using 2:3:4 with points pt 11 ps 1.4 lc rgb variable notitle, \
     "hourglass8-roofline.dat" index 4 using 2:3:4 with points pt 13 ps 1.4 lc rgb variable notitle, \
     "hourglass8-roofline.dat" index 5 using 2:3:4 with points pt 15 ps 1.4 lc rgb variable notitle, \
     keyentry with points pt 7 ps 1.4 lc rgb "#555555" title "tensorflow", \
     keyentry with points pt 5 ps 1.4 lc rgb "#555555" title "tensorflow-onednn", \
     keyentry with points pt 9 ps 1.4 lc rgb "#555555" title "libtorch-cpu-debian", \
     keyentry with points pt 11 ps 1.4 lc rgb "#555555" title "libtorch-cpu", \
     keyentry with points pt 13 ps 1.4 lc rgb "#555555" title "onednn", \
     keyentry with points pt 15 ps 1.4 lc rgb "#555555" title "onednn-debian", \
     keyentry with boxes fill solid 0.8 lc rgb "#1f77b4" title "conv2d", \
     keyentry with boxes fill solid 0.8 lc rgb "#ff7f0e" title "batchnorm", \
     keyentry with boxes fill solid 0.8 lc rgb "#2ca02c" title "relu", \
     keyentry with boxes fill solid 0.8 lc rgb "#9467bd" title "add", \
     keyentry with boxes fill solid 0.8 lc rgb "#98df8a" title "maxpool2d", \
     keyentry with boxes fill solid 0.8 lc rgb "#bcbd22" title "upsample", \
     keyentry with boxes fill solid 0.8 lc rgb "#e377c2" title "mse_loss", \
     keyentry with boxes fill solid 0.8 lc rgb "#d62728" title "rmsprop", \
     keyentry with boxes fill solid 0.8 lc rgb "#000000" title "the step (timed)"
