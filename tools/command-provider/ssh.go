package main

// SSH connections for command:remote:*: auth (key, password, agent), an
// optional pinned host key, an optional proxy (jump) host, and bounded retries:
// each dial attempt is bounded by perDialTimeout seconds and a host is dialled
// at most dialErrorLimit+1 times (dialErrorLimit -1 = unlimited), with the same
// back-off as the real provider (100ms, x1.5, capped at 5s).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/retry"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

const sshAgentSocketEnvVar = "SSH_AUTH_SOCK"

type connection struct {
	Host               string
	Port               int
	User               string
	Password           *string
	PrivateKey         *string
	PrivateKeyPassword *string
	AgentSocketPath    *string
	HostKey            *string
	DialErrorLimit     int
	PerDialTimeout     int
	Proxy              *connection
}

// decodeConnection reads a (checked, defaulted) connection object.
func decodeConnection(m resource.PropertyMap) (*connection, error) {
	if m == nil {
		return nil, errors.New("connection is required")
	}
	c := &connection{Port: 22, User: "root", DialErrorLimit: 10, PerDialTimeout: 15}
	host := getString(m, "host")
	if host == nil || *host == "" {
		return nil, errors.New("connection.host is required")
	}
	c.Host = *host
	if p := getNumber(m, "port"); p != nil {
		c.Port = int(*p)
	}
	if u := getString(m, "user"); u != nil {
		c.User = *u
	}
	c.Password = getString(m, "password")
	c.PrivateKey = getString(m, "privateKey")
	c.PrivateKeyPassword = getString(m, "privateKeyPassword")
	c.AgentSocketPath = getString(m, "agentSocketPath")
	c.HostKey = getString(m, "hostKey")
	if n := getNumber(m, "dialErrorLimit"); n != nil {
		c.DialErrorLimit = int(*n)
	}
	if n := getNumber(m, "perDialTimeout"); n != nil {
		c.PerDialTimeout = int(*n)
	}
	if pm := getObject(m, "proxy"); pm != nil {
		p, err := decodeConnection(pm)
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		c.Proxy = p
	}
	return c, nil
}

func (c *connection) endpoint() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// label names the target in errors: user@host:port.
func (c *connection) label() string {
	return c.User + "@" + c.endpoint()
}

func (c *connection) timeout() time.Duration {
	if c.PerDialTimeout <= 0 {
		return 0 // 0 means no maximum
	}
	return time.Duration(c.PerDialTimeout) * time.Second
}

// clientConfig builds the ssh.ClientConfig. The returned closer releases the
// agent connection, if one was opened.
func (c *connection) clientConfig() (*ssh.ClientConfig, func(), error) {
	closer := func() {}
	hostKeyCallback, algos, err := hostKeyCheck(c.endpoint(), c.HostKey)
	if err != nil {
		return nil, closer, err
	}
	config := &ssh.ClientConfig{
		User:              c.User,
		HostKeyCallback:   hostKeyCallback,
		HostKeyAlgorithms: algos,
		Timeout:           c.timeout(),
	}
	if c.PrivateKey != nil {
		var signer ssh.Signer
		if c.PrivateKeyPassword != nil {
			signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(*c.PrivateKey), []byte(*c.PrivateKeyPassword))
		} else {
			signer, err = ssh.ParsePrivateKey([]byte(*c.PrivateKey))
		}
		if err != nil {
			return nil, closer, fmt.Errorf("parsing privateKey for %s: %w", c.label(), err)
		}
		config.Auth = append(config.Auth, ssh.PublicKeys(signer))
	}
	if c.Password != nil {
		password := *c.Password
		config.Auth = append(config.Auth, ssh.Password(password))
		config.Auth = append(config.Auth, ssh.KeyboardInteractive(
			func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range questions {
					answers[i] = password
				}
				return answers, nil
			}))
	}
	socket := ""
	if c.AgentSocketPath != nil {
		socket = *c.AgentSocketPath
	} else if env := os.Getenv(sshAgentSocketEnvVar); env != "" {
		socket = env
	}
	if socket != "" {
		conn, err := net.Dial("unix", socket)
		if err != nil {
			return nil, closer, fmt.Errorf("connecting to the SSH agent at %s: %w", socket, err)
		}
		closer = func() { _ = conn.Close() }
		config.Auth = append(config.Auth, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
	}
	return config, closer, nil
}

// hostKeyCheck returns a callback that accepts any key when no key is pinned
// (the real provider's behaviour without hostKey), or only the pinned key.
func hostKeyCheck(endpoint string, pinned *string) (ssh.HostKeyCallback, []string, error) {
	if pinned == nil || strings.TrimSpace(*pinned) == "" {
		return ssh.InsecureIgnoreHostKey(), nil, nil
	}
	expected, err := parseHostKey(*pinned)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid hostKey for %s (want authorized_keys format, e.g. \"ssh-ed25519 AAAA...\"): %w",
			endpoint, err)
	}
	want := expected.Marshal()
	cb := func(_ string, _ net.Addr, got ssh.PublicKey) error {
		if string(got.Marshal()) == string(want) {
			return nil
		}
		return fmt.Errorf("host key mismatch for %s: expected %s %s but the server presented %s %s",
			endpoint, expected.Type(), ssh.FingerprintSHA256(expected), got.Type(), ssh.FingerprintSHA256(got))
	}
	// Ask the server for the pinned key type, so a server with several host keys
	// presents the one we can verify.
	var algos []string
	switch expected.Type() {
	case ssh.KeyAlgoRSA:
		algos = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	default:
		algos = []string{expected.Type()}
	}
	return cb, algos, nil
}

