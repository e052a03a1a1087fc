# Drawn by `harness report --charts`; redraw with: gnuplot hourglass8-step-time.gp
set terminal svg size 900,888 dynamic noenhanced font "sans,12" background rgb "white"
set output "hourglass8-step-time.svg"
set title "hourglass8: time per training step (median; bar: p10-p90; +: min and max)"
set grid
set xlabel "ms per step"
set yrange [-0.6:23.6] reverse
set offsets graph 0.05, graph 0.05, 0, 0
set key off
plot "hourglass8-step-time.dat" using 3:1:4:5:ytic(2) with xerrorbars pt 7 ps 1.2 lc rgb "#1f77b4", \
     "" using 6:1 with points pt 1 lc rgb "#555555", \
     "" using 7:1 with points pt 1 lc rgb "#555555"
