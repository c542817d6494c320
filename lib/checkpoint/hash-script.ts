/**
 * The Python 3 program that hashes a checkpoint where it lives (stdlib only, 3.6+, since the runbook
 * promises only "Python 3" on engine hosts). The same text runs over SSH and locally (tests, bench), so
 * what the bench measures is the remote code path.
 *
 * Invocation: `python3 -c HASH_SCRIPT <dir> <workers|0> <racyWindowMs> <deadlineS>`, previous manifest
 * as JSON on stdin (empty for none). The script travels in argv because it is small and fixed (~9 KiB,
 * far under Linux's 128 KiB per-argument limit) while the previous manifest grows with the file count,
 * so it goes on stdin, which has no size limit and needs no separator or escaping. `python3 -` would
 * instead consume all of stdin as program text.
 *
 * Kept as String.raw so Python's backslash escapes reach the interpreter unchanged; the text must
 * contain no backtick and no dollar-brace.
 */
export const HASH_SCRIPT = String.raw`# Hashes a checkpoint directory for narwhal-fleet discovery; stdlib only, Python 3.6+.
# argv: <dir> <workers, 0 = CPUs this process may use> <racy window ms> <deadline s>
# stdin: the previous manifest as JSON ({"scannedAtNs", "files": [...]}) or nothing.
# stdout: one JSON object; exit 0 when "ok" is true, 3 when it names an error.
import hashlib, json, os, stat, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

CHUNK = 1 << 20  # 1 MiB reads: large enough that hashlib drops the GIL, small enough that memory stays flat
HEX = set("0123456789abcdef")
_out_lock = threading.Lock()


class Fail(Exception):
    def __init__(self, kind, path, detail):
        Exception.__init__(self, detail)
        self.kind, self.path, self.detail = kind, path, detail


def emit(obj, code):
    # One writer, then a hard exit: worker threads still reading must not delay or garble the answer.
    with _out_lock:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")))
        sys.stdout.flush()
        os._exit(code)


def fail(kind, path, detail):
    emit({"ok": False, "error": {"kind": kind, "path": path, "detail": detail}}, 3)


def now_ns():
    return time.time_ns() if hasattr(time, "time_ns") else int(time.time() * 1e9)


def fingerprint(st):
    # Nanosecond times and inodes go out as strings: they exceed 2**53 and JSON readers use doubles.
    return {"size": st.st_size, "mtimeNs": str(st.st_mtime_ns), "ctimeNs": str(st.st_ctime_ns), "inode": str(st.st_ino)}


def retained(rel):
    # The runbook's filter: the root README.md and .cache/huggingface/ metadata are not the model.
    return rel != "README.md" and not rel.startswith(".cache/huggingface/")


def strerror(e):
    return e.strerror or str(e)


def scan(root):
    """Lists retained regular files as (rel, abs, stat), plus problems; never opens a file."""
    real_root = os.path.realpath(root)
    found, problems = [], []

    def walk_error(e):
        raise Fail("unreadable", os.path.relpath(e.filename, root) if e.filename else ".", "cannot list directory: " + strerror(e))

    for dirpath, dirnames, filenames in os.walk(root, onerror=walk_error):
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir + "/"
        for d in list(dirnames):
            rel = prefix + d
            if not retained(rel + "/"):
                dirnames.remove(d)
            elif os.path.islink(os.path.join(dirpath, d)):
                # os.walk does not descend into it; following could loop or leave the snapshot.
                problems.append({"path": rel, "kind": "symlinked_directory", "detail": "target " + os.path.realpath(os.path.join(dirpath, d))})
        dirnames.sort()
        for name in sorted(filenames):
            rel = prefix + name
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                raise Fail("unsupported_name", rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), "file name is not UTF-8")
            if "\t" in rel or "\n" in rel:
                raise Fail("unsupported_name", rel, "file name contains a tab or newline, which the canonical manifest cannot carry")
            if not retained(rel):
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    target = os.path.realpath(path)
                    try:
                        st = os.stat(path)
                    except OSError as e:
                        problems.append({"path": rel, "kind": "dangling_symlink", "detail": "target " + target + ": " + strerror(e)})
                        continue
                    if target != real_root and not target.startswith(real_root.rstrip("/") + "/"):
                        # Hashed like any file (the engine loads it), but the snapshot no longer holds it.
                        problems.append({"path": rel, "kind": "symlink_outside_root", "detail": "target " + target})
            except OSError as e:
                raise Fail("unreadable", rel, strerror(e))
            if not stat.S_ISREG(st.st_mode):
                problems.append({"path": rel, "kind": "not_a_regular_file", "detail": "mode " + oct(st.st_mode)})
                continue
            found.append((rel, path, st))
    return found, problems


def hash_file(item):
    rel, path, _ = item
    try:
        # O_NONBLOCK: if the path became a FIFO since the scan, opening it must not hang the scan.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Fail("unreadable", rel, strerror(e))
    with os.fdopen(fd, "rb", buffering=0) as f:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise Fail("changed_while_hashing", rel, "no longer a regular file")
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        except (AttributeError, OSError):
            pass
        h = hashlib.sha256()
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        total = 0
        try:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                h.update(view[:n])
                total += n
        except OSError as e:
            raise Fail("unreadable", rel, strerror(e))
        after = os.fstat(fd)
    # The fingerprint recorded is the one of the bytes actually read; a writer mid-read makes it a lie.
    if fingerprint(before) != fingerprint(after) or total != before.st_size:
        raise Fail("changed_while_hashing", rel, "file changed while it was being hashed (%d bytes read, size now %d)" % (total, after.st_size))
    return {"path": rel, "size": total, "sha256": h.hexdigest(), "fingerprint": fingerprint(before), "reused": False}


def reusable(prev, fp, cutoff_ns, path):
    # Same (size, mtime, ctime, inode) means same bytes, unless the file changed within the clock tick of
    # the previous scan: a ctime at or after (previous scan start - racy window) proves nothing.
    return (
        isinstance(prev, dict)
        and prev.get("fingerprint") == fp
        and isinstance(prev.get("sha256"), str)
        and len(prev["sha256"]) == 64
        and set(prev["sha256"]) <= HEX
        and int(fp["ctimeNs"]) < cutoff_ns
        and os.access(path, os.R_OK)
    )


def main():
    root, workers, racy_ms, deadline_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    timer = threading.Timer(deadline_s, fail, ("timeout", root, "did not finish within %gs" % deadline_s))
    timer.daemon = True
    timer.start()
    started = time.monotonic()
    scanned_at = now_ns()
    raw = sys.stdin.buffer.read()
    try:
        previous = json.loads(raw.decode("utf-8")) if raw.strip() else {"scannedAtNs": "0", "files": []}
        prev_by_path = dict((e["path"], e) for e in previous["files"])
        cutoff_ns = int(previous["scannedAtNs"]) - racy_ms * 1000000
    except (ValueError, KeyError, TypeError) as e:
        raise Fail("bad_input", "<stdin>", "previous manifest is not valid: " + str(e))
    try:
        st = os.stat(root)
    except FileNotFoundError:
        raise Fail("missing_dir", root, "no such directory")
    except OSError as e:
        raise Fail("unreadable", root, strerror(e))
    if not stat.S_ISDIR(st.st_mode):
        raise Fail("not_a_directory", root, "not a directory")
    if workers <= 0:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    found, problems = scan(root)
    files, todo = [], []
    for rel, path, st in found:
        prev = prev_by_path.get(rel)
        fp = fingerprint(st)
        if reusable(prev, fp, cutoff_ns, path):
            files.append({"path": rel, "size": st.st_size, "sha256": prev["sha256"], "fingerprint": fp, "reused": True})
        else:
            todo.append((rel, path, st))
    # Largest first, so one big shard does not start last and leave the other cores idle.
    todo.sort(key=lambda t: -t[2].st_size)
    # Threads, not processes: hashlib releases the GIL while it hashes a large buffer, so every core works.
    # No "with": its exit would wait for every queued file before an error could be reported.
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(todo) or 1)))
    files.extend(pool.map(hash_file, todo))
    pool.shutdown(wait=True)
    files.sort(key=lambda e: e["path"].encode("utf-8"))
    emit_result(files, problems, scanned_at, workers, started)


def peak_rss_kib():
    # VmHWM belongs to this program's own address space; ru_maxrss would also carry the peak of
    # whatever forked us (across exec), e.g. a large Node process when run locally.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except ImportError:
        return None


def emit_result(files, problems, scanned_at, workers, started):
    emit({
        "ok": True,
        "scannedAtNs": str(scanned_at),
        "files": files,
        "problems": problems,
        "stats": {
            "workers": workers,
            "bytesRead": sum(e["size"] for e in files if not e["reused"]),
            "elapsedS": time.monotonic() - started,
            "peakRssKiB": peak_rss_kib(),
        },
    }, 0)


try:
    main()
except Fail as e:
    fail(e.kind, e.path, e.detail)
except Exception as e:  # anything unforeseen still answers in JSON, naming the exception
    fail("internal", "", "%s: %s" % (type(e).__name__, e))
`;
