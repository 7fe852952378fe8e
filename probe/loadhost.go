package probe

import (
	"net/netip"
	"os"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// LoadHostEnv, set in a process's environment, says the process runs on a
// load host of a cluster's virtual network: "NAME ADDR NETNS". fieldbench
// sets it when it re-executes itself inside a load host's namespace (run
// --load-host), so the child does not do it again and its result records
// where it ran. It is read here, with the other facts of the machine a
// process runs on, so that probe needs nothing of the virtual network.
const LoadHostEnv = "FIELDBENCH_LOAD_HOST"

// LoadHostVar is the environment entry (LoadHostEnv=VALUE) that tells a
// process it runs on the load host name, at addr, in the network
// namespace netns.
func LoadHostVar(name string, addr netip.Addr, netns string) string {
	return LoadHostEnv + "=" + name + " " + addr.String() + " " + netns
}

// CurrentLoadHost is the load host this process runs on, from
// LoadHostEnv; false when it runs where it was started (or the value is
// not of LoadHostVar's form).
func CurrentLoadHost() (result.LoadHost, bool) {
	f := strings.Fields(os.Getenv(LoadHostEnv))
	if len(f) != 3 {
		return result.LoadHost{}, false
	}
	a, err := netip.ParseAddr(f[1])
	if err != nil {
		return result.LoadHost{}, false
	}
	return result.LoadHost{Name: f[0], Addr: a.String(), Netns: f[2]}, true
}
