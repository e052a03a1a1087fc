# Drawn by `harness report --charts`; redraw with: gnuplot hourglass8-phases.gp
set terminal svg size 900,652 dynamic noenhanced font "sans,12" background rgb "white"
set output "hourglass8-phases.svg"
set title "hourglass8: where a step goes (shares of the phase medians; the label gives the step's median)"
set grid
set xlabel "% of the step"
set xrange [0:100]
set yrange [-0.6:15.6] reverse
set style fill solid 0.8 border -1
set key outside right top
plot "hourglass8-phases.dat" using ($3/2):1:(0):3:($1-0.35):($1+0.35):ytic(2) with boxxyerror lc rgb "#1f77b4" title "forward", \
     "" using ($3+$4/2):1:3:($3+$4):($1-0.35):($1+0.35) with boxxyerror lc rgb "#ff7f0e" title "backward", \
     "" using ($3+$4+$5/2):1:($3+$4):($3+$4+$5):($1-0.35):($1+0.35) with boxxyerror lc rgb "#2ca02c" title "optimizer"
