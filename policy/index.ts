/**
 * The narwhal-fleet policy pack: one mandatory stack policy per evidence gate of lib/policy, which holds
 * every judgement; this file only adapts the CLI's resources and reports. Run it with
 * `pulumi preview --policy-pack policy` (or `up`); docs/policy.md says what each policy checks.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { PolicyPack, PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { judge, POLICY_DESCRIPTIONS, POLICY_NAMES, PolicyOptions, StackResource, stackNameOf } from "../lib/policy/evidence-gates";

// js-yaml ships no types of its own; the pack needs only `load`.
const yaml = require("js-yaml") as { load(text: string): unknown };

/** The folder the CLI ran in (the language host passes it on; the runner itself runs in policy/). */
const PROJECT_DIR = process.env["NARWHAL_PROJECT_DIR"] ?? path.resolve(__dirname, "..");

/**
 * A resource's outputs as stored, unknown values included: @pulumi/policy's proxy throws on reading an
 * unknown value, and lib/policy needs to see one to tell evidence this update measures from evidence missing.
 */
function plain(r: PolicyResource): StackResource {
  const props = (r.props as Record<string, unknown>)["__getSpecialProxyTarget"] as Record<string, unknown> | undefined;
  return { type: r.type, urn: r.urn, name: r.name, props: props ?? r.props };
}

function stackConfig(stack: string | undefined): PolicyOptions["stackConfig"] {
  if (!stack) return undefined;
  const file = path.join(PROJECT_DIR, `Pulumi.${stack}.yaml`);
  try {
    const doc = yaml.load(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | undefined;
    return { path: file, config: doc?.config ?? {} };
  } catch (e) {
    return { path: file, error: (e as Error).message };
  }
}

const policies: StackValidationPolicy[] = POLICY_NAMES.map((name) => ({
  name,
  description: POLICY_DESCRIPTIONS[name],
  enforcementLevel: "mandatory",
  ...(name === "router-after-preflight"
    ? { configSchema: { properties: { allowDegradedPreflight: { type: "boolean", default: false } } } }
    : {}),
  validateStack: (args, reportViolation) => {
    const resources = args.resources.map(plain);
    const opts: PolicyOptions = {
      allowDegradedPreflight: name === "router-after-preflight" ? args.getConfig<{ allowDegradedPreflight?: boolean }>().allowDegradedPreflight === true : false,
      ...(name === "secret-config" ? { stackConfig: stackConfig(stackNameOf(resources)) } : {}),
    };
    for (const v of judge(name, resources, opts)) reportViolation(v.message, v.urn);
  },
}));

new PolicyPack("narwhal-evidence", { policies });
