# scripts/plots/diag_gradients.gp - makemore part 3's gradient plot for one
# variant of examples/deep_mlp_diagnostics.c: the distribution of dL/dt for
# every Tanh layer's output t (100-bin density histograms drawn as lines,
# one per layer, deeper layers darker), at the first step (initial weights)
# and at the last. Layers whose curves differ much in width pass gradients
# back unevenly (shrinking or growing with depth). It reads
# <outdir>/histograms.csv and writes <outdir>/gradients_<variant>.png.
# The demo sets outdir, variant, label, subtitle, depth, step_a, step_b and
# the legends key_grad_{a,b}_<layer>, then loads this file; by hand:
#   gnuplot -e "outdir='out/deep_mlp_diagnostics'; variant='batchnorm'" scripts/plots/diag_gradients.gp
if (!exists("outdir")) outdir = 'out/deep_mlp_diagnostics'
if (!exists("variant")) variant = 'batchnorm'
if (!exists("label")) label = variant
if (!exists("subtitle")) subtitle = ''
f = outdir.'/histograms.csv'
set datafile separator ','
# without the demo's settings: the layers and steps found in the file
if (!exists("depth")) { stats f skip 1 using (strcol(3) eq 'gradient' ? column(4) : NaN) nooutput; depth = int(STATS_max) }
if (!exists("step_a")) { stats f skip 1 using 2 nooutput; step_a = int(STATS_min); step_b = int(STATS_max) }

set terminal pngcairo size 1600,720 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/gradients_'.variant.'.png'

# density of one layer at one step (other rows skipped: NaN breaks the line)
sel(s, l) = (strcol(1) eq variant && column(2) == s && strcol(3) eq 'gradient' && column(4) == l) ? column(6) : NaN
key(p, l) = exists(sprintf('key_grad_%s_%d', p, l)) ? value(sprintf('key_grad_%s_%d', p, l)) : sprintf('layer %d (tanh)', l)
shade(l) = depth > 1 ? (l - 1.0) / (depth - 1) : 0
set palette defined (0 '#f4a582', 0.35 '#d6604d', 0.7 '#4393c3', 1 '#053061')
unset colorbox

set xlabel 'dL/dt, the gradient of the tanh output' offset 0,0.2
set ylabel 'density'
set format x '%g'
set grid xtics ytics lc rgb '#dddddd'
# the legend under each plot, one line per layer (in columns when deep)
if (depth <= 8) { set key below left Left reverse width -6 maxcols 1; set bmargin depth + 4 } else { set key below left Left reverse width -6; set bmargin 12 }

set multiplot layout 1,2 title "Gradient distribution of each tanh layer's output: ".label."\n{/*0.85 ".subtitle."}"
# each panel's x range: symmetric, wide enough for every layer's bins
reach(s) = (strcol(1) eq variant && column(2) == s && strcol(3) eq 'gradient') ? abs(column(5)) : NaN
stats f skip 1 using (reach(step_a)) nooutput
set xrange [-1.05 * STATS_max : 1.05 * STATS_max]
set title sprintf('step %d: first forward pass, initial weights', step_a)
plot for [l=1:depth] f skip 1 using 5:(sel(step_a, l)) with lines lw 1.5 lc palette frac shade(l) title key('a', l)
stats f skip 1 using (reach(step_b)) nooutput
set xrange [-1.05 * STATS_max : 1.05 * STATS_max]
set title sprintf('step %d: the last', step_b)
plot for [l=1:depth] f skip 1 using 5:(sel(step_b, l)) with lines lw 1.5 lc palette frac shade(l) title key('b', l)
unset multiplot
