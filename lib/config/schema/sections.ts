/** The object sections other than launch: model, runtime, slo, router, observability, ssh, fabric, profiling, attestation, preflight, calibration. */
import { PROGRAM_DEFAULTS as P, RUNBOOK_DEFAULTS as R } from "../defaults";
import { show } from "../describe";
import * as f from "../fields";
import { evidenceLocationProblem } from "../../evidence/location";
import * as fmt from "../formats";

export const ModelSchema = f
  .strict(
    {
      servedName: f
        .text('a non-empty model name (e.g. "qwen3-8b")', (s) =>
          /^\S(?:.*\S)?$/.test(s) && !/[\x00-\x1f]/.test(s) ? undefined : `found ${show(s)}; expected a name without leading or trailing spaces`,
        )
        .describe("The model name clients send (`--served-model-name`)."),
      checkpointDir: f
        .text('an absolute path (e.g. "/srv/models/qwen3-8b")', (s) => fmt.absolutePathProblem(s, "/srv/models/qwen3-8b"))
        .describe("Checkpoint directory, the same absolute path on every engine host."),
      tokenizer: f
        .text("an absolute path or a Hugging Face name", (s) =>
          s.startsWith("/")
            ? fmt.absolutePathProblem(s, "/srv/models/tokenizer")
            : fmt.HF_NAME_PATTERN.test(s)
              ? undefined
              : `found ${show(s)}; expected an absolute path or a Hugging Face name such as "org/name"`,
        )
        .optional()
        .meta({ description: "Separate tokenizer: an absolute path or a Hugging Face name.", defaultText: "the checkpoint's" }),
      trustRemoteCode: f
        .flag()
        .optional()
        .meta({ description: "Force `--trust-remote-code` on or off.", defaultText: "discovered from the checkpoint's `auto_map`" }),
    },
    "an object {servedName, checkpointDir, ...}",
  )
  .describe("The served model and its checkpoint.");

const deadline = (value: number) => f.seconds().default(value);

export const RuntimeSchema = f
  .strict(
    {
      kind: f
        .choice(["native", "docker-cli", "docker"])
        .default("native")
        .describe(
          "How engines run. `native`: `vllmCommand` started as a process over SSH. `docker-cli`: `image` through the " +
            "docker CLI on the host, every call under its deadline, with launch-token labels and reconcile. `docker`: " +
            "`image` as `@pulumi/docker` containers through one `ssh://` provider per host, which needs the docker " +
            "plugin and ssh-agent or ssh_config access.",
        ),
      image: f
        .text("an image ID or digest", fmt.imageProblem)
        .optional()
        .describe("Engine image, immutable: `sha256:<64 hex>` or `<repo>@sha256:<64 hex>`. Required for the docker kinds."),
      vllmCommand: f.text("a command (e.g. \"vllm\" or \"/opt/venv/bin/vllm\")").default("vllm").describe("vLLM executable for the native runtime."),
      dockerCommand: f.text("a command (e.g. \"docker\")").default("docker").describe("Docker client for the docker-cli runtime."),
      restartKvPeers: f
        .flag()
        .default(true)
        .describe(
          "After an engine restarts (by hand, by a supervisor, or because its plan changed), restart every other " +
            "engine of its KV component at once before anything is proved again: each one that read KV from the old " +
            "process still holds its NIXL state, and below NIXL 1.5.0 its next handshake with a new engine crashes it " +
            "once that state's UCX endpoint has timed out (vLLM #49238); restarting only direct peers would leave theirs " +
            "exposed in turn. Off, a restart leaves the preflight failing `consume` through the crashed readers until a " +
            "hand restart. See " +
            "[Restarts and NIXL peers](invalidation.md#restarts-and-nixl-peers).",
        ),
      deadlinesS: f
        .strict(
          {
            pull: deadline(P.runtime.deadlinesS.pull).describe("Image pull."),
            start: deadline(P.runtime.deadlinesS.start).describe("Engine start until healthy."),
            stop: deadline(P.runtime.deadlinesS.stop).describe("Graceful stop."),
            inspect: deadline(P.runtime.deadlinesS.inspect).describe("Image or container inspection."),
            health: deadline(P.runtime.deadlinesS.health).describe(
              "A refresh's `/health` probe of a started engine: no answer within this, and the engine counts as hung and the next up restarts it.",
            ),
          },
          "an object {pull, start, stop, inspect, health}",
        )
        .prefault({})
        .describe("Deadlines of runtime operations, seconds."),
    },
    "an object {kind, image, ...}",
  )
  .describe("How engines run: a native process or a container.");

