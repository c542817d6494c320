import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { provider } from "../../dynamic-providers/command-record/provider";
import type { CommandRecordInputs, CommandRecordOutputs } from "../../dynamic-providers/command-record/check";
import { UNKNOWN } from "../../lib/unknown";
import { EvidenceStore, evidenceRoot, gateOfKind } from "../../lib/evidence";

describe("command record: Gates B and G in the evidence store", () => {
  const cwd = process.cwd();
  let dir = "";
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "command-record-"));
    // The provider's store is runs/<stack>/evidence of the program directory it runs in.
    fs.symlinkSync(path.join(cwd, ".git"), path.join(dir, ".git"));
    process.chdir(dir);
  });
  afterEach(() => {
    process.chdir(cwd);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const inputs: CommandRecordInputs = {
    stack: "dev",
    kind: "router",
    hostAlias: "sim1",
    steps: [
      { name: "start", script: "set -eu\nexec narwhal-serve\n", stdout: '{"pid":41,"startedAt":"2026-11-29T10:00:00Z"}\n' },
      { name: "proof", script: "curl /health\n", stdout: '{"health":{"status":"ok","instances":4}}\n' },
    ],
    observations: { started: { pid: 41 }, proof: { health: { status: "ok", instances: 4 } } },
  };

  it("keeps each script and its output as artifacts of a router record that Gate G claims", async () => {
    const { outs } = (await provider.create(inputs)) as { outs: CommandRecordOutputs };
    const store = new EvidenceStore(evidenceRoot(dir, "dev"));
    const record = await store.read(outs.evidence.relativePath, outs.evidence.digest);
    expect(gateOfKind(record.kind)).to.equal("G");
    expect(record.subject).to.deep.equal({ kind: "host", alias: "sim1" });
    expect(record.artifacts.map((a) => a.name)).to.deep.equal(["start.sh", "start.stdout", "proof.sh", "proof.stdout"]);
    expect((await store.readArtifact(record.artifacts[0].relativePath, record.artifacts[0].sha256)).toString()).to.equal(inputs.steps[0].script);
    expect(record.commands.map((c) => c.scriptSha256)).to.have.length(2);
    // What the steps established, and the failed attempts they found kept on the host (none here).
    expect(record.observations).to.deep.equal({ ...inputs.observations, failedAttempts: [] });
  });

  it("is replaced by another run of its steps, and only updated for another stack name", async () => {
    const { outs } = (await provider.create(inputs)) as { outs: CommandRecordOutputs };
    const rerun = { ...inputs, steps: [inputs.steps[0], { ...inputs.steps[1], stdout: '{"health":{"status":"ok","instances":3}}\n' }] };
    expect(await provider.diff!("id", outs, rerun)).to.deep.include({ changes: true, replaces: ["steps"] });
    expect(await provider.diff!("id", outs, { ...inputs, stack: "other" })).to.deep.include({ changes: true, replaces: [] });
    expect(await provider.diff!("id", outs, inputs)).to.deep.include({ changes: false });
  });

  it("holds what a step printed while its command only runs again, and replaces once the command is replaced", async () => {
    const install: CommandRecordInputs = {
      stack: "dev",
      kind: "install",
      hostAlias: "sim1",
      steps: [{ name: "install", script: "set -eu\npip install narwhal-inference\n", stdout: '{"digest":"sha256:aa","binDir":"/srv/bin"}\n' }],
      observations: { marker: { digest: "sha256:aa", binDir: "/srv/bin" } },
      startKey: "sha256:triggers-1",
    };
    const { outs } = (await provider.create(install)) as { outs: CommandRecordOutputs };
    // A re-pinned host key: the install runs again (a preview cannot know what it will print) under the same triggers.
    const rerun = { ...install, steps: [{ ...install.steps[0], stdout: UNKNOWN }], observations: { marker: UNKNOWN } };
    expect(await provider.diff!("id", outs, rerun)).to.deep.include({ changes: false, replaces: [] });
    // Replaced (new triggers, a key the preview does not know yet): the record is taken again.
    expect(await provider.diff!("id", outs, { ...rerun, startKey: UNKNOWN })).to.deep.include({ changes: true, replaces: ["steps", "observations"] });
    // The up diffs with what the command printed: another output is a new record whatever the key.
    const printedOther = { ...install, steps: [{ ...install.steps[0], stdout: '{"digest":"sha256:bb"}\n' }] };
    expect(await provider.diff!("id", outs, printedOther)).to.deep.include({ changes: true, replaces: ["steps"] });
  });
});
