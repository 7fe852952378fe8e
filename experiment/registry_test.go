package experiment

// Scenarios name the DSNs of every adapter (an external cluster's
// cassandra://…), which the checks parse with their adapter, as the binary
// does with all of them linked.
import _ "github.com/fieldbench/fieldbench/db/all"
