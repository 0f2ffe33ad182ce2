# scripts/plots/train_accuracy.gp - the accuracy curves of
# examples/train_mlp.c: validation accuracy (solid) and training accuracy
# (dashed) per epoch for the three variants, one colour per variant (the
# line styles of train_loss.gp), with the 90% and 95% marks of the
# summary table, labelled. It reads <outdir>/log.csv and writes
# <outdir>/accuracy.png. The demo sets outdir and subtitle and loads this
# file; by hand:
#   gnuplot -e "outdir='out/train_mlp'; subtitle=''" scripts/plots/train_accuracy.gp
if (!exists("outdir")) outdir = 'out/train_mlp'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 960,640 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/accuracy.png'
set datafile separator ','
set title "Accuracy: the same MLP without normalisation, with BatchNorm, with LayerNorm\n{/*0.85 ".subtitle."}"
set xlabel 'epoch'
set ylabel 'accuracy (%)'
set yrange [*:100]
set grid xtics ytics lc rgb '#dddddd'
set key at screen 0.5, 0.05 center bottom horizontal maxrows 2 width 1 samplen 3
set label 1 "train: over the epoch's batches, in training mode (BatchNorm normalises with each batch's statistics);  validation: after the epoch, in eval mode" at screen 0.5, 0.02 center font ',9'
set bmargin 8
set arrow 1 from graph 0, first 95 to graph 1, first 95 nohead dt 3 lc rgb '#888888'
set arrow 2 from graph 0, first 90 to graph 1, first 90 nohead dt 3 lc rgb '#888888'
# the marks' names, inside the plot at its left edge, just above each line
set label 2 '95%' at graph 0.01, first 95 left offset 0, 0.6 font ',9' tc rgb '#666666'
set label 3 '90%' at graph 0.01, first 90 left offset 0, 0.6 font ',9' tc rgb '#666666'

# one variant's values of column c in percent (the others' rows skipped)
of(v, c) = strcol(1) eq v ? 100 * column(c) : NaN
# log.csv columns: variant,epoch,step,train_loss,train_acc,val_loss,val_acc
plot \
  outdir.'/log.csv' skip 1 using 2:(of('none', 7)) with lines lw 2 lc rgb '#d95f02' title 'no norm, validation', \
  ''                skip 1 using 2:(of('none', 5)) with lines lw 1.5 dt 2 lc rgb '#d95f02' title 'no norm, train', \
  ''                skip 1 using 2:(of('batchnorm', 7)) with lines lw 2 lc rgb '#1b9e77' title 'BatchNorm, validation', \
  ''                skip 1 using 2:(of('batchnorm', 5)) with lines lw 1.5 dt 2 lc rgb '#1b9e77' title 'BatchNorm, train', \
  ''                skip 1 using 2:(of('layernorm', 7)) with lines lw 2 lc rgb '#7570b3' title 'LayerNorm, validation', \
  ''                skip 1 using 2:(of('layernorm', 5)) with lines lw 1.5 dt 2 lc rgb '#7570b3' title 'LayerNorm, train'