export const SloSchema = f
  .strict(
    {
      ttftS: f.seconds().default(R.slo.ttftS).describe("Initial time-to-first-token limit, seconds."),
      tpotS: f.seconds().default(R.slo.tpotS).describe("Initial time-per-output-token limit, seconds."),
      firstTokenTimeoutS: f.seconds().default(R.slo.firstTokenTimeoutS).describe("Router's first-token deadline, seconds; at most `requestTimeoutS`."),
      requestTimeoutS: f.seconds().default(R.slo.requestTimeoutS).describe("Router's whole-request timeout, seconds."),
      prefillTimeoutS: f.seconds().default(R.slo.prefillTimeoutS).describe("Router's prefill timeout, seconds."),
      healthTimeoutS: f.seconds().default(R.slo.healthTimeoutS).describe("Router's engine health probe timeout, seconds."),
    },
    "an object {ttftS, tpotS, ...}",
  )
  .describe("Initial latency limits (recalibrated after profiling) and the router's deadlines.");

export const RouterSchema = f
  .strict(
    {
      host: f
        .text("the alias of a host in hosts")
        .optional()
        .meta({ description: "Alias of the router's host.", defaultText: "the lowest-numbered engine's host" }),
      bindAddress: f.text("an IPv4 or IPv6 address", fmt.ipProblem).default(P.router.bindAddress).describe("Address the router listens on."),
      port: f.port().default(P.router.port).describe("Router HTTP port: the router's front, which clients call, listens here."),
      backendPort: f.port().optional().meta({
        description:
          "narwhal-serve's own port, on loopback behind the front; the front holds requests while the router behind it " +
          "is swapped (docs/operating.md).",
        defaultText: "`router.port` + 1",
      }),
      startTimeoutS: f.seconds().default(P.router.startTimeoutS).describe("Bounded wait for the router's `/health` to report ready after its start, seconds."),
      narwhal: f
        .strict(
          {
            version: f
              .matching(fmt.VERSION_PATTERN, 'a released version such as "0.7.0"')
              .default(P.router.narwhalVersion)
              .describe("narwhal-inference version, installed from the package index."),
            sourceBundle: f
              .strict(
                {
                  path: f.text("a file path").describe("Bundle file on the management machine."),
                  sha256: f
                    .matching(fmt.SHA256_PATTERN, "64 lowercase hex digits (sha256sum output)")
                    .describe("SHA-256 of the bundle, verified before install."),
                },
                "an object {path, sha256}",
              )
              .optional()
              .describe("Install a local source bundle of an approved commit instead of `version` from the package index."),
            wheelhouse: f
              .text("an absolute folder path on every host that installs it", (s) => fmt.absolutePathProblem(s, "/srv/wheels"))
              .optional()
              .describe(
                "A folder of wheels, at this path on the router host and on every engine host, that pip installs from " +
                  "instead of the package index (`--no-index --find-links`), for hosts without a route to the index.",
              ),
            installTimeoutS: f.seconds().default(P.router.installTimeoutS).describe("Bounded wait for pip, seconds."),
          },
          "an object {version, sourceBundle?, wheelhouse?, installTimeoutS}",
        )
        .prefault({})
        .describe(
          "Gate B: the approved narwhal-inference revision, installed on the router host (the router and its tools) and " +
            "on every engine host (its attestation sidecars), one install per host.",
        ),
    },
    "an object {host, bindAddress, port, backendPort, startTimeoutS, narwhal}",
  )
  .describe("Router placement and package.");

