# Drawn by `harness report --charts`; redraw with: gnuplot seed-roofline.gp
set terminal svg size 900,694 dynamic noenhanced font "sans,12" background rgb "white"
set output "seed-roofline.svg"
set title "seed: each layer kind against the roofline (451.9 GFLOP/s FMA, 30.9 GB/s triad, 2 threads)"
set grid
set logscale xy
set xlabel "arithmetic intensity (FLOPs per byte moved at the least)"
set ylabel "GFLOP/s achieved"
set xrange [0.0375:190.93]
set yrange [0.0878799:903.855]
set samples 400
set key below horizontal maxcols 3
F = 451.928  # GFLOP/s, float32 FMA, best of 7
B = 30.9119  # GB/s, triad, best of 10
ceiling(x) = B * x < F ? B * x : F
plot ceiling(x) with lines lw 2 lc rgb "#333333" title "roof", \
     "seed-roofline.dat" index 0 using 2:3:4 with points pt 7 ps 1.4 lc rgb variable notitle, \
     "seed-roofline.dat" index 1 using 2:3:4 with points pt 5 ps 1.4 lc rgb variable notitle, \
     "seed-roofline.dat" index 2 using 2:3:4 with points pt 9 ps 1.4 lc rgb variable notitle, \
     "seed-roofline.dat" index 3 using 2:3:4 with points pt 11 ps 1.4 lc rgb variable notitle, \
     "seed-roofline.dat" index 4 using 2:3:4 with points pt 13 ps 1.4 lc rgb variable notitle, \
     "seed-roofline.dat" index 5 using 2:3:4 with points pt 15 ps 1.4 lc rgb variable notitle, \
     "seed-roofline.dat" index 6 using 2:3:4 with points pt 6 ps 1.4 lc rgb variable notitle, \
     "seed-roofline.dat" index 7 using 2:3:4 with points pt 4 ps 1.4 lc rgb variable notitle, \
     "seed-roofline.dat" index 8 using 2:3:4 with points pt 8 ps 1.4 lc rgb variable notitle, \
     keyentry with points pt 7 ps 1.4 lc rgb "#555555" title "tensorflow-seed", \
     keyentry with points pt 5 ps 1.4 lc rgb "#555555" title "tensorflow-fused", \
     keyentry with points pt 9 ps 1.4 lc rgb "#555555" title "tensorflow-device", \
     keyentry with points pt 11 ps 1.4 lc rgb "#555555" title "tensorflow-fused-device", \
     keyentry with points pt 13 ps 1.4 lc rgb "#555555" title "tensorflow-xla", \
     keyentry with points pt 15 ps 1.4 lc rgb "#555555" title "tensorflow-onednn", \
     keyentry with points pt 6 ps 1.4 lc rgb "#555555" title "tensorflow-default", \
     keyentry with points pt 4 ps 1.4 lc rgb "#555555" title "libtorch-cpu", \
     keyentry with points pt 8 ps 1.4 lc rgb "#555555" title "onednn", \
     keyentry with boxes fill solid 0.8 lc rgb "#1f77b4" title "conv2d", \
     keyentry with boxes fill solid 0.8 lc rgb "#ff7f0e" title "batchnorm", \
     keyentry with boxes fill solid 0.8 lc rgb "#2ca02c" title "relu", \
     keyentry with boxes fill solid 0.8 lc rgb "#9467bd" title "add", \
     keyentry with boxes fill solid 0.8 lc rgb "#98df8a" title "maxpool2d", \
     keyentry with boxes fill solid 0.8 lc rgb "#bcbd22" title "upsample", \
     keyentry with boxes fill solid 0.8 lc rgb "#e377c2" title "mse_loss", \
     keyentry with boxes fill solid 0.8 lc rgb "#d62728" title "rmsprop", \
     keyentry with boxes fill solid 0.8 lc rgb "#000000" title "the step (timed)"
