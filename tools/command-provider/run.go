package main

// Running a command, locally (command:local:*) or over an SSH session
// (command:remote:Command), capturing stdout, stderr and both interleaved, and
// streaming output lines to the engine as status messages.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

const (
	envStdout = "PULUMI_COMMAND_STDOUT"
	envStderr = "PULUMI_COMMAND_STDERR"

	// maxErrorOutput bounds how much of the command's combined output is quoted
	// in an error message (the tail is kept).
	maxErrorOutput = 32 * 1024
)

// logger reports to the engine on behalf of one resource operation.
type logger interface {
	Status(msg string) // an ephemeral status line (the real provider's InfoStatus)
	Warning(msg string)
	Error(msg string)
}

type nopLogger struct{}

func (nopLogger) Status(string)  {}
func (nopLogger) Warning(string) {}
func (nopLogger) Error(string)   {}

// runSpec is one command execution.
type runSpec struct {
	Command       string
	CommandSecret bool // the command text came from a secret input: keep it out of errors
	Environment   map[string]string
	Stdin         *string
	Logging       *string
	// AddPreviousOutputInEnv nil means the default (true).
	AddPreviousOutputInEnv *bool
	PrevStdout, PrevStderr string
	// local only
	Dir         *string
	Interpreter []string
}

type runResult struct {
	Stdout, Stderr string
}

func (r runSpec) addPrevious() bool {
	return r.AddPreviousOutputInEnv == nil || *r.AddPreviousOutputInEnv
}

func (r runSpec) logStdout() bool {
	return r.Logging == nil || *r.Logging == "stdout" || *r.Logging == "stdoutAndStderr"
}

func (r runSpec) logStderr() bool {
	return r.Logging == nil || *r.Logging == "stderr" || *r.Logging == "stdoutAndStderr"
}

// capture collects a process's output. Its writers are safe to use from the two
// goroutines that copy stdout and stderr.
type capture struct {
	mu                       sync.Mutex
	stdout, stderr, combined bytes.Buffer
	logW                     *io.PipeWriter
	logStdout, logStderr     bool
	logDone                  chan struct{}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func newCapture(spec runSpec, lg logger) *capture {
	r, w := io.Pipe()
	c := &capture{logW: w, logStdout: spec.logStdout(), logStderr: spec.logStderr(), logDone: make(chan struct{})}
	go func() {
		defer close(c.logDone)
		scanner := bufio.NewScanner(r)
		scanner.Buffer(make([]byte, 64*1024), 1024*1024)
		for scanner.Scan() {
			lg.Status(scanner.Text())
		}
		// A line longer than the buffer stops the scanner: keep draining so the
		// command never blocks on its output.
		_, _ = io.Copy(io.Discard, r)
	}()
	return c
}

func (c *capture) writer(buf *bytes.Buffer, log bool) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		buf.Write(p)
		c.combined.Write(p)
		if log {
			_, _ = c.logW.Write(p)
		}
		return len(p), nil
	})
}

func (c *capture) Stdout() io.Writer { return c.writer(&c.stdout, c.logStdout) }
func (c *capture) Stderr() io.Writer { return c.writer(&c.stderr, c.logStderr) }

// finish stops the log stream and returns the outputs with one trailing
// newline trimmed, as the real provider does.
func (c *capture) finish() (runResult, string) {
	_ = c.logW.Close()
	<-c.logDone
	c.mu.Lock()
	defer c.mu.Unlock()
	return runResult{
		Stdout: strings.TrimSuffix(c.stdout.String(), "\n"),
		Stderr: strings.TrimSuffix(c.stderr.String(), "\n"),
	}, c.combined.String()
}

// runError formats a failed run like the real provider does
// ("<cause>: running \"<command>\":\n<stdout and stderr>"), with the quoted
// output bounded to its tail and a secret command shown as [secret]. Two
// departures keep a refusal readable: the last line the command wrote to
// stderr (its own words for why it stopped) comes first, and a script of many
// lines is named by its first line and length instead of quoted whole, since
// the engine repeats the error in several places.
func runError(cause error, spec runSpec, stderr, combined string) error {
	shown := strconv.Quote(spec.Command)
	if spec.CommandSecret {
		shown = "[secret]"
	} else if lines := strings.Split(strings.TrimSpace(spec.Command), "\n"); len(lines) > 1 {
		shown = fmt.Sprintf("%s (a script of %d lines)", strconv.Quote(lines[0]+" ..."), len(lines))
	}
	if len(combined) > maxErrorOutput {
		elided := len(combined) - maxErrorOutput
		combined = fmt.Sprintf("[... %d earlier bytes of output elided ...]\n", elided) + combined[elided:]
	}
	if headline := lastLine(stderr); headline != "" {
		return fmt.Errorf("%s\n%w: running %s:\n%s", headline, cause, shown, combined)
	}
	return fmt.Errorf("%w: running %s:\n%s", cause, shown, combined)
}

