/**
 * What each resource carries into the state as the fleet grows: the program's registrations at several
 * fleet sizes, under Pulumi's mocks (no host, no CLI), measured as the JSON of each resource's inputs.
 *
 *   npm run bench:state-growth [-- --sizes 4x2,16x4,32x8,64x16]
 *
 * A kind of resource the fleet has many of whose mean size grows with the fleet carries something
 * fleet-wide (every peer, every engine), so the state, every checkpoint write and every diff grow with the
 * square of the fleet. The CLI benchmark (bench/cli.ts) times that; this one says where it comes from, in
 * a minute rather than an hour. Prints one JSON object: per size the resource count, bytes and bytes per
 * resource, and per kind of resource (type and name, ids taken out) the count and mean bytes; then, from
 * the smallest size to the largest, `perResourceGrowth` (kinds the fleet has many of whose mean grows by
 * more than 10%: the square's terms) and `fleetWide` (kinds it has one of that grow: linear, expected),
 * each with the inputs that grew.
 */
import { execFileSync } from "node:child_process";
import { parseFlags, parseOrExit, UsageError } from "../scripts/args";
import { fleetConfig, fleetState, hostFacts, mockSecrets, PROFILED } from "../test/mocks/support/fleet";
import { parseFleetConfig } from "../lib/config/parse";
import { readLocalFiles } from "../entry/local-files";

const USAGE = "usage: npm run bench:state-growth [-- --sizes EXH,EXH,...]";
const GPUS_PER_HOST = 8;
/** Registrations stop arriving once every apply has run; this long without one ends a size. */
const QUIET_MS = 3000;
/** A size that has not gone quiet by then is reported as it stands (REGISTRATION_WAIT). */
const REGISTRATION_WAIT_MS = 300_000;

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}

function parseSizes(argv: readonly string[]): { sizes: Array<{ engines: number; hosts: number }>; one: boolean } {
  const values = parseFlags(argv, { sizes: { type: "string" }, one: { type: "boolean" } }, { sizes: "<engines>x<hosts> pairs, engines a multiple of hosts, at most 8 per host" });
  const sizes = (values.sizes ?? "4x2,16x4,32x8,64x16").split(",").map((s) => {
    const [engines, hosts] = s.split("x").map(Number) as [number, number];
    if (!(engines > 0 && hosts > 0 && engines % hosts === 0 && engines / hosts <= GPUS_PER_HOST)) throw new UsageError(`--sizes: "${s}" is not <engines>x<hosts> with engines a multiple of hosts, at most ${GPUS_PER_HOST} per host`);
    return { engines, hosts };
  });
  return { sizes, one: values.one === true };
}

/** Hosts h1..hN with a fabric address each, engines one per GPU alternating prefill and decode. */
function configOf(engines: number, hosts: number): Record<string, unknown> {
  const perHost = engines / hosts;
  const hs = Array.from({ length: hosts }, (_, i) => ({ alias: `h${i + 1}`, destination: `root@198.18.1.${i + 10}`, fabricInterface: "fab0" }));
  const es = hs.flatMap((h, i) => Array.from({ length: perHost }, (_, g) => ({ id: `e${i * perHost + g + 1}`, host: h.alias, gpuIds: [g], role: (i * perHost + g) % 2 === 0 ? "prefill" : "decode" })));
  return fleetConfig({ ...PROFILED, router: { host: "h1" }, hosts: hs, engines: es });
}

/** The mocks' recorded state, with each host's own fabric address and eight GPUs. */
function stateOf(type: string, name: string, inputs: Record<string, unknown>): Record<string, unknown> {
  const s = fleetState(type, name, inputs);
  if (type !== "pulumi-nodejs:dynamic/narwhal:HostDiscovery") return s;
  const n = Number(String(inputs.alias).slice(1));
  return { ...s, ...hostFacts(inputs.alias), fabricAddress: `198.18.1.${n + 10}`, accelerators: { vendor: "nvidia", product: "NVIDIA H100 80GB HBM3", gpus: Array.from({ length: GPUS_PER_HOST }, (_, index) => ({ index })) } };
}

const bytesOf = (v: unknown) => JSON.stringify(v ?? null).length;
/** A resource's kind: its type and its name with the engine and host ids taken out (`Command fleet-X-process`). */
const kindOf = (r: Registered) => `${r.type.split(/[:/]/).pop()!} ${r.name.replace(/\b([eh])\d+\b/g, "X")}`;

/** Where the mocks record, and when they last did: one set of mocks for every size, as Pulumi allows. */
const sink: { registered: Registered[]; last: number } = { registered: [], last: 0 };

