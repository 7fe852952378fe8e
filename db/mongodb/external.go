package mongodb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fieldbench/fieldbench/cluster"
)

// An external MongoDB is asked, member by member (a direct connection to
// each, as the mongodb engine does; no credentials), with the official Go
// driver the adapter uses:
//
//   - version: buildInfo (FerretDB answers it too, and names itself);
//   - members and data movement: replSetGetStatus of the first member that
//     answers: a member in PRIMARY, SECONDARY or ARBITER state is up; one
//     in STARTUP, STARTUP2 (initial sync), RECOVERING or ROLLBACK is
//     copying data. A server without replication (FerretDB here, a
//     standalone mongod) answers CommandNotFound or NoReplicationEnabled:
//     each member that answers hello is then a member of its own, and no
//     data moves between them;
//   - resources: serverStatus mem.resident (MiB) and extra_info's
//     user_time_us + system_time_us (Linux).
//
// Verified here against FerretDB 1.24.2 only (`cluster up mongodb`): it
// answers buildInfo, hello and serverStatus, but has no replSetGetStatus
// and no mem or extra_info in serverStatus. So replica-set membership, data
// movement and the resource figures are NOT VERIFIED HERE
// (mongoNotVerified): they follow MongoDB's documented answers.

// mongoRemote is the mongodb engine's remote side
// (cluster.Single.External).
var mongoRemote = cluster.RemoteDB{DSN: mongoRemoteDSN, Version: mongoRemoteVersion, Members: mongoRemoteMembers, Resources: mongoRemoteResources,
	Reported: []string{"cpu", "rss"}, Source: mongoRemoteSource, Status: mongoRemoteStatus, Moving: mongoRemoteMoving}

// mongoNotVerified says what of an external MongoDB no server here gave.
const mongoNotVerified = "not verified here (FerretDB has neither): replica-set membership and data movement (replSetGetStatus), cpu and rss (serverStatus extra_info, mem)"

// mongoRemoteSource says where an external MongoDB's figures come from.
const mongoRemoteSource = "serverStatus of each member: cpu = extra_info.user_time_us + system_time_us, rss = mem.resident MiB (" + mongoNotVerified + ")"

// mongoBuildInfo is what buildInfo says of the server, as the engine
// (FerretDB's start and status), the external side (version) and the
// adapter (ServerOf) read it: FerretDB adds ferretdbVersion ("v1.24.2")
// beside the MongoDB version it claims.
type mongoBuildInfo struct {
	Version         string `bson:"version"`
	FerretDBVersion string `bson:"ferretdbVersion"`
}

// mongoVersionString is the server's version as buildInfo gives it; a
// FerretDB says which, beside the MongoDB version it claims.
func mongoVersionString(bi mongoBuildInfo) (string, error) {
	if bi.Version == "" {
		return "", errors.New("mongodb: buildInfo names no version")
	}
	if bi.FerretDBVersion != "" {
		return bi.Version + " (FerretDB " + strings.TrimPrefix(bi.FerretDBVersion, "v") + ")", nil
	}
	return bi.Version, nil
}

type mongoHello struct {
	IsWritablePrimary bool   `bson:"isWritablePrimary"`
	Secondary         bool   `bson:"secondary"`
	SetName           string `bson:"setName"`
}

// mongoRole is a member's role as hello says it.
func mongoRole(h mongoHello) string {
	switch {
	case h.SetName == "":
		return "standalone"
	case h.IsWritablePrimary:
		return "primary"
	case h.Secondary:
		return "secondary"
	}
	return "other"
}

type mongoReplStatus struct {
	Set     string `bson:"set"`
	Members []struct {
		Name     string `bson:"name"`
		StateStr string `bson:"stateStr"`
	} `bson:"members"`
}

// mongoUpStates are the replica-set states of a member that serves.
var mongoUpStates = map[string]bool{"PRIMARY": true, "SECONDARY": true, "ARBITER": true}

// mongoCopyingStates are those of a member copying data to catch up.
var mongoCopyingStates = map[string]bool{"STARTUP": true, "STARTUP2": true, "RECOVERING": true, "ROLLBACK": true}

func mongoMembersOf(rs *mongoReplStatus) map[string]string {
	out := map[string]string{}
	for _, m := range rs.Members {
		if mongoUpStates[m.StateStr] {
			out[m.Name] = "up"
		} else {
			out[m.Name] = strings.ToLower(m.StateStr)
		}
	}
	return out
}

func mongoMovingOf(rs *mongoReplStatus) (bool, string) {
	var why []string
	for _, m := range rs.Members {
		if mongoCopyingStates[m.StateStr] {
			why = append(why, m.Name+" "+m.StateStr)
		}
	}
	sort.Strings(why)
	return len(why) > 0, strings.Join(why, ", ")
}

type mongoServerStatus struct {
	Mem *struct {
		Resident *int64 `bson:"resident"`
	} `bson:"mem"`
	ExtraInfo *struct {
		User *int64 `bson:"user_time_us"`
		Sys  *int64 `bson:"system_time_us"`
	} `bson:"extra_info"`
}

