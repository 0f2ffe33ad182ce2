# scripts/plots/diag_weight_grads.gp - makemore part 3's weight-gradient
# plot for one variant of examples/deep_mlp_diagnostics.c: the
# distribution of dL/dW for every 2-D weight W (each Linear's, the output
# layer's last; 100-bin density histograms drawn as lines), at the first
# step (initial weights) and at the last. The legends give grad:data =
# std(dL/dW) / std(W): a weight whose ratio stands out is trained much
# faster or slower than the others. It reads <outdir>/histograms.csv and
# writes <outdir>/weight_grads_<variant>.png. The demo sets outdir,
# variant, label, subtitle, nweights, step_a, step_b and the legends
# key_wgrad_{a,b}_<weight>, then loads this file; by hand:
#   gnuplot -e "outdir='out/deep_mlp_diagnostics'; variant='batchnorm'" scripts/plots/diag_weight_grads.gp
if (!exists("outdir")) outdir = 'out/deep_mlp_diagnostics'
if (!exists("variant")) variant = 'batchnorm'
if (!exists("label")) label = variant
if (!exists("subtitle")) subtitle = ''
f = outdir.'/histograms.csv'
set datafile separator ','
# without the demo's settings: the layers and steps found in the file
if (!exists("nweights")) { stats f skip 1 using (strcol(3) eq 'weight_grad' ? column(4) : NaN) nooutput; nweights = int(STATS_max) }
if (!exists("step_a")) { stats f skip 1 using 2 nooutput; step_a = int(STATS_min); step_b = int(STATS_max) }

set terminal pngcairo size 1600,720 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/weight_grads_'.variant.'.png'

# density of one layer at one step (other rows skipped: NaN breaks the line)
sel(s, l) = (strcol(1) eq variant && column(2) == s && strcol(3) eq 'weight_grad' && column(4) == l) ? column(6) : NaN
key(p, l) = exists(sprintf('key_wgrad_%s_%d', p, l)) ? value(sprintf('key_wgrad_%s_%d', p, l)) : sprintf('weight %d', l)
shade(l) = nweights > 1 ? (l - 1.0) / (nweights - 1) : 0
set palette defined (0 '#f4a582', 0.35 '#d6604d', 0.7 '#4393c3', 1 '#053061')
unset colorbox

set xlabel 'dL/dW' offset 0,0.2
set ylabel 'density'
set format x '%g'
set grid xtics ytics lc rgb '#dddddd'
# the legend under each plot, one line per weight (in columns when deep)
if (nweights <= 9) { set key below left Left reverse width -6 maxcols 1; set bmargin nweights + 4 } else { set key below left Left reverse width -6; set bmargin 12 }

set multiplot layout 1,2 title "Weight-gradient distribution of each 2-D weight: ".label."  (dashed: the output layer)\n{/*0.85 ".subtitle."}"
# each panel's x range: symmetric, wide enough for the hidden weights' bins
# (the output layer's gradients are usually much wider: its dashed curve
# then runs off the sides, flat)
reach(s) = (strcol(1) eq variant && column(2) == s && strcol(3) eq 'weight_grad' && column(4) < nweights) ? abs(column(5)) : NaN
stats f skip 1 using (reach(step_a)) nooutput
set xrange [-1.05 * STATS_max : 1.05 * STATS_max]
set title sprintf('step %d: first forward pass, initial weights', step_a)
plot for [l=1:nweights-1] f skip 1 using 5:(sel(step_a, l)) with lines lw 1.5 lc palette frac shade(l) title key('a', l), \
     f skip 1 using 5:(sel(step_a, nweights)) with lines lw 1.5 dt 2 lc palette frac 1 title key('a', nweights)
stats f skip 1 using (reach(step_b)) nooutput
set xrange [-1.05 * STATS_max : 1.05 * STATS_max]
set title sprintf('step %d: the last', step_b)
plot for [l=1:nweights-1] f skip 1 using 5:(sel(step_b, l)) with lines lw 1.5 lc palette frac shade(l) title key('b', l), \
     f skip 1 using 5:(sel(step_b, nweights)) with lines lw 1.5 dt 2 lc palette frac 1 title key('b', nweights)
unset multiplot
