/** The object sections other than launch: model, runtime, slo, router, observability, ssh, fabric, profiling, attestation, preflight, calibration. */
import { PROGRAM_DEFAULTS as P, RUNBOOK_DEFAULTS as R } from "../defaults";
import { show } from "../describe";
import * as f from "../fields";
import * as fmt from "../formats";

export const ModelSchema = f.strict(
  {
    /** The model name clients send (`--served-model-name`). */
    servedName: f.text('a non-empty model name (e.g. "qwen3-8b")', (s) =>
      /^\S(?:.*\S)?$/.test(s) && !/[\x00-\x1f]/.test(s) ? undefined : `found ${show(s)}; expected a name without leading or trailing spaces`,
    ),
    /** Checkpoint directory, the same absolute path on every engine host. */
    checkpointDir: f.text('an absolute path (e.g. "/srv/models/qwen3-8b")', (s) =>
      fmt.absolutePathProblem(s, "/srv/models/qwen3-8b"),
    ),
    /** Separate tokenizer: an absolute path or a Hugging Face name; default the checkpoint. */
    tokenizer: f
      .text("an absolute path or a Hugging Face name", (s) =>
        s.startsWith("/")
          ? fmt.absolutePathProblem(s, "/srv/models/tokenizer")
          : fmt.HF_NAME_PATTERN.test(s)
            ? undefined
            : `found ${show(s)}; expected an absolute path or a Hugging Face name such as "org/name"`,
      )
      .optional(),
    /** Force `--trust-remote-code` on or off; normally discovered from `auto_map`. */
    trustRemoteCode: f.flag().optional(),
  },
  "an object {servedName, checkpointDir, ...}",
);

const deadline = (value: number) => f.seconds().default(value);

export const RuntimeSchema = f.strict(
  {
    /** `native` runs `vllmCommand` on the host; `docker-cli` and `docker` run `image` in a container. */
    kind: f.choice(["native", "docker-cli", "docker"]).default("native"),
    /** Engine image, immutable: `sha256:<64 hex>` or `<repo>@sha256:<64 hex>`. Required for docker kinds. */
    image: f.text("an image ID or digest", fmt.imageProblem).optional(),
    /** vLLM executable for the native runtime. */
    vllmCommand: f.text("a command (e.g. \"vllm\" or \"/opt/venv/bin/vllm\")").default("vllm"),
    /** Docker client for the docker-cli runtime. */
    dockerCommand: f.text("a command (e.g. \"docker\")").default("docker"),
    /**
     * After an engine restarts (by hand, by a supervisor, or because its plan changed), restart every other
     * engine of its KV component at once before anything is proved again: they hold NIXL handshakes of the
     * old process (vLLM #38840), and restarting only direct peers would leave theirs stale in turn. Off, a
     * restart leaves the preflight failing `consume` on the restarted engine's pairs until a hand restart.
     */
    restartKvPeers: f.flag().default(true),
    /** Deadlines of runtime operations, seconds. */
    deadlinesS: f
      .strict(
        {
          /** Image pull. */
          pull: deadline(P.runtime.deadlinesS.pull),
          /** Engine start until healthy. */
          start: deadline(P.runtime.deadlinesS.start),
          /** Graceful stop. */
          stop: deadline(P.runtime.deadlinesS.stop),
          /** Image or container inspection. */
          inspect: deadline(P.runtime.deadlinesS.inspect),
          /** A refresh's `/health` probe of a started engine: no answer within this, and the next up restarts it as hung. */
          health: deadline(P.runtime.deadlinesS.health),
        },
        "an object {pull, start, stop, inspect, health}",
      )
      .prefault({}),
  },
  "an object {kind, image, ...}",
);

