/**
 * The capture's reads on a host (lib/engine/log-source.ts), their scripts run by /bin/sh against files
 * here: the same scripts the provider runs over SSH.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EngineError } from "../../../lib/engine/errors";
import {
  configReadScript,
  logReadScript,
  logTargets,
  nativeEngineLogs,
  noServingLog,
  parseConfigRead,
  parseLogRead,
  parseProcessStart,
  processStartScript,
} from "../../../lib/engine/log-source";
import { thrown } from "./helpers";

function sh(script: string): { stdout: string; stderr: string; code: number | null } {
  const r = spawnSync("/bin/sh", ["-c", script], { encoding: "utf8" });
  return { stdout: r.stdout, stderr: r.stderr, code: r.status };
}

describe("engine log and model config reads (lib/engine/log-source.ts)", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "log-source-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("names where a native engine writes its log: the run folder's, then a runbook launcher's", () => {
    expect(nativeEngineLogs("/srv/runs/e1/")).to.deep.equal({ kind: "files", paths: ["/srv/runs/e1/engine.log"] });
    expect(logTargets(nativeEngineLogs("/srv/runs/e1", "/srv/engine-launch-1/"), undefined)).to.deep.equal([
      { kind: "file", path: "/srv/runs/e1/engine.log" },
      { kind: "file", path: "/srv/engine-launch-1/startup.log" },
    ]);
    expect(logTargets({ kind: "container", dockerCommand: "docker" }, "0123456789abcdef")).to.deep.equal([{ kind: "container", dockerCommand: "docker", containerId: "0123456789abcdef" }]);
    expect(() => logTargets({ kind: "container", dockerCommand: "docker" }, undefined)).to.throw("a container log needs the engine's container id (12-64 hex digits), got null");
  });

  it("names each candidate and why it was refused when none is the serving engine's log", () => {
    const one = new EngineError("NARWHAL_CACHE_LOG", "host h: /a/engine.log: the engine's log does not exist: …", "the engine's log does not exist: …");
    expect(noServingLog("h", [{ source: "/a/engine.log", error: one }])).to.equal(one);
    const two = new EngineError("NARWHAL_CACHE_LOG_ROTATED", "host h: /b/startup.log: the log was written by API server pid 7, which no longer runs: …", "the log was written by API server pid 7, which no longer runs: …");
    const both = noServingLog("h", [
      { source: "/a/engine.log", error: one },
      { source: "/b/startup.log", error: two },
    ]);
    expect([both.code, both.message]).to.deep.equal([
      "NARWHAL_CACHE_LOG_ROTATED",
      "host h: no log of the serving engine: /a/engine.log: the engine's log does not exist: …; /b/startup.log: the log was written by API server pid 7, which no longer runs: …",
    ]);
  });

  it("reads a log file's first bytes and its whole size", () => {
    const file = join(dir, "engine.log");
    writeFileSync(file, "line one\nline two\n");
    const read = logReadScript({ kind: "file", path: file }, 5);
    expect(read.source).to.equal(file);
    const r = sh(read.script);
    expect(r.code).to.equal(0);
    expect(parseLogRead(r.stdout, r.stderr, { host: "h", source: read.source })).to.deep.equal({ text: "line one\nline two\n", readBytes: 18, totalBytes: 18 });
    const bounded = sh(logReadScript({ kind: "file", path: file }, 5, 9).script);
    expect(parseLogRead(bounded.stdout, bounded.stderr, { host: "h", source: file })).to.deep.equal({ text: "line one\n", readBytes: 9, totalBytes: 18 });
  });

  it("says plainly when the log is gone or unreadable, naming the host and the file", () => {
    const gone = join(dir, "rotated-away.log");
    const r = sh(logReadScript({ kind: "file", path: gone }, 5).script);
    const err = thrown(() => parseLogRead(r.stdout, r.stderr, { host: "gpu-a", source: gone }));
    expect([err.code, err.message]).to.deep.equal([
      "NARWHAL_CACHE_LOG",
      `host gpu-a: ${gone}: the engine's log does not exist: it was removed or rotated away since the engine started, so its startup lines cannot be read; restart the engine to capture its cache`,
    ]);
    const folder = join(dir, "a-folder");
    mkdirSync(folder);
    const f = sh(logReadScript({ kind: "file", path: folder }, 5).script);
    expect(thrown(() => parseLogRead(f.stdout, f.stderr, { host: "gpu-a", source: folder })).message).to.equal(`host gpu-a: ${folder}: the engine's log is not a regular file`);
    if (process.getuid?.() !== 0) {
      const locked = join(dir, "locked.log");
      writeFileSync(locked, "x\n");
      chmodSync(locked, 0);
      const u = sh(logReadScript({ kind: "file", path: locked }, 5).script);
      expect(thrown(() => parseLogRead(u.stdout, u.stderr, { host: "gpu-a", source: locked })).message).to.equal(`host gpu-a: ${locked}: the engine's log is not readable by the SSH user`);
    }
  });

  it("reads a container's log with docker logs since its latest start, bounded, after checking the container exists", () => {
    const docker = join(dir, "docker");
    // A stand-in client: inspect answers the start time of one known container, logs prints what --since lets through.
    writeFileSync(
      docker,
      '#!/bin/sh\ncase "$1" in inspect) [ "$4" = 0123456789abcdef ] || { echo "Error: No such object: $4" >&2; exit 1; }; echo 2026-01-31T12:00:00.5Z ;; ' +
        'logs) [ "$2 $3" = "--since 2026-01-31T12:00:00.5Z" ] && { echo "out line"; echo "err line" >&2; } ;; esac\n',
      { mode: 0o755 },
    );
    const read = logReadScript({ kind: "container", dockerCommand: docker, containerId: "0123456789abcdef" }, 5);
    expect(read.source).to.equal(`${docker} logs 0123456789ab`);
    const r = sh(read.script);
    expect(parseLogRead(r.stdout, r.stderr, { host: "h", source: read.source })).to.deep.equal({ text: "out line\nerr line\n", readBytes: 18, since: "2026-01-31T12:00:00.5Z" });
    const missing = sh(logReadScript({ kind: "container", dockerCommand: docker, containerId: "fedcba9876543210" }, 5).script);
    expect(thrown(() => parseLogRead(missing.stdout, missing.stderr, { host: "h", source: "docker logs fedcba987654" })).message).to.equal(
      "host h: docker logs fedcba987654: the daemon has no such container (Error: No such object: fedcba9876543210)",
    );
  });

  it("reads config.json's exact bytes, and refuses a missing or oversized one naming the file", () => {
    const model = join(dir, "model");
    mkdirSync(model);
    const text = '{"num_hidden_layers": 4, "name": "ünï"}\n';
    writeFileSync(join(model, "config.json"), text);
    expect(parseConfigRead(sh(configReadScript(`${model}/`)).stdout, "h", model).toString("utf8")).to.equal(text);
    const small = sh(configReadScript(model, 10));
    expect(thrown(() => parseConfigRead(small.stdout, "gpu-a", model)).message).to.equal(`host gpu-a: ${model}/config.json is 42 bytes, more than the 4194304 a model config can be`);
    const none = sh(configReadScript(join(dir, "no-model")));
    const err = thrown(() => parseConfigRead(none.stdout, "gpu-a", join(dir, "no-model")));
    expect([err.code, err.message]).to.deep.equal([
      "NARWHAL_CACHE_LAYOUT_SOURCE",
      `host gpu-a: ${dir}/no-model/config.json is missing; the capture needs the model's layers, heads and head size from it`,
    ]);
  });

  it("reads when a process started from /proc, as /metrics' process_start_time_seconds computes it, or that it is gone", () => {
    const child = spawnSync("/bin/sh", ["-c", "echo $$"], { encoding: "utf8" });
    const gonePid = Number(child.stdout.trim());
    expect(parseProcessStart(sh(processStartScript(gonePid)).stdout, "h", gonePid)).to.deep.equal({ running: false });
    const mine = parseProcessStart(sh(processStartScript(process.pid)).stdout, "h", process.pid);
    expect(mine.running).to.equal(true);
    // Node's own clock of its start and /proc's agree within the tolerance the capture allows.
    expect(mine.running && mine.startedAtS).to.be.closeTo(performance.timeOrigin / 1000, 1.5);
    expect(() => parseProcessStart("started x", "gpu-a", 12)).to.throw('host gpu-a: reading when pid 12 started printed "started x"');
  });
});
