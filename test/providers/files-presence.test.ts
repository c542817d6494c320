/**
 * FilesPresence on a simulated host (sim1), its methods called as the dynamic provider host calls them:
 * files that are there keep the epoch; one that is gone replaces it (replace key "files", the missing
 * paths as the reason), and the replacement's new epoch is what makes their commands write them again.
 * A host that cannot be asked is never taken for one whose files are gone.
 */
import { expect } from "chai";
import { simUp, sshExec, type SimHost } from "../../sim/hosts";
import { provider } from "../../dynamic-providers/files-presence/provider";
import type { FilesPresenceInputs, FilesPresenceOutputs } from "../../dynamic-providers/files-presence/check";
import { UNKNOWN } from "../../lib/unknown";
import { shq } from "../../lib/shell";
import { simLogin } from "./support/sim-launch";

const DIR = "/var/lib/narwhal-fleet/provider-tests/files-presence";
const PATHS = [`${DIR}/prometheus/prometheus.yml`, `${DIR}/prometheus/engines.json`, `${DIR}/freshness/expected.json`];

describe("providers: FilesPresence on a simulated host (sim1)", function () {
  this.timeout(120_000);
  let host: SimHost;
  let inputs: FilesPresenceInputs;
  const ssh = (command: string) => sshExec(host, command, { timeoutMs: 60_000 });
  const refreshed = async (outs: FilesPresenceOutputs) => (await provider.read!("id", outs)).props as FilesPresenceOutputs;

  before(async () => {
    host = (await simUp({})).hosts.find((h) => h.alias === "sim1")!;
    const { login, privateKey } = simLogin(host);
    inputs = { hostAlias: host.alias, stack: "provider-tests", login, credentials: { privateKey }, owner: "monitoring", paths: PATHS, probeTimeoutS: 20 };
    const write = PATHS.map((p) => `mkdir -p "$(dirname ${shq(p)})" && echo x > ${shq(p)}`).join(" && ");
    expect((await ssh(`rm -rf ${shq(DIR)} && ${write}`)).code).to.equal(0);
  });

  after(async () => {
    if (host) await ssh(`rm -rf ${shq(DIR)}`);
  });

  it("mints a new epoch at each create, in the id the writers take as a trigger, and looks at nothing then", async () => {
    const [a, b] = [await provider.create(inputs), await provider.create(inputs)];
    const [outsA, outsB] = [a.outs as FilesPresenceOutputs, b.outs as FilesPresenceOutputs];
    expect(outsA.epoch).to.match(/^[0-9a-f]{16}$/).and.not.equal(outsB.epoch);
    expect(a.id).to.equal(`sim1-monitoring-files-${outsA.epoch}`);
    expect(outsA.observedState).to.equal(undefined);
  });

  it("keeps the epoch while every file is there, and replaces it once one is gone, naming it", async () => {
    const created = (await provider.create(inputs)).outs as FilesPresenceOutputs;
    const present = await refreshed(created);
    expect(present).to.include({ observedState: "present", epoch: created.epoch });
    expect(await provider.diff!("id", present, inputs)).to.include({ changes: false });

    expect((await ssh(`rm -f ${shq(PATHS[1])} ${shq(PATHS[2])}`)).code).to.equal(0);
    const gone = await refreshed(present);
    expect(gone).to.include({ observedState: "gone", observedDetail: `the monitoring files on host sim1 are gone: ${PATHS[1]}, ${PATHS[2]}` });
    expect(await provider.diff!("id", gone, inputs)).to.deep.equal({ changes: true, replaces: ["files"], deleteBeforeReplace: false });
  });

  it("updates for another list of files, and forecasts no change for values a preview cannot know", async () => {
    const present = { ...((await provider.create(inputs)).outs as FilesPresenceOutputs), observedState: "present" as const };
    expect(await provider.diff!("id", present, { ...inputs, paths: PATHS.slice(0, 1) })).to.include({ changes: true }).and.deep.include({ replaces: [] });
    expect(await provider.diff!("id", present, { ...inputs, login: UNKNOWN as never, credentials: UNKNOWN as never })).to.include({ changes: false });
  });

  it("calls a host that cannot be asked unknown, not gone", async () => {
    const unreachable = { ...inputs, login: { ...inputs.login, host: "198.18.0.250", connectTimeoutS: 1 }, probeTimeoutS: 5 };
    const seen = await refreshed({ ...((await provider.create(unreachable)).outs as FilesPresenceOutputs) });
    expect(seen.observedState).to.equal("unknown");
    expect(seen.observedDetail).to.match(/^host sim1 could not be asked: /);
    expect(await provider.diff!("id", seen, unreachable)).to.include({ changes: false });
  });
});
