package cluster

import (
	"strings"
	"testing"
)

func TestPomFor(t *testing.T) {
	pom, err := pomFor([]string{"org.apache.cassandra:cassandra-all:5.0.9", "a.b:c:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId><version>5.0.9</version>", "<artifactId>c</artifactId>"} {
		if !strings.Contains(pom, want) {
			t.Errorf("pom lacks %q:\n%s", want, pom)
		}
	}
	pom, err = pomFor([]string{"org.apache.hbase:hbase-rest:2.6.1;exclude=org.apache.hbase:*,org.apache.hadoop:*"})
	if err != nil || !strings.Contains(pom, "<exclusion><groupId>org.apache.hbase</groupId><artifactId>*</artifactId></exclusion><exclusion><groupId>org.apache.hadoop</groupId>") {
		t.Errorf("exclusions: %v\n%s", err, pom)
	}
	for _, bad := range []string{"a:b", "a:b:c:d", "a::1", "a:b:<x>", "a:b:1;exclude=nocolon", "a:b:1;exclude=:x"} {
		if _, err := pomFor([]string{bad}); err == nil {
			t.Errorf("pomFor(%q) accepted", bad)
		}
	}
}
