package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// countingServer is a loopback SSH server that accepts one password, answers
// every exec with its command on stdout, and counts logins and peak sessions.
type countingServer struct {
	addr     string
	hostKey  string
	logins   atomic.Int32
	open     atomic.Int32
	peak     atomic.Int32
	release  chan struct{} // when non-nil, exec waits for it before answering
	listener net.Listener
}

func startCountingServer(t *testing.T, hold bool) *countingServer {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	config := &ssh.ServerConfig{PasswordCallback: func(_ ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
		if string(pw) != "pw" {
			return nil, net.ErrClosed
		}
		return nil, nil
	}}
	config.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &countingServer{addr: l.Addr().String(), hostKey: string(ssh.MarshalAuthorizedKey(signer.PublicKey())), listener: l}
	if hold {
		s.release = make(chan struct{})
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.serve(c, config)
		}
	}()
	return s
}

func (s *countingServer) serve(c net.Conn, config *ssh.ServerConfig) {
	_, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		return
	}
	s.logins.Add(1)
	go func() {
		for r := range reqs {
			_ = r.Reply(r.Type == "keepalive@openssh.com", nil)
		}
	}()
	for nc := range chans {
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		n := s.open.Add(1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		go func() {
			defer s.open.Add(-1)
			defer ch.Close()
			for r := range creqs {
				if r.Type != "exec" {
					_ = r.Reply(false, nil)
					continue
				}
				_ = r.Reply(true, nil)
				if s.release != nil {
					<-s.release
				}
				cmdLen := binary.BigEndian.Uint32(r.Payload[:4])
				_, _ = ch.Write(r.Payload[4 : 4+cmdLen])
				_, _ = ch.SendRequest("exit-status", false, []byte{0, 0, 0, 0})
				return
			}
		}()
	}
}

func (s *countingServer) connection() *connection {
	host, port, _ := net.SplitHostPort(s.addr)
	p, _ := strconv.Atoi(port)
	pw := "pw"
	return &connection{Host: host, Port: p, User: "u", Password: &pw, HostKey: &s.hostKey, DialErrorLimit: 0, PerDialTimeout: 5}
}

func TestConcurrentCommandsShareOneLogin(t *testing.T) {
	s := startCountingServer(t, true)
	pool := &connPool{entries: map[string]*poolEntry{}}
	saved := sshPool
	sshPool = pool
	t.Cleanup(func() { sshPool = saved })

	const commands = 12
	var wg sync.WaitGroup
	errs := make(chan error, commands)
	for i := 0; i < commands; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := runRemote(context.Background(), s.connection(), runSpec{Command: "echo " + strconv.Itoa(i)}, nopLogger{})
			if err == nil && out.Stdout != "echo "+strconv.Itoa(i) {
				err = &unexpected{out.Stdout}
			}
			errs <- err
		}(i)
	}
	// Let every command that can get a session open one, then answer them all.
	deadline := time.Now().Add(10 * time.Second)
	for s.open.Load() < maxSessionsPerConnection && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	close(s.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := s.logins.Load(); got != 1 {
		t.Fatalf("%d logins for %d commands on one host; want 1", got, commands)
	}
	if got := s.peak.Load(); got != maxSessionsPerConnection {
		t.Fatalf("peak of %d concurrent sessions; want the bound %d", got, maxSessionsPerConnection)
	}
}

func TestDeadConnectionIsDialledAgain(t *testing.T) {
	s := startCountingServer(t, false)
	pool := &connPool{entries: map[string]*poolEntry{}}
	saved := sshPool
	sshPool = pool
	t.Cleanup(func() { sshPool = saved })

	if _, err := runRemote(context.Background(), s.connection(), runSpec{Command: "a"}, nopLogger{}); err != nil {
		t.Fatal(err)
	}
	// The server side goes away (sshd restarted, network blip): the next command logs in again.
	for _, e := range pool.entries {
		_ = e.conn.client.Close()
	}
	if _, err := runRemote(context.Background(), s.connection(), runSpec{Command: "b"}, nopLogger{}); err != nil {
		t.Fatal(err)
	}
	if got := s.logins.Load(); got != 2 {
		t.Fatalf("%d logins; want a fresh one after the connection died", got)
	}
}

type unexpected struct{ out string }

func (u *unexpected) Error() string { return "unexpected output " + strconv.Quote(u.out) }