// parseHostKey accepts an authorized_keys line ("ssh-ed25519 AAAA... comment")
// or a known_hosts line ("host ssh-ed25519 AAAA...").
func parseHostKey(s string) (ssh.PublicKey, error) {
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s))
	if err == nil {
		return key, nil
	}
	if _, _, k, _, _, err2 := ssh.ParseKnownHosts([]byte(s)); err2 == nil {
		return k, nil
	}
	return nil, err
}

// dialWithRetry retries f until it succeeds, the error limit is reached, or ctx
// is done. The error names what was being dialled.
func dialWithRetry[T any](ctx context.Context, what string, maxErrors int, logf func(string),
	f func(context.Context) (T, error),
) (T, error) {
	var zero T
	var lastErr error
	ok, data, err := retry.Until(ctx, retry.Acceptor{
		Accept: func(try int, _ time.Duration) (bool, any, error) {
			result, err := f(ctx)
			if err == nil {
				return true, result, nil
			}
			lastErr = err
			dials := try + 1
			if maxErrors > -1 && dials > maxErrors {
				return true, nil, fmt.Errorf("%s: after %d failed attempts: %w", what, dials, err)
			}
			limit := "inf"
			if maxErrors > -1 {
				limit = strconv.Itoa(maxErrors)
			}
			if logf != nil {
				logf(fmt.Sprintf("%s %d/%s failed: retrying", what, dials, limit))
			}
			return false, nil, nil
		},
	})
	if err != nil {
		return zero, err
	}
	if ok {
		return data.(T), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if lastErr != nil {
			return zero, fmt.Errorf("%s: %w (last error: %v)", what, ctxErr, lastErr)
		}
		return zero, fmt.Errorf("%s: %w", what, ctxErr)
	}
	return zero, fmt.Errorf("%s: failed", what)
}

// handshake runs the SSH handshake over conn, bounded by timeout and ctx.
func handshake(ctx context.Context, conn net.Conn, addr string, config *ssh.ClientConfig,
	timeout time.Duration,
) (*ssh.Client, error) {
	if timeout > 0 {
		_ = conn.SetDeadline(time.Now().Add(timeout))
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	stop()
	if err != nil {
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}

// dialDirect opens a TCP connection and runs the handshake, both bounded by the
// per-dial timeout.
func dialDirect(ctx context.Context, c *connection, config *ssh.ClientConfig) (*ssh.Client, error) {
	d := net.Dialer{Timeout: c.timeout()}
	conn, err := d.DialContext(ctx, "tcp", c.endpoint())
	if err != nil {
		return nil, err
	}
	return handshake(ctx, conn, c.endpoint(), config, c.timeout())
}

// sshClient is a connected client plus everything to release with it.
type sshClient struct {
	*ssh.Client
	closers []func()
}

func (s *sshClient) Close() error {
	err := s.Client.Close()
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	return err
}

// Dial connects to the target, through the proxy when one is configured.
func (c *connection) Dial(ctx context.Context, logf func(string)) (*sshClient, error) {
	config, closeAgent, err := c.clientConfig()
	if err != nil {
		return nil, err
	}
	closers := []func(){closeAgent}
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}

	if c.Proxy == nil {
		client, err := dialWithRetry(ctx, "dial "+c.label(), c.DialErrorLimit, logf,
			func(ctx context.Context) (*ssh.Client, error) { return dialDirect(ctx, c, config) })
		if err != nil {
			cleanup()
			return nil, err
		}
		return &sshClient{Client: client, closers: closers}, nil
	}

	proxyConfig, closeProxyAgent, err := c.Proxy.clientConfig()
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	closers = append(closers, closeProxyAgent)
	proxyClient, err := dialWithRetry(ctx, "dial proxy "+c.Proxy.label(), c.Proxy.DialErrorLimit, logf,
		func(ctx context.Context) (*ssh.Client, error) { return dialDirect(ctx, c.Proxy, proxyConfig) })
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	closers = append(closers, func() { _ = proxyClient.Close() })

	client, err := dialWithRetry(ctx, "dial "+c.label()+" via proxy "+c.Proxy.endpoint(), c.DialErrorLimit, logf,
		func(ctx context.Context) (*ssh.Client, error) {
			dctx := ctx
			if t := c.timeout(); t > 0 {
				var cancel context.CancelFunc
				dctx, cancel = context.WithTimeout(ctx, t)
				defer cancel()
			}
			conn, err := proxyClient.DialContext(dctx, "tcp", c.endpoint())
			if err != nil {
				return nil, err
			}
			return handshake(ctx, conn, c.endpoint(), config, c.timeout())
		})
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	return &sshClient{Client: client, closers: closers}, nil
}