async function useMocks(): Promise<void> {
  const pulumi = await import("@pulumi/pulumi");
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        const inputs = args.inputs as Record<string, unknown>;
        sink.registered.push({ type: args.type, name: args.name, inputs });
        sink.last = Date.now();
        return { id: `${args.name}-id`, state: stateOf(args.type, args.name, inputs) };
      },
      call() {
        throw new Error("no calls expected");
      },
    },
    "narwhal-fleet",
    "growth",
    false,
  );
}

async function registrations(engines: number, hosts: number): Promise<Registered[]> {
  sink.last = Date.now();
  const { Fleet } = await import("../components/fleet");
  const spec = parseFleetConfig(configOf(engines, hosts));
  const secrets = mockSecrets("k".repeat(24), "ssh-key");
  new Fleet("fleet", { spec, secrets, localFiles: readLocalFiles(spec, secrets, undefined), knownHosts: { dir: "/fixture/known-hosts", write: () => undefined }, stack: "growth" });
  const started = Date.now();
  while (sink.registered.length === 0 || Date.now() - sink.last < QUIET_MS) {
    if (Date.now() - started > REGISTRATION_WAIT_MS) throw new Error(`${engines}x${hosts}: registrations still arriving after ${REGISTRATION_WAIT_MS / 1000} s (REGISTRATION_WAIT)`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return sink.registered;
}

function summarise(registered: readonly Registered[]) {
  const byType: Record<string, { count: number; meanBytes: number; inputs: Record<string, number> }> = {};
  for (const r of registered) {
    const t = (byType[kindOf(r)] ??= { count: 0, meanBytes: 0, inputs: {} });
    t.count++;
    t.meanBytes += bytesOf(r.inputs);
    for (const [k, v] of Object.entries(r.inputs)) t.inputs[k] = (t.inputs[k] ?? 0) + bytesOf(v);
  }
  for (const t of Object.values(byType)) {
    t.meanBytes = Math.round(t.meanBytes / t.count);
    for (const k of Object.keys(t.inputs)) t.inputs[k] = Math.round(t.inputs[k] / t.count);
  }
  const bytes = registered.reduce((n, r) => n + bytesOf(r.inputs), 0);
  return { resources: registered.length, inputBytes: bytes, bytesPerResource: Math.round(bytes / registered.length), byType };
}

/** One size in this process: Pulumi's mocks take one program per process. */
async function measureOne(engines: number, hosts: number): Promise<void> {
  // The mocks answer every command with the same stdout, which some judgements downstream refuse (the
  // router's proof): those outputs stay unresolved, and only the resources built on them are missing.
  process.on("unhandledRejection", () => undefined);
  await useMocks();
  process.stdout.write(JSON.stringify({ engines, hosts, ...summarise(await registrations(engines, hosts)) }) + "\n");
}

async function main(): Promise<void> {
  const { sizes, one } = parseOrExit(() => parseSizes(process.argv.slice(2)), USAGE);
  if (one) return measureOne(sizes[0].engines, sizes[0].hosts);
  const results: Array<{ engines: number; hosts: number } & ReturnType<typeof summarise>> = [];
  for (const { engines, hosts } of sizes) {
    process.stderr.write(`[bench:state-growth] ${engines} engines on ${hosts} hosts\n`);
    const out = execFileSync(process.execPath, [...process.execArgv, __filename, "--one", "--sizes", `${engines}x${hosts}`], { encoding: "utf8", maxBuffer: 64 * 2 ** 20, stdio: ["ignore", "pipe", "inherit"] });
    results.push(JSON.parse(out) as (typeof results)[number]);
  }
  const first = results[0];
  const last = results[results.length - 1];
  const growing = Object.entries(last.byType)
    .filter(([t, x]) => first.byType[t] && x.meanBytes > first.byType[t].meanBytes * 1.1)
    .map(([t, x]) => ({
      type: t,
      count: [first.byType[t].count, x.count],
      meanBytes: [first.byType[t].meanBytes, x.meanBytes],
      inputsThatGrew: Object.fromEntries(Object.entries(x.inputs).filter(([k, b]) => b > (first.byType[t].inputs[k] ?? 0) * 1.1 + 64).map(([k, b]) => [k, [first.byType[t].inputs[k] ?? 0, b]])),
    }))
    .sort((a, b) => b.count[1] * b.meanBytes[1] - a.count[1] * a.meanBytes[1]);
  const perResourceGrowth = growing.filter((g) => g.count[1] > 1 && Object.keys(g.inputsThatGrew).length > 0);
  const fleetWide = growing.filter((g) => g.count[1] === 1);
  process.stdout.write(JSON.stringify({ sizes: results.map(({ byType, ...r }) => ({ ...r, byType: Object.fromEntries(Object.entries(byType).map(([t, x]) => [t, { count: x.count, meanBytes: x.meanBytes }])) })), perResourceGrowth, fleetWide }, null, 2) + "\n");
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench:state-growth: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
