package kubernetes

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// The manifest reads back strictly into the official Job type (every field
// is one the schema has) with the shape an Indexed Job of N shards needs,
// and the DSN is nowhere in it.
func TestJobManifest(t *testing.T) {
	s := Spec{Name: "fb-mb", Image: "reg/fieldbench:dev", Shards: 4, Args: []string{"run", "microblog", "--clients", "200"},
		SecretName: "fb-db", SecretKey: "dsn", ResultsClaim: "fb-results", CPU: "2", Memory: "2Gi", StartAt: "2026-11-25T14:00:00Z"}
	out, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var j batchv1.Job
	if err := yaml.UnmarshalStrict(out, &j); err != nil {
		t.Fatalf("manifest does not read back as a batch/v1 Job: %v\n%s", err, out)
	}
	sp := j.Spec
	if j.Kind != "Job" || j.APIVersion != "batch/v1" || *sp.Completions != 4 || *sp.Parallelism != 4 || *sp.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("not an Indexed Job of 4: %+v", sp)
	}
	c := sp.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"run microblog --clients 200", "--db $(FIELDBENCH_DB)", "--shards 4", "--results /results", "--start-at 2026-11-25T14:00:00Z"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if ref := c.Env[0].ValueFrom.SecretKeyRef; c.Env[0].Name != DBEnv || ref.Name != "fb-db" || ref.Key != "dsn" {
		t.Errorf("DSN not from the Secret: %+v", c.Env)
	}
	if sp.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "fb-results" || c.VolumeMounts[0].MountPath != ResultsDir {
		t.Errorf("results volume: %+v %+v", sp.Template.Spec.Volumes, c.VolumeMounts)
	}
	if c.Resources.Limits.Cpu().String() != "2" || c.Resources.Requests.Memory().String() != "2Gi" {
		t.Errorf("resources %+v", c.Resources)
	}
}

func TestSpecRefused(t *testing.T) {
	ok := Spec{Name: "fb", Image: "i", Shards: 2, SecretName: "s", SecretKey: "k"}
	for name, mod := range map[string]func(*Spec){
		"no image":      func(s *Spec) { s.Image = "" },
		"no secret":     func(s *Spec) { s.SecretKey = "" },
		"bad name":      func(s *Spec) { s.Name = "Fb_1" },
		"zero shards":   func(s *Spec) { s.Shards = 0 },
		"bad resources": func(s *Spec) { s.CPU = "two" },
		"load budget":   func(s *Spec) { s.Args = []string{"run", "microblog", "--load-budget", "cpu=1"} },
		"load budget=":  func(s *Spec) { s.Args = []string{"run", "microblog", "--load-budget=cpu=1"} },
	} {
		s := ok
		mod(&s)
		if _, err := s.YAML(); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.HasPrefix(name, "load budget") && !strings.Contains(err.Error(), "--cpu and --memory") {
			t.Errorf("%s: %v, want the Job's --cpu and --memory named", name, err)
		}
	}
	if _, err := ok.YAML(); err != nil {
		t.Errorf("a good spec refused: %v", err)
	}
}
