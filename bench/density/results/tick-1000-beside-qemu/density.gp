# gnuplot script; run in this folder
set terminal pngcairo size 1400,1000
set output 'density.png'

set datafile missing '?'
set multiplot layout 2,2 title "lull density: tick guest, 1 vCPU/VM, 20 s window, median of 1; host 2 CPUs (vm, 2 CPUs, Linux 6.18.44-fc-v1300)" font ',12'
set grid
set key top left
set logscale x 2
set xrange [666.6666666666666:1500.0]
set xlabel 'concurrent VMs (N)'
set logscale y 10
set ylabel 'host CPU per VM, µs per second'
set title 'Host CPU per VM (flat: each VM costs the same however many)'
plot 'lull-deferrable.dat' using 1:($7*1e4) with linespoints lw 2 ps 1.2 lc rgb '#1b9e77' pt 7 title 'lull-deferrable', 'qemu.dat' using 1:($7*1e4) with linespoints lw 2 ps 1.2 lc rgb '#7570b3' pt 9 title 'qemu'
set logscale y 10
set ylabel 'host wakeups/s per VM'
set title 'Host wakeups per VM (voluntary context switches)'
plot 'lull-deferrable.dat' using 1:3 with linespoints lw 2 ps 1.2 lc rgb '#1b9e77' pt 7 title 'lull-deferrable', 'qemu.dat' using 1:3 with linespoints lw 2 ps 1.2 lc rgb '#7570b3' pt 9 title 'qemu'
unset logscale y
set yrange [0:*]
set ylabel 'MiB per VM'
set title 'Memory per VM: RSS (solid), PSS (dashed)'
plot 'lull-deferrable.dat' using 1:4 with linespoints lw 2 ps 1.2 lc rgb '#1b9e77' pt 7 title 'lull-deferrable', 'qemu.dat' using 1:4 with linespoints lw 2 ps 1.2 lc rgb '#7570b3' pt 9 title 'qemu', 'lull-deferrable.dat' using 1:5 with linespoints dt 2 lw 1 lc rgb '#1b9e77' pt 7 notitle, 'qemu.dat' using 1:5 with linespoints dt 2 lw 1 lc rgb '#7570b3' pt 9 notitle
set autoscale y
set logscale y 10
set ylabel 'µs'
set title 'Hard-timer lateness, p99 of the worst VM'
plot 'lull-deferrable.dat' using 1:6 with linespoints lw 2 ps 1.2 lc rgb '#1b9e77' pt 7 title 'lull-deferrable', 'qemu.dat' using 1:6 with linespoints lw 2 ps 1.2 lc rgb '#7570b3' pt 9 title 'qemu', 1000.0 with lines dt 2 lc rgb 'red' title 'p99 bound'
unset multiplot
