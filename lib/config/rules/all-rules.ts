/** Every cross-field rule, in the order their problems are reported. */
import type { Rule } from "./context";
import { engineRules } from "./engines";
import { hostRules } from "./hosts";
import { launchRules } from "./launch";
import { portRules } from "./ports";
import { calibrationRules, profilingRules, routerRules, runtimeRules, sloRules, trialRules } from "./sections";


export const RULES: readonly Rule[] = [
  hostRules,
  engineRules,
  portRules,
  launchRules,
  runtimeRules,
  sloRules,
  routerRules,
  profilingRules,
  calibrationRules,
  trialRules,
];
