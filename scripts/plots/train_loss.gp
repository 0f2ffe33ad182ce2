# scripts/plots/train_loss.gp - the loss curves of examples/train_mlp.c:
# training loss (dashed) and validation loss (solid) per epoch for the
# three variants on one plot, one colour per variant, log scale (the line
# styles of train_accuracy.gp). It reads <outdir>/log.csv and
# writes <outdir>/loss.png. The demo sets outdir and subtitle and loads
# this file; by hand:
#   gnuplot -e "outdir='out/train_mlp'; subtitle=''" scripts/plots/train_loss.gp
if (!exists("outdir")) outdir = 'out/train_mlp'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 960,640 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/loss.png'
set datafile separator ','
set title "Cross-entropy loss: the same MLP without normalisation, with BatchNorm, with LayerNorm\n{/*0.85 ".subtitle."}"
set xlabel 'epoch'
set ylabel 'loss (log scale)'
set logscale y
# the data's own range (gnuplot would widen a log axis to whole decades)
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics (0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10)
set format y '%g'
set grid xtics ytics lc rgb '#dddddd'
set key at screen 0.5, 0.05 center bottom horizontal maxrows 2 width 1 samplen 3
set label 1 "train: mean over the epoch's batches, in training mode (BatchNorm normalises with each batch's statistics);  validation: after the epoch, in eval mode" at screen 0.5, 0.02 center font ',9'
set bmargin 8

# one variant's values of column c (the rows of the others are skipped)
of(v, c) = strcol(1) eq v ? column(c) : NaN
# log.csv columns: variant,epoch,step,train_loss,train_acc,val_loss,val_acc
plot \
  outdir.'/log.csv' skip 1 using 2:(of('none', 4)) with lines lw 1.5 dt 2 lc rgb '#d95f02' title 'no norm, train', \
  ''                skip 1 using 2:(of('none', 6)) with lines lw 2 lc rgb '#d95f02' title 'no norm, validation', \
  ''                skip 1 using 2:(of('batchnorm', 4)) with lines lw 1.5 dt 2 lc rgb '#1b9e77' title 'BatchNorm, train', \
  ''                skip 1 using 2:(of('batchnorm', 6)) with lines lw 2 lc rgb '#1b9e77' title 'BatchNorm, validation', \
  ''                skip 1 using 2:(of('layernorm', 4)) with lines lw 1.5 dt 2 lc rgb '#7570b3' title 'LayerNorm, train', \
  ''                skip 1 using 2:(of('layernorm', 6)) with lines lw 2 lc rgb '#7570b3' title 'LayerNorm, validation'