export const SloSchema = f.strict(
  {
    /** Initial time-to-first-token limit, seconds. */
    ttftS: f.seconds().default(R.slo.ttftS),
    /** Initial time-per-output-token limit, seconds. */
    tpotS: f.seconds().default(R.slo.tpotS),
    /** Router's first-token deadline, seconds; at most `requestTimeoutS`. */
    firstTokenTimeoutS: f.seconds().default(R.slo.firstTokenTimeoutS),
    /** Router's whole-request timeout, seconds. */
    requestTimeoutS: f.seconds().default(R.slo.requestTimeoutS),
    /** Router's prefill timeout, seconds. */
    prefillTimeoutS: f.seconds().default(R.slo.prefillTimeoutS),
    /** Router's engine health probe timeout, seconds. */
    healthTimeoutS: f.seconds().default(R.slo.healthTimeoutS),
  },
  "an object {ttftS, tpotS, ...}",
);

export const RouterSchema = f.strict(
  {
    /** Alias of the router's host; default the first engine's host. */
    host: f.text("the alias of a host in hosts").optional(),
    /** Address the router listens on. */
    bindAddress: f.text("an IPv4 or IPv6 address", fmt.ipProblem).default(P.router.bindAddress),
    /** Router HTTP port. */
    port: f.port().default(P.router.port),
    /** Bounded wait for the router's `/health` to report ready after its start, seconds. */
    startTimeoutS: f.seconds().default(P.router.startTimeoutS),
    /** The Narwhal package the router runs. */
    narwhal: f
      .strict(
        {
          /** narwhal-inference version. */
          version: f.matching(fmt.VERSION_PATTERN, 'a released version such as "0.7.0"').default(P.router.narwhalVersion),
          /** Install from a local source bundle instead of the package index. */
          sourceBundle: f
            .strict(
              {
                /** Bundle file on the management machine. */
                path: f.text("a file path"),
                /** SHA-256 of the bundle, 64 lowercase hex digits. */
                sha256: f.matching(fmt.SHA256_PATTERN, "64 lowercase hex digits (sha256sum output)"),
              },
              "an object {path, sha256}",
            )
            .optional(),
          /**
           * A folder of wheels on the router host that pip installs from instead of the package index
           * (`--no-index --find-links`), for hosts without a route to the index.
           */
          wheelhouse: f.text("an absolute folder path on the router host", (s) => fmt.absolutePathProblem(s, "/srv/wheels")).optional(),
          /** Bounded wait for pip, seconds. */
          installTimeoutS: f.seconds().default(P.router.installTimeoutS),
        },
        "an object {version, sourceBundle?, wheelhouse?, installTimeoutS}",
      )
      .prefault({}),
  },
  "an object {host, bindAddress, port, startTimeoutS, narwhal}",
);

export const ObservabilitySchema = f.strict(
  {
    /** Deploy Prometheus and Grafana on the router host. */
    enabled: f.flag().default(true),
    /** Prometheus port. */
    prometheusPort: f.port().default(P.observability.prometheusPort),
    /** Grafana port. */
    grafanaPort: f.port().default(P.observability.grafanaPort),
    /** The evidence freshness exporter's port (on the router host, scraped by Prometheus). */
    freshnessPort: f.port().default(P.observability.freshnessPort),
    /** Prometheus scrape interval, seconds. */
    scrapeIntervalS: f.seconds().default(P.observability.scrapeIntervalS),
    /**
     * How Prometheus and Grafana run: `container` (the runbook's images, host network) or `native`
     * (the host's own `prometheus` binary, e.g. Debian's package; Grafana is then left to the operator).
     */
    runtime: f.choice(["container", "native"] as const).default("container"),
    /** Prometheus image for the container runtime. */
    prometheusImage: f.text("an image reference").default(P.observability.prometheusImage),
    /** Grafana image for the container runtime. */
    grafanaImage: f.text("an image reference").default(P.observability.grafanaImage),
    /** The native runtime's Prometheus binary on the router host. */
    prometheusCommand: f.text("a command name or path").default(P.observability.prometheusCommand),
  },
  "an object {enabled, prometheusPort, grafanaPort, scrapeIntervalS, runtime, ...}",
);

