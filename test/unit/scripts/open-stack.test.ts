import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { openStack, PROJECT_ROOT } from "../../../scripts/stack/select";
import { invalidationSummary } from "../../../scripts/stack/preview";
import { rejection } from "../../support/rejection";

/**
 * The scripts' `--stack` reads the named stack and leaves the workspace's selected stack alone: two stacks
 * of a throwaway project in a file backend, one selected, the other read, previewed and exported.
 */
const PULUMI = path.join(PROJECT_ROOT, ".tools", "bin", "pulumi");
const SETTINGS = ["PULUMI_BACKEND_URL", "PULUMI_HOME", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE", "PULUMI_SKIP_UPDATE_CHECK"] as const;

describe("scripts: a stack named with --stack is read without being selected", function () {
  this.timeout(120_000);
  let dir: string;
  const saved: Partial<Record<(typeof SETTINGS)[number], string>> = {};

  const pulumi = (...args: string[]) => {
    const r = spawnSync(PULUMI, [...args, "--non-interactive"], { cwd: dir, encoding: "utf8", env: process.env });
    if (r.status !== 0) throw new Error(`pulumi ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const selected = () => pulumi("stack", "--show-name");

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-open-stack-"));
    for (const k of SETTINGS) saved[k] = process.env[k];
    // The backend and the CLI's workspace records (where the selection lives) both in the throwaway folder.
    process.env.PULUMI_BACKEND_URL = `file://${path.join(dir, "state")}`;
    process.env.PULUMI_HOME = path.join(dir, "home");
    process.env.PULUMI_CONFIG_PASSPHRASE = "open-stack-test";
    process.env.PULUMI_SKIP_UPDATE_CHECK = "true";
    delete process.env.PULUMI_CONFIG_PASSPHRASE_FILE;
    fs.mkdirSync(path.join(dir, "state"));
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: open-stack-test\nruntime: nodejs\nmain: index.js\n");
    // A program with one output and no resources: its only plugin is the nodejs host beside the CLI.
    fs.writeFileSync(path.join(dir, "index.js"), 'module.exports = { which: require("@pulumi/pulumi").getStack() };\n');
    fs.symlinkSync(path.join(PROJECT_ROOT, "node_modules"), path.join(dir, "node_modules"));
    pulumi("stack", "init", "other");
    pulumi("config", "set", "--stack", "other", "open-stack-test:marker", "read-from-other");
    pulumi("up", "--yes", "--skip-preview", "--stack", "other");
    pulumi("stack", "init", "mine");
    expect(selected()).to.equal("mine");
  });

  after(() => {
    for (const k of SETTINGS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("reads the other stack's outputs, config and state, and the selection stays on the operator's stack", async () => {
    const stack = await openStack("other", dir);
    expect(selected()).to.equal("mine");
    expect((await stack.outputs()).which?.value).to.equal("other");
    expect((await stack.getAllConfig())["open-stack-test:marker"]?.value).to.equal("read-from-other");
    const state = (await stack.exportStack()).deployment as { resources?: Array<{ type: string }> };
    expect(state.resources?.map((r) => r.type)).to.include("pulumi:pulumi:Stack");
    expect(selected()).to.equal("mine");
  });

  it("previews the other stack (what invalidated and verify run) without selecting it", async () => {
    const summary = await invalidationSummary(await openStack("other", dir));
    expect(summary.stack).to.equal("other");
    expect(selected()).to.equal("mine");
  });

  it("refuses a stack the backend does not hold, naming it and how to list the stacks, and selects nothing", async () => {
    const e = await rejection(openStack("absent", dir));
    expect(e.code).to.equal("NARWHAL_STACK_NOT_FOUND");
    expect(e.message).to.match(/^stack absent cannot be read: .*no stack named 'absent' found.*; `pulumi stack ls` lists this project's stacks$/s);
    expect(selected()).to.equal("mine");
  });
});
