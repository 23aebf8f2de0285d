
set terminal pngcairo size 640,360 font 'sans,10'
set output '/work/main/bench/results/20261130-0001-vm-handshakes/charts/socks-handshakes.png'
set title "SOCKS5 handshakes"
set ylabel "setups/s"
set style fill solid 0.6 border -1
set boxwidth 0.6
set yrange [0:*]
set grid ytics
set xtics nomirror
set key off
plot '/work/main/bench/results/20261130-0001-vm-handshakes/charts/socks-handshakes.dat' using 0:2:5:xtic(1) with boxes lc rgb variable, \
     '' using 0:2:3:4 with yerrorbars lc rgb "black" pt 0
