# scripts/plots/diag_update_ratio.gp - makemore part 3's update-to-data
# plot for examples/deep_mlp_diagnostics.c: log10(std(lr * dL/dW) / std(W))
# for every 2-D weight W after every SGD step, one panel per variant, with
# the reference line at -3 (an update about 1/1000 of the weight, which
# makemore calls healthy). Lines far below -3 learn slowly, far above
# change too fast. It reads <outdir>/update_ratio.csv and writes
# <outdir>/update_ratio.png. The demo sets outdir, subtitle, nweights,
# nvariants and variant_<i>, label_<i> for each panel, then loads this
# file; by hand:
#   gnuplot -e "outdir='out/deep_mlp_diagnostics'" scripts/plots/diag_update_ratio.gp
if (!exists("outdir")) outdir = 'out/deep_mlp_diagnostics'
if (!exists("subtitle")) subtitle = ''
if (!exists("nvariants")) {
    nvariants = 4
    variant_1 = 'none'; label_1 = 'no norm'
    variant_2 = 'batchnorm'; label_2 = 'BatchNorm'
    variant_3 = 'layernorm'; label_3 = 'LayerNorm'
    variant_4 = 'none_gain1'; label_4 = 'no norm, gain 1'
}
f = outdir.'/update_ratio.csv'
set datafile separator ','
# update_ratio.csv columns: variant,step,weight_1,...,weight_<nweights>
if (!exists("nweights")) { stats f skip 1 nooutput; nweights = STATS_columns - 2 }

set terminal pngcairo size 1500,1000 enhanced font 'Sans,11' linewidth 1.5
set output outdir.'/update_ratio.png'

# weight w's ratio in one variant's rows (the others skipped)
sel(v, w) = strcol(1) eq v ? column(2 + w) : NaN
shade(w) = nweights > 2 ? (w - 1.0) / (nweights - 2) : 0
set palette defined (0 '#f4a582', 0.35 '#d6604d', 0.7 '#4393c3', 1 '#053061')
unset colorbox

# one y range for every panel, so that they compare at a glance (the demo
# gives it as ylo, yhi)
if (!exists("ylo")) {
    ylo = -4; yhi = -2
    do for [w = 1:nweights] { stats f skip 1 using (column(2 + w)) nooutput; ylo = STATS_min < ylo ? STATS_min : ylo; yhi = STATS_max > yhi ? STATS_max : yhi }
}
set yrange [floor(ylo) : ceil(yhi)]
set xlabel 'step'
set ylabel 'log10(std(lr * grad) / std(W))'
set grid xtics ytics lc rgb '#dddddd'
set key bottom right opaque box maxrows 4 width -2

set multiplot layout 2,(nvariants + 1) / 2 title "Update-to-data ratio of each 2-D weight per step (dashed line: -3, about 1e-3 of the weight per step)\n{/*0.85 ".subtitle."}"
do for [i = 1:nvariants] {
    v = value(sprintf('variant_%d', i))
    set title value(sprintf('label_%d', i))
    plot for [w = 1:nweights-1] f skip 1 using 2:(sel(v, w)) with lines lw 1 lc palette frac shade(w) title sprintf('weight %d', w), \
         f skip 1 using 2:(sel(v, nweights)) with lines lw 1 lc rgb '#999999' title sprintf('weight %d (output)', nweights), \
         -3 with lines dt 2 lw 1.5 lc rgb '#333333' title '-3'
}
unset multiplot