export const ObservabilitySchema = f
  .strict(
    {
      enabled: f.flag().default(true).describe("Deploy Prometheus and Grafana on the router host."),
      prometheusPort: f.port().default(P.observability.prometheusPort).describe("Prometheus port."),
      grafanaPort: f.port().default(P.observability.grafanaPort).describe("Grafana port."),
      freshnessPort: f
        .port()
        .default(P.observability.freshnessPort)
        .describe(
          "The evidence freshness exporter's port (on the router host, scraped by Prometheus; see " +
            "[policy.md](policy.md#evidence-freshness-in-prometheus)).",
        ),
      scrapeIntervalS: f.seconds().default(P.observability.scrapeIntervalS).describe("Prometheus scrape interval, seconds."),
      runtime: f
        .choice(["container", "native"] as const)
        .default("container")
        .describe(
          "How Prometheus and Grafana run. `container`: the runbook's Prometheus and Grafana images on the host " +
            "network. `native`: the host's own `prometheusCommand` (e.g. Debian's package), with Grafana's " +
            "provisioning files written for the operator's install.",
        ),
      prometheusImage: f.text("an image reference").default(P.observability.prometheusImage).describe("Prometheus image for the container runtime."),
      grafanaImage: f.text("an image reference").default(P.observability.grafanaImage).describe("Grafana image for the container runtime."),
      prometheusCommand: f
        .text("a command name or path")
        .default(P.observability.prometheusCommand)
        .describe("The native runtime's Prometheus binary on the router host."),
    },
    "an object {enabled, prometheusPort, grafanaPort, scrapeIntervalS, runtime, ...}",
  )
  .describe("Prometheus and Grafana on the router host.");

export const SshSchema = f
  .strict(
    {
      allowFirstContact: f
        .flag()
        .default(true)
        .describe("Record an unpinned host key on first contact; `false` means every host needs `hostKey`."),
      maxSessionsPerHost: f.num({ int: true, min: 1, max: 32 }).default(P.ssh.maxSessionsPerHost).describe("Concurrent SSH sessions per host."),
      connectTimeoutS: f.seconds().default(P.ssh.connectTimeoutS).describe("TCP connect and handshake timeout, seconds."),
      commandTimeoutS: f.seconds().default(P.ssh.commandTimeoutS).describe("Default remote command timeout, seconds."),
      configFile: f
        .text("a path to an ssh_config file")
        .optional()
        .meta({
          description:
            "The OpenSSH client config whose aliases `hosts[].destination` may name; `HostName`, `User`, `Port`, " +
            "`IdentityFile` and `ProxyJump` are taken from it as `ssh` reads them: first value wins, through `Include` " +
            "files (relative to `~/.ssh`, globs allowed, at most 16 deep) and `Host`/`Match` blocks with `host`, " +
            "`originalhost`, `user`, `localuser` and `all`. A `Match exec`, `canonical`, `final` or `localnetwork` " +
            "block that could set one of these for a fleet host is refused, naming its line.",
          defaultText: "`~/.ssh/config`",
        }),
    },
    "an object {allowFirstContact, maxSessionsPerHost, ...}",
  )
  .describe("How this machine reaches the hosts over SSH.");

export const FabricSchema = f
  .strict(
    {
      interface: f
        .matching(fmt.INTERFACE_PATTERN, fmt.INTERFACE_RULE)
        .optional()
        .describe("Fabric interface for hosts that do not name their own `fabricInterface`."),
      promptTokens: f.positiveInt().default(R.fabric.promptTokens).describe("Budget input: prompt tokens per handoff."),
      handoffRate: f.num({ gt: 0, unit: "handoffs per second" }).default(R.fabric.handoffRate).describe("Budget input: handoffs per second."),
      burst: f.positiveInt().default(R.fabric.burst).describe("Budget input: handoffs arriving together."),
      budgetS: f.seconds().default(R.fabric.budgetS).describe("Budget input: seconds a burst may take."),
      headroom: f.num({ min: 1 }).default(R.fabric.headroom).describe("Budget input: safety factor, at least 1."),
      iperfPort: f.port().default(P.fabric.iperfPort).describe("iperf3 server port on every engine host."),
      durationS: f.seconds().default(P.fabric.durationS).describe("Seconds per directed-edge iperf3 measurement (`tcp` edges)."),
      rdmaPort: f
        .port()
        .default(P.fabric.rdmaPort)
        .describe("`ib_write_bw`'s TCP exchange port (`-p`) on every engine host with `ucx_rdma` engines."),
      rdmaMessageBytes: f.positiveInt().default(P.fabric.rdmaMessageBytes).describe("`ib_write_bw` message size (`-s`), bytes, per `ucx_rdma` edge measurement."),
      rdmaIterations: f
        .num({ int: true, min: 5 })
        .default(P.fabric.rdmaIterations)
        .describe("`ib_write_bw` iterations (`-n`) per `ucx_rdma` edge measurement; above 20000 perftest measures no peak."),
    },
    "an object of fabric settings",
  )
  .describe("The fabric interface, the inputs of Gate D's bandwidth budget, and how each directed edge is measured.");

