// Package kubernetes writes the Kubernetes Indexed Job that runs a run's shards:
// completions = parallelism = N, completionMode Indexed, each pod running
// `fieldbench run ... --shards N` (its index comes from
// JOB_COMPLETION_INDEX), the DSN taken from a Secret so it is never
// printed, and the results on a volume to collect and merge. The manifest
// is built from the official API types (k8s.io/api), so it has the
// schema's shape by construction.
package kubernetes

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Spec is one sharded run as a Job.
type Spec struct {
	Name      string // the Job's name
	Namespace string
	Image     string
	Shards    int32
	// Args are fieldbench's arguments after the binary, without --db,
	// --shards and --results (the Job sets them).
	Args []string
	// SecretName and SecretKey hold the DSN.
	SecretName, SecretKey string
	// ResultsClaim is a PersistentVolumeClaim mounted at /results where
	// every shard writes its run directory ("" uses an emptyDir: collect
	// with kubectl cp before the pod goes).
	ResultsClaim string
	CPU, Memory  string // requests and limits per shard, e.g. "2", "2Gi"
	StartAt      string // --start-at for every shard ("" none)
}

// ResultsDir is where shards write in the pod.
const ResultsDir = "/results"

// DBEnv is the environment variable the DSN is read from in the pod.
const DBEnv = "FIELDBENCH_DB"

// Validate checks what the Job needs.
func (s Spec) Validate() error {
	switch {
	case s.Name == "" || strings.ToLower(s.Name) != s.Name || strings.ContainsAny(s.Name, " _/."):
		return fmt.Errorf("--name %q: a Job name is lower case letters, digits and '-'", s.Name)
	case s.Image == "":
		return fmt.Errorf("--image is required (build it with the repository's Dockerfile)")
	case s.Shards < 1 || s.Shards > 1000:
		return fmt.Errorf("--shards must be 1..1000 (got %d)", s.Shards)
	case s.SecretName == "" || s.SecretKey == "":
		return fmt.Errorf("--secret NAME/KEY is required: the DSN comes from a Secret, never from the manifest")
	}
	for _, a := range s.Args {
		if a == "--load-budget" || strings.HasPrefix(a, "--load-budget=") {
			// The pod's own control group is the shard's budget: its
			// container runs fieldbench as a user that makes none.
			return fmt.Errorf("--load-budget has no place in a Job's pod (its user is not root, and the pod's limits are the load's budget already): give the Job --cpu and --memory per shard")
		}
	}
	for _, q := range []string{s.CPU, s.Memory} {
		if q == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Errorf("resource %q: %w", q, err)
		}
	}
	return nil
}

// Job builds the Indexed Job.
func (s Spec) Job() (*batchv1.Job, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	args := append([]string{}, s.Args...)
	// $(VAR) is expanded by the kubelet from the container's environment:
	// the DSN never appears in the manifest, and JOB_COMPLETION_INDEX is set
	// by the Job controller in every pod of an Indexed Job.
	args = append(args, "--db", "$("+DBEnv+")", "--shards", fmt.Sprint(s.Shards), "--results", ResultsDir)
	if s.StartAt != "" {
		args = append(args, "--start-at", s.StartAt)
	}
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	if s.CPU != "" {
		q := resource.MustParse(s.CPU)
		res.Requests[corev1.ResourceCPU], res.Limits[corev1.ResourceCPU] = q, q
	}
	if s.Memory != "" {
		q := resource.MustParse(s.Memory)
		res.Requests[corev1.ResourceMemory], res.Limits[corev1.ResourceMemory] = q, q
	}
	vol := corev1.Volume{Name: "results", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	if s.ResultsClaim != "" {
		vol.VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.ResultsClaim}}
	}
	indexed := batchv1.IndexedCompletion
	n := s.Shards
	backoff := int32(0) // a failed shard is a result; rerunning it would skew the merge
	fsGroup := int64(65532)
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "fieldbench", "fieldbench/run": s.Name}},
		Spec: batchv1.JobSpec{
			Completions: &n, Parallelism: &n, CompletionMode: &indexed, BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"fieldbench/run": s.Name}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					// The image runs as 65532: the results volume is made
					// writable for that group.
					SecurityContext: &corev1.PodSecurityContext{FSGroup: &fsGroup},
					Containers: []corev1.Container{{
						Name: "fieldbench", Image: s.Image, Args: args,
						Env: []corev1.EnvVar{{Name: DBEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: s.SecretName}, Key: s.SecretKey}}}},
						Resources:    res,
						VolumeMounts: []corev1.VolumeMount{{Name: "results", MountPath: ResultsDir}},
					}},
					Volumes: []corev1.Volume{vol},
				},
			},
		},
	}
	return job, nil
}

// YAML is the Job as a manifest for kubectl apply -f.
func (s Spec) YAML() ([]byte, error) {
	j, err := s.Job()
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(j)
}