// mongoResourcesOf reads serverStatus's figures; absent ones are NaN.
func mongoResourcesOf(ss mongoServerStatus) cluster.NodeResources {
	r := cluster.NodeResources{CPUSeconds: math.NaN(), RSSBytes: math.NaN(), DiskBytes: math.NaN()}
	if ss.Mem != nil && ss.Mem.Resident != nil {
		r.RSSBytes = float64(*ss.Mem.Resident) * (1 << 20)
	}
	if x := ss.ExtraInfo; x != nil && x.User != nil && x.Sys != nil {
		r.CPUSeconds = float64(*x.User+*x.Sys) / 1e6
	}
	return r
}

// mongoNoReplication is a server's answer to replSetGetStatus when it
// does not replicate: CommandNotFound (FerretDB) or NoReplicationEnabled
// (a standalone mongod).
func mongoNoReplication(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && (ce.Code == 59 || ce.Code == 76)
}

// mongoRun runs command on n (a direct connection) into out.
func mongoRun(ctx context.Context, n *cluster.Node, command string, out any) error {
	cl, err := mongoClient(n)
	if err != nil {
		return err
	}
	defer cl.Disconnect(context.Background())
	if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: command, Value: 1}}).Decode(out); err != nil {
		return fmt.Errorf("mongodb: %s of %s: %w", command, n.Addr(), err)
	}
	return nil
}

func mongoRemoteDSN(c *cluster.Cluster) string {
	var hosts []string
	for _, n := range c.Nodes {
		if n.Role != cluster.RoleDecommissioned {
			hosts = append(hosts, n.Addr())
		}
	}
	return "mongodb://" + strings.Join(hosts, ",") + "/" + mongoDatabase
}

func mongoRemoteVersion(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (string, error) {
	var bi mongoBuildInfo
	if err := mongoRun(ctx, n, "buildInfo", &bi); err != nil {
		return "", err
	}
	return mongoVersionString(bi)
}

// mongoReplStatusOf asks the running members in turn for
// replSetGetStatus: nil, nil when the first that answers does not
// replicate.
func mongoReplStatusOf(ctx context.Context, c *cluster.Cluster) (*mongoReplStatus, error) {
	var errs []error
	for _, n := range c.Nodes {
		if !n.Running() || n.Role == cluster.RoleDecommissioned {
			continue
		}
		var rs mongoReplStatus
		err := mongoRun(ctx, n, "replSetGetStatus", &rs)
		if err == nil {
			return &rs, nil
		}
		if mongoNoReplication(err) {
			return nil, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("mongodb: no running member answered replSetGetStatus: %w", errors.Join(errs...))
}

// mongoPerMember asks every running member, with a short timeout each.
func mongoPerMember(ctx context.Context, c *cluster.Cluster, ask func(ctx context.Context, n *cluster.Node) error) map[string]error {
	out := map[string]error{}
	for _, n := range c.Nodes {
		if !n.Running() || n.Role == cluster.RoleDecommissioned {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, cluster.RemoteAskTimeout)
		out[n.Name] = ask(qctx, n)
		cancel()
	}
	return out
}

func mongoRemoteMembers(ctx context.Context, c *cluster.Cluster) (map[string]string, error) {
	rs, err := mongoReplStatusOf(ctx, c)
	if err != nil {
		return nil, err
	}
	if rs != nil {
		return mongoMembersOf(rs), nil
	}
	// No replication: every member that answers is one of its own.
	out := map[string]string{}
	for name, err := range mongoPerMember(ctx, c, func(ctx context.Context, n *cluster.Node) error {
		var h mongoHello
		return mongoRun(ctx, n, "hello", &h)
	}) {
		if n, _ := c.Node(name); n != nil && err == nil {
			out[n.Addr()] = "up"
		}
	}
	return out, nil
}

func mongoRemoteStatus(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	var states map[string]string
	if rs, err := mongoReplStatusOf(ctx, c); err == nil && rs != nil {
		states = map[string]string{}
		for _, m := range rs.Members {
			states[m.Name] = m.StateStr
		}
	}
	out := cluster.RemoteStatuses(ctx, c, "", func(ctx context.Context, n *cluster.Node, st *cluster.NodeStatus) error {
		var h mongoHello
		if err := mongoRun(ctx, n, "hello", &h); err != nil {
			return err
		}
		st.Role = mongoRole(h)
		return nil
	})
	for i := range out {
		st := &out[i]
		if s, ok := states[st.Addr]; ok {
			st.Detail["replset_state"] = s
			if !mongoUpStates[s] && st.State == "up" {
				st.State = strings.ToLower(s)
			}
		}
	}
	return out, nil
}

func mongoRemoteMoving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	rs, err := mongoReplStatusOf(ctx, c)
	if err != nil {
		return false, "", err
	}
	if rs == nil {
		return false, "", nil // no replication: nothing copies between members
	}
	moving, why := mongoMovingOf(rs)
	return moving, why, nil
}

func mongoRemoteResources(ctx context.Context, c *cluster.Cluster) (map[string]cluster.NodeResources, error) {
	out := map[string]cluster.NodeResources{}
	var errs []error
	for name, err := range mongoPerMember(ctx, c, func(ctx context.Context, n *cluster.Node) error {
		var ss mongoServerStatus
		if err := mongoRun(ctx, n, "serverStatus", &ss); err != nil {
			return err
		}
		out[n.Name] = mongoResourcesOf(ss)
		return nil
	}) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