export const SshSchema = f.strict(
  {
    /** Record an unpinned host key on first contact; false = every host needs `hostKey`. */
    allowFirstContact: f.flag().default(true),
    /** Concurrent SSH sessions per host. */
    maxSessionsPerHost: f.num({ int: true, min: 1, max: 32 }).default(P.ssh.maxSessionsPerHost),
    /** TCP connect and handshake timeout, seconds. */
    connectTimeoutS: f.seconds().default(P.ssh.connectTimeoutS),
    /** Default remote command timeout, seconds. */
    commandTimeoutS: f.seconds().default(P.ssh.commandTimeoutS),
    /** OpenSSH client config whose aliases `hosts[].destination` may name; default ~/.ssh/config. */
    configFile: f.text("a path to an ssh_config file").optional(),
  },
  "an object {allowFirstContact, maxSessionsPerHost, ...}",
);

export const FabricSchema = f.strict(
  {
    /** Fabric interface for hosts that do not name their own. */
    interface: f.matching(fmt.INTERFACE_PATTERN, fmt.INTERFACE_RULE).optional(),
    /** Budget input: prompt tokens per handoff. */
    promptTokens: f.positiveInt().default(R.fabric.promptTokens),
    /** Budget input: handoffs per second. */
    handoffRate: f.num({ gt: 0, unit: "handoffs per second" }).default(R.fabric.handoffRate),
    /** Budget input: handoffs arriving together. */
    burst: f.positiveInt().default(R.fabric.burst),
    /** Budget input: seconds a burst may take. */
    budgetS: f.seconds().default(R.fabric.budgetS),
    /** Budget input: safety factor, at least 1. */
    headroom: f.num({ min: 1 }).default(R.fabric.headroom),
    /** iperf3 server port on every engine host. */
    iperfPort: f.port().default(P.fabric.iperfPort),
    /** Seconds per directed-edge measurement. */
    durationS: f.seconds().default(P.fabric.durationS),
  },
  "an object of fabric settings",
);

const lengths = (expected: string, min: number, defaults: readonly number[]) =>
  f.list(f.positiveInt(), expected, { min, unique: true }).default(() => [...defaults]);

export const ProfilingSchema = f.strict(
  {
    /** Prompt lengths of the prefill sweep; narwhal-profile needs at least 3 within maxModelLen. */
    prefillLens: lengths("a list of prompt lengths in tokens", 3, R.profiling.prefillLens),
    /** Input lengths of the decode sweep; the decode fit needs at least 2 distinct. */
    decodeInputLens: lengths("a list of input lengths in tokens", 2, R.profiling.decodeInputLens),
    /** Concurrency levels of the decode sweep (bounded per engine by its max_num_seqs); at least 2 distinct. */
    decodeConcurrency: lengths("a list of concurrency levels", 2, R.profiling.decodeConcurrency),
    /** Output tokens per decode sample, at least 3. */
    decodeTokens: f.num({ int: true, min: 3 }).default(R.profiling.decodeTokens),
    /** Repeats per prefill point (median), at least 3. */
    prefillRepeats: f.num({ int: true, min: 3 }).default(R.profiling.prefillRepeats),
    /** Repeats per decode point. */
    decodeRepeats: f.positiveInt().default(R.profiling.decodeRepeats),
    /**
     * Profile one engine at a time across the whole fleet instead of concurrently across hosts: for
     * machines where the measuring side itself is the bottleneck (the simulated fleet on two cores).
     */
    oneAtATime: f.flag().default(false),
    /**
     * Sweeps per engine before its profile is refused: a fit over Narwhal's profile-validation limits
     * (the preflight's `profile` gate) is measured again, each try kept as evidence, up to this many.
     */
    fitAttempts: f.num({ int: true, min: 1, max: 10 }).default(3),
    /**
     * A profile store measured before this stack (the runbook's `runs/profiles.json`, its
     * `.samples.json` next to it) on this machine: an engine whose row binds its live generation is
     * adopted from it instead of profiled again.
     */
    adoptStore: f.text('an absolute path to a profile store (e.g. "/srv/runbook/runs/profiles.json")', (s) => fmt.absolutePathProblem(s, "/srv/runbook/runs/profiles.json")).optional(),
  },
  "an object of profiling settings",
);

