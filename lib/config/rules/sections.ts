/** Rules inside or between the object sections: runtime image, SLO deadlines, router host, profiling. */
import { IMAGE_RULE } from "../formats";
import { absent, engineName, isUnknownAlias, unknownAliasMessage, type Rule } from "./context";

/** Containers run an image, and only an immutable one gives the same process tomorrow (Gate C). */
export const runtimeRules: Rule = (ctx, report) => {
  const { kind, image } = ctx.runtime.value;
  if ((kind === "docker" || kind === "docker-cli") && absent(ctx.runtime, "image")) {
    report(["runtime", "image"], `missing; runtime.kind "${kind}" runs engines in a container and needs an image: ${IMAGE_RULE}`);
  }
  if (kind === "native" && image !== undefined) {
    report(
      ["runtime", "image"],
      `set, but runtime.kind is "native", which runs runtime.vllmCommand on the host and never uses an image; ` +
        `set runtime.kind to "docker-cli" or "docker", or remove runtime.image`,
    );
  }
  // The native and docker-cli starts take a runbook engine over; the docker provider cannot adopt a container.
  ctx.engines.forEach((engine, i) => {
    if (engine.value.runbookRun !== undefined && kind === "docker") {
      report(["engines", i, "runbookRun"], `set, but runtime.kind is "docker"; adopting an engine the runbook's launcher started needs runtime.kind "native" or "docker-cli" (the docker provider only manages containers it created)`);
    }
  });
};

export const sloRules: Rule = (ctx, report) => {
  const { firstTokenTimeoutS: first, requestTimeoutS: request } = ctx.slo.value;
  if (first !== undefined && request !== undefined && first > request) {
    report(
      ["slo", "firstTokenTimeoutS"],
      `found ${first}, above slo.requestTimeoutS ${request}; the first-token deadline cannot exceed the request timeout: lower it or raise requestTimeoutS`,
    );
  }
};

export const routerRules: Rule = (ctx, report) => {
  const host = ctx.router.value.host;
  if (host !== undefined && isUnknownAlias(ctx, host)) report(["router", "host"], unknownAliasMessage(ctx, host));
};

/**
 * narwhal-profile needs at least 3 prefill lengths that fit the context with 1 output token left.
 * maxModelLen is only an upper bound here (the model may cap it further), so this catches the sure misses.
 */
export const profilingRules: Rule = (ctx, report) => {
  const lens = ctx.profiling.value.prefillLens;
  if (!lens || lens.length < 3) return;
  const check = (maxModelLen: number | undefined, where: string) => {
    if (maxModelLen === undefined) return;
    const fitting = lens.filter((n) => n + 1 <= maxModelLen).length;
    if (fitting < 3) {
      report(
        ["profiling", "prefillLens"],
        `only ${fitting} of [${lens.join(", ")}] leave 1 output token within ${where} ${maxModelLen}; ` +
          `narwhal-profile needs at least 3: add shorter lengths or raise maxModelLen`,
      );
    }
  };
  check(ctx.launch.value.maxModelLen, "launch.maxModelLen");
  ctx.engines.forEach((engine, i) =>
    check(engine.value.overrides?.maxModelLen, `engine ${engineName(ctx, i)}'s overrides.maxModelLen`),
  );
};

/**
 * Calibration's observation bound must sit above the deadline being calibrated and within the request
 * timeout, every input length must leave one output token within the served context, and a file to
 * adopt needs an enabled calibration.
 */
export const calibrationRules: Rule = (ctx, report) => {
  const { observationBoundS: bound, inputLengths, adopt, enabled } = ctx.calibration.value;
  // A file named for adoption but never looked at would read as adopted evidence that is not there.
  if (adopt !== undefined && enabled === false) report(["calibration", "adopt"], "set without calibration.enabled: true; the file is only adopted (or refused and measured afresh) by an enabled calibration");
  const { firstTokenTimeoutS: first, requestTimeoutS: request } = ctx.slo.value;
  if (bound !== undefined && first !== undefined && !(bound > first)) {
    report(["calibration", "observationBoundS"], `found ${bound}, not above slo.firstTokenTimeoutS ${first}; the observation bound must exceed the deadline being calibrated`);
  }
  if (bound !== undefined && request !== undefined && bound > request) {
    report(["calibration", "observationBoundS"], `found ${bound}, above slo.requestTimeoutS ${request}; the observation bound must stay within the request timeout`);
  }
  if (!inputLengths) return;
  const check = (maxModelLen: number | undefined, where: string) => {
    if (maxModelLen === undefined) return;
    const over = inputLengths.filter((n) => n + 1 > maxModelLen);
    if (over.length) report(["calibration", "inputLengths"], `[${over.join(", ")}] leave no output token within ${where} ${maxModelLen}; the longest admitted input is ${maxModelLen - 1}`);
  };
  check(ctx.launch.value.maxModelLen, "launch.maxModelLen");
  ctx.engines.forEach((engine, i) => check(engine.value.overrides?.maxModelLen, `engine ${engineName(ctx, i)}'s overrides.maxModelLen`));
};

/**
 * Trial points are named once, and ask for prompts within the prefill sweep the profiles are measured
 * over (the provider checks the measured rows themselves once they exist) and within the served context.
 */
export const trialRules: Rule = (ctx, report) => {
  const points = ctx.trial.value.points ?? [];
  const lens = ctx.profiling.value.prefillLens;
  const maxModelLen = ctx.launch.value.maxModelLen;
  const seen = new Map<string, number>();
  points.forEach((p, i) => {
    if (!p) return;
    const first = seen.get(p.id);
    if (first !== undefined) report(["trial", "points", i, "id"], `"${p.id}" is already the id of trial.points[${first}]; point ids must be unique`);
    else seen.set(p.id, i);
    (p.mix ?? []).forEach((c, j) => {
      if (!c) return;
      if (lens?.length && (c.promptTokens < Math.min(...lens) || c.promptTokens > Math.max(...lens))) {
        report(["trial", "points", i, "mix", j, "promptTokens"], `found ${c.promptTokens}, outside the profiled prompt range [${Math.min(...lens)}, ${Math.max(...lens)}] (profiling.prefillLens); choose a length within it or profile a wider sweep`);
      }
      if (maxModelLen !== undefined && c.promptTokens + c.outputTokens > maxModelLen) {
        report(["trial", "points", i, "mix", j, "outputTokens"], `prompt ${c.promptTokens} + output ${c.outputTokens} tokens exceed launch.maxModelLen ${maxModelLen}`);
      }
    });
  });
};
