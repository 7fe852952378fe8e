package sqlserver

import (
	"context"
	"fmt"

	"github.com/fieldbench/fieldbench/cluster"
)

// An external SQL Server is one server (Always On availability groups
// and their data movement are not asked). It is asked, without
// credentials, with a TDS pre-login (TDSPrelogin), whose VERSION option
// every TDS server sends before any login: the version it announces, and
// whether it answers at all. SERVERPROPERTY and @@VERSION need a login
// (the DSN's credentials), which the external engine's queries never use
// (docs/experiments.md, "External clusters"); no resource figure is asked.
//
// Verified here against Iridium SQL 0.1.13 only (`cluster up sqlserver`),
// which announces 16.0.4105 (SQL Server 2022's number): an external
// cluster's version is what the server claims, and a stand-in claims a
// real one. Microsoft SQL Server's pre-login is not verified here.

// sqlRemote is the sqlserver engine's remote side
// (cluster.Single.External).
var sqlRemote = cluster.RemoteDB{DSN: sqlRemoteDSN, Version: sqlRemoteVersion, Members: sqlRemoteMembers,
	Status: sqlRemoteStatus, Moving: sqlRemoteMoving}

// sqlRemoteDSN is the adapter's DSN without credentials: a real SQL
// Server needs the scenario's dsn with user and password.
func sqlRemoteDSN(c *cluster.Cluster) string {
	for _, n := range c.Nodes {
		if n.Role != cluster.RoleDecommissioned {
			return fmt.Sprintf("sqlserver://%s?database=%s", n.Addr(), sqlServerDatabase)
		}
	}
	return ""
}

func sqlRemoteVersion(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (string, error) {
	v, err := TDSPrelogin(ctx, n.Addr())
	if err != nil {
		return "", fmt.Errorf("sqlserver: pre-login of %s: %w", n.Addr(), err)
	}
	return v, nil
}

// sqlRemoteMembers: each member that answers a pre-login is up.
func sqlRemoteMembers(ctx context.Context, c *cluster.Cluster) (map[string]string, error) {
	out := map[string]string{}
	for _, st := range sqlRemoteStatusOf(ctx, c) {
		if st.State == "up" {
			out[st.Addr] = "up"
		}
	}
	return out, nil
}

func sqlRemoteStatusOf(ctx context.Context, c *cluster.Cluster) []cluster.NodeStatus {
	return cluster.RemoteStatuses(ctx, c, "standalone", func(ctx context.Context, n *cluster.Node, st *cluster.NodeStatus) error {
		v, err := TDSPrelogin(ctx, n.Addr())
		if err != nil {
			return err
		}
		st.Detail["version"] = v
		return nil
	})
}

func sqlRemoteStatus(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	return sqlRemoteStatusOf(ctx, c), nil
}

// sqlRemoteMoving: one server, nothing moves between servers.
func sqlRemoteMoving(context.Context, *cluster.Cluster) (bool, string, error) { return false, "", nil }