const lengths = (expected: string, min: number, defaults: readonly number[]) =>
  f.list(f.positiveInt(), expected, { min, unique: true }).default(() => [...defaults]);

export const ProfilingSchema = f
  .strict(
    {
      prefillLens: lengths("a list of prompt lengths in tokens", 3, R.profiling.prefillLens).describe(
        "Prompt lengths of the prefill sweep; narwhal-profile needs at least 3 within `max_model_len`.",
      ),
      decodeInputLens: lengths("a list of input lengths in tokens", 2, R.profiling.decodeInputLens).describe(
        "Input lengths of the decode sweep; the decode fit needs at least 2 distinct.",
      ),
      decodeConcurrency: lengths("a list of concurrency levels", 2, R.profiling.decodeConcurrency).describe(
        "Concurrency levels of the decode sweep (bounded per engine by its `max_num_seqs`); at least 2 distinct.",
      ),
      decodeTokens: f.num({ int: true, min: 3 }).default(R.profiling.decodeTokens).describe("Output tokens per decode sample, at least 3."),
      prefillRepeats: f.num({ int: true, min: 3 }).default(R.profiling.prefillRepeats).describe("Repeats per prefill point (median), at least 3."),
      decodeRepeats: f.positiveInt().default(R.profiling.decodeRepeats).describe("Repeats per decode point."),
      oneAtATime: f
        .flag()
        .default(false)
        .describe(
          "Profile one engine at a time across the whole fleet instead of concurrently across hosts: for machines " +
            "where the measuring side itself is the bottleneck (a small machine, the simulated fleet on two cores).",
        ),
      fitAttempts: f
        .num({ int: true, min: 1, max: 10 })
        .default(3)
        .describe(
          "Sweeps per engine while its decode fit is over Narwhal's profile-validation limits (the preflight's " +
            "`profile` gate), each kept as evidence, before the `up` fails naming engine, figure and limit.",
        ),
      adoptStore: f
        .text('an absolute path to a profile store (e.g. "/srv/runbook/runs/profiles.json")', (s) => fmt.absolutePathProblem(s, "/srv/runbook/runs/profiles.json"))
        .optional()
        .describe(
          "A profile store measured before this stack (the runbook's `runs/profiles.json`, its `.samples.json` next " +
            "to it) on this machine: adopted row by row where a row binds the engine's live generation and its fit is " +
            "within Narwhal's profile-validation limits, instead of profiling again; see " +
            "[coming-from-the-runbook.md](coming-from-the-runbook.md).",
        ),
    },
    "an object of profiling settings",
  )
  .describe(
    "The `narwhal-profile` sweep of every engine. Lengths beyond the engine's live `max_model_len` are dropped and " +
      "its `max_num_seqs` becomes the concurrency limit.",
  );

