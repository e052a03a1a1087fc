# Drawn by `harness report --charts`; redraw with: gnuplot seed-samples.gp
set terminal svg size 900,500 dynamic noenhanced font "sans,12" background rgb "white"
set output "seed-samples.svg"
set title "seed: every timed step"
set grid
set xlabel "timed step"
set ylabel "ms"
set key outside right top
plot "seed-samples.dat" index 0 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-seed (cpu, fp32)", \
     "" index 1 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-fused (cpu, fp32)", \
     "" index 2 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-device (cpu, fp32)", \
     "" index 3 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-fused-device (cpu, fp32)", \
     "" index 4 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-xla (cpu, fp32)", \
     "" index 5 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-onednn (cpu, fp32)", \
     "" index 6 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-default (cpu, fp32)", \
     "" index 7 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu (cpu, fp32)", \
     "" index 8 using 1:2 with linespoints pt 7 ps 0.5 title "onednn (cpu, fp32)"
