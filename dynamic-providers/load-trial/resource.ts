import { dynamicResource, type ArgsOf } from "../declare";
import type { LoadTrialInputs, LoadTrialOutputs } from "./schema";

export type LoadTrialArgs = ArgsOf<LoadTrialInputs>;

/**
 * One point of Gate G's capacity trial: open-loop streamed completions at the offered rate, from this
 * machine through an SSH local forward to the router's private address, reconciled with the router's and
 * engines' own counters before any SLO miss is called a capacity verdict.
 */
export class LoadTrial extends dynamicResource<LoadTrialInputs, LoadTrialOutputs>()({
  type: "LoadTrial",
  provider: "dynamic-providers/load-trial/provider.ts",
  outputs: ["verdict", "reasons", "summary", "prediction", "departure", "range", "reconciliation", "window", "evidence", "disturbedTries", "ranAt", "wallSeconds"],
  secretOutputs: ["viaPrivateKey", "viaPassword", "hostPrivateKeys", "hostPasswords"],
}) {}