export const AttestationSchema = f
  .strict(
    {
      command: f
        .text('a command (e.g. "narwhal-attest" or "/opt/narwhal/.venv/bin/narwhal-attest")', (s) =>
          s.startsWith("-") || /[\s\x00-\x1f]/.test(s) ? `found ${show(s)}; expected one command name or path, without spaces` : undefined,
        )
        .optional()
        .meta({
          description:
            "A `narwhal-attest` the operator provides on every engine host instead of Gate B's (a command on the PATH of " +
            "the SSH login, or an absolute path): the program then installs narwhal-inference on the router host only, " +
            "and a host without the command is refused when its sidecar starts.",
          defaultText: "the `narwhal-attest` of Gate B's install, which every engine host gets (`router.narwhal`)",
        }),
      startTimeoutS: f.seconds().default(P.attestation.startTimeoutS).describe("Bounded wait for a sidecar's `/health` after its start, seconds."),
    },
    "an object {command, startTimeoutS}",
  )
  .describe("Gate E's attestation sidecars, one per engine.");

export const PreflightSchema = f
  .strict(
    {
      pairs: f
        .choice(["mesh", "ring"] as const)
        .default("mesh")
        .describe("Transfer pairs: every role-permitted ordered pair (`mesh`), or the `ring` that covers each eligible producer and consumer."),
      repeats: f.num({ int: true, min: 1, max: 100 }).default(1).describe("Probes per pair, each verdict kept."),
      schedule: f
        .choice(["concurrent", "sequential"] as const)
        .default("concurrent")
        .describe(
          "`concurrent`: independent pairs together, at most one transfer per engine (round-robin rounds); " +
            "`sequential`: one probe after another, as `narwhal-check` runs them. The verdicts are the same.",
        ),
      strict: f
        .flag()
        .default(false)
        .describe(
          "Fail the `up` on a `degraded` run too (narwhal-check's exit 3: some gate skipped, e.g. contract fields " +
            "the engine contract leaves undeclared). Off: a degraded run is recorded with its skipped gates and " +
            "warnings and the router starts; a failed run always fails the `up`.",
        ),
    },
    "an object {pairs, repeats, schedule, strict}",
  )
  .describe("Gate F's preflight: which pairs are probed, how often and in what order.");

export const CalibrationSchema = f
  .strict(
    {
      enabled: f.flag().default(false).describe("Measure the first-token deadline after preflight (opt-in: it takes many samples per path)."),
      samplesPerGroup: f
        .num({ int: true, min: R.calibration.samplesPerGroup })
        .default(R.calibration.samplesPerGroup)
        .describe(`Completed samples per directed path and input length; the runbook asks for at least ${R.calibration.samplesPerGroup}.`),
      inputLengths: f
        .list(f.positiveInt(), "a list of input lengths in tokens", { min: 1, unique: true })
        .optional()
        .meta({
          description: "Input lengths in tokens; each must leave one output token within the context.",
          defaultText: "128, ¼ and ½ of the longest admitted input (`max_model_len` − 1), and that input itself",
        }),
      observationBoundS: f
        .seconds()
        .optional()
        .meta({
          description: "The diagnostic first-token observation bound, seconds: above `slo.firstTokenTimeoutS` and within `slo.requestTimeoutS`.",
          defaultText: "4 × `slo.firstTokenTimeoutS`, capped at `slo.requestTimeoutS`",
        }),
      routerOverheadS: f
        .num({ min: 0, unit: "seconds" })
        .default(P.calibration.routerOverheadS)
        .describe("Router overhead added to deadline + measured prefill in the client TTFT check, and to each trial point's predicted TTFT, seconds."),
      maxFailuresPerGroup: f
        .positiveInt()
        .default(P.calibration.maxFailuresPerGroup)
        .describe("Failed attempts one group may take before calibration stops so they can be diagnosed."),
      adopt: f
        .strict(
          {
            path: f
              .text('an absolute path to a calibration file (e.g. "/srv/runbook/runs/first-token.json")', (s) => fmt.absolutePathProblem(s, "/srv/runbook/runs/first-token.json"))
              .describe("The calibration file on this machine."),
            sha256: f
              .matching(fmt.SHA256_PATTERN, "64 lowercase hex digits (sha256sum output)")
              .optional()
              .describe("SHA-256 of the file, which pins its bytes."),
          },
          "an object {path, sha256?}",
        )
        .optional()
        .describe(
          "A first-token calibration measured before this stack (the runbook's `narwhal-check " +
            "--calibrate-first-token --calibration-out` file), adopted instead of sampling while every process it " +
            "sampled still serves. Needs `enabled`.",
        ),
    },
    "an object {enabled, samplesPerGroup, inputLengths?, observationBoundS?, routerOverheadS, maxFailuresPerGroup, adopt?}",
  )
  .describe("Gate F's first-token deadline calibration after preflight, opt-in.");