export const AttestationSchema = f.strict(
  {
    /**
     * The sidecar narwhal-inference ships, as a command on every engine host (the router install of
     * Gate B puts it there); a path works as well.
     */
    command: f
      .text('a command (e.g. "narwhal-attest" or "/opt/narwhal/.venv/bin/narwhal-attest")', (s) =>
        s.startsWith("-") || /[\s\x00-\x1f]/.test(s) ? `found ${show(s)}; expected one command name or path, without spaces` : undefined,
      )
      .default(P.attestation.command),
    /** Bounded wait for a sidecar's /health after its start, seconds. */
    startTimeoutS: f.seconds().default(P.attestation.startTimeoutS),
  },
  "an object {command, startTimeoutS}",
);

export const PreflightSchema = f.strict(
  {
    /** Transfer pairs: every role-permitted ordered pair (`mesh`), or the `ring` that covers each eligible producer and consumer. */
    pairs: f.choice(["mesh", "ring"] as const).default("mesh"),
    /** Probes per pair, each verdict kept. */
    repeats: f.num({ int: true, min: 1, max: 100 }).default(1),
    /**
     * `concurrent`: independent pairs together, at most one transfer per engine (round-robin rounds);
     * `sequential`: one probe after another, as narwhal-check runs them. Verdicts are the same.
     */
    schedule: f.choice(["concurrent", "sequential"] as const).default("concurrent"),
    /**
     * Fail the `up` on a `degraded` run too (narwhal-check's exit 3: some gate skipped, e.g. contract
     * fields the engine contract leaves undeclared). Off: a degraded run is recorded with its skipped
     * gates and warnings and the router starts; a failed run always fails the `up`.
     */
    strict: f.flag().default(false),
  },
  "an object {pairs, repeats, schedule, strict}",
);

export const CalibrationSchema = f.strict(
  {
    /** Measure the first-token deadline after preflight (opt-in: it takes many samples per path). */
    enabled: f.flag().default(false),
    /** Completed samples per directed path and input length; the runbook asks for at least 100. */
    samplesPerGroup: f.num({ int: true, min: R.calibration.samplesPerGroup }).default(R.calibration.samplesPerGroup),
    /**
     * Input lengths in tokens; default four spanning the served context up to the longest admitted
     * input (max_model_len − 1). Each must leave one output token within the context.
     */
    inputLengths: f.list(f.positiveInt(), "a list of input lengths in tokens", { min: 1, unique: true }).optional(),
    /**
     * The diagnostic first-token observation bound, seconds: above slo.firstTokenTimeoutS and within
     * slo.requestTimeoutS. Default 4 × firstTokenTimeoutS, capped at requestTimeoutS.
     */
    observationBoundS: f.seconds().optional(),
    /** Router overhead added to deadline + measured prefill in the client TTFT check, seconds. */
    routerOverheadS: f.num({ min: 0, unit: "seconds" }).default(P.calibration.routerOverheadS),
    /** Failed attempts one group may take before calibration stops so they can be diagnosed. */
    maxFailuresPerGroup: f.positiveInt().default(P.calibration.maxFailuresPerGroup),
    /**
     * A first-token calibration measured before this stack (the runbook's `narwhal-check
     * --calibrate-first-token --calibration-out` file) on this machine: adopted instead of sampling
     * while every process it sampled still serves; `sha256` pins the file's bytes.
     */
    adopt: f
      .strict(
        {
          path: f.text('an absolute path to a calibration file (e.g. "/srv/runbook/runs/first-token.json")', (s) => fmt.absolutePathProblem(s, "/srv/runbook/runs/first-token.json")),
          /** SHA-256 of the file, 64 lowercase hex digits. */
          sha256: f.matching(fmt.SHA256_PATTERN, "64 lowercase hex digits (sha256sum output)").optional(),
        },
        "an object {path, sha256?}",
      )
      .optional(),
  },
  "an object {enabled, samplesPerGroup, inputLengths?, observationBoundS?, routerOverheadS, maxFailuresPerGroup, adopt?}",
);
