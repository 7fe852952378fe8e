package clustertest

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ListenAddrs are the local addresses listening on port (from
// /proc/net/tcp and tcp6: state 0A), as "ip:port": what an engine's test
// asks to see that its server binds the node's address only (the
// engines' tests in the database folders, db/<name>).
func ListenAddrs(t testing.TB, port int) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "0A" {
				continue
			}
			ipHex, portHex, _ := strings.Cut(fs[1], ":")
			p, _ := strconv.ParseUint(portHex, 16, 16)
			if int(p) != port {
				continue
			}
			raw := make(net.IP, len(ipHex)/2)
			for i := range raw {
				v, _ := strconv.ParseUint(ipHex[2*i:2*i+2], 16, 8)
				raw[i] = byte(v)
			}
			// /proc prints each 32-bit word little-endian.
			for w := 0; w+4 <= len(raw); w += 4 {
				raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
			}
			out = append(out, net.JoinHostPort(raw.String(), strconv.Itoa(port)))
		}
	}
	return out
}
