# Plots crawl-bench's CSV (bench/README.md): gnuplot -e "in='crawl.csv'; out='crawl.png'" crawl_plot.gp
if (!exists("in")) in = 'crawl.csv'
if (!exists("out")) out = 'crawl.png'
set terminal pngcairo size 900,700 font ",10"
set output out
set datafile separator ","
set key autotitle columnhead
set multiplot layout 2,1 title "A crawl compressed in time: documents, disk and CheckAndInsert latency by simulated day"
set xlabel "simulated day"
set ylabel "documents (thousands)"
set y2label "disk (MB)"
set ytics nomirror
set y2tics
set key top left
plot in using 1:($2/1000) with lines lw 2 title "documents stored", \
     in using 1:($4/1e6) axes x1y2 with lines lw 2 title "table files (MB)", \
     in using 1:($3/1e6) axes x1y2 with lines title "all files, logs included (MB)"
set ylabel "latency from when due (ms)"
unset y2label
unset y2tics
set logscale y
set key top right
plot in using 1:11 with lines title "p50", \
     in using 1:12 with lines title "p99", \
     in using 1:13 with lines title "p99.9", \
     in using 1:14 with points pt 7 ps 0.4 title "max"
unset multiplot
