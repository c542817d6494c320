package main

// One SSH login per host per operation: the engine starts this plugin once per
// `pulumi up`/`preview`, so connections kept here are reused by every command
// and copy the operation runs against the same host with the same credentials,
// and closed when the plugin exits. Commands run as sessions multiplexed over
// that one connection, at most maxSessionsPerConnection at a time.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// OpenSSH's sshd refuses more than MaxSessions (default 10) sessions on one
// connection; stay below it so a busy host queues instead of failing.
const maxSessionsPerConnection = 8

// A kept connection is checked with a keepalive before reuse; a server that
// does not answer within this bound is dialled afresh.
const keepaliveTimeout = 5 * time.Second

type pooledConn struct {
	client *sshClient
	slots  chan struct{}
}

type poolEntry struct {
	mu   sync.Mutex
	conn *pooledConn
}

type connPool struct {
	mu      sync.Mutex
	entries map[string]*poolEntry
	dials   int // logins made, for tests
}

var sshPool = &connPool{entries: map[string]*poolEntry{}}

// key identifies a login: every field of the connection, credentials and proxy
// included, hashed so no secret is kept as a map key.
func (c *connection) key() string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum)
}

func (p *connPool) entry(key string) *poolEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[key]
	if !ok {
		e = &poolEntry{}
		p.entries[key] = e
	}
	return e
}

// acquire returns a live connection to c and a session slot on it. Concurrent
// callers for the same login wait for one dial instead of each logging in.
// release gives the slot back; discard also closes the connection (after a
// cancelled command, whose session may still hold it).
func (p *connPool) acquire(ctx context.Context, c *connection, logf func(string)) (conn *pooledConn, release func(discard bool), err error) {
	e := p.entry(c.key())
	e.mu.Lock()
	if e.conn != nil && !e.conn.alive() {
		_ = e.conn.client.Close()
		e.conn = nil
	}
	if e.conn == nil {
		client, err := c.Dial(ctx, logf)
		if err != nil {
			e.mu.Unlock()
			return nil, nil, err
		}
		p.mu.Lock()
		p.dials++
		p.mu.Unlock()
		e.conn = &pooledConn{client: client, slots: make(chan struct{}, maxSessionsPerConnection)}
	}
	pc := e.conn
	e.mu.Unlock()

	select {
	case pc.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("waiting for an SSH session on %s: %w", c.label(), ctx.Err())
	}
	release = func(discard bool) {
		<-pc.slots
		if discard {
			e.mu.Lock()
			if e.conn == pc {
				e.conn = nil
			}
			e.mu.Unlock()
			_ = pc.client.Close()
		}
	}
	return pc, release, nil
}

// alive asks the server for a keepalive reply, bounded by keepaliveTimeout.
func (pc *pooledConn) alive() bool {
	done := make(chan error, 1)
	go func() {
		_, _, err := pc.client.SendRequest("keepalive@openssh.com", true, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(keepaliveTimeout):
		return false
	}
}
