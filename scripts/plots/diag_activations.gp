# scripts/plots/diag_activations.gp - makemore part 3's activation plot for
# one variant of examples/deep_mlp_diagnostics.c: the distribution of every
# Tanh layer's output (100-bin density histograms drawn as lines, one per
# layer, deeper layers darker), at the first step (initial weights) and at
# the last. Saturated units pile up at -1 and +1. It reads
# <outdir>/histograms.csv and writes <outdir>/activations_<variant>.png.
# The demo sets outdir, variant, label, subtitle, depth, step_a, step_b and
# the legends key_act_{a,b}_<layer>, then loads this file; by hand:
#   gnuplot -e "outdir='out/deep_mlp_diagnostics'; variant='batchnorm'" scripts/plots/diag_activations.gp
if (!exists("outdir")) outdir = 'out/deep_mlp_diagnostics'
if (!exists("variant")) variant = 'batchnorm'
if (!exists("label")) label = variant
if (!exists("subtitle")) subtitle = ''
f = outdir.'/histograms.csv'
set datafile separator ','
# without the demo's settings: the layers and steps found in the file
if (!exists("depth")) { stats f skip 1 using (strcol(3) eq 'activation' ? column(4) : NaN) nooutput; depth = int(STATS_max) }
if (!exists("step_a")) { stats f skip 1 using 2 nooutput; step_a = int(STATS_min); step_b = int(STATS_max) }

set terminal pngcairo size 1600,720 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/activations_'.variant.'.png'

# density of one layer at one step (other rows skipped: NaN breaks the line)
sel(s, l) = (strcol(1) eq variant && column(2) == s && strcol(3) eq 'activation' && column(4) == l) ? column(6) : NaN
key(p, l) = exists(sprintf('key_act_%s_%d', p, l)) ? value(sprintf('key_act_%s_%d', p, l)) : sprintf('layer %d (tanh)', l)
shade(l) = depth > 1 ? (l - 1.0) / (depth - 1) : 0
set palette defined (0 '#f4a582', 0.35 '#d6604d', 0.7 '#4393c3', 1 '#053061')
unset colorbox

set xlabel 'tanh output t' offset 0,0.4
set ylabel 'density'
set xrange [-1.05:1.05]
set grid xtics ytics lc rgb '#dddddd'
# the legend under each plot, one line per layer (in columns when deep)
if (depth <= 8) { set key below left Left reverse width -6 maxcols 1; set bmargin depth + 4 } else { set key below left Left reverse width -6; set bmargin 12 }
set arrow 1 from -0.97, graph 0 to -0.97, graph 1 nohead dt 3 lc rgb '#888888'
set arrow 2 from 0.97, graph 0 to 0.97, graph 1 nohead dt 3 lc rgb '#888888'

set multiplot layout 1,2 title "Activation distribution of each tanh layer: ".label."  (dotted: |t| = 0.97, saturated beyond)\n{/*0.85 ".subtitle."}"
set title sprintf('step %d: first forward pass, initial weights', step_a)
plot for [l=1:depth] f skip 1 using 5:(sel(step_a, l)) with lines lw 1.5 lc palette frac shade(l) title key('a', l)
set title sprintf('step %d: the last', step_b)
plot for [l=1:depth] f skip 1 using 5:(sel(step_b, l)) with lines lw 1.5 lc palette frac shade(l) title key('b', l)
unset multiplot
