package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"golang.org/x/crypto/ssh"
)

func remoteInputs() resource.PropertyMap {
	return resource.PropertyMap{
		"connection": resource.MakeSecret(resource.NewObjectProperty(resource.PropertyMap{
			"host":       resource.NewStringProperty("127.0.0.1"),
			"privateKey": resource.MakeSecret(resource.NewStringProperty("KEY")),
		})),
		"create":   resource.NewStringProperty("echo hi"),
		"triggers": resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("a")}),
	}
}

func failureProps(fs []*pulumirpc.CheckFailure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Property+": "+f.Reason)
	}
	return out
}

func TestValidateAndDefaults(t *testing.T) {
	m := remoteInputs()
	if fs := validate("", m, remoteCommandFields); len(fs) != 0 {
		t.Fatalf("unexpected failures: %v", failureProps(fs))
	}
	applyDefaults(m, remoteCommandFields)
	if !m["addPreviousOutputInEnv"].BoolValue() {
		t.Fatal("addPreviousOutputInEnv should default to true")
	}
	if !m["connection"].IsSecret() {
		t.Fatal("connection lost its secretness")
	}
	conn := unwrap(m["connection"]).ObjectValue()
	if conn["port"].NumberValue() != 22 || conn["user"].StringValue() != "root" ||
		conn["dialErrorLimit"].NumberValue() != 10 || conn["perDialTimeout"].NumberValue() != 15 {
		t.Fatalf("connection defaults not applied: %v", conn)
	}
	if !conn["privateKey"].IsSecret() {
		t.Fatal("nested secret lost")
	}

	bad := resource.PropertyMap{
		"connection": resource.NewObjectProperty(resource.PropertyMap{
			"port":  resource.NewStringProperty("22"),
			"extra": resource.NewStringProperty("x"),
		}),
		"logging": resource.NewStringProperty("loud"),
		"bogus":   resource.NewBoolProperty(true),
	}
	got := strings.Join(failureProps(validate("", bad, remoteCommandFields)), "\n")
	for _, want := range []string{
		"bogus: Unrecognized field 'bogus'",
		"connection.extra: Unrecognized field 'extra'",
		"connection.host: Missing required field 'host'",
		"connection.port: 'port' must be a number",
		"logging: 'logging' must be one of",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing failure %q in:\n%s", want, got)
		}
	}

	local := resource.PropertyMap{"assetPaths": resource.NewArrayProperty(nil), "create": resource.NewStringProperty("x")}
	got = strings.Join(failureProps(validate("", local, localCommandFields)), "\n")
	if !strings.Contains(got, "assetPaths: 'assetPaths' is not supported") {
		t.Errorf("assetPaths should be refused, got %q", got)
	}

	// Unknown values are not type-checked.
	unknown := resource.PropertyMap{"connection": resource.MakeComputed(resource.NewStringProperty(""))}
	if fs := validate("", unknown, remoteCommandFields); len(fs) != 0 {
		t.Fatalf("unknown connection should pass: %v", failureProps(fs))
	}
}

func TestDiffInputs(t *testing.T) {
	olds := remoteInputs()
	applyDefaults(olds, remoteCommandFields)
	olds["stdout"] = resource.NewStringProperty("hi")
	olds["stderr"] = resource.NewStringProperty("")

	news := remoteInputs()
	applyDefaults(news, remoteCommandFields)
	if d := diffInputs(olds, news, remoteCommandFields, nil); d.Changes != pulumirpc.DiffResponse_DIFF_NONE {
		t.Fatalf("expected no changes, got %v", d)
	}

	news["create"] = resource.NewStringProperty("echo bye")
	d := diffInputs(olds, news, remoteCommandFields, nil)
	if d.Changes != pulumirpc.DiffResponse_DIFF_SOME || len(d.Replaces) != 0 {
		t.Fatalf("create change should be an update: %v", d)
	}
	if d.DetailedDiff["create"].Kind != pulumirpc.PropertyDiff_UPDATE {
		t.Fatalf("detailed diff: %v", d.DetailedDiff)
	}
	if d := diffInputs(olds, news, remoteCommandFields, []string{"create"}); d.Changes != pulumirpc.DiffResponse_DIFF_NONE {
		t.Fatalf("ignoreChanges not honoured: %v", d)
	}

	news = remoteInputs()
	applyDefaults(news, remoteCommandFields)
	news["triggers"] = resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("b")})
	d = diffInputs(olds, news, remoteCommandFields, nil)
	if len(d.Replaces) != 1 || d.Replaces[0] != "triggers" {
		t.Fatalf("trigger change should replace: %v", d)
	}
	if d.DetailedDiff["triggers[0]"].Kind != pulumirpc.PropertyDiff_UPDATE_REPLACE {
		t.Fatalf("detailed diff: %v", d.DetailedDiff)
	}
	if !anyInputChanged(olds, news, remoteCommandFields) {
		t.Fatal("anyInputChanged should see the trigger change")
	}

	// A secret-wrapped but equal value is not a change.
	news = remoteInputs()
	applyDefaults(news, remoteCommandFields)
	news["create"] = resource.MakeSecret(resource.NewStringProperty("echo hi"))
	if d := diffInputs(olds, news, remoteCommandFields, nil); d.Changes != pulumirpc.DiffResponse_DIFF_NONE {
		t.Fatalf("secretness alone should not diff: %v", d)
	}
}

func newKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestHostKeyCheck(t *testing.T) {
	want, other := newKey(t), newKey(t)
	pinned := string(ssh.MarshalAuthorizedKey(want))
	cb, algos, err := hostKeyCheck("127.0.0.1:2222", &pinned)
	if err != nil {
		t.Fatal(err)
	}
	if len(algos) != 1 || algos[0] != ssh.KeyAlgoED25519 {
		t.Fatalf("algorithms %v", algos)
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}
	if err := cb("127.0.0.1:2222", addr, want); err != nil {
		t.Fatalf("pinned key refused: %v", err)
	}
	err = cb("127.0.0.1:2222", addr, other)
	if err == nil {
		t.Fatal("other key accepted")
	}
	for _, s := range []string{"127.0.0.1:2222", ssh.FingerprintSHA256(want), ssh.FingerprintSHA256(other)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	known := "myhost " + pinned
	if _, _, err := hostKeyCheck("h:22", &known); err != nil {
		t.Fatalf("known_hosts form refused: %v", err)
	}
	garbage := "not a key"
	if _, _, err := hostKeyCheck("h:22", &garbage); err == nil || !strings.Contains(err.Error(), "invalid hostKey for h:22") {
		t.Fatalf("garbage hostKey: %v", err)
	}
	if _, _, err := hostKeyCheck("h:22", nil); err != nil {
		t.Fatal(err)
	}
}

func TestRunLocal(t *testing.T) {
	dir := t.TempDir()
	f := false
	res, err := runLocal(context.Background(), runSpec{
		Command:     `echo "$FOO|$PULUMI_COMMAND_STDOUT|$(pwd)|$(cat)"; echo err >&2`,
		Environment: map[string]string{"FOO": "bar"},
		Stdin:       ptr("in"),
		Dir:         &dir,
		PrevStdout:  "prev",
	}, nopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "bar|prev|"+dir+"|in" || res.Stderr != "err" {
		t.Fatalf("got %+v", res)
	}

	res, err = runLocal(context.Background(), runSpec{
		Command: `echo "[$PULUMI_COMMAND_STDOUT]"`, PrevStdout: "prev", AddPreviousOutputInEnv: &f,
	}, nopLogger{})
	if err != nil || res.Stdout != "[]" {
		t.Fatalf("addPreviousOutputInEnv=false: %+v %v", res, err)
	}

	_, err = runLocal(context.Background(), runSpec{Command: "echo out; echo bad >&2; exit 3"}, nopLogger{})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "bad") ||
		!strings.Contains(err.Error(), `running "echo out; echo bad >&2; exit 3"`) {
		t.Fatalf("failure: %v", err)
	}
	_, err = runLocal(context.Background(), runSpec{Command: "echo s3cr3t-cmd >/dev/null; exit 1", CommandSecret: true}, nopLogger{})
	if err == nil || strings.Contains(err.Error(), "s3cr3t-cmd") || !strings.Contains(err.Error(), "[secret]") {
		t.Fatalf("secret command leaked: %v", err)
	}

	// A refusal's own last stderr line comes first; a multi-line script is named, not quoted whole.
	_, err = runLocal(context.Background(), runSpec{Command: "set -eu\necho progress >&2\necho 'router: port 8921 on host sim13 is taken by pid 7 (python3 -m http.server)' >&2\nexit 1"}, nopLogger{})
	if err == nil || !strings.HasPrefix(err.Error(), "router: port 8921 on host sim13 is taken by pid 7 (python3 -m http.server)\n") ||
		!strings.Contains(err.Error(), `running "set -eu ..." (a script of 4 lines)`) || strings.Contains(err.Error(), "exit 1\"") {
		t.Fatalf("refusal headline: %v", err)
	}

	// The quoted output is bounded to its tail.
	_, err = runLocal(context.Background(), runSpec{Command: "head -c 100000 /dev/zero | tr '\\0' x; echo; echo TAIL; exit 1"},
		nopLogger{})
	if err == nil || len(err.Error()) > maxErrorOutput+500 || !strings.Contains(err.Error(), "TAIL") ||
		!strings.Contains(err.Error(), "earlier bytes of output elided") {
		t.Fatalf("bounded output: len %d", len(err.Error()))
	}

	// Interpreter.
	res, err = runLocal(context.Background(), runSpec{Command: "print(6*7)", Interpreter: []string{"python3", "-c"}}, nopLogger{})
	if err == nil && res.Stdout != "42" {
		t.Fatalf("interpreter: %+v", res)
	}
}

func TestRunLocalCancelKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "late")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := runLocal(ctx, runSpec{Command: "(sleep 3; touch " + marker + ") & sleep 30"}, nopLogger{})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("expected cancellation, got %v", err)
	}
	if time.Since(start) > 8*time.Second {
		t.Fatalf("cancel took %v", time.Since(start))
	}
	time.Sleep(3500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a child of the cancelled command survived")
	}
}

func TestDialRetryIsBounded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	// Accept and never speak: each attempt must end at perDialTimeout.
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	defer l.Close()
	conn := &connection{Host: "127.0.0.1", Port: addr.Port, User: "u", DialErrorLimit: 1, PerDialTimeout: 1}
	start := time.Now()
	_, err = conn.Dial(context.Background(), nil)
	if err == nil {
		t.Fatal("dial succeeded against a silent server")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("two 1s attempts took %v", el)
	}
	if !strings.Contains(err.Error(), conn.endpoint()) || !strings.Contains(err.Error(), "after 2 failed attempts") {
		t.Fatalf("error should name the host and attempts: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
