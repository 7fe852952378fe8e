package report

import (
	"strings"
)

// Summary.Extra is flat so every workload and experiment can add figures.
// Experiments add many with a common prefix (a crash experiment's durability
// audit, a convergence probe's statistics overall and per node); one long
// alphabetical list would bury them, so each known prefix gets a table of
// its own and the rest stay in "Workload figures".

// extraGroup is a family of Extra keys with its own table.
type extraGroup struct {
	prefix, title string
	// order lists the keys (without prefix) shown first, in this order; the
	// others follow sorted.
	order []string
	// stats are the per-node figure names: a key prefix+NODE+"_"+stat goes
	// to a per-node table, nodes down and stats across.
	stats []string
}

var extraGroups = []extraGroup{
	{prefix: "audit_", title: "Durability audit",
		order: []string{"ok", "acknowledged", "lost", "stale", "never_acknowledged_present", "never_acknowledged_absent"}},
	{prefix: "reconnect_", title: "Time without service and reconnections",
		order: []string{"unavailable_seconds", "unavailable_longest_seconds", "dials", "dials_failed", "wait_seconds"}},
	{prefix: "convergence_", title: "Convergence",
		order: []string{"mean_ms", "sd_ms", "p50_ms", "p99_ms", "max_ms", "count", "timeouts"},
		stats: []string{"mean_ms", "sd_ms", "p50_ms", "p99_ms", "max_ms", "count", "timeouts"}},
}

// extraLabels names the audit figures for readers who have not read the code.
var extraLabels = map[string]string{
	"audit_ok":                              "read back intact (in the userline and every follower's timeline)",
	"audit_acknowledged":                    "writes acknowledged",
	"audit_lost":                            "lost (acknowledged, not read back)",
	"audit_stale":                           "stale (an older value read back)",
	"audit_never_acknowledged_present":      "not acknowledged, yet present",
	"audit_never_acknowledged_absent":       "not acknowledged, absent",
	"reconnect_unavailable_seconds":         "seconds without service (no operation succeeded)",
	"reconnect_unavailable_longest_seconds": "longest stretch without service (s)",
	"reconnect_dials":                       "connections dialled",
	"reconnect_dials_failed":                "dials refused or failed",
	"reconnect_wait_seconds":                "seconds waited out in backoff (summed over clients)",
	"operations_abandoned":                  "operations left in flight at the end (the driver ignored their cancellation)",
	"convergence_mean_ms":                   "mean time to visible",
	"convergence_sd_ms":                     "sd",
	"convergence_p50_ms":                    "p50",
	"convergence_p99_ms":                    "p99",
	"convergence_max_ms":                    "max",
	"convergence_count":                     "writes probed",
	"convergence_timeouts":                  "never visible before the timeout",

	// The dataset's figures are counted before the load starts: a run's
	// own posts and appends are not in them ("tweets" was read as the
	// tweets after the run).
	"tweets":           "tweets before the run (this run's posts not counted)",
	"follows":          "follows before the run",
	"users":            "users in the dataset",
	"articles":         "articles before the run",
	"total_bytes":      "article bytes before the run (final_total_bytes: after it)",
	"db_size_bytes":    "database size before the run",
	"populate_seconds": "seconds to load the dataset",
}