const TrialClassSchema = f.strict(
  {
    promptTokens: f.positiveInt().describe("Prompt length of this class's requests, tokens (sent as token ids, which the router sizes exactly)."),
    outputTokens: f.positiveInt().describe("Output length of this class's requests, tokens (`max_tokens` with `ignore_eos`)."),
    weight: f.num({ gt: 0 }).default(1).describe("Relative share of the point's requests."),
  },
  "an object {promptTokens, outputTokens, weight}",
);

const TrialPointSchema = f.strict(
  {
    id: f.matching(/^[a-z0-9][a-z0-9-]{0,39}$/, 'lowercase letters, digits and "-" (e.g. "low")').describe("Names the point's resource and evidence."),
    rate: f.num({ gt: 0, unit: "requests per second" }).describe("Offered rate, requests per second: arrivals never wait for replies (open loop)."),
    requests: f.positiveInt().describe("Requests the point sends."),
    arrival: f.choice(["poisson", "constant"] as const).default("poisson").describe("Gaps between arrivals: exponential (`vllm bench serve`'s default) or constant."),
    seed: f.num({ int: true, min: 0 }).default(0).describe("Seeds the arrivals, the mix and the prompts, so a point replays exactly."),
    mix: f.list(TrialClassSchema, "a list of {promptTokens, outputTokens, weight}", { min: 1 }).describe("The workload: prompt and output lengths within the profiled ranges."),
  },
  "an object {id, rate, requests, arrival, seed, mix}",
);

export const TrialSchema = f
  .strict(
    {
      points: f
        .list(TrialPointSchema, "a list of trial points")
        .default(() => [])
        .describe("Gate G's capacity trial points, run one after another once the router serves (docs/trial.md)."),
      requestTimeoutS: f.seconds().default(P.trial.requestTimeoutS).describe("One request's bound, from its send to its last token."),
      drainTimeoutS: f.seconds().default(P.trial.drainTimeoutS).describe("How long a point waits for in-flight requests to finish and the engines to idle, before and after it."),
      minGoodFraction: f.num({ gt: 0, max: 1 }).default(P.trial.minGoodFraction).describe("Share of requests within `slo.ttftS` and `slo.tpotS` a reconciled point needs to pass."),
      predictionBound: f
        .num({ gt: 0 })
        .default(P.trial.predictionBound)
        .describe("Relative difference between measured and profile-predicted median TTFT or TPOT beyond which the report flags a point."),
    },
    "an object {points, requestTimeoutS, drainTimeoutS, minGoodFraction, predictionBound}",
  )
  .describe("Gate G's capacity trial through the private path.");

export const EvidenceSchema = f
  .strict(
    {
      store: f
        .text("an s3:// URL", evidenceLocationProblem)
        .optional()
        .meta({
          description:
            "Where the stack's evidence records live: `s3://<bucket>[/<prefix>]?endpoint=<http(s)://host:port>&region=<region>`, " +
            "an S3-compatible bucket every operator and CI job of the stack can reach (records under `<prefix>/<stack>/evidence/`). " +
            "Credentials come from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, never from config. See [team.md](team.md).",
          defaultText: "the folder `runs/<stack>/evidence` of this project",
        }),
    },
    "an object {store}",
  )
  .describe("The evidence store.");


export const RolloutSchema = f
  .strict(
    {
      allowRoleOutage: f
        .flag()
        .default(false)
        .describe(
          "Let a rolling change restart an engine that is the only one of its role: that role has no engine to serve until it is readmitted. " +
            "Without it the rollout stops before such an engine, naming it ([invalidation.md](invalidation.md#a-change-to-every-engine-one-engine-per-up)).",
        ),
    },
    "an object {allowRoleOutage}",
  )
  .describe("Rolling changes: one engine per `up`, each role kept serving.");
