# scripts/plots/digits_accuracy.gp - the sweep of examples/digits_norms.c:
# validation accuracy against batch size for each normalisation, the mean
# over the seeds with error bars of one standard deviation. It reads
# <outdir>/summary.csv and writes <outdir>/accuracy.png. The program sets
# outdir, subtitle and mlp (1 for --model mlp) and loads this file; by hand:
#   gnuplot -e "outdir='out/digits_norms'; subtitle=''" scripts/plots/digits_accuracy.gp
if (!exists("outdir")) outdir = 'out/digits_norms'
if (!exists("subtitle")) subtitle = ''
if (!exists("mlp")) mlp = 0
model = mlp ? 'an MLP on the 64 pixels' : 'a small CNN'
norms = mlp ? 'BatchNorm1d' : 'BatchNorm'
layer = mlp ? 'LayerNorm (64 features)' : 'LayerNorm (C, H, W)'

set terminal pngcairo size 960,640 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/accuracy.png'
set datafile separator ','
set title "8x8 digits, ".model.": validation accuracy against batch size\n{/*0.85 ".subtitle."}"
set xlabel 'batch size'
set ylabel 'validation accuracy (%), eval mode'
set logscale x 2
set xrange [1.5:170]
set xtics (2, 4, 8, 32, 128)
set grid xtics ytics lc rgb '#dddddd'
set key bottom right
set bars small

# one norm's values of column c in percent (the others' rows skipped)
of(v, c) = strcol(1) eq v ? 100 * column(c) : NaN
# summary.csv: norm,batch_size,runs,mean,std,min,max,batch_stats_mean,batch_stats_std
plot \
  outdir.'/summary.csv' skip 1 using 2:(of('none', 4)):(of('none', 5)) with yerrorlines lw 2 lc rgb '#666666' title 'no norm', \
  '' skip 1 using 2:(of('batch', 4)):(of('batch', 5)) with yerrorlines lw 2 lc rgb '#1b9e77' title norms, \
  '' skip 1 using 2:(of('group', 4)):(of('group', 5)) with yerrorlines lw 2 lc rgb '#d95f02' title 'GroupNorm (4 groups)', \
  '' skip 1 using 2:(of('instance', 4)):(of('instance', 5)) with yerrorlines lw 2 lc rgb '#7570b3' title (mlp ? '' : 'InstanceNorm'), \
  '' skip 1 using 2:(of('layer', 4)):(of('layer', 5)) with yerrorlines lw 2 lc rgb '#e7298a' title layer
