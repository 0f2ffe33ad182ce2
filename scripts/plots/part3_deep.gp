# scripts/plots/part3_deep.gp - the four diagnostic plots of makemore
# part 3 for examples/makemore/part3_deep.c: the density histograms of the
# last step's Tanh outputs, of their gradients and of the 2-D weights'
# gradients (one line per layer, as the lecture's plt.plot(hx[:-1], hy)),
# and log10 of the update:data ratio of every 2-D weight over the steps,
# with the lecture's reference line at -3. It reads <outdir>/histograms.csv
# (kind,layer,center,density) and <outdir>/update_ratio.csv (step, then
# one column per 2-D weight) and writes activations.png, gradients.png,
# weight_grads.png and update_ratio.png. The demo sets outdir and
# subtitle; by hand:
#   gnuplot -e "outdir='out/makemore_part3_deep'; subtitle=''" scripts/plots/part3_deep.gp
if (!exists("outdir")) outdir = 'out/makemore_part3_deep'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 1200,400 enhanced font 'Sans,11' linewidth 1.5
set datafile separator ','
set grid xtics ytics lc rgb '#dddddd'
set key top right
hist = outdir.'/histograms.csv'
# one kind and layer's rows of histograms.csv (the others are skipped)
# (x too, so that the other kinds' values do not widen the x range)
is(k, l) = strcol(1) eq k && column(2) == l
xof(k, l) = is(k, l) ? column(3) : NaN
of(k, l) = is(k, l) ? column(4) : NaN

set output outdir.'/activations.png'
set title "activation distribution (Tanh outputs, the last step)\n{/*0.85 ".subtitle."}"
set xlabel 'value'
set ylabel 'density'
plot for [l in "2 5 8 11 14"] hist skip 1 using (xof('act', l+0)):(of('act', l+0)) with lines title sprintf('layer %s (Tanh)', l)

set output outdir.'/gradients.png'
set title "gradient distribution (dL/d Tanh output, the last step)\n{/*0.85 ".subtitle."}"
set xlabel 'gradient'
plot for [l in "2 5 8 11 14"] hist skip 1 using (xof('grad', l+0)):(of('grad', l+0)) with lines title sprintf('layer %s (Tanh)', l)

set output outdir.'/weight_grads.png'
set title "weights gradient distribution (the last step)\n{/*0.85 ".subtitle."}"
set xlabel 'gradient'
plot for [p in "0 1 4 7 10 13 16"] hist skip 1 using (xof('wgrad', p+0)):(of('wgrad', p+0)) with lines title sprintf('param %s', p)

set output outdir.'/update_ratio.png'
set title "log10 of the update:data ratio std(lr * grad) / std(W) per step\n{/*0.85 ".subtitle."}"
set xlabel 'step'
set ylabel 'log10 ratio'
ud = outdir.'/update_ratio.csv'
set key autotitle columnhead noenhanced outside right
plot for [c=2:8] ud using 1:c with lines, -3 with lines dt 2 lc rgb 'black' title 'about 1e-3 is healthy'
