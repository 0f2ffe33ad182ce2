# scripts/plots/decision_regions.gp - the decision regions of the three
# trained models of examples/train_mlp.c side by side: the class each
# predicts on a grid over the data (pale colours) under the data points
# (training points filled, validation points as open circles), with a
# legend of the classes' colours and the two kinds of points. It reads
# <outdir>/regions_{none,batchnorm,layernorm}.csv and <outdir>/points.csv
# and writes <outdir>/decision_regions.png. The demo sets outdir, subtitle
# and the panel titles label_none, label_batchnorm, label_layernorm, and
# loads this file; by hand:
#   gnuplot -e "outdir='out/train_mlp'" scripts/plots/decision_regions.gp
if (!exists("outdir")) outdir = 'out/train_mlp'
if (!exists("subtitle")) subtitle = ''
if (!exists("label_none")) label_none = 'no norm'
if (!exists("label_batchnorm")) label_batchnorm = 'BatchNorm'
if (!exists("label_layernorm")) label_layernorm = 'LayerNorm'

set terminal pngcairo size 1500,600 enhanced font 'Sans,11'
set output outdir.'/decision_regions.png'
set datafile separator ','

# class 0, 1, 2: pale for the regions, strong for the points
set palette defined (0 '#fbc8b4', 1 '#c3d6ea', 2 '#cbeac4')
set cbrange [-0.5:2.5]
unset colorbox
point_colour(k) = k == 0 ? 0xd7301f : k == 1 ? 0x2166ac : 0x238b45

set size ratio -1
set xlabel 'x_1'
set ylabel 'x_2'
set tics out nomirror
# the legend, drawn once (with the first panel) centred under all three:
# the classes' colours, and the two kinds of points
set key at screen 0.5, 0.015 center bottom horizontal maxcols 5 maxrows 1 samplen 1 width 3 font ',11'
set bmargin 6

set multiplot layout 1,3 title "Decision regions after training (class predicted at each point; filled: training data, open: validation)\n{/*0.85 ".subtitle."}"
do for [i = 1:3] {
    v = word('none batchnorm layernorm', i)
    set title (i == 1 ? label_none : i == 2 ? label_batchnorm : label_layernorm)
    f = outdir.'/regions_'.v.'.csv'
    stats f skip 1 using 1:2 nooutput
    set xrange [STATS_min_x:STATS_max_x]
    set yrange [STATS_min_y:STATS_max_y]
    if (i == 2) { unset key }
    plot f skip 1 using 1:2:3 with image notitle, \
         outdir.'/points.csv' skip 1 using 1:(strcol(4) eq 'train' ? $2 : NaN):(point_colour($3)) with points pt 7 ps 0.45 lc rgb variable notitle, \
         ''                   skip 1 using 1:(strcol(4) eq 'val' ? $2 : NaN):(point_colour($3)) with points pt 6 ps 0.6 lw 1.2 lc rgb variable notitle, \
         for [k = 0:2] keyentry with boxes fs solid 1.0 border lc rgb sprintf('#%06x', point_colour(k)) fc rgb sprintf('#%06x', point_colour(k)) title sprintf('class %d', k), \
         keyentry with points pt 7 ps 0.8 lc rgb '#444444' title 'training', \
         keyentry with points pt 6 ps 0.9 lw 1.2 lc rgb '#444444' title 'validation'
}
unset multiplot
