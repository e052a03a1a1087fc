# Drawn by `harness report --charts`; redraw with: gnuplot hourglass8-samples.gp
set terminal svg size 900,500 dynamic noenhanced font "sans,12" background rgb "white"
set output "hourglass8-samples.svg"
set title "hourglass8: every timed step"
set grid
set xlabel "timed step"
set ylabel "ms"
set key outside right top
plot "hourglass8-samples.dat" index 0 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow (cpu, fp32) #1", \
     "" index 1 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-onednn (cpu, fp32) #1", \
     "" index 2 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu-debian (cpu, fp32) #1", \
     "" index 3 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu (cpu, fp32) #1", \
     "" index 4 using 1:2 with linespoints pt 7 ps 0.5 title "onednn (cpu, fp32) #1", \
     "" index 5 using 1:2 with linespoints pt 7 ps 0.5 title "onednn-debian (cpu, fp32) #1", \
     "" index 6 using 1:2 with linespoints pt 7 ps 0.5 title "onednn (cpu, fp32) #2", \
     "" index 7 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow (cpu, fp32) #2", \
     "" index 8 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-onednn (cpu, fp32) #2", \
     "" index 9 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu-debian (cpu, fp32) #2", \
     "" index 10 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu (cpu, fp32) #2", \
     "" index 11 using 1:2 with linespoints pt 7 ps 0.5 title "onednn-debian (cpu, fp32) #2", \
     "" index 12 using 1:2 with linespoints pt 7 ps 0.5 title "onednn-debian (cpu, fp32) #3", \
     "" index 13 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-onednn (cpu, fp32) #3", \
     "" index 14 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu (cpu, fp32) #3", \
     "" index 15 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu-debian (cpu, fp32) #3", \
     "" index 16 using 1:2 with linespoints pt 7 ps 0.5 title "onednn (cpu, fp32) #3", \
     "" index 17 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow (cpu, fp32) #3", \
     "" index 18 using 1:2 with linespoints pt 7 ps 0.5 title "onednn-debian (cpu, fp32) #4", \
     "" index 19 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu-debian (cpu, fp32) #4", \
     "" index 20 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow-onednn (cpu, fp32) #4", \
     "" index 21 using 1:2 with linespoints pt 7 ps 0.5 title "onednn (cpu, fp32) #4", \
     "" index 22 using 1:2 with linespoints pt 7 ps 0.5 title "tensorflow (cpu, fp32) #4", \
     "" index 23 using 1:2 with linespoints pt 7 ps 0.5 title "libtorch-cpu (cpu, fp32) #4"
