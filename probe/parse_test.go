package probe

import (
	"math"
	"testing"
)

// The texts below are captured from /proc on the development machine
// (Linux 6.18, Debian bookworm), trimmed where marked.

func TestParseStat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		line    string
		want    procStat
		wantErr bool
	}{
		{
			name: "plain",
			line: "1988 (sh) S 1981 1981 28855 0 -1 4194304 87 416 0 1 7 3 11 5 20 0 1 0 828135 2654208 357 18446744073709551615 94825795543040 94825795619769 140733926452576 0 0 0 0 0 65538 1 0 0 17 1 0 0 0 0 0 94825795649072 94825795654208 94825915756544 140733926459993 140733926460115 140733926460115 140733926461420 0\n",
			want: procStat{PID: 1988, Comm: "sh", State: 'S', PPID: 1981, UTime: 7, STime: 3, CUTime: 11, CSTime: 5, StartTicks: 828135, RSSPages: 357},
		},
		{
			name: "comm with spaces and parentheses",
			line: "42 (postgres: a) b (c) Z 7 42 42 0 -1 4194304 0 0 0 0 100 200 0 0 20 0 1 0 999 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0",
			want: procStat{PID: 42, Comm: "postgres: a) b (c", State: 'Z', PPID: 7, UTime: 100, STime: 200, StartTicks: 999},
		},
		{name: "truncated", line: "1 (init) S 0 1 1", wantErr: true},
		{name: "no comm", line: "1 init S 0", wantErr: true},
		{name: "bad number", line: "1 (x) S 0 1 1 0 -1 0 0 0 0 0 x 0 0 0 20 0 1 0 5 0 3", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(tt.line)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseStat: no error, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseStat:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseIO(t *testing.T) {
	t.Parallel()
	got, err := parseIO("rchar: 20982476\nwchar: 20971614\nsyscr: 38\nsyscw: 23\nread_bytes: 229376\nwrite_bytes: 20979712\ncancelled_write_bytes: 4096\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := (ioCounters{ReadBytes: 229376, WriteBytes: 20979712, CancelledWriteBytes: 4096}); got != want {
		t.Errorf("parseIO = %+v, want %+v", got, want)
	}
	if _, err := parseIO("rchar: 1\nwchar: 2\n"); err == nil {
		t.Error("parseIO without read_bytes: no error")
	}
}

func TestParseMachineFiles(t *testing.T) {
	t.Parallel()
	const smaps = "559d75ac5000-7ffe25974000 ---p 00000000 00:00 0                          [rollup]\nRss:                1732 kB\nPss:                 233 kB\nPss_Dirty:           116 kB\n"
	if rss, pss, err := parseRollup(smaps); err != nil || rss != 1732*1024 || pss != 233*1024 {
		t.Errorf("parseRollup = %d, %d, %v; want %d, %d", rss, pss, err, 1732*1024, 233*1024)
	}
	const meminfo = "MemTotal:       24684092 kB\nMemFree:        20767424 kB\nMemAvailable:   22306600 kB\nBuffers:           41768 kB\nCached:          1943132 kB\n"
	total, free, avail, err := parseMeminfo(meminfo)
	if err != nil || total != 24684092*1024 || free != 20767424*1024 || avail != 22306600*1024 {
		t.Errorf("parseMeminfo = %d %d %d %v", total, free, avail, err)
	}
	const stat = "cpu  781118 5192 356847 464565 25491 0 15353 3254 0 0\ncpu0 387548 2529 170494 246347 13045 0 4431 1615 0 0\nintr 1 2 3\n"
	cpu, err := parseCPULine(stat)
	want := cpuTimes{781118, 5192, 356847, 464565, 25491, 0, 15353, 3254}
	if err != nil || cpu != want {
		t.Errorf("parseCPULine = %+v, %v; want %+v", cpu, err, want)
	}
	if _, err := parseCPULine("cpu0 1 2 3 4 5 6 7 8\n"); err == nil {
		t.Error("parseCPULine without aggregate line: no error")
	}
	in, out, err := parseVMStat("nr_free_pages 5191856\npgpgin 387569941\npgpgout 249685816\npswpin 0\n")
	if err != nil || in != 387569941*1024 || out != 249685816*1024 {
		t.Errorf("parseVMStat = %d %d %v", in, out, err)
	}
	const netdev = "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
		"    lo: 39272567174 13237367    0    0    0     0          0         0 39272567175 13237367    0    0    0     0       0          0\n" +
		"  ifb0:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n"
	rx, tx, err := parseNetDev(netdev, "lo")
	if err != nil || rx != 39272567174 || tx != 39272567175 {
		t.Errorf("parseNetDev lo = %d %d %v", rx, tx, err)
	}
	if _, _, err := parseNetDev(netdev, "eth0"); err == nil {
		t.Error("parseNetDev of a missing interface: no error")
	}
}

func TestOwnershipStats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		owned    map[string]float64
		mean, sd float64
	}{
		// (10+20+30)/3 = 20; population SD = sqrt((100+0+100)/3) = 8.16497
		{"three", map[string]float64{"a": 10, "b": 20, "c": 30}, 20, math.Sqrt(200.0 / 3)},
		{"one node", map[string]float64{"n1": 100}, 100, 0},
		// six nodes, perfectly even ownership
		{"even six", map[string]float64{"1": 1.0 / 6, "2": 1.0 / 6, "3": 1.0 / 6, "4": 1.0 / 6, "5": 1.0 / 6, "6": 1.0 / 6}, 1.0 / 6, 0},
		// 15,17,18,16,18,16: mean 100/6 = 16.6667; deviations² sum
		// 2.7778+0.1111+1.7778+0.4444+1.7778+0.4444 = 7.3333; /6 → SD 1.10554
		{"six uneven", map[string]float64{"a": 15, "b": 17, "c": 18, "d": 16, "e": 18, "f": 16}, 100.0 / 6, math.Sqrt(7.333333333333333 / 6)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, sd := OwnershipStats(tt.owned)
			if math.Abs(mean-tt.mean) > 1e-9 || math.Abs(sd-tt.sd) > 1e-9 {
				t.Errorf("OwnershipStats = %.6f ± %.6f, want %.6f ± %.6f", mean, sd, tt.mean, tt.sd)
			}
		})
	}
	if m, s := OwnershipStats(nil); !math.IsNaN(m) || !math.IsNaN(s) {
		t.Errorf("OwnershipStats(nil) = %v, %v; want NaN, NaN", m, s)
	}
}