// lastLine is the last non-blank line of a command's stderr, bounded so one
// runaway line cannot crowd out the rest of the error.
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimRight(stderr, "\n \t"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 1000 {
		last = last[:1000] + " ..."
	}
	return last
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// runLocal runs the command with the interpreter (default /bin/sh -c) on this
// machine. Cancelling ctx kills the whole process group.
func runLocal(ctx context.Context, spec runSpec, lg logger) (runResult, error) {
	args := append([]string{}, spec.Interpreter...)
	if len(args) == 0 {
		args = []string{"/bin/sh", "-c"}
	}
	args = append(args, spec.Command)

	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second

	if spec.Dir != nil {
		cmd.Dir = *spec.Dir
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return runResult{}, err
		}
		cmd.Dir = wd
	}
	cmd.Env = os.Environ()
	for _, k := range sortedKeys(spec.Environment) {
		cmd.Env = append(cmd.Env, k+"="+spec.Environment[k])
	}
	if spec.addPrevious() {
		if spec.PrevStdout != "" {
			cmd.Env = append(cmd.Env, envStdout+"="+spec.PrevStdout)
		}
		if spec.PrevStderr != "" {
			cmd.Env = append(cmd.Env, envStderr+"="+spec.PrevStderr)
		}
	}
	if spec.Stdin != nil && len(*spec.Stdin) > 0 {
		cmd.Stdin = strings.NewReader(*spec.Stdin)
	}

	c := newCapture(spec, lg)
	cmd.Stdout = c.Stdout()
	cmd.Stderr = c.Stderr()
	err := cmd.Run()
	res, combined := c.finish()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return runResult{}, runError(err, spec, res.Stderr, combined)
	}
	return res, nil
}

func setenvHint(key string) string {
	return fmt.Sprintf("Unable to set '%s'. Environment variables only reach a remote command when the SSH server "+
		"accepts them (AcceptEnv in sshd_config). Alternatively, when a POSIX shell runs the command on the remote "+
		"host, put the assignment in the command itself, e.g. 'VAR=value command'.", key)
}

// runRemote runs the command in a new session on the host. The environment is
// sent with SSH "env" requests: a rejected user variable fails the run, a
// rejected PULUMI_COMMAND_STDOUT/STDERR only warns (as in the real provider).
func runRemote(ctx context.Context, conn *connection, spec runSpec, lg logger) (runResult, error) {
	pc, release, err := sshPool.acquire(ctx, conn, lg.Status)
	if err != nil {
		return runResult{}, err
	}
	// A connection whose session could not open, or whose command was cancelled, is not kept.
	discard := false
	defer func() { release(discard) }()
	session, err := pc.client.NewSession()
	if err != nil {
		discard = true
		return runResult{}, fmt.Errorf("opening an SSH session on %s: %w", conn.label(), err)
	}
	defer session.Close()

	for _, k := range sortedKeys(spec.Environment) {
		if err := session.Setenv(k, spec.Environment[k]); err != nil {
			lg.Error(setenvHint(k))
			return runResult{}, fmt.Errorf("could not set environment variable %q on %s: %w", k, conn.label(), err)
		}
	}
	if spec.addPrevious() {
		if spec.PrevStdout != "" {
			if err := session.Setenv(envStdout, spec.PrevStdout); err != nil {
				lg.Warning(setenvHint(envStdout))
			}
		}
		if spec.PrevStderr != "" {
			if err := session.Setenv(envStderr, spec.PrevStderr); err != nil {
				lg.Warning(setenvHint(envStderr))
			}
		}
	}
	if spec.Stdin != nil && len(*spec.Stdin) > 0 {
		session.Stdin = strings.NewReader(*spec.Stdin)
	}

	c := newCapture(spec, lg)
	session.Stdout = c.Stdout()
	session.Stderr = c.Stderr()

	stop := context.AfterFunc(ctx, func() {
		_ = session.Signal(ssh.SIGKILL)
		_ = session.Close()
		_ = pc.client.Close()
	})
	err = session.Run(spec.Command)
	discard = !stop()
	res, combined := c.finish()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return runResult{}, runError(err, spec, res.Stderr, combined)
	}
	return res, nil
}
