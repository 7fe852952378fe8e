package cluster

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestTemplateArgv: words split like a shell's, values filled inside a
// word (never splitting it or reaching a shell), literal braces, and the
// shell form with every value single-quoted.
func TestTemplateArgv(t *testing.T) {
	vals := map[string]string{"name": "cass 2; rm -rf /", "host": "10.0.0.2", "port": "9042", "addr": "10.0.0.2:9042", "n": "4"}
	tests := []struct {
		text  string
		shell bool
		want  []string
	}{
		{"ssh {host} sudo systemctl kill -s KILL cassandra", false, []string{"ssh", "10.0.0.2", "sudo", "systemctl", "kill", "-s", "KILL", "cassandra"}},
		{"kubectl delete pod {name}", false, []string{"kubectl", "delete", "pod", "cass 2; rm -rf /"}},
		{`kubectl scale statefulset cass --replicas={n} -o 'jsonpath={{.spec}}' "a \"b\"" c\ d`, false,
			[]string{"kubectl", "scale", "statefulset", "cass", "--replicas=4", "-o", "jsonpath={.spec}", `a "b"`, "c d"}},
		{"echo {name} | cat", true, []string{"sh", "-c", `echo 'cass 2; rm -rf /' | cat`}},
	}
	for _, tt := range tests {
		tp, err := ParseTemplate(tt.text, tt.shell)
		if err != nil {
			t.Fatalf("%q: %v", tt.text, err)
		}
		got, err := tp.Argv(vals)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %q, %v; want %q", tt.text, got, err, tt.want)
		}
	}
	tp, _ := ParseTemplate("ssh {host} reboot", false)
	if _, err := tp.Argv(map[string]string{"n": "3"}); err == nil || !strings.Contains(err.Error(), "{host}") {
		t.Errorf("a missing value: %v", err)
	}
	for _, bad := range []string{"", "  ", "ssh {hots}", `echo "open`, "echo 'open", `trailing \`} {
		if _, err := ParseTemplate(bad, false); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestRunCommand: output goes to the log, a failure names the exit code
// and the end of the output, a command past its timeout is stopped.
func TestRunCommand(t *testing.T) {
	var log bytes.Buffer
	if err := runCommand(context.Background(), "kill", []string{"sh", "-c", "echo hello"}, 10*time.Second, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "hello") || !strings.Contains(log.String(), "exit 0") {
		t.Errorf("log: %q", log.String())
	}
	err := runCommand(context.Background(), "restart", []string{"sh", "-c", "echo no such unit >&2; exit 5"}, 10*time.Second, &log)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Code != 5 || !strings.Contains(err.Error(), "exited with code 5") || !strings.Contains(err.Error(), "no such unit") {
		t.Errorf("failure: %v", err)
	}
	t0 := time.Now()
	err = runCommand(context.Background(), "add", []string{"sleep", "30"}, 200*time.Millisecond, &log)
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "timed out") || time.Since(t0) > 20*time.Second {
		t.Errorf("timeout: %v after %s", err, time.Since(t0))
	}
	if err := runCommand(context.Background(), "kill", []string{"/no/such/command"}, time.Second, &log); !errors.As(err, &ce) || ce.Code != -1 {
		t.Errorf("missing command: %v", err)
	}
}

// The command log, in the experiment's directory, shows a command with its
// secrets masked: the DSN's password and password-like options.
func TestRunCommandLogMasksSecrets(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	argv := []string{"sh", "-c", "true", "--password", "S3CRETa", "PGPASSWORD=S3CRETb", "dsnpw=S3CRETc"}
	if err := runCommand(context.Background(), "kill", argv, 10*time.Second, &log, "S3CRETc"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "S3CRET") || !strings.Contains(log.String(), "--password xxxxx") {
		t.Errorf("log: %q", log.String())
	}
}
