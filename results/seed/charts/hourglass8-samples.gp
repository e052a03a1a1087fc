# Drawn by `harness report --charts`; redraw with: gnuplot hourglass8-samples.gp
set terminal svg size 900,500 dynamic noenhanced font "sans,12" background rgb "white"
set output "hourglass8-samples.svg"
set title "hourglass8: every timed step"
set grid
set xlabel "timed step"
set ylabel "ms"
set key outside right top
plot "hourglass8-samples.dat" index 0 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu (cpu, fp32) #1", \
     "" index 1 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu (cpu, fp32) #2", \
     "" index 2 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu (cpu, fp32) #3"
