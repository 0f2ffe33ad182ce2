# scripts/plots/digits_bn_gap.gp - BatchNorm's train/eval gap in
# examples/digits_norms.c: validation accuracy with the running statistics
# (eval mode) and with each batch's own statistics (training mode, batches
# of the training batch size), against batch size, mean over the seeds
# with error bars of one standard deviation. It reads
# <outdir>/summary.csv and writes <outdir>/bn_gap.png; by hand:
#   gnuplot -e "outdir='out/digits_norms'; subtitle=''" scripts/plots/digits_bn_gap.gp
if (!exists("outdir")) outdir = 'out/digits_norms'
if (!exists("subtitle")) subtitle = ''
if (!exists("mlp")) mlp = 0
norm = mlp ? 'BatchNorm1d in an MLP' : 'BatchNorm2d in a small CNN'

set terminal pngcairo size 960,640 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/bn_gap.png'
set datafile separator ','
set title norm." on the 8x8 digits: running statistics against batch statistics\n{/*0.85 ".subtitle."}"
set xlabel 'batch size (training, and the batches of the batch-statistics evaluation)'
set ylabel 'validation accuracy (%)'
set logscale x 2
set xrange [1.5:170]
set xtics (2, 4, 8, 32, 128)
set grid xtics ytics lc rgb '#dddddd'
set key bottom right
set bars small

of(v, c) = strcol(1) eq v ? 100 * column(c) : NaN
# summary.csv: norm,batch_size,runs,mean,std,min,max,batch_stats_mean,batch_stats_std
plot \
  outdir.'/summary.csv' skip 1 using 2:(of('batch', 4)):(of('batch', 5)) with yerrorlines lw 2 lc rgb '#1b9e77' title 'running statistics (eval mode)', \
  '' skip 1 using 2:(of('batch', 8)):(of('batch', 9)) with yerrorlines lw 2 dt 2 lc rgb '#1b9e77' title 'batch statistics (training mode)'
