
set terminal pngcairo size 640,360 font 'sans,10'
set output '/work/main/bench/results/20261129-2352-vm-bodies/charts/http-100k.png'
set title "HTTP GET 100 KiB, keep-alive"
set ylabel "MiB/s"
set style fill solid 0.6 border -1
set boxwidth 0.6
set yrange [0:*]
set grid ytics
set xtics nomirror
set key off
plot '/work/main/bench/results/20261129-2352-vm-bodies/charts/http-100k.dat' using 0:2:5:xtic(1) with boxes lc rgb variable, \
     '' using 0:2:3:4 with yerrorbars lc rgb "black" pt 0
