import { expect } from "chai";
import { request } from "undici";
import { MODEL, sharedFleet } from "./support/stack";
import { expectNothingPlanned, plannedChanges } from "./support/preview";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";
import { ROUTER_PROCESS_RESTART } from "./support/names";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";

interface StateResource {
  urn: string;
  outputs?: Record<string, unknown>;
}

/** Each resource's outputs by name, from the stack's state: what a measurement recorded and when. */
async function outputsByName(stack: Awaited<ReturnType<typeof sharedFleet>>["stack"]): Promise<Map<string, Record<string, unknown>>> {
  const resources = (await stack.exportStack()).deployment.resources as StateResource[];
  return new Map(resources.map((r) => [r.urn.split("::").pop()!, r.outputs ?? {}]));
}

describe("e2e: the router (Gate G) and its monitoring", function () {
  this.timeout(1_200_000);

  it("serves the fleet after preflight: /health with every engine, /v1/models, one completion through both roles", async () => {
    const { stack, engines } = await sharedFleet();
    const routerUrl = (await stack.outputs()).routerUrl.value as string;
    const health = (await request(`${routerUrl}/health`).then((r) => r.body.json())) as { status: string; instances: number };
    expect(health).to.deep.include({ status: "ok", instances: engines.length });
    const models = (await request(`${routerUrl}/v1/models`).then((r) => r.body.json())) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id)).to.include(MODEL);
    const completion = await request(`${routerUrl}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, prompt: "A narwhal is", max_tokens: 8, temperature: 0 }),
    });
    const body = (await completion.body.json()) as { choices: Array<{ text: string }> };
    expect(completion.statusCode).to.equal(200);
    expect(body.choices[0].text.length).to.be.greaterThan(0);
  });

  it("passed a preflight that the pinned narwhal-check, run where the router runs, agrees with gate by gate", async () => {
    const { stack } = await sharedFleet();
    await expectNarwhalCheckAgrees(stack);
  });

  it("has Prometheus scraping the router, every engine and the freshness exporter, each target up, no evidence stale", async () => {
    const { stack, hosts, engines } = await sharedFleet();
    const routerHost = (await stack.outputs()).deployment.value as { router: string };
    const address = hosts.find((h) => h.alias === routerHost.router)!.address;
    const deadline = Date.now() + 60_000;
    let targets: Array<{ labels: Record<string, string>; health: string }> = [];
    let fresh: string[] = [];
    // generation, attestation and profile per engine, and the router: each still matches its evidence.
    const allFresh = Array(engines.length * 3 + 1).fill("1");
    // The first scrape of a fresh target, or the first after the last up, can still be pending: wait, bounded.
    while (Date.now() < deadline) {
      const r = (await request(`http://${address}:9391/api/v1/targets`).then((x) => x.body.json())) as { data: { activeTargets: typeof targets } };
      targets = r.data.activeTargets;
      const q = (await request(`http://${address}:9391/api/v1/query?query=narwhal_evidence_fresh`).then((x) => x.body.json())) as { data: { result: Array<{ value: [number, string] }> } };
      fresh = q.data.result.map((x) => x.value[1]);
      if (targets.length === engines.length + 2 && targets.every((t) => t.health === "up") && JSON.stringify(fresh) === JSON.stringify(allFresh)) break;
      await new Promise((res) => setTimeout(res, 2000));
    }
    expect(targets.map((t) => t.health)).to.deep.equal(Array(engines.length + 2).fill("up"));
    expect(fresh).to.deep.equal(allFresh);
    expect(targets.map((t) => t.labels.iid).filter(Boolean).sort()).to.deep.equal(engines.map((e) => e.id).sort());
  });

  it("restarts on the same fleet document re-measuring nothing: profiles, store and preflight are kept", async () => {
    const { stack } = await sharedFleet();
    const before = await outputsByName(stack);
    const process = (await stack.exportStack()).deployment.resources.find((r: StateResource) => r.urn.endsWith("::fleet-router-host-router-process")) as StateResource;

    // Design row: the process, its proof and their record follow; no measurement is among them. (The port
    // check comes before the process, so replacing the process alone leaves it.)
    const steps = await plannedChanges(stack, { replace: [process.urn] });
    expect([...steps.keys()].sort()).to.deep.equal([...ROUTER_PROCESS_RESTART].sort());
    const snapshot = await snapshotEvidence(stack);
    await stack.up({ replace: [process.urn], onOutput: () => undefined });
    // The one new record is Gate G's record of the new process, as planned.
    expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(steps, snapshot)).and.deep.equal(["fleet-router-host-router-record"]);
    const after = await outputsByName(stack);
    // A new router process, proved again ...
    expect(after.get("fleet-router-host-router-process")!.stdout).to.not.equal(before.get("fleet-router-host-router-process")!.stdout);
    // ... on the evidence it had: no profile, store, preflight or attestation was taken again.
    for (const name of [...before.keys()].filter((n) => /^fleet-(profiles-|preflight$|attestation-e\d$|e\d-generation$)/.test(n))) {
      expect(after.get(name), name).to.deep.equal(before.get(name));
    }
    await expectNothingPlanned(stack);
  });
});
