/** Configs for the config tests: one minimal valid fleet, copied fresh for every case. */
import { expect } from "chai";
import { parseFleetConfig } from "../../../lib/config/parse";
import type { FleetSpec } from "../../../lib/config/types";

/** Raw config as the program passes it: plain JSON-like values, loosely typed so tests can break it. */
export type RawConfig = Record<string, any>;

/** The least a fleet needs: two hosts, two engines, a model. Everything else is defaulted. */
export function minimal(): RawConfig {
  return {
    hosts: [
      { alias: "a", destination: "root@10.0.0.1", fabricInterface: "eth1" },
      { alias: "b", destination: "10.0.0.2", fabricInterface: "eth1" },
    ],
    engines: [
      { id: "e0", host: "a" },
      { id: "e1", host: "b" },
    ],
    model: { servedName: "qwen3-8b", checkpointDir: "/srv/models/qwen3-8b" },
  };
}

/** minimal() changed by `edit` (which may mutate freely: every call gets a new copy). */
export function variant(edit: (c: RawConfig) => void): RawConfig {
  const c = minimal();
  edit(c);
  return c;
}

/** A well-formed OpenSSH ed25519 public key line, built the way the wire format lays it out. */
export function ed25519Line(fill = 7): string {
  const type = Buffer.from("ssh-ed25519");
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const blob = Buffer.concat([u32(type.length), type, u32(32), Buffer.alloc(32, fill)]);
  return `ssh-ed25519 ${blob.toString("base64")}`;
}

export const DIGEST = "sha256:" + "ab".repeat(32);

/**
 * The output shape of a rejected config: the text the program ends with (a RunError's message, printed
 * alone) has no stack frame, no colour or other escape code, and one line per issue naming its path.
 */
export function expectCleanMessage(message: string, issues: ReadonlyArray<{ path: string; message: string }>): void {
  expect(message, "a stack frame").not.to.match(/^\s+at /m);
  expect(message, "an escape code").not.to.match(/\u001b/);
  expect(message.split("\n")[0]).to.match(/^invalid fleet config \(\d+ problems?\):$/);
  expect(message.split("\n").slice(1)).to.deep.equal(issues.map((i) => `  - ${i.path}: ${i.message}`));
}

/** The issues parseFleetConfig reports for `raw`, or fails the test if it parses. */
export function issuesOf(raw: unknown): Array<{ path: string; message: string }> {
  try {
    parseFleetConfig(raw);
  } catch (e) {
    const err = e as { code?: string; message: string; issues?: Array<{ path: string; message: string }> };
    expect(err.code).to.equal("NARWHAL_CONFIG_INVALID");
    const issues = (err.issues ?? []).map((i) => ({ path: i.path, message: i.message }));
    expectCleanMessage(err.message, issues);
    return issues;
  }
  expect.fail("expected the config to be rejected");
}

/** Parses `raw`, failing the test with every reported problem if it does not parse. */
export function accepted(raw: unknown): FleetSpec {
  try {
    return parseFleetConfig(raw);
  } catch (e) {
    return expect.fail(`expected the config to parse, got: ${(e as Error).message}`);
  }
}

/** One broken config and exactly the problems it must cause, as [path, message] pairs. */
export interface BadCase {
  name: string;
  edit: (c: RawConfig) => void;
  issues: Array<[path: string, message: string]>;
}

/**
 * One test per case. The whole issue list is compared, which also proves that one mistake does not
 * cascade into unrelated complaints; `issuesOf` checks the printed message's shape as well.
 */
export function rejectsEach(cases: readonly BadCase[]): void {
  for (const { name, edit, issues } of cases) {
    it(`rejects ${name}`, () => {
      expect(issuesOf(variant(edit))).to.deep.equal(issues.map(([path, message]) => ({ path, message })));
    });
  }
}
