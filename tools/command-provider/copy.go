package main

// command:remote:CopyToRemote: copies a path-based asset (a file) or archive
// (a file or a directory) to the remote host over SFTP, with the real
// provider's path rules:
//
//	source | remotePath is a dir | remotePath missing | remotePath is a file
//	-------+---------------------+--------------------+---------------------
//	dir    | remotePath/dir      | remotePath/dir     | error
//	dir/   | remotePath/<each>   | remotePath/dir     | error
//	file   | remotePath/file     | remotePath         | remotePath (overwritten)
//
// Files are created by the SFTP server (its default mode, i.e. subject to the
// remote umask); the local mode is not copied, as with the real provider.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pkg/sftp"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// checkSource enforces that source is exactly one path-based asset or archive.
func checkSource(m resource.PropertyMap) []*pulumirpc.CheckFailure {
	raw, ok := m["source"]
	if !ok || isUnknown(raw) {
		return nil
	}
	v := unwrap(raw)
	switch {
	case v.IsAsset():
		if !v.AssetValue().IsPath() {
			return []*pulumirpc.CheckFailure{{Property: "source",
				Reason: "asset must be a path-based file asset (pulumi.asset.FileAsset)"}}
		}
	case v.IsArchive():
		if !v.ArchiveValue().IsPath() {
			return []*pulumirpc.CheckFailure{{Property: "source",
				Reason: "archive must be a path to a file or directory (pulumi.asset.FileArchive)"}}
		}
	}
	return nil
}

// sourcePathAndHash returns the local path and content hash of the source.
func sourcePathAndHash(m resource.PropertyMap) (string, string, error) {
	v := unwrap(m["source"])
	switch {
	case v.IsAsset():
		a := v.AssetValue()
		if !a.IsPath() {
			return "", "", errors.New("source: only path-based file assets are supported")
		}
		if a.Hash == "" {
			if err := a.EnsureHash(); err != nil {
				return "", "", fmt.Errorf("source: hashing %s: %w", a.Path, err)
			}
		}
		return a.Path, a.Hash, nil
	case v.IsArchive():
		a := v.ArchiveValue()
		if !a.IsPath() {
			return "", "", errors.New("source: only path-based archives (a file or a directory) are supported")
		}
		if a.Hash == "" {
			if err := a.EnsureHash(); err != nil {
				return "", "", fmt.Errorf("source: hashing %s: %w", a.Path, err)
			}
		}
		return a.Path, a.Hash, nil
	}
	return "", "", errors.New("source must be an asset or an archive")
}

// copyToRemote dials the host, opens an SFTP client and copies the source.
func copyToRemote(ctx context.Context, conn *connection, sourcePath, remotePath string, lg logger) error {
	lg.Status(fmt.Sprintf("copying %s to %s:%s", sourcePath, conn.endpoint(), remotePath))
	pc, release, err := sshPool.acquire(ctx, conn, lg.Status)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.client.Close() })
	defer func() { release(!stop()) }()

	sc, err := sftp.NewClient(pc.client.Client, sftp.UseConcurrentWrites(true))
	if err != nil {
		return fmt.Errorf("starting SFTP on %s (is the sftp subsystem enabled?): %w", conn.label(), err)
	}
	defer sc.Close()
	if err := sftpCopy(sc, sourcePath, remotePath); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return fmt.Errorf("copying %s to %s:%s: %w", sourcePath, conn.endpoint(), remotePath, err)
	}
	return nil
}

// statRemote returns nil info (and no error) when the path does not exist.
func statRemote(sc *sftp.Client, p string) (fs.FileInfo, error) {
	info, err := sc.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("stat remote %s: %w", p, err)
	}
	return info, nil
}

func sftpCopy(sc *sftp.Client, src, dst string) error {
	srcInfo, err := os.Stat(src)
	if err != nil {
		return err
	}
	dstInfo, err := statRemote(sc, dst)
	if err != nil {
		return err
	}
	if !srcInfo.IsDir() {
		if dstInfo != nil && dstInfo.IsDir() {
			dst = path.Join(dst, filepath.Base(src))
		}
		return uploadFile(sc, src, dst)
	}

	if dstInfo != nil && !dstInfo.IsDir() {
		return fmt.Errorf("remote path %s exists but is not a directory", dst)
	}
	if dstInfo == nil {
		if err := sc.Mkdir(dst); err != nil {
			return fmt.Errorf("creating remote directory %s: %w", dst, err)
		}
	}
	if !strings.HasSuffix(src, "/") {
		dst = path.Join(dst, filepath.Base(src))
		info, err := statRemote(sc, dst)
		if err != nil {
			return err
		}
		if info != nil && !info.IsDir() {
			return fmt.Errorf("remote path %s exists but is not a directory", dst)
		}
		if info == nil {
			if err := sc.Mkdir(dst); err != nil {
				return fmt.Errorf("creating remote directory %s: %w", dst, err)
			}
		}
	}
	return uploadDir(sc, src, dst)
}

func uploadFile(sc *sftp.Client, src, dst string) error {
	local, err := os.Open(src)
	if err != nil {
		return err
	}
	defer local.Close()
	remote, err := sc.Create(dst)
	if err != nil {
		return fmt.Errorf("creating remote file %s: %w", dst, err)
	}
	if _, err := remote.ReadFrom(local); err != nil {
		_ = remote.Close()
		return fmt.Errorf("writing remote file %s: %w", dst, err)
	}
	if err := remote.Close(); err != nil {
		return fmt.Errorf("closing remote file %s: %w", dst, err)
	}
	return nil
}

func uploadDir(sc *sftp.Client, src, dst string) error {
	return fs.WalkDir(os.DirFS(src), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := path.Join(dst, filepath.ToSlash(p))
		if !d.IsDir() {
			return uploadFile(sc, filepath.Join(src, p), target)
		}
		info, err := statRemote(sc, target)
		if err != nil {
			return err
		}
		if info == nil {
			if err := sc.Mkdir(target); err != nil {
				return fmt.Errorf("creating remote directory %s: %w", target, err)
			}
		} else if !info.IsDir() {
			return fmt.Errorf("remote path %s exists but is not a directory", target)
		}
		return nil
	})
}
