# scripts/plots/ddp_accuracy.gp - the validation accuracy of
# examples/ddp_train.c per epoch: data-parallel local BatchNorm,
# SyncBatchNorm and LayerNorm, and the single-process full-batch run. It
# reads <outdir>/log.csv and writes <outdir>/accuracy.png. The example sets
# outdir and subtitle and loads this file; by hand:
#   gnuplot -e "outdir='out/ddp_train'; subtitle=''" scripts/plots/ddp_accuracy.gp
if (!exists("outdir")) outdir = 'out/ddp_train'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 960,640 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/accuracy.png'
set datafile separator ','
set title "Validation accuracy: data-parallel BatchNorm, local or synchronised, LayerNorm, and one process\n{/*0.85 ".subtitle."}"
set xlabel 'epoch'
set ylabel 'accuracy (%)'
set yrange [*:100]
set grid xtics ytics lc rgb '#dddddd'
set key at screen 0.5, 0.05 center bottom horizontal maxrows 2 width 1 samplen 3
set label 1 "after each epoch, in eval mode (running statistics; rank 0's for local BatchNorm)" at screen 0.5, 0.02 center font ',9'
set bmargin 8

of(v, c) = strcol(1) eq v ? 100 * column(c) : NaN
# log.csv columns: variant,epoch,train_loss,val_loss,val_acc
plot \
  outdir.'/log.csv' skip 1 using 2:(of('local_bn', 5)) with lines lw 2 lc rgb '#d95f02' title 'local BatchNorm', \
  ''                skip 1 using 2:(of('sync_bn', 5)) with lines lw 2 lc rgb '#1b9e77' title 'SyncBatchNorm', \
  ''                skip 1 using 2:(of('layernorm', 5)) with lines lw 2 lc rgb '#7570b3' title 'LayerNorm', \
  ''                skip 1 using 2:(of('single', 5)) with points pt 6 ps 1 lc rgb '#000000' title 'one process, full batch'