// extrasTable writes the workload-specific figures: one table per known
// prefix, then the rest, one row per key and one column per run.
func (p *page) extrasTable() {
	keys := map[string]bool{}
	for _, d := range p.data {
		for k := range d.summary.Extra {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return
	}
	grouped := map[string][]string{}                     // prefix -> overall keys
	perNode := map[string]map[string]map[string]string{} // prefix -> node -> stat -> key
	var rest []string
	for _, k := range sortedKeys(keys) {
		g, ok := groupOf(k)
		if !ok {
			rest = append(rest, k)
			continue
		}
		if node, stat, ok := g.nodeStat(k); ok {
			if perNode[g.prefix] == nil {
				perNode[g.prefix] = map[string]map[string]string{}
			}
			if perNode[g.prefix][node] == nil {
				perNode[g.prefix][node] = map[string]string{}
			}
			perNode[g.prefix][node][stat] = k
			continue
		}
		grouped[g.prefix] = append(grouped[g.prefix], k)
	}
	if len(rest) > 0 {
		p.printf("<h2>Workload figures</h2>\n")
		p.extraRows(rest, "figure", extraLabels)
	}
	for _, g := range extraGroups {
		if len(grouped[g.prefix]) == 0 && len(perNode[g.prefix]) == 0 {
			continue
		}
		p.printf("<h2>%s</h2>\n<div class=\"tables\">\n", esc(g.title))
		if ks := g.ordered(grouped[g.prefix]); len(ks) > 0 {
			p.extraRows(ks, "figure", extraLabels)
		}
		if nodes := perNode[g.prefix]; len(nodes) > 0 {
			p.nodeTable(g, nodes)
		}
		p.printf("</div>\n")
	}
}

// groupOf finds the group of key k.
func groupOf(k string) (extraGroup, bool) {
	for _, g := range extraGroups {
		if strings.HasPrefix(k, g.prefix) && len(k) > len(g.prefix) {
			return g, true
		}
	}
	return extraGroup{}, false
}

// nodeStat splits a per-node key, prefix+NODE+"_"+stat, into node and stat;
// an overall figure (prefix+stat) is not one.
func (g extraGroup) nodeStat(k string) (string, string, bool) {
	rest := strings.TrimPrefix(k, g.prefix)
	for _, st := range g.stats {
		if node, ok := strings.CutSuffix(rest, "_"+st); ok && node != "" {
			return node, st, true
		}
	}
	return "", "", false
}

// ordered puts keys in the group's order, then the rest as they come.
func (g extraGroup) ordered(keys []string) []string {
	have := map[string]bool{}
	for _, k := range keys {
		have[k] = true
	}
	var out []string
	for _, o := range g.order {
		if have[g.prefix+o] {
			out = append(out, g.prefix+o)
			delete(have, g.prefix+o)
		}
	}
	for _, k := range keys {
		if have[k] {
			out = append(out, k)
		}
	}
	return out
}

// extraRows writes one table, a row per key, labelled by labels[key] (the
// key in small print beside it) or the key itself.
func (p *page) extraRows(keys []string, first string, labels map[string]string) {
	p.printf("<table>\n")
	p.runColumns(first)
	for _, k := range keys {
		if l, ok := labels[k]; ok {
			p.printf("<tr><td title=\"%s\">%s <span style=\"color:#888;font-size:11px\">%s</span></td>", esc(k), esc(l), esc(k))
		} else {
			p.printf("<tr><td>%s</td>", esc(k))
		}
		for _, d := range p.data {
			v, ok := d.summary.Extra[k]
			if !ok {
				p.printf("<td class=\"n\">—</td>")
				continue
			}
			p.printf("<td class=\"n\">%s</td>", esc(fmtExtra(k, v)))
		}
		p.printf("</tr>\n")
	}
	p.printf("</table>\n")
}

// nodeTable writes a group's per-node figures: nodes down in natural order,
// per run the group's stats that some node has across.
func (p *page) nodeTable(g extraGroup, nodes map[string]map[string]string) {
	var stats []string
	for _, st := range g.stats {
		for _, m := range nodes {
			if _, ok := m[st]; ok {
				stats = append(stats, st)
				break
			}
		}
	}
	names := sortedKeys(nodes)
	sortNatural(names)
	p.printf("<table>\n<tr><th>node</th>")
	for _, d := range p.data {
		p.printf("<th colspan=\"%d\">%s%s</th>", len(stats), swatch(d.color), esc(d.name))
	}
	p.printf("</tr>\n<tr><th></th>")
	for range p.data {
		for _, st := range stats {
			p.printf("<th>%s</th>", esc(strings.TrimSuffix(st, "_ms")))
		}
	}
	p.printf("</tr>\n")
	for _, n := range names {
		p.printf("<tr><td>%s</td>", esc(n))
		for _, d := range p.data {
			for _, st := range stats {
				k, ok := nodes[n][st]
				v, has := d.summary.Extra[k]
				if !ok || !has {
					p.printf("<td class=\"n\">—</td>")
					continue
				}
				p.printf("<td class=\"n\">%s</td>", esc(fmtExtra(k, v)))
			}
		}
		p.printf("</tr>\n")
	}
	p.printf("</table>\n")
}
