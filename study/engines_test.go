package study

// The studies' plans name cluster engines (mongodb among them) that
// register from their database folders: the tests link every database,
// as the binary does.
import _ "github.com/fieldbench/fieldbench/db/all"
