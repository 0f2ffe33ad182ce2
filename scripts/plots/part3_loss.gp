# scripts/plots/part3_loss.gp - the training loss of
# examples/makemore/part3_mlp.c: log10 of each step's loss (the lecture's
# plt.plot(lossi), every 10th step: 200000 points take gnuplot a minute)
# and its mean over each 1000 steps. It reads
# <outdir>/loss.csv and writes <outdir>/loss.png. The demo sets outdir and
# subtitle and loads this file; by hand:
#   gnuplot -e "outdir='out/makemore_part3'; subtitle=''" scripts/plots/part3_loss.gp
if (!exists("outdir")) outdir = 'out/makemore_part3'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 960,540 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/loss.png'
set datafile separator ','
set datafile missing ''
set title "log10 of the training loss per step\n{/*0.85 ".subtitle."}"
set xlabel 'step'
set ylabel 'log10(loss)'
set grid xtics ytics lc rgb '#dddddd'
set key top right
# loss.csv columns: step,loss,log10_loss,mean_log10_loss_1000
plot \
  outdir.'/loss.csv' skip 1 every 10 using 1:3 with lines lw 0.5 lc rgb '#a6cee3' title 'every 10th step (lossi)', \
  ''                 skip 1 using 1:4 with linespoints pt 7 ps 0.4 lw 2 lc rgb '#1f78b4' title 'mean over 1000 steps'
