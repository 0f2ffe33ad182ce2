# scripts/plots/ddp_loss.gp - the loss curves of examples/ddp_train.c:
# validation loss (solid) and training loss (dashed) per epoch of the
# data-parallel variants (local BatchNorm, SyncBatchNorm, LayerNorm) and
# the single-process full-batch run. It reads <outdir>/log.csv and writes
# <outdir>/loss.png. The example sets outdir and subtitle and loads this
# file; by hand:
#   gnuplot -e "outdir='out/ddp_train'; subtitle=''" scripts/plots/ddp_loss.gp
if (!exists("outdir")) outdir = 'out/ddp_train'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 960,640 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/loss.png'
set datafile separator ','
set title "Cross-entropy loss: data-parallel BatchNorm, local or synchronised, LayerNorm, and one process\n{/*0.85 ".subtitle."}"
set xlabel 'epoch'
set ylabel 'loss'
set grid xtics ytics lc rgb '#dddddd'
set key at screen 0.5, 0.05 center bottom horizontal maxrows 4 width 1 samplen 3
set label 1 "train: global loss over the epoch's batches, in training mode;  validation: after the epoch, in eval mode (running statistics)" at screen 0.5, 0.02 center font ',9'
set bmargin 11

# one variant's values of column c (the rows of the others are skipped)
of(v, c) = strcol(1) eq v ? column(c) : NaN
# log.csv columns: variant,epoch,train_loss,val_loss,val_acc
plot \
  outdir.'/log.csv' skip 1 using 2:(of('local_bn', 4)) with lines lw 2 lc rgb '#d95f02' title 'local BatchNorm, validation', \
  ''                skip 1 using 2:(of('local_bn', 3)) with lines lw 1.5 dt 2 lc rgb '#d95f02' title 'local BatchNorm, train', \
  ''                skip 1 using 2:(of('sync_bn', 4)) with lines lw 2 lc rgb '#1b9e77' title 'SyncBatchNorm, validation', \
  ''                skip 1 using 2:(of('sync_bn', 3)) with lines lw 1.5 dt 2 lc rgb '#1b9e77' title 'SyncBatchNorm, train', \
  ''                skip 1 using 2:(of('layernorm', 4)) with lines lw 2 lc rgb '#7570b3' title 'LayerNorm, validation', \
  ''                skip 1 using 2:(of('layernorm', 3)) with lines lw 1.5 dt 2 lc rgb '#7570b3' title 'LayerNorm, train', \
  ''                skip 1 using 2:(of('single', 4)) with points pt 6 ps 1 lc rgb '#000000' title 'one process, full batch, validation'
